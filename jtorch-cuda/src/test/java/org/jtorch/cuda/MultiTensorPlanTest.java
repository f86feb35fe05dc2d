package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.MultiTensorPlan;
import org.jtorch.cuda.kernels.MultiTensorPlan.Launch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** Host-side chunking of multi-tensor optimizer launches and the packing of {@code jt::TensorChunks} (no GPU). */
class MultiTensorPlanTest {
    private static final int CHUNK = KernelStructs.MT_CHUNK;

    @Test
    void smallTensorsShareOneLaunchOneBlockEach() {
        List<Launch> ls = MultiTensorPlan.plan(new long[] {10, 0, CHUNK, CHUNK + 1});
        assertEquals(1, ls.size());
        Launch l = ls.get(0);
        assertArrayEquals(new int[] {0, 2, 3}, l.tensors(), "the empty tensor 1 takes no slot");
        assertArrayEquals(new int[] {0, 1, 2, 2}, l.blockTensor());
        assertArrayEquals(new int[] {0, 0, 0, 1}, l.blockChunk());
        assertTrue(MultiTensorPlan.plan(new long[] {0, 0}).isEmpty());
        assertTrue(MultiTensorPlan.plan(new long[0]).isEmpty());
        assertThrows(IllegalArgumentException.class, () -> MultiTensorPlan.plan(new long[] {-1}));
    }

    @Test
    void aTensorSpanningLaunchesContinuesAtItsNextChunk() {
        long n = (long) CHUNK * (KernelStructs.MT_BLOCKS + 5) - 3; // 325 chunks
        List<Launch> ls = MultiTensorPlan.plan(new long[] {7, n});
        assertEquals(2, ls.size());
        assertArrayEquals(new int[] {0, 1}, ls.get(0).tensors());
        assertEquals(KernelStructs.MT_BLOCKS, ls.get(0).blocks());
        assertEquals(KernelStructs.MT_BLOCKS - 2, ls.get(0).blockChunk()[KernelStructs.MT_BLOCKS - 1]);
        assertArrayEquals(new int[] {1}, ls.get(1).tensors(), "tensor 1 listed again in slot 0");
        assertArrayEquals(new int[] {0, 0, 0, 0, 0, 0}, ls.get(1).blockTensor());
        assertArrayEquals(new int[] {319, 320, 321, 322, 323, 324}, ls.get(1).blockChunk());
    }

    @Test
    void moreTensorsThanSlotsStartANewLaunch() {
        long[] numels = new long[KernelStructs.MT_TENSORS + 3];
        java.util.Arrays.fill(numels, 5);
        List<Launch> ls = MultiTensorPlan.plan(numels);
        assertEquals(2, ls.size());
        assertEquals(KernelStructs.MT_TENSORS, ls.get(0).tensors().length);
        assertArrayEquals(new int[] {24, 25, 26}, ls.get(1).tensors());
        assertArrayEquals(new int[] {0, 1, 2}, ls.get(1).blockTensor());
    }

    /** Every element of every tensor is covered by exactly one block of one launch, whatever the sizes. */
    @Test
    void randomSizesAreCoveredExactlyOnce() {
        Random rnd = new Random(5);
        for (int trial = 0; trial < 200; trial++) {
            int count = 1 + rnd.nextInt(60);
            long[] numels = new long[count];
            for (int i = 0; i < count; i++) {
                numels[i] = switch (rnd.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> 1 + rnd.nextInt(1000);
                    case 2 -> 1 + rnd.nextInt(3 * CHUNK);
                    default -> 1 + rnd.nextInt(400) * (long) CHUNK + rnd.nextInt(2);
                };
            }
            long[] covered = new long[count];
            long[] nextChunk = new long[count];
            for (Launch l : MultiTensorPlan.plan(numels)) {
                assertTrue(l.tensors().length <= KernelStructs.MT_TENSORS && l.blocks() <= KernelStructs.MT_BLOCKS && l.blocks() > 0);
                for (int b = 0; b < l.blocks(); b++) {
                    int t = l.tensors()[l.blockTensor()[b]];
                    assertEquals(nextChunk[t], l.blockChunk()[b], "chunks of tensor " + t + " in order, none skipped");
                    nextChunk[t]++;
                    long begin = (long) l.blockChunk()[b] * CHUNK;
                    covered[t] += Math.min(numels[t], begin + CHUNK) - begin;
                }
            }
            assertArrayEquals(numels, covered);
        }
    }

    @Test
    void tensorChunksBytes() {
        try (Arena arena = Arena.ofConfined()) {
            long[] numels = {10, 0, CHUNK + 1};
            Launch l = MultiTensorPlan.plan(numels).get(0);
            long[][] addresses = {{0x100, 0x200, 0x300}, {0x1100, 0x1200, 0x1300}, null, {0x3100, 0x3200, 0x3300}};
            MemorySegment m = KernelArgs.packTensorChunks(arena, l, addresses, numels);
            assertEquals(KernelStructs.TENSOR_CHUNKS.byteSize(), m.byteSize());
            int slots = KernelStructs.MT_TENSORS;
            assertEquals(0x100, m.get(JAVA_LONG, 0));
            assertEquals(0x300, m.get(JAVA_LONG, 8), "slot 1 is tensor 2 (tensor 1 is empty)");
            assertEquals(0, m.get(JAVA_LONG, 16));
            assertEquals(0x1300, m.get(JAVA_LONG, 8L * (slots + 1)));
            assertEquals(0, m.get(JAVA_LONG, 8L * (2 * slots)), "a null list stays zero");
            assertEquals(0x3100, m.get(JAVA_LONG, 8L * (3 * slots)));
            assertEquals(0, m.get(JAVA_LONG, 8L * (4 * slots)), "the fifth list (AMSGrad) unused");
            long numel = KernelStructs.TENSOR_CHUNKS.byteOffset(PathElement.groupElement("numel"));
            assertEquals(10, m.get(JAVA_LONG, numel));
            assertEquals(CHUNK + 1, m.get(JAVA_LONG, numel + 8));
            long bt = KernelStructs.TENSOR_CHUNKS.byteOffset(PathElement.groupElement("block_tensor"));
            long bc = KernelStructs.TENSOR_CHUNKS.byteOffset(PathElement.groupElement("block_chunk"));
            assertArrayEquals(new int[] {0, 1, 1, 0}, new int[] {m.get(JAVA_INT, bt), m.get(JAVA_INT, bt + 4), m.get(JAVA_INT, bt + 8),
                    m.get(JAVA_INT, bt + 12)});
            assertArrayEquals(new int[] {0, 0, 1, 0}, new int[] {m.get(JAVA_INT, bc), m.get(JAVA_INT, bc + 4), m.get(JAVA_INT, bc + 8),
                    m.get(JAVA_INT, bc + 12)});
            assertThrows(IllegalArgumentException.class, () -> KernelArgs.packTensorChunks(arena, l, new long[6][], numels));
        }
    }

    @Test
    void optimizerArgumentBytes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment chunks = arena.allocate(KernelStructs.TENSOR_CHUNKS);
            KernelArgs s = KernelArgs.sgd(arena, chunks, -0.1f, 0.01f, 0.9f, 1f, true, false, true);
            assertArrayEquals(new long[] {KernelStructs.TENSOR_CHUNKS.byteSize(), 4, 4, 4, 4, 4, 4, 4}, s.sizes());
            assertEquals(-0.1f, s.value(1).get(JAVA_FLOAT, 0));
            assertEquals(0.9f, s.value(3).get(JAVA_FLOAT, 0));
            assertEquals(1, s.value(5).get(JAVA_INT, 0));
            assertEquals(0, s.value(6).get(JAVA_INT, 0));
            assertEquals(1, s.value(7).get(JAVA_INT, 0));
            KernelArgs a = KernelArgs.adam(arena, chunks, 0.99f, 0f, 0.9f, 0.1f, 0.999f, 0.001f, 0.5f, 1e-8f, -0.002f, false, true);
            assertEquals(12, a.count());
            assertEquals(1e-8f, a.value(8).get(JAVA_FLOAT, 0));
            assertEquals(-0.002f, a.value(9).get(JAVA_FLOAT, 0));
            assertEquals(1, a.value(11).get(JAVA_INT, 0));
        }
    }

    @Test
    void gradScalerUnscaleEntriesAndArgumentBytes() {
        assertEquals("jt_amp_unscale_f32", MultiTensorPlan.unscaleEntry(DType.FLOAT32));
        assertEquals("jt_amp_unscale_f64", MultiTensorPlan.unscaleEntry(DType.FLOAT64));
        assertEquals("jt_amp_unscale_bf16", MultiTensorPlan.unscaleEntry(DType.BFLOAT16));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MultiTensorPlan.unscaleEntry(DType.FLOAT16));
        assertTrue(e.getMessage().contains("_amp_foreach_non_finite_check_and_unscale_") && e.getMessage().contains("float16"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> MultiTensorPlan.unscaleEntry(DType.INT32));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment chunks = arena.allocate(KernelStructs.TENSOR_CHUNKS);
            KernelArgs u = KernelArgs.ampUnscale(arena, chunks, 0x7f00_0000_1000L, 0.25f);
            assertArrayEquals(new long[] {KernelStructs.TENSOR_CHUNKS.byteSize(), 8, 4}, u.sizes());
            assertEquals(0x7f00_0000_1000L, u.value(1).get(JAVA_LONG, 0));
            assertEquals(0.25f, u.value(2).get(JAVA_FLOAT, 0));
        }
    }
}
