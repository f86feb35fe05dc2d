package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.kernels.IndexPlan;
import org.jtorch.cuda.kernels.IndexPlan.Check;
import org.jtorch.cuda.kernels.IndexPlan.Compaction;
import org.jtorch.cuda.kernels.IndexPlan.Geometry;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The host-side choices of an {@code index.cu} launch (no GPU). Each gather/scatter geometry is run
 * through a Java transcription of the kernels' offset computation ({@code index_offsets}: unravel the
 * element over the coalesced sizes, add each operand's strides, read each index, wrap negatives, add
 * index x step) on CPU tensors' memory, and compared with the CPU backend's result of the same op on the
 * same (transposed, sliced, int32, duplicate-index) operands. Also: coalescing, limits, the packed
 * {@code jt::IndexGeometry} bytes, validation bounds and messages, and the compaction partition.
 */
class IndexPlanTest {
    // ------------------------------------------------------------------ the kernels' offsets, on the host

    private static long element(Tensor t, long off) {
        MemorySegment s = t.storage().segment();
        long at = t.storageOffset() + off;
        return t.dtype() == DType.INT32 ? s.get(ValueLayout.JAVA_INT, at * 4) : s.get(ValueLayout.JAVA_LONG, at * 8);
    }

    /** {@code index_offsets} of {@code index.cu}: {dense offset, indexed offset} of element {@code i}. */
    private static long[] offsets(Geometry g, long i, Tensor[] indices) {
        long dense = 0, indexed = 0;
        long[] idx = new long[indices.length];
        for (int d = g.ndim() - 1; d >= 0; d--) {
            long c = i % g.sizes()[d];
            i /= g.sizes()[d];
            dense += c * g.denseStrides()[d];
            indexed += c * g.indexedStrides()[d];
            for (int k = 0; k < idx.length; k++) idx[k] += c * g.indexStrides()[k][d];
        }
        for (int k = 0; k < idx.length; k++) {
            assertEquals(indices[k].dtype() == DType.INT32, g.int32()[k], "int32 flag of index " + k);
            long v = element(indices[k], idx[k]);
            if (v < 0) v += g.indexSizes()[k];
            indexed += v * g.indexSteps()[k];
        }
        return new long[] {dense, indexed};
    }

    private static float f32(Tensor t, long off) {
        return t.storage().segment().get(ValueLayout.JAVA_FLOAT, (t.storageOffset() + off) * 4);
    }

    private static void setF32(Tensor t, long off, float v) {
        t.storage().segment().set(ValueLayout.JAVA_FLOAT, (t.storageOffset() + off) * 4, v);
    }

    /** jt_index_gather: out[dense] = src[indexed]. */
    private static void gather(Geometry g, Tensor out, Tensor src, Tensor... indices) {
        for (long i = 0; i < g.n(); i++) {
            long[] o = offsets(g, i, indices);
            setF32(out, o[0], f32(src, o[1]));
        }
    }

    /** jt_index_scatter_add (float32): dst[indexed] += alpha * values[dense]. */
    private static void scatterAdd(Geometry g, Tensor dst, Tensor values, float alpha, Tensor... indices) {
        for (long i = 0; i < g.n(); i++) {
            long[] o = offsets(g, i, indices);
            setF32(dst, o[1], f32(dst, o[1]) + alpha * f32(values, o[0]));
        }
    }

    private static Tensor values(long... shape) {
        long n = 1;
        for (long s : shape) n *= s;
        Tensor r = Torch.arange(0, n, 1, DType.FLOAT32, org.jtorch.types.Device.cpu());
        try (r) {
            return r.reshape(shape).mul(1.5).add(-7);
        }
    }

    private static Tensor longs(long[] v, long... shape) {
        return Torch.tensor(v, shape);
    }

    // ------------------------------------------------------------------ gathers and scatters against the CPU backend

    @Test
    void indexSelectOfATransposedSourceWithAStridedInt32IndexMatchesTheCpu() {
        try (Tensor base = values(5, 4, 3); Tensor self = base.transpose(0, 2);            // [3, 4, 5], strides (1, 3, 12)
             Tensor wide = Torch.tensor(new int[] {3, 9, 0, 9, 4, 9, 3, 9}, 8); Tensor index = wide.slice(0, 0, 8, 2)) {
            for (int dim = 0; dim < 3; dim++) {
                try (Tensor expected = self.indexSelect(dim, index.slice(0, 0, 4, 1).remainder(self.size(dim)))) {
                    // index values in range for every dim: use index % size, computed on the CPU
                    try (Tensor idx = index.remainder(self.size(dim)).to(DType.INT32);
                         Tensor out = Tensor.empty(expected.shape(), DType.FLOAT32, org.jtorch.types.Device.cpu())) {
                        Geometry g = IndexPlan.indexSelect(Dispatcher.view(self), dim, Dispatcher.view(idx),
                                Dispatcher.view(out));
                        gather(g, out, self, idx);
                        assertArrayEquals(expected.toDoubleArray(), out.toDoubleArray(), "dim " + dim + ": " + g);
                    }
                }
            }
        }
    }

    @Test
    void gatherIntoATransposedOutputMatchesTheCpu() {
        try (Tensor base = values(4, 6); Tensor self = base.t();                              // [6, 4]
             Tensor index = longs(new long[] {5, 0, 1, 3, 2, 2, 4, 0, 1, 1, 3, 5}, 3, 4);
             Tensor idx = index.slice(0, 0, 3, 2)) {                                             // [2, 4], row stride 8
            for (int dim = 0; dim < 2; dim++) {
                try (Tensor i = dim == 0 ? idx.alias() : idx.remainder(4); Tensor expected = self.gather(dim, i);
                     Tensor outT = Tensor.empty(new long[] {4, 2}, DType.FLOAT32, org.jtorch.types.Device.cpu()); Tensor out = outT.t()) {
                    Geometry g = IndexPlan.gather(Dispatcher.view(self), dim, Dispatcher.view(i), Dispatcher.view(out));
                    gather(g, out, self, i);
                    assertArrayEquals(expected.toDoubleArray(), out.toDoubleArray(), "dim " + dim + ": " + g);
                }
            }
        }
    }

    @Test
    void scatterAddWithDuplicatesIntoATransposedSelfMatchesTheCpu() {
        try (Tensor src = values(3, 5); Tensor index = longs(new long[] {0, 1, 1, 0, 3, 3, 3, 3, 2, 0}, 2, 5)) {
            try (Tensor base = values(5, 4); Tensor expected = base.t().scatterAdd(0, index, src);
                 Tensor self = base.t().contiguous().t().t()) {                  // transposed copy: strides (1, 4)
                // the front end narrows src to index's corner
                try (Tensor corner = src.asStrided(index.shape(), src.strides(), src.storageOffset())) {
                    Geometry g = IndexPlan.scatter("scatter_add_", Dispatcher.view(self), 0, Dispatcher.view(index),
                            Dispatcher.view(corner));
                    scatterAdd(g, self, corner, 1, index);
                }
                assertArrayEquals(expected.toDoubleArray(), self.toDoubleArray());
            }
        }
    }

    @Test
    void indexAddWithAlphaAlongTheLastDimMatchesTheCpu() {
        try (Tensor source = values(3, 4); Tensor index = longs(new long[] {4, 1, 4, 0}, 4)) {
            try (Tensor base = values(3, 5); Tensor expected = base.indexAdd(1, index, source, 2.5)) {
                Geometry g = IndexPlan.indexAccumulate("indexAdd_", Dispatcher.view(base), 1, Dispatcher.view(index),
                        Dispatcher.view(source), true);
                scatterAdd(g, base, source, 2.5f, index);
                assertArrayEquals(expected.toDoubleArray(), base.toDoubleArray());
            }
        }
    }

    @Test
    void advancedIndexWithNegativeIndicesWrapsAsTheCpu() {
        try (Tensor self = values(4, 5); Tensor rows = longs(new long[] {-1, 0, 2}, 3); Tensor cols = longs(new long[] {4, -5, -2}, 3);
             Tensor expected = self.index(rows, cols);
             Tensor src = self.asStrided(new long[] {3}, new long[] {0}, self.storageOffset());
             Tensor out = Tensor.empty(new long[] {3}, DType.FLOAT32, org.jtorch.types.Device.cpu())) {
            Geometry g = IndexPlan.advanced("index", Dispatcher.view(src), new StridedView[] {Dispatcher.view(rows),
                    Dispatcher.view(cols)}, new long[] {4, 5}, new long[] {5, 1}, Dispatcher.view(out));
            gather(g, out, src, rows, cols);
            assertArrayEquals(expected.toDoubleArray(), out.toDoubleArray());
        }
    }

    // ------------------------------------------------------------------ coalescing and limits

    @Test
    void contiguousOperandsCoalesceAroundTheIndexedDimension() {
        try (Tensor self = Tensor.empty(new long[] {2, 3, 4, 5}, DType.FLOAT32, org.jtorch.types.Device.cpu());
             Tensor index = longs(new long[] {0, 2}, 2);
             Tensor out = Tensor.empty(new long[] {2, 2, 4, 5}, DType.FLOAT32, org.jtorch.types.Device.cpu())) {
            Geometry g = IndexPlan.indexSelect(Dispatcher.view(self), 1, Dispatcher.view(index), Dispatcher.view(out));
            assertArrayEquals(new long[] {2, 2, 20}, g.sizes(), g.toString());
            assertArrayEquals(new long[] {40, 20, 1}, g.denseStrides());
            assertArrayEquals(new long[] {60, 0, 1}, g.indexedStrides());
            assertArrayEquals(new long[] {0, 1, 0}, g.indexStrides()[0]);
            assertEquals(3, g.indexSizes()[0]);
            assertEquals(20, g.indexSteps()[0]);
            Geometry first = IndexPlan.indexSelect(Dispatcher.view(self), 0, Dispatcher.view(index),
                    Dispatcher.view(Tensor.empty(new long[] {2, 3, 4, 5}, DType.FLOAT32, org.jtorch.types.Device.cpu())));
            assertArrayEquals(new long[] {2, 60}, first.sizes(), "the dims after the indexed one merge: " + first);
        }
    }

    @Test
    void moreThanEightDimensionsOrIndexTensorsAreRefusedNamingTheOp() {
        long[] shape = {2, 2, 2, 2, 2, 2, 2, 2, 2};
        try (Tensor self = Tensor.empty(shape, DType.FLOAT32, org.jtorch.types.Device.cpu());
             Tensor index = Torch.zeros(shape, DType.INT64, org.jtorch.types.Device.cpu())) {
            long[] alternating = new long[9];
            for (int d = 0; d < 9; d++) alternating[d] = (d % 2 == 0 ? 1 : -1) * (1L << d);
            // self's strides alternate in sign, so no neighbours merge: 9 dims remain
            try (Tensor odd = self.asStrided(shape, new long[] {256, 1, 128, 2, 64, 4, 32, 8, 16}, 0)) {
                UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                        () -> IndexPlan.gather(Dispatcher.view(odd), 0, Dispatcher.view(index), Dispatcher.view(self)));
                assertTrue(e.getMessage().startsWith("gather: ") && e.getMessage().contains("at most 8 dimensions"), e.getMessage());
            }
            Tensor[] nine = new Tensor[9];
            java.util.Arrays.fill(nine, index);
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> IndexPlan.advanced("index", Dispatcher.view(self), views(nine), new long[9], new long[9],
                            Dispatcher.view(self)));
            assertTrue(e.getMessage().contains("at most 8 index tensors"), e.getMessage());
            UnsupportedOperationException nz = assertThrows(UnsupportedOperationException.class,
                    () -> IndexPlan.nonzeroLayout(Dispatcher.view(self)));
            assertTrue(nz.getMessage().startsWith("nonzero: ") && nz.getMessage().contains("cpu"), nz.getMessage());
        }
    }

    @Test
    void packedGeometryHasTheFieldsAtTheCOffsets() {
        try (Arena arena = Arena.ofConfined(); Tensor self = values(3, 4).t();
             Tensor index = Torch.tensor(new int[] {2, 0}, 2);
             Tensor out = Tensor.empty(new long[] {4, 2}, DType.FLOAT32, org.jtorch.types.Device.cpu())) {
            Geometry g = IndexPlan.indexSelect(Dispatcher.view(self), 1, Dispatcher.view(index), Dispatcher.view(out));
            MemorySegment m = IndexPlan.packGeometry(arena, g, new long[] {0xABCDEF});
            assertEquals(912, IndexPlan.INDEX_GEOMETRY.byteSize());
            assertEquals(2, m.get(ValueLayout.JAVA_INT, 0), "ndim");
            assertEquals(1, m.get(ValueLayout.JAVA_INT, 4), "nindex");
            assertEquals(1, m.get(ValueLayout.JAVA_INT, 8), "int32 mask");
            assertEquals(0, m.get(ValueLayout.JAVA_INT, 12), "wrap mask: index_select does not wrap negative indices");
            assertEquals(4, m.get(ValueLayout.JAVA_LONG, 16), "size[0]");
            assertEquals(2, m.get(ValueLayout.JAVA_LONG, 24), "size[1]");
            assertEquals(2, m.get(ValueLayout.JAVA_LONG, 80), "stride[0][0] (out)");
            assertEquals(1, m.get(ValueLayout.JAVA_LONG, 144), "stride[1][0] (self)");
            assertEquals(0, m.get(ValueLayout.JAVA_LONG, 152), "stride[1][1] (self, indexed dim)");
            assertEquals(1, m.get(ValueLayout.JAVA_LONG, 208 + 8), "index_stride[0][1]");
            assertEquals(3, m.get(ValueLayout.JAVA_LONG, 720), "index_size[0]");
            assertEquals(4, m.get(ValueLayout.JAVA_LONG, 784), "index_step[0]");
            assertEquals(0xABCDEF, m.get(ValueLayout.JAVA_LONG, 848), "index_ptr[0]");
            assertEquals(0, m.get(ValueLayout.JAVA_LONG, 856), "index_ptr[1] unused");
        }
    }

    // ------------------------------------------------------------------ validation

    @Test
    void checksBoundTheValuesAndLocateTheFirstBadOne() {
        try (Tensor base = longs(new long[] {0, 1, 2, 3, 4, 5}, 2, 3); Tensor index = base.t()) {   // [3, 2], strides (1, 3)
            Check plain = IndexPlan.check("gather", Dispatcher.view(index), 1, 4, false);
            assertEquals(0, plain.low());
            assertEquals(4, plain.high());
            Check wrapping = IndexPlan.check("indexFill_", Dispatcher.view(index), 0, 4, true);
            assertEquals(-4, wrapping.low());
            assertEquals("jt_index_check_i64", IndexPlan.checkEntry(index.dtype()));
            assertEquals("jt_index_check_i32", IndexPlan.checkEntry(DType.INT32));
            long[] rowMajor = index.toLongArray();
            for (int p = 0; p < rowMajor.length; p++) {
                assertEquals(rowMajor[p], element(index, IndexPlan.elementOffset(plain, p)), "position " + p);
            }
        }
    }

    @Test
    void checksReadABroadcastIndexOnce() {
        try (Tensor base = longs(new long[] {4, 9, 6}, 3); Tensor index = base.asStrided(new long[] {5, 3, 7}, new long[] {0, 1, 0}, 0)) {
            Check c = IndexPlan.check("index", Dispatcher.view(index), -1, 5, true);
            assertEquals(3, c.n(), "the two broadcast dims are left out");
            for (int p = 0; p < 3; p++) assertEquals(base.toLongArray()[p], element(index, IndexPlan.elementOffset(c, p)));
        }
    }

    @Test
    void outOfBoundsMessagesEqualTheCpuBackends() {
        try (Tensor self = values(3, 4); Tensor index = longs(new long[] {1, 7}, 2); Tensor neg = longs(new long[] {-5}, 1)) {
            IndexOutOfBoundsException cpu = assertThrows(IndexOutOfBoundsException.class, () -> self.indexSelect(0, index));
            assertEquals(cpu.getMessage(), IndexPlan.outOfBounds(IndexPlan.check("index_select", Dispatcher.view(index), 0,
                    3, false), 7).getMessage());
            IndexOutOfBoundsException adv = assertThrows(IndexOutOfBoundsException.class, () -> self.index(neg));
            assertEquals(adv.getMessage(), IndexPlan.outOfBounds(IndexPlan.check("index", Dispatcher.view(neg), -1, 3,
                    true), -5).getMessage());
        }
    }

    // ------------------------------------------------------------------ compaction

    @Test
    void compactionChunksCoverEveryElementOnceInWholeTiles() {
        for (long n : new long[] {1, 255, 256, 257, 10_000, 1_000_003, 50_000_000}) {
            for (int sms : new int[] {1, 3, 132}) {
                Compaction c = IndexPlan.compaction(n, sms);
                assertEquals(0, c.chunk() % IndexPlan.COMPACT_THREADS, n + " on " + sms);
                assertTrue(c.blocks() >= 1 && c.blocks() <= 8 * sms, c.toString());
                assertTrue((long) c.blocks() * c.chunk() >= n && (long) (c.blocks() - 1) * c.chunk() < n, c.toString());
            }
        }
        assertEquals(0, IndexPlan.compaction(0, 132).blocks());
    }

    @Test
    void compactionByBlockCountsKeepsRowMajorOrder() {
        long n = 5_000;
        boolean[] flag = new boolean[(int) n];
        List<Long> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            flag[i] = (i * 0.6180339887498949) % 1.0 < 0.3;
            if (flag[i]) expected.add((long) i);
        }
        Compaction c = IndexPlan.compaction(n, 2);
        long[] counts = new long[c.blocks()];
        for (int b = 0; b < c.blocks(); b++) {
            for (long i = b * c.chunk(); i < Math.min(n, (b + 1) * c.chunk()); i++) if (flag[(int) i]) counts[b]++;
        }
        Long[] written = new Long[expected.size()];
        for (int b = c.blocks() - 1; b >= 0; b--) {          // blocks in any order: each starts at the counts before it
            long at = 0;
            for (int q = 0; q < b; q++) at += counts[q];
            for (long i = b * c.chunk(); i < Math.min(n, (b + 1) * c.chunk()); i++) if (flag[(int) i]) written[(int) at++] = i;
        }
        assertArrayEquals(expected.toArray(), written);
        assertTrue(c.blocks() > 1, "several blocks: " + c);
    }

    private static StridedView[] views(Tensor[] ts) {
        StridedView[] v = new StridedView[ts.length];
        for (int i = 0; i < v.length; i++) v[i] = Dispatcher.view(ts[i]);
        return v;
    }
}
