package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.StorageCleaner;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * Reductions checked against formulas evaluated in double on the same data (the f32 Vector API
 * paths: inner rows, outer columns, parallel full reductions, softmax rows), plus API and lifetime
 * behaviour. Reference values from PyTorch are in {@link ReductionsConformanceTest}.
 */
class ReductionsTest {

    private static float[] uniform(int n, long seed, float lo, float hi) {
        java.util.Random r = new java.util.Random(seed);
        float[] a = new float[n];
        for (int i = 0; i < n; i++) a[i] = lo + (hi - lo) * r.nextFloat();
        return a;
    }

    @Test
    void fullF32SumOfOneMillionIsWithinOneMillionthOfTheExactSum() {
        float[] a = uniform(1 << 20, 1, 0.5f, 1.5f);
        double exact = 0;
        for (float v : a) exact += v;
        float naive = 0;
        for (float v : a) naive += v;
        try (Tensor x = Torch.tensor(a); Tensor s = x.sum()) {
            assertEquals(exact, s.item(), 1e-6 * exact);
            // The check would catch plain f32 accumulation, whose error here is far larger.
            assertTrue(Math.abs(naive - exact) > 1e-6 * exact, "naive f32 summation unexpectedly accurate");
        }
    }

    @Test
    void fullF32SumDoesNotDependOnTheThreadCount() {
        float[] a = uniform(3_000_017, 2, -1f, 1f);
        int threads = Torch.getNumThreads();
        try (Tensor x = Torch.tensor(a)) {
            Torch.setNumThreads(1);
            double one;
            try (Tensor s = x.sum()) {
                one = s.item();
            }
            Torch.setNumThreads(Math.max(2, threads));
            try (Tensor s = x.sum()) {
                assertEquals(one, s.item(), 0.0);
            }
        } finally {
            Torch.setNumThreads(threads);
        }
    }

    @Test
    void rowSumsOfContiguousRowsMatchDoubleSums() {
        int rows = 37, cols = 1001;
        float[] a = uniform(rows * cols, 3, -2f, 2f);
        try (Tensor x = Torch.tensor(a, rows, cols); Tensor s = x.sum(1, false)) {
            float[] got = s.toFloatArray();
            for (int i = 0; i < rows; i++) {
                double e = 0;
                double abs = 0;
                for (int j = 0; j < cols; j++) {
                    e += a[i * cols + j];
                    abs += Math.abs(a[i * cols + j]);
                }
                // f32 accumulation error bound: a few f32 epsilons of the sum of magnitudes.
                assertEquals(e, got[i], 2e-7 * abs, "row " + i);
            }
        }
    }

    @Test
    void columnSumsOverTheBatchDimensionMatchDoubleSums() {
        int rows = 128, cols = 531; // 531 columns: full vector tiles plus a masked tail
        float[] a = uniform(rows * cols, 4, -1f, 1f);
        try (Tensor x = Torch.tensor(a, rows, cols); Tensor s = x.sum(0, false)) {
            float[] got = s.toFloatArray();
            for (int j = 0; j < cols; j++) {
                double e = 0;
                for (int i = 0; i < rows; i++) e += a[i * cols + j];
                assertEquals(e, got[j], 1e-5, "column " + j);
            }
        }
    }

    @Test
    void sumOfATransposedViewEqualsSumOfItsContiguousCopy() {
        float[] a = uniform(64 * 80, 5, -1f, 1f);
        try (Tensor x = Torch.tensor(a, 64, 80); Tensor t = x.t(); Tensor c = t.contiguous();
             Tensor s1 = t.sum(1, true); Tensor s2 = c.sum(1, true)) {
            assertArrayEquals(new long[] {80, 1}, s1.shape());
            assertArrayEquals(s2.toFloatArray(), s1.toFloatArray(), 1e-5f);
        }
    }

    @Test
    void vectorMaxPropagatesNaNAnywhereInTheRow() {
        for (int pos : new int[] {0, 17, 63, 99}) {
            float[] a = uniform(100, 6, -1f, 1f);
            a[pos] = Float.NaN;
            try (Tensor x = Torch.tensor(a); Tensor m = x.amax(); Tensor n = x.amin()) {
                assertTrue(Double.isNaN(m.item()), "amax with NaN at " + pos);
                assertTrue(Double.isNaN(n.item()), "amin with NaN at " + pos);
            }
        }
    }

    @Test
    void parallelFullMaxFindsTheLargestElement() {
        float[] a = uniform(1_000_003, 7, -1f, 1f);
        a[777_777] = 5f;
        try (Tensor x = Torch.tensor(a); Tensor m = x.max()) {
            assertEquals(5.0, m.item());
        }
    }

    @Test
    void softmaxRowsMatchTheDoubleFormulaAndSumToOne() {
        int rows = 16, cols = 1000;
        float[] a = uniform(rows * cols, 8, -10f, 10f);
        try (Tensor x = Torch.tensor(a, rows, cols); Tensor p = x.softmax(-1); Tensor lp = x.logSoftmax(-1)) {
            float[] got = p.toFloatArray();
            float[] gotLog = lp.toFloatArray();
            for (int i = 0; i < rows; i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < cols; j++) max = Math.max(max, a[i * cols + j]);
                double sum = 0;
                for (int j = 0; j < cols; j++) sum += Math.exp(a[i * cols + j] - max);
                double total = 0;
                for (int j = 0; j < cols; j++) {
                    double e = Math.exp(a[i * cols + j] - max) / sum;
                    assertEquals(e, got[i * cols + j], 1e-6 * e + 1e-9, "softmax " + i + "," + j);
                    double le = a[i * cols + j] - max - Math.log(sum);
                    assertEquals(le, gotLog[i * cols + j], 2e-6 * Math.abs(le) + 1e-5, "log_softmax " + i + "," + j);
                    total += got[i * cols + j];
                }
                assertEquals(1.0, total, 1e-5);
            }
        }
    }

    @Test
    void softmaxIsStableForLargeLogits() {
        try (Tensor x = Torch.tensor(1000f, 1001f, 999f); Tensor p = x.softmax(0)) {
            float[] v = p.toFloatArray();
            double z = 1 + Math.exp(1) + Math.exp(-1);
            assertEquals(1 / z, v[0], 1e-6);
            assertEquals(Math.exp(1) / z, v[1], 1e-6);
        }
    }

    @Test
    void logsumexpIsStableForLargeValues() {
        try (Tensor x = Torch.tensor(1000.0, 1000.0); Tensor r = x.logsumexp()) {
            assertEquals(1000 + Math.log(2), r.item(), 1e-12);
        }
    }

    @Test
    void integerSumsAccumulateInInt64AndWrapAsPyTorch() {
        try (Tensor x = Torch.tensor(new int[] {Integer.MAX_VALUE, Integer.MAX_VALUE}); Tensor s = x.sum()) {
            assertEquals(DType.INT64, s.dtype());
            assertEquals(2L * Integer.MAX_VALUE, s.itemLong());
        }
        try (Tensor x = Torch.tensor(Long.MAX_VALUE, 1L); Tensor s = x.sum()) {
            assertEquals(Long.MIN_VALUE, s.itemLong());
        }
    }

    @Test
    void maxWithDimReturnsValuesAndInt64IndicesThatCloseTogether() {
        Tensor x = Torch.tensor(new float[] {1, 5, 5, 2, 0, 3}, 2, 3);
        Reductions.ValuesIndices vi = x.max(1, true);
        assertArrayEquals(new long[] {2, 1}, vi.values().shape());
        assertEquals(DType.INT64, vi.indices().dtype());
        assertArrayEquals(new float[] {5, 3}, vi.values().toFloatArray());
        assertArrayEquals(new long[] {1, 2}, vi.indices().toLongArray()); // first occurrence of the tie 5, 5
        vi.close();
        assertTrue(vi.values().isClosed() && vi.indices().isClosed());
        x.close();
    }

    @Test
    void reductionsReleaseEveryTemporary() {
        Device cpu = Device.cpu();
        try (Tensor ints = Torch.tensor(new long[] {3, 1, 4, 1, 5, 9}, 2, 3);
             Tensor floats = Torch.tensor(new float[] {3, 1, 4, 1, 5, 9}, 2, 3);
             Tensor t = floats.t()) {
            // Earlier tests' unreachable tensors are returned first, so that no collection frees them mid-count.
            StorageCleaner.collect();
            long before = Torch.memoryStats(cpu).activeBlocks();
            Tensor[] results = {
                    floats.mean(), ints.softmax(1), ints.logSoftmax(0, DType.FLOAT64), ints.cumsum(1, DType.FLOAT32),
                    ints.logsumexp(1), t.argmax(), ints.sum(new int[] {0}, true, DType.FLOAT64), floats.var(0), t.norm(1)
            };
            for (Tensor r : results) r.close();
            try (Reductions.ValuesIndices vi = t.min(0)) {
                assertEquals(2, vi.values().numel());
            }
            assertEquals(before, Torch.memoryStats(cpu).activeBlocks());
        }
    }

    @Test
    void maxOfAnEmptyTensorNamesTheOp() {
        try (Tensor e = Torch.zeros(0, 3)) {
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, e::max);
            assertTrue(ex.getMessage().startsWith("max()"), ex.getMessage());
            ex = assertThrows(IllegalArgumentException.class, () -> e.amax(new int[] {0}, false));
            assertTrue(ex.getMessage().contains("amax") && ex.getMessage().contains("dim 0"), ex.getMessage());
        }
    }

    @Test
    void meanOfAnIntegerTensorNamesTheOpAndDtype() {
        try (Tensor x = Torch.tensor(1L, 2L)) {
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, x::mean);
            assertTrue(ex.getMessage().contains("mean") && ex.getMessage().contains("int64"), ex.getMessage());
        }
    }

    @Test
    void badDimNamesTheOpAndTheValidRange() {
        try (Tensor x = Torch.zeros(2, 3)) {
            IndexOutOfBoundsException ex = assertThrows(IndexOutOfBoundsException.class, () -> x.softmax(2));
            assertTrue(ex.getMessage().contains("softmax") && ex.getMessage().contains("[-2, 1]"), ex.getMessage());
        }
    }

    @Test
    void emptyReductionsGiveTheirIdentities() {
        try (Tensor e = Torch.zeros(0, 4); Tensor s = e.sum(); Tensor p = e.prod(); Tensor m = e.mean();
             Tensor any = e.any(); Tensor all = e.all()) {
            assertEquals(0.0, s.item());
            assertEquals(1.0, p.item());
            assertTrue(Double.isNaN(m.item()));
            assertEquals(0L, any.itemLong());
            assertEquals(1L, all.itemLong());
        }
    }

    @Test
    void normOrdersFollowTheirDefinitions() {
        try (Tensor x = Torch.tensor(3.0, -4.0, 0.0)) {
            assertEquals(5.0, scalar(x.norm()));
            assertEquals(7.0, scalar(x.norm(1)));
            assertEquals(4.0, scalar(x.norm(Double.POSITIVE_INFINITY)));
            assertEquals(0.0, scalar(x.norm(Double.NEGATIVE_INFINITY)));
            assertEquals(2.0, scalar(x.norm(0)));
            assertEquals(Math.cbrt(27 + 64), scalar(x.norm(3)), 1e-12);
        }
    }

    private static double scalar(Tensor t) {
        try (t) {
            return t.item();
        }
    }

    @Test
    void keepdimAndNegativeDimsShapeTheResultAsPyTorch() {
        try (Tensor x = Torch.zeros(2, 3, 4); Tensor a = x.sum(new int[] {-1, 0}, true); Tensor b = x.sum(-2, false);
             Tensor c = Torch.sum(x)) {
            assertArrayEquals(new long[] {1, 3, 1}, a.shape());
            assertArrayEquals(new long[] {2, 4}, b.shape());
            assertArrayEquals(new long[0], c.shape());
        }
    }
}
