package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The indexing family ({@code index_select, gather, scatter_, scatter_add_, index_add_, index_copy_,
 * index_fill_, masked_select, nonzero, count_nonzero, index, index_put_}) through the public ops on every
 * device: {@code cpu} always and {@code cuda:0}, whose cases are skipped with CUDA's unavailability reason
 * where there is no GPU (never passed).
 *
 * <p>References: each op's definition (PyTorch's documented semantics, e.g. {@code out[i][j] =
 * self[index[i][j]][j]} for gather along dim 0) evaluated in Java on the logical values of a matrix
 * {@code M[r][c] = (7r + 3c) mod 11} (mod 2 for bool), with accumulation as {@code dst + alpha * src}
 * (bool: {@code != 0}). Values stay small integers, so every dtype holds every result exactly and
 * atomic accumulation order cannot change a sum: results compare exactly. Inputs: 10 dtypes,
 * contiguous and transposed matrices (views taken on the device), int32 and stride-2 sliced indices,
 * duplicates with accumulation, negative indices where the op wraps them, empty indices and masks,
 * 0-d selections, a 300 x 257 multi-block case, and out-of-range indices (exception naming the op, the
 * value and the size; destination unchanged) with CUDA's index checks synchronous, as the CPU's are
 * ({@link DeferredIndexCheckTest} covers the deferred default).
 */
class IndexDeviceConformanceTest {
    private static final DType[] DTYPES = {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16, DType.INT64, DType.INT32,
            DType.INT16, DType.INT8, DType.UINT8, DType.BOOL};
    private static final Device CPU = Device.cpu();

    // ------------------------------------------------------------------ inputs and references

    /** Runs {@code op} with CUDA's index checks synchronous, so that a bad index fails the op itself. */
    private static void synchronousChecks(Runnable op) {
        boolean previous = Cuda.setSynchronousIndexChecks(true);
        try {
            op.run();
        } finally {
            Cuda.setSynchronousIndexChecks(previous);
        }
    }

    /** The logical matrix {@code M[r][c]}. */
    private static double[][] matrix(DType t, int rows, int cols) {
        double[][] m = new double[rows][cols];
        for (int r = 0; r < rows; r++) for (int c = 0; c < cols; c++) m[r][c] = ((7L * r + 3L * c) % 11) % (t == DType.BOOL ? 2 : 11);
        return m;
    }

    private static double[] flat(double[][] m) {
        int cols = m.length == 0 ? 0 : m[0].length;
        double[] f = new double[m.length * cols];
        for (int r = 0; r < m.length; r++) System.arraycopy(m[r], 0, f, r * cols, cols);
        return f;
    }

    /** {@code m} on {@code d} as dtype {@code t}: contiguous, or a transposed view of a contiguous {@code m^T} made on the device. */
    private static Tensor onDevice(double[][] m, DType t, boolean transposed, Device d) {
        int rows = m.length, cols = m[0].length;
        if (!transposed) {
            try (Tensor host = Torch.tensor(flat(m), t, rows, cols)) {
                return host.to(d);
            }
        }
        double[][] mt = new double[cols][rows];
        for (int r = 0; r < rows; r++) for (int c = 0; c < cols; c++) mt[c][r] = m[r][c];
        try (Tensor host = Torch.tensor(flat(mt), t, cols, rows); Tensor dev = host.to(d)) {
            return dev.t();
        }
    }

    private static Tensor longs(Device d, long[] v, long... shape) {
        try (Tensor host = Torch.tensor(v, shape)) {
            return host.to(d);
        }
    }

    /** A 1-d index of {@code v} on {@code d}: int64, int32, or an int64 stride-2 slice of a twice as long vector. */
    private static Tensor indexVector(Device d, long[] v, String kind) {
        switch (kind) {
            case "int32" -> {
                int[] iv = new int[v.length];
                for (int i = 0; i < v.length; i++) iv[i] = (int) v[i];
                try (Tensor host = Torch.tensor(iv, v.length)) {
                    return host.to(d);
                }
            }
            case "sliced" -> {
                long[] wide = new long[2 * v.length];
                for (int i = 0; i < v.length; i++) {
                    wide[2 * i] = v[i];
                    wide[2 * i + 1] = 1_000_000; // never read
                }
                try (Tensor w = longs(d, wide, wide.length)) {
                    return w.slice(0, 0, wide.length, 2);
                }
            }
            default -> {
                return longs(d, v, v.length);
            }
        }
    }

    private static double[] host(Tensor t) {
        try (Tensor h = t.to(CPU)) {
            return h.toDoubleArray();
        }
    }

    private static double accumulate(DType t, double dst, double src, double alpha) {
        double v = dst + alpha * src;
        return t == DType.BOOL ? (v != 0 ? 1 : 0) : v;
    }

    private static void assertOnDevice(Tensor r, Device d, DType t, long[] shape) {
        assertEquals(d, r.device(), "device");
        assertEquals(t, r.dtype(), "dtype");
        assertArrayEquals(shape, r.shape(), "shape");
    }

    // ------------------------------------------------------------------ cases

    @TestFactory
    List<DynamicTest> indexSelect() {
        List<DynamicTest> tests = new ArrayList<>();
        long[] idx = {3, 0, 3, 1, 4, 2};
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                for (String kind : new String[] {"int64", "int32", "sliced"}) {
                    for (int dim = 0; dim < 2; dim++) {
                        int dd = dim;
                        add(tests, "indexSelect/" + t + "/" + (transposed ? "transposed" : "contiguous") + "/" + kind + "/dim" + dim, d -> {
                            double[][] m = matrix(t, 5, 6);
                            try (Tensor x = onDevice(m, t, transposed, d); Tensor i = indexVector(d, idx, kind);
                                 Tensor r = x.indexSelect(dd, i)) {
                                long[] shape = dd == 0 ? new long[] {idx.length, 6} : new long[] {5, idx.length};
                                double[] expected = new double[(int) (shape[0] * shape[1])];
                                for (int a = 0; a < shape[0]; a++) {
                                    for (int b = 0; b < shape[1]; b++) {
                                        expected[(int) (a * shape[1] + b)] = dd == 0 ? m[(int) idx[a]][b] : m[a][(int) idx[b]];
                                    }
                                }
                                assertOnDevice(r, d, t, shape);
                                assertArrayEquals(expected, host(r));
                            }
                        });
                    }
                }
            }
        }
        add(tests, "indexSelect/multi-block 300x257 dim1", d -> {
            double[][] m = matrix(DType.FLOAT32, 300, 257);
            long[] iv = new long[257];
            for (int k = 0; k < iv.length; k++) iv[k] = (k * 37L) % 257;
            try (Tensor x = onDevice(m, DType.FLOAT32, true, d); Tensor i = indexVector(d, iv, "int64"); Tensor r = x.indexSelect(1, i)) {
                double[] expected = new double[300 * 257];
                for (int a = 0; a < 300; a++) for (int b = 0; b < 257; b++) expected[a * 257 + b] = m[a][(int) iv[b]];
                assertArrayEquals(expected, host(r));
            }
        });
        add(tests, "indexSelect/empty index", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor i = longs(d, new long[0], 0);
                 Tensor r = x.indexSelect(0, i)) {
                assertOnDevice(r, d, DType.FLOAT32, new long[] {0, 6});
            }
        });
        add(tests, "indexSelect/out of range", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor i = longs(d, new long[] {1, 7, 2}, 3)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.indexSelect(0, i)));
                assertEquals("index_select: index 7 is out of bounds for dimension 0 with size 5", e.getMessage());
            }
        });
        return tests;
    }

    /** {@code [3, 4]} indices into a {@code 5 x 6} matrix along {@code dim}, in range, with repeats. */
    private static long[][] gatherIndex(int dim) {
        long[][] g = new long[3][4];
        for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) g[i][j] = (2L * i + 3L * j) % (dim == 0 ? 5 : 6);
        return g;
    }

    private static long[] flatLongs(long[][] g) {
        long[] f = new long[g.length * g[0].length];
        for (int i = 0; i < g.length; i++) System.arraycopy(g[i], 0, f, i * g[0].length, g[0].length);
        return f;
    }

    @TestFactory
    List<DynamicTest> gather() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                for (int dim = 0; dim < 2; dim++) {
                    int dd = dim;
                    add(tests, "gather/" + t + "/" + (transposed ? "transposed" : "contiguous") + "/dim" + dim, d -> {
                        double[][] m = matrix(t, 5, 6);
                        long[][] g = gatherIndex(dd);
                        // the index as a transposed view of its transpose: strided on the device
                        long[][] gt = new long[4][3];
                        for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) gt[j][i] = g[i][j];
                        try (Tensor x = onDevice(m, t, transposed, d); Tensor it = longs(d, flatLongs(gt), 4, 3); Tensor i = it.t();
                             Tensor r = x.gather(dd, i)) {
                            double[] expected = new double[12];
                            for (int a = 0; a < 3; a++) for (int b = 0; b < 4; b++) expected[a * 4 + b] = dd == 0 ? m[(int) g[a][b]][b] : m[a][(int) g[a][b]];
                            assertOnDevice(r, d, t, new long[] {3, 4});
                            assertArrayEquals(expected, host(r));
                        }
                    });
                }
            }
        }
        add(tests, "gather/negative index is an error", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor i = longs(d, new long[] {0, -1}, 1, 2)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.gather(1, i)));
                assertEquals("gather: index -1 is out of bounds for dimension 1 with size 6", e.getMessage());
            }
        });
        return tests;
    }

    @TestFactory
    List<DynamicTest> scatter() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                for (int dim = 0; dim < 2; dim++) {
                    int dd = dim;
                    String layout = transposed ? "transposed" : "contiguous";
                    add(tests, "scatterAdd/" + t + "/" + layout + "/dim" + dim + "/duplicates", d -> {
                        double[][] m = matrix(t, 5, 6);
                        double[][] src = matrix(t, 4, 5);   // larger than the index: only its [3, 4] corner is read
                        long[][] g = gatherIndex(dd);
                        try (Tensor x = onDevice(m, t, transposed, d); Tensor s = onDevice(src, t, !transposed, d);
                             Tensor i = longs(d, flatLongs(g), 3, 4)) {
                            x.scatterAdd_(dd, i, s);
                            double[][] e = matrix(t, 5, 6);
                            for (int a = 0; a < 3; a++) {
                                for (int b = 0; b < 4; b++) {
                                    int r = dd == 0 ? (int) g[a][b] : a, c = dd == 0 ? b : (int) g[a][b];
                                    e[r][c] = accumulate(t, e[r][c], src[a][b], 1);
                                }
                            }
                            assertArrayEquals(flat(e), host(x));
                        }
                    });
                    add(tests, "scatter/" + t + "/" + layout + "/dim" + dim, d -> {
                        double[][] m = matrix(t, 5, 6);
                        double[][] src = matrix(t, 3, 4);
                        // Distinct targets per column (dim 0) or row (dim 1): with duplicates the written value is
                        // unspecified on CUDA (as PyTorch's scatter_), while the CPU writes the last one.
                        long[][] g = new long[3][4];
                        for (int a = 0; a < 3; a++) for (int b = 0; b < 4; b++) g[a][b] = dd == 0 ? (a + b) % 5 : (a + b) % 6;
                        try (Tensor x = onDevice(m, t, transposed, d); Tensor s = onDevice(src, t, false, d);
                             Tensor i = longs(d, flatLongs(g), 3, 4)) {
                            x.scatter_(dd, i, s);
                            double[][] e = matrix(t, 5, 6);
                            for (int a = 0; a < 3; a++) {
                                for (int b = 0; b < 4; b++) {
                                    if (dd == 0) e[(int) g[a][b]][b] = src[a][b];
                                    else e[a][(int) g[a][b]] = src[a][b];
                                }
                            }
                            assertArrayEquals(flat(e), host(x));
                        }
                    });
                }
            }
        }
        add(tests, "scatterAdd/empty index", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor i = longs(d, new long[0], 0, 6);
                 Tensor s = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d)) {
                x.scatterAdd_(0, i, s);
                assertArrayEquals(flat(matrix(DType.FLOAT32, 5, 6)), host(x));
            }
        });
        add(tests, "scatter/out of range leaves self unchanged", d -> {
            try (Tensor x = onDevice(matrix(DType.INT32, 5, 6), DType.INT32, false, d); Tensor i = longs(d, new long[] {0, 1, 5}, 1, 3);
                 Tensor s = onDevice(matrix(DType.INT32, 1, 3), DType.INT32, false, d)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.scatter_(0, i, s)));
                assertEquals("scatter_: index 5 is out of bounds for dimension 0 with size 5", e.getMessage());
                assertArrayEquals(flat(matrix(DType.INT32, 5, 6)), host(x));
            }
        });
        return tests;
    }

    @TestFactory
    List<DynamicTest> indexAddCopyFill() {
        List<DynamicTest> tests = new ArrayList<>();
        long[] dup = {2, 0, 2, 4};
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                for (int dim = 0; dim < 2; dim++) {
                    int dd = dim;
                    String layout = transposed ? "transposed" : "contiguous";
                    add(tests, "indexAdd/" + t + "/" + layout + "/dim" + dim + "/alpha 2/duplicates", d -> {
                        double[][] m = matrix(t, 5, 6);
                        double[][] src = dd == 0 ? matrix(t, 4, 6) : matrix(t, 5, 4);
                        try (Tensor x = onDevice(m, t, transposed, d); Tensor s = onDevice(src, t, !transposed, d);
                             Tensor i = indexVector(d, dup, t == DType.INT16 ? "int32" : "int64")) {
                            x.indexAdd_(dd, i, s, 2);
                            double[][] e = matrix(t, 5, 6);
                            for (int a = 0; a < src.length; a++) {
                                for (int b = 0; b < src[0].length; b++) {
                                    int r = dd == 0 ? (int) dup[a] : a, c = dd == 0 ? b : (int) dup[b];
                                    e[r][c] = accumulate(t, e[r][c], src[a][b], 2);
                                }
                            }
                            assertArrayEquals(flat(e), host(x));
                        }
                    });
                    add(tests, "indexCopy/" + t + "/" + layout + "/dim" + dim, d -> {
                        long[] unique = {3, 0, 4};
                        double[][] m = matrix(t, 5, 6);
                        double[][] src = dd == 0 ? matrix(t, 3, 6) : matrix(t, 5, 3);
                        try (Tensor x = onDevice(m, t, transposed, d); Tensor s = onDevice(src, t, false, d);
                             Tensor i = indexVector(d, unique, "sliced")) {
                            x.indexCopy_(dd, i, s);
                            double[][] e = matrix(t, 5, 6);
                            for (int a = 0; a < src.length; a++) {
                                for (int b = 0; b < src[0].length; b++) {
                                    if (dd == 0) e[(int) unique[a]][b] = src[a][b];
                                    else e[a][(int) unique[b]] = src[a][b];
                                }
                            }
                            assertArrayEquals(flat(e), host(x));
                        }
                    });
                    add(tests, "indexFill/" + t + "/" + layout + "/dim" + dim + "/negative wraps", d -> {
                        long[] idx = {-1, 1, -5};
                        try (Tensor x = onDevice(matrix(t, 5, 6), t, transposed, d); Tensor i = longs(d, idx, 3)) {
                            x.indexFill_(dd, i, 1);
                            double[][] e = matrix(t, 5, 6);
                            int size = dd == 0 ? 5 : 6;
                            for (long v : idx) {
                                int k = (int) (v < 0 ? v + size : v);
                                for (int o = 0; o < (dd == 0 ? 6 : 5); o++) {
                                    if (dd == 0) e[k][o] = 1;
                                    else e[o][k] = 1;
                                }
                            }
                            assertArrayEquals(flat(e), host(x));
                        }
                    });
                }
            }
        }
        add(tests, "indexAdd/negative index is an error", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor i = longs(d, new long[] {-1}, 1);
                 Tensor s = onDevice(matrix(DType.FLOAT32, 1, 6), DType.FLOAT32, false, d)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.indexAdd_(0, i, s)));
                assertEquals("index_add_: index -1 is out of bounds for dimension 0 with size 5", e.getMessage());
                assertArrayEquals(flat(matrix(DType.FLOAT32, 5, 6)), host(x));
            }
        });
        return tests;
    }

    /**
     * Many threads adding into few elements: on CUDA the atomics under contention, for 8/16-bit dtypes the
     * compare-and-swap on a 32-bit word whose neighbouring elements other threads update at the same time.
     */
    @TestFactory
    List<DynamicTest> accumulationUnderContention() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            add(tests, "scatterAdd/" + t + "/100 rows of ones into 2 rows", d -> {
                int rows = 100, cols = 16;
                long[] idx = new long[rows * cols];
                double[] expected = new double[2 * cols];
                for (int i = 0; i < rows; i++) {
                    for (int j = 0; j < cols; j++) {
                        idx[i * cols + j] = ((long) i * j + i) % 2;
                        expected[(int) (idx[i * cols + j] * cols + j)] += 1;
                    }
                }
                if (t == DType.BOOL) for (int k = 0; k < expected.length; k++) expected[k] = expected[k] != 0 ? 1 : 0;
                try (Tensor x = Torch.zeros(new long[] {2, cols}, t, d); Tensor i = longs(d, idx, rows, cols);
                     Tensor ones = Torch.ones(new long[] {rows, cols}, t, d)) {
                    x.scatterAdd_(0, i, ones);
                    assertArrayEquals(expected, host(x));
                }
            });
        }
        add(tests, "indexAdd/float32/20000 fractional rows into 7 rows, alpha -0.5", d -> {
            int rows = 20_000, cols = 33;
            long[] idx = new long[rows];
            double[] src = new double[rows * cols];
            double[] expected = new double[7 * cols];
            double[] magnitude = new double[7 * cols];
            for (int i = 0; i < rows; i++) {
                idx[i] = (i * 5L) % 7;
                for (int j = 0; j < cols; j++) {
                    src[i * cols + j] = ((i * 0.6180339887498949 + j * 0.4142135623730951) % 1.0) - 0.25;
                    expected[(int) (idx[i] * cols + j)] += -0.5 * (float) src[i * cols + j];
                    magnitude[(int) (idx[i] * cols + j)] += Math.abs(0.5 * src[i * cols + j]);
                }
            }
            try (Tensor x = Torch.zeros(new long[] {7, cols}, DType.FLOAT32, d); Tensor i = longs(d, idx, rows);
                 Tensor hs = Torch.tensor(src, DType.FLOAT32, rows, cols); Tensor s = hs.to(d)) {
                x.indexAdd_(0, i, s, -0.5);
                double[] actual = host(x);
                // float accumulation in any order: within (terms) float roundings of the sum of magnitudes
                for (int k = 0; k < actual.length; k++) {
                    double bound = (rows / 7.0 + 1) * Math.ulp((float) magnitude[k]);
                    assertEquals(expected[k], actual[k], bound, "element " + k);
                }
            }
        });
        return tests;
    }

    @TestFactory
    List<DynamicTest> nonzeroAndMaskedSelect() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                String layout = transposed ? "transposed" : "contiguous";
                add(tests, "nonzero/" + t + "/" + layout, d -> {
                    double[][] m = matrix(t, 5, 6);
                    if (t.isFloatingPoint()) {
                        m[1][1] = -0.0;     // zero
                        m[2][3] = Double.NaN; // nonzero
                    }
                    try (Tensor x = onDevice(m, t, transposed, d); Tensor r = x.nonzero()) {
                        List<Long> e = new ArrayList<>();
                        for (int a = 0; a < 5; a++) for (int b = 0; b < 6; b++) if (m[a][b] != 0 || Double.isNaN(m[a][b])) { e.add((long) a); e.add((long) b); }
                        assertOnDevice(r, d, DType.INT64, new long[] {e.size() / 2, 2});
                        double[] expected = e.stream().mapToDouble(Long::doubleValue).toArray();
                        assertArrayEquals(expected, host(r));
                        assertEquals(e.size() / 2, Backends.of(d).indexing().countNonzero(Dispatcher.view(x)), "countNonzero");
                    }
                });
                add(tests, "maskedSelect/" + t + "/" + layout, d -> {
                    double[][] m = matrix(t, 5, 6);
                    double[][] mask = new double[5][6];
                    for (int a = 0; a < 5; a++) for (int b = 0; b < 6; b++) mask[a][b] = (a * 6 + b) % 3 == 1 ? 1 : 0;
                    try (Tensor x = onDevice(m, t, transposed, d); Tensor k = onDevice(mask, DType.BOOL, !transposed, d);
                         Tensor r = x.maskedSelect(k)) {
                        List<Double> e = new ArrayList<>();
                        for (int a = 0; a < 5; a++) for (int b = 0; b < 6; b++) if (mask[a][b] != 0) e.add(m[a][b]);
                        assertOnDevice(r, d, t, new long[] {e.size()});
                        assertArrayEquals(e.stream().mapToDouble(Double::doubleValue).toArray(), host(r));
                    }
                });
            }
        }
        add(tests, "maskedSelect/broadcast uint8 row mask", d -> {
            double[][] m = matrix(DType.FLOAT32, 5, 6);
            try (Tensor x = onDevice(m, DType.FLOAT32, false, d); Tensor hk = Torch.tensor(new double[] {1, 0, 0, 1, 1, 0}, DType.UINT8, 1, 6);
                 Tensor k = hk.to(d); Tensor r = x.maskedSelect(k)) {
                List<Double> e = new ArrayList<>();
                for (int a = 0; a < 5; a++) for (int b : new int[] {0, 3, 4}) e.add(m[a][b]);
                assertArrayEquals(e.stream().mapToDouble(Double::doubleValue).toArray(), host(r));
            }
        });
        add(tests, "maskedSelect/all false is empty", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor k = Torch.zeros(new long[] {5, 6}, DType.BOOL, d);
                 Tensor r = x.maskedSelect(k)) {
                assertOnDevice(r, d, DType.FLOAT32, new long[] {0});
            }
        });
        add(tests, "nonzero/multi-block 300x257 in row-major order", d -> {
            double[][] m = matrix(DType.FLOAT32, 300, 257);
            try (Tensor x = onDevice(m, DType.FLOAT32, true, d); Tensor r = x.nonzero()) {
                List<Double> e = new ArrayList<>();
                for (int a = 0; a < 300; a++) for (int b = 0; b < 257; b++) if (m[a][b] != 0) { e.add((double) a); e.add((double) b); }
                assertArrayEquals(e.stream().mapToDouble(Double::doubleValue).toArray(), host(r));
            }
        });
        add(tests, "nonzero/all zero and 0-d", d -> {
            try (Tensor z = Torch.zeros(new long[] {4, 3}, DType.INT32, d); Tensor r = z.nonzero();
                 Tensor s = Torch.zeros(new long[0], DType.FLOAT32, d).add(2.0); Tensor rs = s.nonzero()) {
                assertOnDevice(r, d, DType.INT64, new long[] {0, 2});
                assertOnDevice(rs, d, DType.INT64, new long[] {1, 0});
            }
        });
        return tests;
    }

    @TestFactory
    List<DynamicTest> advancedIndexing() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : DTYPES) {
            for (boolean transposed : new boolean[] {false, true}) {
                String layout = transposed ? "transposed" : "contiguous";
                add(tests, "index/" + t + "/" + layout + "/rows,cols with negatives", d -> {
                    double[][] m = matrix(t, 5, 6);
                    long[] rows = {-1, 0, 2, 2}, cols = {5, -6, -2, 1};
                    try (Tensor x = onDevice(m, t, transposed, d); Tensor ri = longs(d, rows, 4); Tensor ci = longs(d, cols, 4);
                         Tensor r = x.index(ri, ci)) {
                        double[] e = new double[4];
                        for (int k = 0; k < 4; k++) e[k] = m[(int) ((rows[k] + 5) % 5)][(int) ((cols[k] + 6) % 6)];
                        assertOnDevice(r, d, t, new long[] {4});
                        assertArrayEquals(e, host(r));
                    }
                });
                add(tests, "index/" + t + "/" + layout + "/[:, idx] and bool mask", d -> {
                    double[][] m = matrix(t, 5, 6);
                    long[] cols = {4, 4, 0};
                    try (Tensor x = onDevice(m, t, transposed, d); Tensor ci = longs(d, cols, 3); Tensor r = x.index(null, ci);
                         Tensor hk = Torch.tensor(new double[] {1, 0, 1, 1, 0}, DType.BOOL, 5); Tensor k = hk.to(d); Tensor rm = x.index(k)) {
                        double[] e = new double[15];
                        for (int a = 0; a < 5; a++) for (int b = 0; b < 3; b++) e[a * 3 + b] = m[a][(int) cols[b]];
                        assertArrayEquals(e, host(r));
                        double[] em = new double[18];
                        int w = 0;
                        for (int a : new int[] {0, 2, 3}) for (int b = 0; b < 6; b++) em[w++] = m[a][b];
                        assertOnDevice(rm, d, t, new long[] {3, 6});
                        assertArrayEquals(em, host(rm));
                    }
                });
                add(tests, "indexPut/" + t + "/" + layout + "/accumulate duplicates", d -> {
                    long[] rows = {1, -4, 3, 1}, cols = {2, 2, -1, 2};
                    double[] vals = {3, 4, 5, 6};
                    try (Tensor x = onDevice(matrix(t, 5, 6), t, transposed, d); Tensor ri = longs(d, rows, 4); Tensor ci = longs(d, cols, 4);
                         Tensor hv = Torch.tensor(vals, t, 4); Tensor v = hv.to(d)) {
                        x.indexPut_(new Tensor[] {ri, ci}, v, true);
                        double[][] e = matrix(t, 5, 6);
                        for (int k = 0; k < 4; k++) {
                            int r = (int) ((rows[k] + 5) % 5), c = (int) ((cols[k] + 6) % 6);
                            e[r][c] = accumulate(t, e[r][c], t == DType.BOOL ? 1 : vals[k], 1);
                        }
                        assertArrayEquals(flat(e), host(x));
                    }
                });
                add(tests, "indexPut/" + t + "/" + layout + "/broadcast value", d -> {
                    long[] rows = {4, 0};
                    try (Tensor x = onDevice(matrix(t, 5, 6), t, transposed, d); Tensor ri = longs(d, rows, 2);
                         Tensor hv = Torch.tensor(new double[] {1, 0, 1, 1, 0, 1}, t, 6); Tensor v = hv.to(d)) {
                        x.indexPut_(new Tensor[] {ri}, v, false);
                        double[][] e = matrix(t, 5, 6);
                        for (long r : rows) e[(int) r] = new double[] {1, 0, 1, 1, 0, 1};
                        assertArrayEquals(flat(e), host(x));
                    }
                });
            }
        }
        add(tests, "index/out of range", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT32, 5, 6), DType.FLOAT32, false, d); Tensor ri = longs(d, new long[] {0, -6}, 2)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.index(ri)));
                assertEquals("index: index -6 is out of bounds for dimension with size 5", e.getMessage());
            }
        });
        add(tests, "indexPut/out of range in the second index leaves self unchanged", d -> {
            try (Tensor x = onDevice(matrix(DType.FLOAT64, 5, 6), DType.FLOAT64, false, d); Tensor ri = longs(d, new long[] {0, 1}, 2);
                 Tensor ci = longs(d, new long[] {2, 6}, 2); Tensor v = Torch.zeros(new long[] {2}, DType.FLOAT64, d)) {
                IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> synchronousChecks(() -> x.indexPut_(new Tensor[] {ri, ci}, v, true)));
                assertEquals("indexPut_: index 6 is out of bounds for dimension with size 6", e.getMessage());
                assertArrayEquals(flat(matrix(DType.FLOAT64, 5, 6)), host(x));
            }
        });
        return tests;
    }
}
