package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.ReductionPlan;
import org.jtorch.cuda.kernels.ReductionPlan.Rows;
import org.jtorch.memory.Storage;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.Shapes;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The host-side choices of a {@code reduce.cu} launch (no GPU): which dimensions reduce (stride 0 in
 * the output, as the core's layout convention), the permutation to rows x row length, when the input
 * or output needs staging, entry names and dtypes, grid and block sizes, and the argument bytes.
 */
class ReductionPlanTest {
    private static long[] c(long... shape) {
        return Shapes.contiguousStrides(shape);
    }

    @Test
    void reducingTheLastDimensionOfAContiguousTensorIsRowsAsTheyAre() {
        // sum(x[2,3,4], dim=2): out keepdim [2,3,1] contiguous (strides 3,1,1) broadcast to [2,3,4] -> (3,1,0).
        Rows r = ReductionPlan.reduction(new long[] {2, 3, 4}, c(2, 3, 4), new long[] {3, 1, 0});
        assertArrayEquals(new int[] {0, 1, 2}, r.permutation());
        assertEquals(6, r.rows());
        assertEquals(4, r.rowLength());
        assertArrayEquals(new long[] {2, 3}, r.keptShape());
        assertArrayEquals(new long[] {3, 1}, r.keptOutStrides());
        assertTrue(r.inputRows());
        assertTrue(r.outputRows());
    }

    @Test
    void reducedDimensionsMoveLastAndAnInnerKeptDimensionNeedsStaging() {
        // sum(x[2,3,4], dims=(0,2)): out keepdim [1,3,1] (strides 1,1,1) -> broadcast strides (0,1,0).
        Rows r = ReductionPlan.reduction(new long[] {2, 3, 4}, c(2, 3, 4), new long[] {0, 1, 0});
        assertArrayEquals(new int[] {1, 0, 2}, r.permutation());
        assertArrayEquals(new long[] {3, 2, 4}, r.permutedShape());
        assertEquals(3, r.rows());
        assertEquals(8, r.rowLength());
        assertFalse(r.inputRows(), "dims 0 and 2 are not adjacent in memory once dim 1 is first");
        assertTrue(r.outputRows());
        // dim 0 of [5, 7]: the transposed input is rows only if the input is itself transposed.
        assertFalse(ReductionPlan.reduction(new long[] {5, 7}, c(5, 7), new long[] {0, 1}).inputRows());
        assertTrue(ReductionPlan.reduction(new long[] {5, 7}, new long[] {1, 5}, new long[] {0, 1}).inputRows());
    }

    @Test
    void aFullReductionIsOneRowAndSizeOneDimensionsNeverBreakContiguity() {
        Rows all = ReductionPlan.reduction(new long[] {4, 1, 6}, c(4, 1, 6), new long[] {0, 0, 0});
        assertEquals(1, all.rows());
        assertEquals(24, all.rowLength());
        assertArrayEquals(new long[] {1}, all.keptShape(), "the size-1 dim counts as kept");
        assertTrue(all.inputRows());
        // A size-1 dimension with an arbitrary stride (as views produce) is ignored.
        assertTrue(ReductionPlan.reduction(new long[] {4, 1, 6}, new long[] {6, 99, 1}, new long[] {1, 1, 0}).inputRows());
        // A zero-dim tensor: one row of one element.
        Rows scalar = ReductionPlan.reduction(new long[0], new long[0], new long[0]);
        assertEquals(1, scalar.rows());
        assertEquals(1, scalar.rowLength());
    }

    @Test
    void slicedAndBroadcastInputsAreStagedAndEmptyOnesAreNot() {
        // A stride-2 slice of the last dim.
        assertFalse(ReductionPlan.reduction(new long[] {3, 4}, new long[] {8, 2}, new long[] {1, 0}).inputRows());
        // An expanded (stride 0) input dim.
        assertFalse(ReductionPlan.reduction(new long[] {3, 4}, new long[] {0, 1}, new long[] {0, 1}).inputRows());
        // Empty reduced dimension: 3 rows of length 0; no element is read so nothing is staged.
        Rows e = ReductionPlan.reduction(new long[] {3, 0}, new long[] {0, 1}, new long[] {1, 0});
        assertEquals(3, e.rows());
        assertEquals(0, e.rowLength());
        assertTrue(e.inputRows());
        // Empty kept dimension: no rows at all.
        assertEquals(0, ReductionPlan.reduction(new long[] {0, 5}, c(0, 5), new long[] {1, 0}).rows());
    }

    @Test
    void anOutputWhoseKeptDimensionsAreNotRowMajorIsWrittenThroughATemporary() {
        // Kept dims 0 and 2 of [2,3,4] with output strides written column-major (1, _, 2).
        Rows r = ReductionPlan.reduction(new long[] {2, 3, 4}, c(2, 3, 4), new long[] {1, 0, 2});
        assertArrayEquals(new long[] {2, 4}, r.keptShape());
        assertArrayEquals(new long[] {1, 2}, r.keptOutStrides());
        assertFalse(r.outputRows());
        assertThrows(IllegalArgumentException.class, () -> ReductionPlan.reduction(new long[] {2, 3}, c(2, 3), new long[] {0}));
    }

    @Test
    void linesMoveTheirDimensionLast() {
        Rows r = ReductionPlan.line(new long[] {2, 3, 4}, 1, c(2, 3, 4), c(2, 3, 4));
        assertArrayEquals(new int[] {0, 2, 1}, r.permutation());
        assertArrayEquals(new long[] {2, 4, 3}, r.permutedShape());
        assertEquals(8, r.rows());
        assertEquals(3, r.rowLength());
        assertFalse(r.inputRows());
        assertFalse(r.outputRows());
        Rows last = ReductionPlan.line(new long[] {2, 3, 4}, 2, c(2, 3, 4), c(2, 3, 4));
        assertTrue(last.inputRows());
        assertTrue(last.outputRows());
        assertEquals(6, last.rows());
        Rows scalar = ReductionPlan.line(new long[0], 0, new long[0], new long[0]);
        assertEquals(1, scalar.rows());
        assertEquals(1, scalar.rowLength());
        assertThrows(IllegalArgumentException.class, () -> ReductionPlan.line(new long[] {2}, 1, c(2), c(2)));
    }

    @Test
    void entryNamesAndDtypesAreTheSourcesOnes() {
        assertEquals("jt_reduce_sum_f32", ReductionPlan.reduceEntry(ReduceOp.SUM, DType.FLOAT32));
        assertEquals("jt_reduce_sum_u8", ReductionPlan.reduceEntry(ReduceOp.SUM, DType.BOOL), "bool is read as uint8");
        assertEquals("jt_reduce_prod_i32", ReductionPlan.reduceEntry(ReduceOp.PROD, DType.INT32));
        assertEquals("jt_reduce_max_bf16", ReductionPlan.reduceEntry(ReduceOp.MAX, DType.BFLOAT16));
        assertEquals("jt_reduce_min_i64", ReductionPlan.reduceEntry(ReduceOp.MIN, DType.INT64));
        assertEquals("jt_reduce_norm_f16", ReductionPlan.reduceEntry(ReduceOp.NORM, DType.FLOAT16));
        assertEquals(DType.INT64, ReductionPlan.reduceOutput(ReduceOp.SUM, DType.INT8));
        assertEquals(DType.INT64, ReductionPlan.reduceOutput(ReduceOp.PROD, DType.BOOL));
        assertEquals(DType.UINT8, ReductionPlan.reduceOutput(ReduceOp.MAX, DType.BOOL));
        assertEquals(DType.FLOAT16, ReductionPlan.reduceOutput(ReduceOp.SUM, DType.FLOAT16));
        assertEquals("jt_argreduce_max_f64", ReductionPlan.argReduceEntry(true, DType.FLOAT64));
        assertEquals("jt_argreduce_min_u8", ReductionPlan.argReduceEntry(false, DType.BOOL));
        assertEquals("jt_logsumexp_bf16", ReductionPlan.floatingEntry("logsumexp", DType.BFLOAT16));
        assertEquals("jt_scan_prod_i16", ReductionPlan.scanEntry(true, DType.INT16));
        assertEquals("jt_reduce_any_f16", ReductionPlan.reduceEntry(ReduceOp.ANY, DType.FLOAT16));
        assertEquals("jt_reduce_all_u8", ReductionPlan.reduceEntry(ReduceOp.ALL, DType.BOOL));
        assertEquals(DType.BOOL, ReductionPlan.reduceOutput(ReduceOp.ANY, DType.FLOAT64));
        assertTrue(ReductionPlan.writesAs(DType.BOOL, DType.UINT8), "any/all bytes 0/1 are valid uint8 results");
        assertFalse(ReductionPlan.writesAs(DType.INT64, DType.FLOAT32));
        assertFalse(ReductionPlan.writesAs(DType.UINT8, DType.BOOL), "amax of bool input read as uint8 is copied back to bool");
        UnsupportedOperationException norm = assertThrows(UnsupportedOperationException.class,
                () -> ReductionPlan.reduceEntry(ReduceOp.NORM, DType.INT32));
        assertEquals("norm: no CUDA kernel is wired to this op for torch.int32 yet (device cuda)", norm.getMessage());
        assertThrows(UnsupportedOperationException.class, () -> ReductionPlan.floatingEntry("softmax", DType.INT64));
        assertThrows(UnsupportedOperationException.class, () -> ReductionPlan.scanEntry(false, DType.BOOL));
    }

    @Test
    void blocksAreOneARowCappedAtResidencyAndThreadsAWarpMultiple() {
        assertEquals(32, ReductionPlan.threads(0));
        assertEquals(32, ReductionPlan.threads(1));
        assertEquals(64, ReductionPlan.threads(33));
        assertEquals(256, ReductionPlan.threads(256));
        assertEquals(256, ReductionPlan.threads(1L << 40));
        assertEquals(0, ReductionPlan.blocks(0, 256, 132));
        assertEquals(7, ReductionPlan.blocks(7, 256, 132));
        assertEquals(132 * 8, ReductionPlan.blocks(1_000_000, 256, 132));
        assertEquals(132 * 8 * 8, ReductionPlan.blocks(1_000_000, 32, 132), "small blocks: more of them resident");
        assertThrows(IllegalArgumentException.class, () -> ReductionPlan.blocks(10, 48, 132));
        assertEquals(4, ReductionPlan.scanBlocks(1000, 132));
    }

    @Test
    void argumentBytesFollowTheKernelSignatures() {
        Rows r = ReductionPlan.reduction(new long[] {6, 5}, c(6, 5), new long[] {1, 0});
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs a = ReductionPlan.argArgs(arena, 0x1000, 0, 0x3000, r);
            assertEquals("[8, 8, 8, 8, 8]", Arrays.toString(a.sizes()));
            assertEquals(0x1000, a.value(0).get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, a.value(1).get(ValueLayout.JAVA_LONG, 0), "no values: a null pointer");
            assertEquals(0x3000, a.value(2).get(ValueLayout.JAVA_LONG, 0));
            assertEquals(6, a.value(3).get(ValueLayout.JAVA_LONG, 0));
            assertEquals(5, a.value(4).get(ValueLayout.JAVA_LONG, 0));
            KernelArgs v = ReductionPlan.varianceArgs(arena, 1, 2, r, 1.5, true);
            assertEquals("[8, 8, 8, 8, 8, 4]", Arrays.toString(v.sizes()));
            assertEquals(1.5, v.value(4).get(ValueLayout.JAVA_DOUBLE, 0));
            assertEquals(1, v.value(5).get(ValueLayout.JAVA_INT, 0));
            KernelArgs s = ReductionPlan.softmaxArgs(arena, 1, 2, r, false);
            assertEquals(0, s.value(4).get(ValueLayout.JAVA_INT, 0));
            KernelArgs n = ReductionPlan.normArgs(arena, 1, 2, r, Double.NEGATIVE_INFINITY);
            assertEquals(Double.NEGATIVE_INFINITY, n.value(4).get(ValueLayout.JAVA_DOUBLE, 0));
            MemorySegment params = n.build();
            assertEquals(n.value(4).address(), params.getAtIndex(ValueLayout.ADDRESS, 4).address());
        }
    }

    @Test
    void aNormOfIntegersOnCudaSaysThatNoKernelIsWired() {
        long[] shape = {2, 3};
        Storage s = Storage.ofBlock(Device.cuda(0), 24, null, null, MemorySegment.ofArray(new int[6]));
        try (Tensor g = Tensor.fromStorage(s, DType.INT32, shape, c(shape), 0)) {
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> CudaBackend.get().reductions().reduce(ReduceOp.NORM, Dispatcher.view(g), Dispatcher.view(g), 2));
            assertEquals("norm: no CUDA kernel is wired to this op yet (device cuda:0)", e.getMessage());
        }
    }

    @Test
    void sortSlotsAreTheRowLengthRoundedUpToAPowerOfTwo() {
        assertEquals(1, ReductionPlan.sortSlots(0));
        assertEquals(1, ReductionPlan.sortSlots(1));
        assertEquals(2, ReductionPlan.sortSlots(2));
        assertEquals(4, ReductionPlan.sortSlots(3));
        assertEquals(1024, ReductionPlan.sortSlots(700));
        assertEquals(1024, ReductionPlan.sortSlots(1024));
        assertEquals(2048, ReductionPlan.sortSlots(1025));
        assertThrows(IllegalArgumentException.class, () -> ReductionPlan.sortSlots(-1));
    }
}
