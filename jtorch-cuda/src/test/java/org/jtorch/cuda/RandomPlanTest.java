package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.RandomPlan;
import org.jtorch.cuda.kernels.RandomPlan.Fill;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** Host-side planning of {@code random.cu} launches (no GPU): entries, Philox blocks per fill, grids, argument bytes. */
class RandomPlanTest {
    @Test
    void entryPointsFollowTheSourcesNames() {
        assertEquals("jt_random_uniform_f32", RandomPlan.plan(Fill.UNIFORM, DType.FLOAT32, 8).entry());
        assertEquals("jt_random_uniform_bf16", RandomPlan.plan(Fill.UNIFORM, DType.BFLOAT16, 8).entry());
        assertEquals("jt_random_normal_f64", RandomPlan.plan(Fill.NORMAL, DType.FLOAT64, 8).entry());
        assertEquals("jt_random_randint_u8", RandomPlan.plan(Fill.RANDINT, DType.UINT8, 8).entry());
        assertEquals("jt_random_randint_bool", RandomPlan.plan(Fill.RANDINT, DType.BOOL, 8).entry());
        assertEquals("jt_random_randint_f16", RandomPlan.plan(Fill.RANDINT, DType.FLOAT16, 8).entry());
    }

    @Test
    void uniformAndNormalRefuseIntegerDtypesNamingTheOp() {
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> RandomPlan.plan(Fill.NORMAL, DType.INT32, 4));
        assertTrue(e.getMessage().startsWith("normal_: "), e.getMessage());
        assertTrue(e.getMessage().contains("int32"), e.getMessage());
        assertThrows(UnsupportedOperationException.class, () -> RandomPlan.plan(Fill.UNIFORM, DType.BOOL, 4));
        assertThrows(IllegalArgumentException.class, () -> RandomPlan.plan(Fill.RANDINT, DType.INT64, -1));
    }

    /** The blocks a launch reads are exactly those the front end reserves from the generator (Torch.rand/randn/randint). */
    @Test
    void philoxBlocksEqualWhatTheFrontEndReserves() {
        for (long n : new long[] {0, 1, 2, 3, 4, 5, 7, 8, 1001}) {
            assertEquals((n + 3) / 4, RandomPlan.plan(Fill.UNIFORM, DType.FLOAT32, n).philoxBlocks());
            assertEquals((n + 3) / 4, RandomPlan.plan(Fill.UNIFORM, DType.FLOAT16, n).philoxBlocks());
            assertEquals((n + 1) / 2, RandomPlan.plan(Fill.UNIFORM, DType.FLOAT64, n).philoxBlocks());
            assertEquals((n + 3) / 4, RandomPlan.plan(Fill.NORMAL, DType.FLOAT64, n).philoxBlocks());
            assertEquals((n + 1) / 2, RandomPlan.plan(Fill.RANDINT, DType.INT64, n).philoxBlocks());
        }
        // Against the generator itself: the offset advances by the planned block count.
        Object[][] cases = {{Fill.UNIFORM, DType.FLOAT32}, {Fill.UNIFORM, DType.FLOAT64}, {Fill.NORMAL, DType.FLOAT32},
                {Fill.RANDINT, DType.INT64}};
        for (Object[] c : cases) {
            Fill fill = (Fill) c[0];
            DType t = (DType) c[1];
            Generator g = new Generator(1);
            long n = 11;
            try (Tensor r = switch (fill) {
                case UNIFORM -> Torch.rand(new long[] {n}, t, Device.cpu(), g);
                case NORMAL -> Torch.randn(new long[] {n}, t, Device.cpu(), g);
                case RANDINT -> Torch.randint(0, 5, new long[] {n}, t, Device.cpu(), g);
            }) {
                assertEquals(RandomPlan.plan(fill, t, n).philoxBlocks(), g.getState()[1], fill + " " + t);
            }
        }
    }

    @Test
    void gridIsOneThreadPerPhiloxBlockCapped() {
        // 132 SMs (H200): 1 block for 256 Philox blocks, 2 for 257, capped at 8 per SM.
        assertEquals(1, LaunchGeometry.blocks(RandomPlan.plan(Fill.UNIFORM, DType.FLOAT32, 1024).philoxBlocks(), 1, 132));
        assertEquals(2, LaunchGeometry.blocks(RandomPlan.plan(Fill.UNIFORM, DType.FLOAT32, 1025).philoxBlocks(), 1, 132));
        assertEquals(132 * 8, LaunchGeometry.blocks(RandomPlan.plan(Fill.NORMAL, DType.FLOAT32, 100_000_000).philoxBlocks(), 1, 132));
        assertEquals(0, LaunchGeometry.blocks(RandomPlan.plan(Fill.RANDINT, DType.INT8, 0).philoxBlocks(), 1, 132));
    }

    @Test
    void argumentBytes() {
        try (Arena arena = Arena.ofConfined()) {
            RandomPlan.Launch l = RandomPlan.plan(Fill.UNIFORM, DType.FLOAT32, 10);
            KernelArgs a = KernelArgs.random(arena, l, 0x1000, -7L, 1L << 40, -0.5, 2.5);
            assertArrayEquals(new long[] {8, 8, 8, 8, 8, 8}, a.sizes());
            assertEquals(0x1000, a.value(0).get(JAVA_LONG, 0));
            assertEquals(10, a.value(1).get(JAVA_LONG, 0));
            assertEquals(-7L, a.value(2).get(JAVA_LONG, 0));
            assertEquals(1L << 40, a.value(3).get(JAVA_LONG, 0));
            assertEquals(-0.5, a.value(4).get(JAVA_DOUBLE, 0));
            assertEquals(2.5, a.value(5).get(JAVA_DOUBLE, 0));
            KernelArgs r = KernelArgs.randint(arena, RandomPlan.plan(Fill.RANDINT, DType.INT8, 3), 0x2000, 1, 2, -128, 128);
            assertEquals(3, r.value(1).get(JAVA_LONG, 0));
            assertEquals(-128, r.value(4).get(JAVA_LONG, 0));
            assertEquals(128, r.value(5).get(JAVA_LONG, 0));
        }
    }
}
