package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.backend.SpatialKernels.Pool2d;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.NormPlan;
import org.jtorch.cuda.kernels.NormPlan.Channel;
import org.jtorch.cuda.kernels.NormPlan.Kernel;
import org.jtorch.cuda.kernels.PoolPlan;
import org.jtorch.cuda.kernels.PoolPlan.Op;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The host-side planning of the pooling ({@link PoolPlan}) and batch-norm ({@link NormPlan}) launches, without
 * a GPU: entry names, refused dtypes, grid sizes, and the bytes of the by-value structs, read back at the
 * offsets of the C declarations in {@code pool.cu} and {@code norm.cu} (whose sizes the entry-points test
 * compares with the compilers' PTX).
 */
class SpatialNormPlanTest {
    @Test
    void poolEntriesAreNamedPerOpAndDtype() {
        assertEquals("jt_pool_max_f32", PoolPlan.entry(Op.MAX, DType.FLOAT32));
        assertEquals("jt_pool_adaptive_avg_backward_f64", PoolPlan.entry(Op.ADAPTIVE_AVG_BACKWARD, DType.FLOAT64));
        assertEquals("jt_pool_max_backward_f32", PoolPlan.entry(Op.MAX_BACKWARD, DType.FLOAT32));
    }

    @Test
    void poolRefusesOtherDtypesNamingTheMethod() {
        for (DType t : new DType[] {DType.FLOAT16, DType.BFLOAT16, DType.INT64}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PoolPlan.entry(Op.AVG, t));
            assertTrue(e.getMessage().contains("avgPool2d") && e.getMessage().contains(t.toString()) && e.getMessage().contains("cuda"),
                    e.getMessage());
        }
    }

    @Test
    void poolGridIsOneThreadPerItemCapped() {
        assertEquals(0, PoolPlan.blocks(0, 132));
        assertEquals(1, PoolPlan.blocks(1, 132));
        assertEquals(2, PoolPlan.blocks(LaunchGeometry.THREADS + 1, 132));
        assertEquals(132 * LaunchGeometry.BLOCKS_PER_SM, PoolPlan.blocks(1L << 32, 132));
    }

    @Test
    void pool2dStructHoldsTheGeometryAtTheCOffsets() {
        Pool2d g = new Pool2d(6, 7, 9, 3, 4, 3, 5, 2, 1, 1, 2, 1, 3);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = PoolPlan.packPool2d(arena, g);
            assertEquals(72, m.byteSize());
            long[] longs = new long[5];
            for (int i = 0; i < 5; i++) longs[i] = m.get(JAVA_LONG, 8L * i);
            assertArrayEquals(new long[] {6, 7, 9, 3, 4}, longs);
            int[] ints = new int[8];
            for (int i = 0; i < 8; i++) ints[i] = m.get(JAVA_INT, 40 + 4L * i);
            assertArrayEquals(new int[] {3, 5, 2, 1, 1, 2, 1, 3}, ints);
            KernelArgs a = PoolPlan.avgArgs(arena, 0x1000, 0x2000, g, true, 7);
            assertArrayEquals(new long[] {8, 8, 72, 4, 8}, a.sizes());
            assertEquals(1, a.value(3).get(JAVA_INT, 0));
            assertEquals(7, a.value(4).get(JAVA_LONG, 0));
            assertEquals(0, PoolPlan.maxArgs(arena, 1, 2, 0, g).value(2).get(JAVA_LONG, 0), "no indices: a null pointer");
        }
    }

    @Test
    void normEntriesCoverTheFloatingDtypes() {
        assertEquals("jt_norm_stats_bf16", NormPlan.entry(Kernel.STATS, "batchNormStats", DType.BFLOAT16));
        assertEquals("jt_norm_backward_input_f16", NormPlan.entry(Kernel.BACKWARD_INPUT, "batchNormBackward", DType.FLOAT16));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NormPlan.entry(Kernel.APPLY, "batchNormApply", DType.INT32));
        assertTrue(e.getMessage().contains("batchNormApply") && e.getMessage().contains("int32"), e.getMessage());
    }

    @Test
    void reductionsUseOneBlockPerChannelAndWarpMultiples() {
        assertEquals(32, NormPlan.reductionThreads(1));
        assertEquals(64, NormPlan.reductionThreads(33));
        assertEquals(NormPlan.MAX_REDUCTION_THREADS, NormPlan.reductionThreads(1_000_000));
        assertEquals(0, NormPlan.reductionBlocks(0, 1, 132));
        assertEquals(64, NormPlan.reductionBlocks(64, 1, 132));
        assertEquals(64 * 9, NormPlan.reductionBlocks(64, 9, 132));
        assertEquals(132 * LaunchGeometry.BLOCKS_PER_SM, NormPlan.reductionBlocks(100_000, 1, 132));
        assertEquals(1, NormPlan.elementwiseBlocks(5, 132));
    }

    @Test
    void fewChannelsOverManyElementsSplitAcrossBlocks() {
        // ResNet's first batch norm, [32, 64, 112, 112], on 132 SMs: 64 channels alone would fill half the device.
        int splits = NormPlan.splits(64, 32L * 112 * 112, 132);
        assertEquals(9, splits, "ceil(4 * 132 / 64) blocks a channel");
        assertEquals(2 * 64 * 9, NormPlan.partials(64, splits));
        assertEquals(1, NormPlan.splits(2048, 32L * 7 * 7, 132), "enough channels: one block each, no workspace");
        assertEquals(0, NormPlan.partials(2048, 1));
        assertEquals(1, NormPlan.splits(4, 1000, 132), "parts of fewer than MIN_ELEMENTS_PER_SPLIT elements are not worth a block");
        assertEquals(3, NormPlan.splits(1, 3 * NormPlan.MIN_ELEMENTS_PER_SPLIT, 132));
        assertEquals(NormPlan.MAX_SPLITS, NormPlan.splits(1, Long.MAX_VALUE / 2, 100_000));
        assertEquals(1, NormPlan.splits(0, 0, 132));
    }

    @Test
    void batchNorm1dBlocksTakeTheRowKernelsOneChannelALane() {
        assertTrue(NormPlan.rows(1));
        assertEquals(false, NormPlan.rows(2));
        assertEquals(define("norm.cu", "JT_ROWS_THREADS"), NormPlan.ROWS_THREADS);
        assertEquals(3, NormPlan.reductionGroups(70, 1), "tiles of 32 channels, the last partial");
        assertEquals(70, NormPlan.reductionGroups(70, 4));
        assertEquals(NormPlan.ROWS_THREADS, NormPlan.reductionThreads(1_000_000, 1));
        assertEquals(NormPlan.MAX_REDUCTION_THREADS, NormPlan.reductionThreads(1_000_000, 4));
        // [8192, 64] on 132 SMs: 2 tiles, each part reading at least 128 rows of its 32 channels.
        assertEquals(64, NormPlan.splits(8192, 64, 1, 132));
        assertEquals(1, NormPlan.splits(100, 64, 1, 132), "too few rows to split");
        assertEquals(NormPlan.splits(64, 32L * 12544, 132), NormPlan.splits(32, 64, 12544, 132), "s > 1: per channel");
    }

    private static int define(String file, String name) {
        Matcher m = Pattern.compile("#define " + name + " ([0-9]+)").matcher(KernelSources.read(file));
        assertTrue(m.find(), name + " in " + file);
        return Integer.parseInt(m.group(1));
    }

    @Test
    void channelTensorsHoldAddressStrideAndDtypeCodePerSlot() {
        assertEquals(define("norm.cu", "JT_CHANNEL_TENSORS"), NormPlan.CHANNEL_TENSORS);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment m = NormPlan.packChannels(arena, new Channel(0xA0, 1, DType.FLOAT32), null,
                    new Channel(0xC0, 3, DType.BFLOAT16));
            assertEquals(80, m.byteSize());
            assertArrayEquals(new long[] {0xA0, 0, 0xC0, 0}, new long[] {m.get(JAVA_LONG, 0), m.get(JAVA_LONG, 8), m.get(JAVA_LONG, 16),
                    m.get(JAVA_LONG, 24)});
            assertArrayEquals(new long[] {1, 0, 3, 0}, new long[] {m.get(JAVA_LONG, 32), m.get(JAVA_LONG, 40), m.get(JAVA_LONG, 48),
                    m.get(JAVA_LONG, 56)});
            // Dtype codes are DType ordinals, as in jtorch_cuda.cuh (KernelSourcesTest checks the defines).
            assertArrayEquals(new int[] {DType.FLOAT32.ordinal(), 0, DType.BFLOAT16.ordinal(), 0},
                    new int[] {m.get(JAVA_INT, 64), m.get(JAVA_INT, 68), m.get(JAVA_INT, 72), m.get(JAVA_INT, 76)});
            assertThrows(IllegalArgumentException.class, () -> NormPlan.packChannels(arena, new Channel[5]));
        }
    }

    @Test
    void backwardSumsPassTheWeightSeparatelyAndTheCoefficientWorkspace() {
        try (Arena arena = Arena.ofConfined()) {
            Channel f32 = new Channel(0x10, 1, DType.FLOAT32);
            KernelArgs a = NormPlan.backwardSumsArgs(arena, 1, 2, 3, 4, 5, f32, f32, null, null, 0x99, new Channel(0x50, 2, DType.FLOAT64),
                    0x77, 6);
            assertArrayEquals(new long[] {8, 8, 8, 8, 8, 80, 8, 8, 8, 4, 8, 4}, a.sizes());
            assertEquals(0x77, a.value(10).get(JAVA_LONG, 0));
            assertEquals(6, a.value(11).get(JAVA_INT, 0));
            assertEquals(0x99, a.value(6).get(JAVA_LONG, 0));
            assertEquals(0x50, a.value(7).get(JAVA_LONG, 0));
            assertEquals(2, a.value(8).get(JAVA_LONG, 0));
            assertEquals(DType.FLOAT64.ordinal(), a.value(9).get(JAVA_INT, 0));
            KernelArgs none = NormPlan.backwardSumsArgs(arena, 1, 2, 3, 4, 5, f32, f32, null, null, 0, null, 0, 1);
            KernelArgs finish = NormPlan.backwardFinishArgs(arena, 3, 4, 5, f32, f32, null, null, 0x99, null, 0x77, 6);
            assertArrayEquals(new long[] {8, 8, 8, 80, 8, 8, 8, 4, 8, 4}, finish.sizes());
            assertEquals(0, none.value(7).get(JAVA_LONG, 0), "no weight: a null pointer (read as 1)");
            assertEquals(9, NormPlan.coefficients(3));
        }
    }
}
