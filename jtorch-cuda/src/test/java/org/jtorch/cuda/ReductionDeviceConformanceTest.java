package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.ReduceOp;
import org.jtorch.ops.Reductions;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The reduction family wired to CUDA ({@code reduce.cu}: sum, prod, mean, amax/amin, p-norms,
 * max/min with indices, argmax/argmin, var/std, logsumexp, softmax/log-softmax, cumsum/cumprod), run
 * through the public ops on every device: {@code cpu} always and {@code cuda:0}. Each cuda case is
 * skipped with CUDA's unavailability reason where there is no GPU (never passed).
 *
 * <p>References: each op's definition evaluated in double on the input's values (the accumulating ones
 * through {@link ReduceOp}'s scalar definitions: identity, combine, finish), grouped by the reduced
 * dimensions, converted to the result dtype by {@code to(dtype)} on the CPU; integer results compared
 * exactly, floating ones within the result dtype's rounding plus, for long sums, an accumulation term
 * proportional to {@code rowLength * max|x|} (the device accumulates 16/32-bit floats in float). On
 * cuda, results must also match the CPU backend's for the same inputs (values, dtype and shape).
 * Inputs: float32, float64, float16, bfloat16 and integer / bool dtypes; contiguous, transposed and
 * stride-2 sliced layouts; keepdim; several dims, negative dims, all dims; zero-dim, empty and
 * multi-block (36,963-element rows, 999 rows) sizes; NaN and infinities where the op defines them.
 */
class ReductionDeviceConformanceTest {
    private static final Device CUDA = DeviceCases.CUDA;

    // ------------------------------------------------------------------ inputs

    enum Layout { CONTIGUOUS, TRANSPOSED, SLICED }

    /** Deterministic values in [lo, hi): a low-discrepancy sequence, integers rounded down. */
    private static double[] values(long n, double lo, double hi, boolean integral) {
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) {
            double f = (i * 0.6180339887498949 + 0.137) % 1.0;
            v[i] = lo + (hi - lo) * f;
            if (integral) v[i] = Math.floor(v[i]);
        }
        return v;
    }

    /** An input of {@code shape} laid out as {@code layout} on {@code d} (views taken on the device); {@code special} overrides leading values. */
    private static Tensor input(Device d, DType t, long[] shape, Layout layout, double lo, double hi, double... special) {
        long[] base = shape.clone();
        if (layout == Layout.TRANSPOSED) for (int i = 0; i < shape.length; i++) base[i] = shape[shape.length - 1 - i];
        if (layout == Layout.SLICED) base[base.length - 1] *= 2;
        long n = 1;
        for (long s : base) n *= s;
        double[] v = values(n, lo, hi, !t.isFloatingPoint());
        for (int i = 0; i < special.length && i < v.length; i++) v[i] = special[i];
        Tensor b;
        try (Tensor host = Torch.tensor(v, t, base)) {
            b = host.to(d);
        }
        try (b) {
            return switch (layout) {
                case CONTIGUOUS -> b.alias();
                case TRANSPOSED -> {
                    int[] perm = new int[shape.length];
                    for (int i = 0; i < perm.length; i++) perm[i] = perm.length - 1 - i;
                    yield b.permute(perm);
                }
                case SLICED -> b.slice(shape.length - 1, 0, base[base.length - 1], 2);
            };
        }
    }

    /** One input description. */
    record In(DType t, long[] shape, Layout layout, double lo, double hi, double[] special) {
        In(DType t, long[] shape, Layout layout, double lo, double hi) {
            this(t, shape, layout, lo, hi, new double[0]);
        }

        Tensor on(Device d) {
            return input(d, t, shape, layout, lo, hi, special);
        }

        String describe() {
            return t + Arrays.toString(shape) + "/" + layout.name().toLowerCase() + (special.length > 0 ? "/special" : "");
        }
    }

    // ------------------------------------------------------------------ reference grouping

    private static boolean[] reducedDims(int rank, int[] dims) {
        boolean[] r = new boolean[rank];
        if (dims.length == 0) Arrays.fill(r, true);
        for (int d : dims) r[d < 0 ? d + rank : d] = true;
        return r;
    }

    /** The input's values as rows: the kept dims first (row-major, the result's element order), the reduced ones last. */
    private static double[][] rows(Tensor x, boolean[] reduced) {
        int n = x.dim();
        int[] perm = new int[n];
        int k = 0;
        long rowLength = 1;
        for (int d = 0; d < n; d++) if (!reduced[d]) perm[k++] = d;
        for (int d = 0; d < n; d++) if (reduced[d]) { perm[k++] = d; rowLength *= x.size(d); }
        double[] all;
        try (Tensor p = x.permute(perm)) {
            all = p.toDoubleArray();
        }
        int rowsCount = rowLength == 0 ? (int) (x.numel() == 0 ? keptCount(x.shape(), reduced) : 0) : (int) (all.length / rowLength);
        double[][] r = new double[rowsCount][];
        for (int i = 0; i < rowsCount; i++) r[i] = Arrays.copyOfRange(all, (int) (i * rowLength), (int) ((i + 1) * rowLength));
        return r;
    }

    private static long keptCount(long[] shape, boolean[] reduced) {
        long c = 1;
        for (int d = 0; d < shape.length; d++) if (!reduced[d]) c *= shape[d];
        return c;
    }

    private static long[] resultShape(long[] shape, boolean[] reduced, boolean keepdim) {
        List<Long> r = new ArrayList<>();
        for (int d = 0; d < shape.length; d++) {
            if (!reduced[d]) r.add(shape[d]);
            else if (keepdim) r.add(1L);
        }
        return r.stream().mapToLong(Long::longValue).toArray();
    }

    private static double[] cast(double[] r, DType t) {
        try (Tensor ref = Torch.tensor(r, DType.FLOAT64, r.length); Tensor c = ref.to(t)) {
            return c.toDoubleArray();
        }
    }

    // ------------------------------------------------------------------ comparison

    /** The relative rounding of one result element of dtype {@code t} (plus a little for transcendental steps). */
    private static double rtol(DType t) {
        return switch (t) {
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            case FLOAT32 -> 1e-5;
            case FLOAT64 -> 1e-12;
            default -> 0;
        };
    }

    private static double maxAbs(double[][] rows) {
        double m = 0;
        for (double[] row : rows) for (double v : row) m = Math.max(m, Math.abs(v));
        return m;
    }

    private static void assertClose(double[] expected, double[] actual, DType t, double atol, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        double rtol = rtol(t);
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i], a = actual[i];
            if (Double.isNaN(e) && Double.isNaN(a)) continue;
            if (e == a) continue;
            if (t.isFloatingPoint() && Math.abs(a - e) <= atol + rtol * Math.abs(e)) continue;
            fail(what + ": element " + i + " expected " + e + " but was " + a + " (" + t + ", rtol " + rtol + ", atol " + atol
                    + ")\nexpected " + Arrays.toString(Arrays.copyOf(expected, Math.min(12, expected.length)))
                    + "\nactual   " + Arrays.toString(Arrays.copyOf(actual, Math.min(12, actual.length))));
        }
    }

    /**
     * Runs {@code op} on {@code d}, checks dtype, shape and values against the reference, and on CUDA against the CPU
     * backend's result. {@code op} returns one or more results (max/min return values and indices).
     */
    private static void check(Device d, Function<Device, Tensor[]> op, DType[] dtypes, long[][] shapes, double[][] expected,
                              double atol, String what) {
        Tensor[] rs = op.apply(d);
        try {
            for (int i = 0; i < rs.length; i++) {
                String w = what + (rs.length > 1 ? "[" + i + "]" : "");
                assertEquals(d, rs[i].device(), w + ": device");
                assertEquals(dtypes[i], rs[i].dtype(), w + ": dtype");
                assertArrayEquals(shapes[i], rs[i].shape(), w + ": shape");
                double[] actual = rs[i].toDoubleArray();
                assertClose(expected[i], actual, dtypes[i], atol, w + " vs the definition");
                if (d.isCuda()) {
                    Tensor[] cpu = op.apply(Device.cpu());
                    try {
                        assertClose(cpu[i].toDoubleArray(), actual, dtypes[i], atol, w + " vs the CPU backend");
                    } finally {
                        for (Tensor c : cpu) c.close();
                    }
                }
            }
        } finally {
            for (Tensor r : rs) r.close();
        }
    }

    /** Accumulation allowance of a sum-like reduction: float accumulation over {@code rowLength} values of magnitude {@code maxAbs}. */
    private static double sumAtol(DType result, long rowLength, double maxAbs) {
        if (!result.isFloatingPoint()) return 0;
        return (result == DType.FLOAT64 ? 1e-15 : 1e-6) * Math.max(1, rowLength) * maxAbs;
    }

    // ------------------------------------------------------------------ accumulating reductions

    /** The op's scalar definition over one row: identity, combine each element, finish. */
    private static double fold(ReduceOp op, double[] row, double p) {
        double acc = op.identity(p);
        for (double v : row) acc = op.combine(acc, v, p);
        return op.finish(acc, row.length, p);
    }

    private static void reduceCase(List<DynamicTest> tests, String name, ReduceOp op, double p, boolean mean, In in, int[] dims,
                                   boolean keepdim) {
        add(tests, name + "/" + in.describe() + "/dims" + Arrays.toString(dims) + (keepdim ? "/keepdim" : ""), d -> {
            Function<Device, Tensor[]> run = dev -> {
                try (Tensor x = in.on(dev)) {
                    Tensor r = switch (name) {
                        case "sum" -> Reductions.sum(x, dims, keepdim, null);
                        case "prod" -> Reductions.prod(x, dims, keepdim, null);
                        case "mean" -> Reductions.mean(x, dims, keepdim, null);
                        case "amax" -> Reductions.amax(x, dims, keepdim);
                        case "amin" -> Reductions.amin(x, dims, keepdim);
                        case "any" -> Reductions.any(x, dims, keepdim);
                        case "all" -> Reductions.all(x, dims, keepdim);
                        default -> Reductions.norm(x, p, dims, keepdim);
                    };
                    return new Tensor[] {r};
                }
            };
            try (Tensor xc = in.on(Device.cpu())) {
                boolean[] reduced = reducedDims(xc.dim(), dims);
                double[][] rows = rows(xc, reduced);
                DType out = (op == ReduceOp.SUM || op == ReduceOp.PROD) && !in.t().isFloatingPoint() ? DType.INT64
                        : op == ReduceOp.ANY || op == ReduceOp.ALL ? (in.t() == DType.UINT8 ? DType.UINT8 : DType.BOOL) : in.t();
                double[] ref = new double[rows.length];
                for (int i = 0; i < rows.length; i++) ref[i] = mean ? fold(op, rows[i], p) / rows[i].length : fold(op, rows[i], p);
                long rowLength = rows.length == 0 ? 0 : rows[0].length;
                double maxAbs = Math.max(Math.abs(in.lo()), Math.abs(in.hi()));
                double atol = op == ReduceOp.SUM || (op == ReduceOp.NORM && p != 0 && !Double.isInfinite(p)) ? sumAtol(out, rowLength, maxAbs * maxAbs * maxAbs) : 0;
                check(d, run, new DType[] {out}, new long[][] {resultShape(xc.shape(), reduced, keepdim)},
                        new double[][] {cast(ref, out)}, atol, name);
            }
        });
    }

    @TestFactory
    List<DynamicTest> accumulating() {
        List<DynamicTest> tests = new ArrayList<>();
        DType[] floats = {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16};
        int[][] dimSets = {{1}, {0}, {-1, 0}};
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16, DType.INT32, DType.INT64, DType.INT8,
                DType.UINT8, DType.BOOL}) {
            double lo = t == DType.BOOL ? 0 : t == DType.UINT8 ? 0 : -4, hi = t == DType.BOOL ? 2 : 4;
            for (Layout l : Layout.values()) {
                for (int[] dims : dimSets) {
                    reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(t, new long[] {3, 5}, l, lo, hi), dims, dims[0] == 0);
                }
            }
            reduceCase(tests, "amax", ReduceOp.MAX, 0, false, new In(t, new long[] {4, 6}, Layout.TRANSPOSED, lo, hi), new int[] {1}, false);
            reduceCase(tests, "amin", ReduceOp.MIN, 0, false, new In(t, new long[] {4, 6}, Layout.SLICED, lo, hi), new int[] {0}, true);
            if (t != DType.BOOL) {
                double plo = t.isFloatingPoint() ? 0.5 : t == DType.UINT8 ? 1 : -2, phi = t.isFloatingPoint() ? 1.5 : 3;
                reduceCase(tests, "prod", ReduceOp.PROD, 0, false, new In(t, new long[] {4, 5}, Layout.CONTIGUOUS, plo, phi), new int[] {1}, false);
                reduceCase(tests, "prod", ReduceOp.PROD, 0, false, new In(t, new long[] {2, 3, 4}, Layout.TRANSPOSED, plo, phi), new int[] {0, 2}, true);
            }
        }
        for (DType t : floats) {
            reduceCase(tests, "mean", ReduceOp.SUM, 0, true, new In(t, new long[] {2, 3, 4}, Layout.SLICED, -4, 4), new int[] {0, 2}, false);
            for (double p : new double[] {2, 1, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0, 3}) {
                reduceCase(tests, "norm", ReduceOp.NORM, p, false, new In(t, new long[] {3, 7}, Layout.TRANSPOSED, -2, 2, new double[] {0, 0}),
                        new int[] {1}, false);
            }
        }
        // any / all: zeros and NaN (nonzero) placed so that rows differ; uint8 gives uint8, as PyTorch 1.13.
        double[] zerosAndNaN = {0, 0, 0, 0, 0, Double.NaN, 0, 0, 0, 0, 1, 1, 1, 1, 1};
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            reduceCase(tests, "any", ReduceOp.ANY, 0, false, new In(t, new long[] {3, 5}, Layout.CONTIGUOUS, 0, 1, zerosAndNaN), new int[] {1}, false);
            reduceCase(tests, "all", ReduceOp.ALL, 0, false, new In(t, new long[] {3, 5}, Layout.CONTIGUOUS, 0, 1, zerosAndNaN), new int[] {1}, true);
        }
        for (DType t : new DType[] {DType.BOOL, DType.UINT8, DType.INT32, DType.INT64, DType.INT8}) {
            for (Layout l : Layout.values()) {
                reduceCase(tests, "any", ReduceOp.ANY, 0, false, new In(t, new long[] {4, 6}, l, 0, 1.2), new int[] {0}, false);
                reduceCase(tests, "all", ReduceOp.ALL, 0, false, new In(t, new long[] {4, 6}, l, 0, 8), new int[] {-1}, false);
            }
        }
        reduceCase(tests, "any", ReduceOp.ANY, 0, false, new In(DType.FLOAT32, new long[] {3, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        reduceCase(tests, "all", ReduceOp.ALL, 0, false, new In(DType.BOOL, new long[] {3, 0}, Layout.CONTIGUOUS, 0, 2), new int[] {1}, false);
        reduceCase(tests, "all", ReduceOp.ALL, 0, false, new In(DType.INT32, new long[] {36963}, Layout.CONTIGUOUS, 1, 9), new int[0], false);
        reduceCase(tests, "any", ReduceOp.ANY, 0, false, new In(DType.UINT8, new long[] {2, 3, 4}, Layout.TRANSPOSED, 0, 1.1), new int[0], true);
        // Every dim, several dims, zero-dim, empty, many rows, a long row, NaN.
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT32, new long[] {2, 3, 4}, Layout.TRANSPOSED, -4, 4), new int[0], false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.INT32, new long[] {2, 3, 4}, Layout.CONTIGUOUS, -50, 50), new int[] {0, 2}, true);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT64, new long[0], Layout.CONTIGUOUS, -4, 4), new int[0], false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT32, new long[] {3, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.INT64, new long[] {0, 4}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, true);
        reduceCase(tests, "prod", ReduceOp.PROD, 0, false, new In(DType.FLOAT32, new long[] {2, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        reduceCase(tests, "mean", ReduceOp.SUM, 0, true, new In(DType.FLOAT32, new long[] {2, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        reduceCase(tests, "norm", ReduceOp.NORM, 2, false, new In(DType.FLOAT32, new long[] {0, 3}, Layout.CONTIGUOUS, -4, 4), new int[] {0}, false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT32, new long[] {36963}, Layout.CONTIGUOUS, -4, 4), new int[0], false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        reduceCase(tests, "sum", ReduceOp.SUM, 0, false, new In(DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS, -4, 4), new int[] {0}, false);
        reduceCase(tests, "amax", ReduceOp.MAX, 0, false, new In(DType.FLOAT32, new long[] {1000, 300}, Layout.TRANSPOSED, -4, 4), new int[] {1}, false);
        reduceCase(tests, "amin", ReduceOp.MIN, 0, false, new In(DType.INT64, new long[] {5000}, Layout.SLICED, -1000, 1000), new int[] {0}, true);
        reduceCase(tests, "amax", ReduceOp.MAX, 0, false, new In(DType.FLOAT32, new long[] {4, 5}, Layout.CONTIGUOUS, -4, 4,
                new double[] {1, Double.NaN, 2}), new int[] {1}, false);
        reduceCase(tests, "norm", ReduceOp.NORM, Double.POSITIVE_INFINITY, false, new In(DType.FLOAT64, new long[] {4, 5}, Layout.CONTIGUOUS, -4, 4,
                new double[] {1, Double.NaN, Double.NEGATIVE_INFINITY, 3, 4, Double.POSITIVE_INFINITY}), new int[] {1}, false);
        return tests;
    }

    // ------------------------------------------------------------------ max/min with indices, argmax/argmin

    /** Index of the first maximum (minimum) of a row; the first NaN beats every number. */
    private static int argRef(double[] row, boolean max) {
        int best = 0;
        for (int i = 1; i < row.length; i++) {
            double a = row[i], b = row[best];
            if (Double.isNaN(b)) break;
            if (Double.isNaN(a) || (max ? a > b : a < b)) best = i;
        }
        return best;
    }

    private static void argCase(List<DynamicTest> tests, boolean max, boolean withValues, In in, int dim, boolean keepdim) {
        String name = (withValues ? (max ? "max" : "min") : (max ? "argmax" : "argmin"));
        add(tests, name + "/" + in.describe() + "/dim" + dim + (keepdim ? "/keepdim" : ""), d -> {
            Function<Device, Tensor[]> run = dev -> {
                try (Tensor x = in.on(dev)) {
                    if (!withValues) return new Tensor[] {max ? Reductions.argmax(x, dim, keepdim) : Reductions.argmin(x, dim, keepdim)};
                    Reductions.ValuesIndices vi = max ? Reductions.max(x, dim, keepdim) : Reductions.min(x, dim, keepdim);
                    return new Tensor[] {vi.values(), vi.indices()};
                }
            };
            try (Tensor xc = in.on(Device.cpu())) {
                boolean[] reduced = xc.dim() == 0 ? new boolean[0] : reducedDims(xc.dim(), new int[] {dim});
                double[][] rows = rows(xc, reduced);
                double[] idx = new double[rows.length], vals = new double[rows.length];
                for (int i = 0; i < rows.length; i++) {
                    idx[i] = argRef(rows[i], max);
                    vals[i] = rows[i][(int) idx[i]];
                }
                long[] shape = resultShape(xc.shape(), reduced, keepdim);
                if (withValues) {
                    check(d, run, new DType[] {in.t(), DType.INT64}, new long[][] {shape, shape}, new double[][] {vals, idx}, 0, name);
                } else {
                    check(d, run, new DType[] {DType.INT64}, new long[][] {shape}, new double[][] {idx}, 0, name);
                }
            }
        });
    }

    @TestFactory
    List<DynamicTest> extremaWithIndices() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16, DType.INT32, DType.INT64, DType.UINT8,
                DType.INT8}) {
            double lo = t == DType.UINT8 ? 0 : -4, hi = t.isFloatingPoint() ? 4 : 5; // integer values tie often: first occurrence
            for (Layout l : Layout.values()) {
                argCase(tests, true, true, new In(t, new long[] {4, 6}, l, lo, hi), 1, false);
                argCase(tests, false, false, new In(t, new long[] {4, 6}, l, lo, hi), 0, true);
            }
            argCase(tests, false, true, new In(t, new long[] {2, 3, 5}, Layout.TRANSPOSED, lo, hi), -2, true);
            argCase(tests, true, false, new In(t, new long[] {2, 3, 5}, Layout.CONTIGUOUS, lo, hi), 2, false);
        }
        argCase(tests, true, true, new In(DType.BOOL, new long[] {3, 4}, Layout.CONTIGUOUS, 0, 2), 1, false);
        argCase(tests, true, true, new In(DType.FLOAT32, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4,
                new double[] {1, Double.NaN, 2, Double.NaN}), 1, false);
        argCase(tests, false, false, new In(DType.FLOAT64, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4,
                new double[] {5, Double.NEGATIVE_INFINITY, Double.NaN, Double.NEGATIVE_INFINITY}), 1, false);
        argCase(tests, true, false, new In(DType.FLOAT32, new long[] {36963}, Layout.CONTIGUOUS, -4, 4), 0, false);
        argCase(tests, false, true, new In(DType.INT64, new long[] {1000, 300}, Layout.TRANSPOSED, -5, 5), 0, false);
        argCase(tests, true, true, new In(DType.FLOAT32, new long[0], Layout.CONTIGUOUS, -4, 4), 0, false);
        argCase(tests, true, true, new In(DType.FLOAT32, new long[] {0, 3}, Layout.CONTIGUOUS, -4, 4), 1, true);
        return tests;
    }

    // ------------------------------------------------------------------ variance, logsumexp

    private static double varianceRef(double[] row, double correction) {
        double s = 0;
        for (double v : row) s += v;
        double mean = s / row.length, m2 = 0;
        for (double v : row) m2 += (v - mean) * (v - mean);
        return m2 / Math.max(0, row.length - correction);
    }

    private static double logsumexpRef(double[] row) {
        double m = Double.NEGATIVE_INFINITY;
        for (double v : row) m = Math.max(m, v);
        double shift = Double.isInfinite(m) ? 0 : m, s = 0;
        for (double v : row) s += Math.exp(v - shift);
        return Math.log(s) + shift;
    }

    private static void statCase(List<DynamicTest> tests, String name, double correction, In in, int[] dims, boolean keepdim) {
        add(tests, name + (name.equals("logsumexp") ? "" : "/correction" + correction) + "/" + in.describe() + "/dims" + Arrays.toString(dims)
                + (keepdim ? "/keepdim" : ""), d -> {
            Function<Device, Tensor[]> run = dev -> {
                try (Tensor x = in.on(dev)) {
                    return new Tensor[] {switch (name) {
                        case "var" -> Reductions.var(x, dims, correction, keepdim);
                        case "std" -> Reductions.std(x, dims, correction, keepdim);
                        default -> Reductions.logsumexp(x, dims, keepdim);
                    }};
                }
            };
            try (Tensor xc = in.on(Device.cpu())) {
                boolean[] reduced = reducedDims(xc.dim(), dims);
                double[][] rows = rows(xc, reduced);
                DType out = in.t().isFloatingPoint() ? in.t() : Torch.defaultDtype();
                double[] ref = new double[rows.length];
                for (int i = 0; i < rows.length; i++) {
                    ref[i] = switch (name) {
                        case "var" -> varianceRef(rows[i], correction);
                        case "std" -> Math.sqrt(varianceRef(rows[i], correction));
                        default -> logsumexpRef(rows[i]);
                    };
                }
                long rowLength = rows.length == 0 ? 0 : rows[0].length;
                double atol = name.equals("logsumexp") ? 0 : 1e-12 * Math.max(1, rowLength);
                check(d, run, new DType[] {out}, new long[][] {resultShape(xc.shape(), reduced, keepdim)}, new double[][] {cast(ref, out)},
                        atol, name);
            }
        });
    }

    @TestFactory
    List<DynamicTest> statistics() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (Layout l : Layout.values()) {
                statCase(tests, "var", 1, new In(t, new long[] {3, 6}, l, -4, 4), new int[] {1}, false);
                statCase(tests, "std", 0, new In(t, new long[] {3, 6}, l, -4, 4), new int[] {0}, true);
                statCase(tests, "logsumexp", 0, new In(t, new long[] {3, 6}, l, -4, 4), new int[] {-1}, false);
            }
            statCase(tests, "var", 1, new In(t, new long[] {2, 3, 4}, Layout.TRANSPOSED, -4, 4), new int[] {0, 2}, true);
            statCase(tests, "logsumexp", 0, new In(t, new long[] {2, 3, 4}, Layout.CONTIGUOUS, -4, 4), new int[] {0, 1}, false);
        }
        statCase(tests, "logsumexp", 0, new In(DType.INT32, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        statCase(tests, "logsumexp", 0, new In(DType.FLOAT32, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4, new double[] {
                Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.POSITIVE_INFINITY, 1, 2, 3, 1000, 1000, -1000, 0}), new int[] {1}, false);
        statCase(tests, "logsumexp", 0, new In(DType.FLOAT32, new long[] {2, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        statCase(tests, "var", 1, new In(DType.FLOAT32, new long[] {2, 0}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        statCase(tests, "var", 1, new In(DType.FLOAT32, new long[] {3, 1}, Layout.CONTIGUOUS, -4, 4), new int[] {1}, false);
        statCase(tests, "var", 0, new In(DType.FLOAT32, new long[] {36963}, Layout.CONTIGUOUS, 100, 108), new int[0], false);
        statCase(tests, "std", 1, new In(DType.FLOAT64, new long[0], Layout.CONTIGUOUS, -4, 4), new int[0], false);
        statCase(tests, "logsumexp", 0, new In(DType.FLOAT32, new long[] {999, 37}, Layout.TRANSPOSED, -4, 4), new int[] {0}, true);
        return tests;
    }

    // ------------------------------------------------------------------ softmax, scans

    /** Results along {@code dim}: compares the result read with {@code dim} last (row-major) to per-row references. */
    private static void alongCase(List<DynamicTest> tests, String name, In in, int dim, DType dtype) {
        add(tests, name + "/" + in.describe() + "/dim" + dim + (dtype != null ? "/dtype=" + dtype : ""), d -> {
            try (Tensor xc = in.on(Device.cpu())) {
                int rank = xc.dim();
                int wd = rank == 0 ? 0 : dim < 0 ? dim + rank : dim;
                int[] perm = new int[rank];
                for (int i = 0, k = 0; i < rank; i++) if (i != wd) perm[k++] = i;
                if (rank > 0) perm[rank - 1] = wd;
                Function<Device, Tensor[]> run = dev -> {
                    try (Tensor x = in.on(dev)) {
                        Tensor r = switch (name) {
                            case "softmax" -> Reductions.softmax(x, dim, dtype);
                            case "log_softmax" -> Reductions.logSoftmax(x, dim, dtype);
                            case "cumsum" -> Reductions.cumsum(x, dim, dtype);
                            default -> Reductions.cumprod(x, dim, dtype);
                        };
                        try (r) {
                            return new Tensor[] {r.permute(perm)};
                        }
                    }
                };
                boolean[] reduced = new boolean[rank];
                if (rank > 0) reduced[wd] = true;
                double[][] rows = rows(xc, reduced);
                boolean scan = name.startsWith("cum");
                DType out = dtype != null ? dtype : in.t().isFloatingPoint() ? in.t() : scan ? DType.INT64 : Torch.defaultDtype();
                List<Double> ref = new ArrayList<>();
                for (double[] row : rows) {
                    double m = Double.NEGATIVE_INFINITY, s = 0, acc = name.equals("cumprod") ? 1 : 0;
                    for (double v : row) m = Math.max(m, v);
                    for (double v : row) s += Math.exp(v - m);
                    for (double v : row) {
                        ref.add(switch (name) {
                            case "softmax" -> Math.exp(v - m) / s;
                            case "log_softmax" -> v - m - Math.log(s);
                            case "cumsum" -> acc += v;
                            default -> acc *= v;
                        });
                    }
                }
                long[] permuted = new long[rank];
                for (int i = 0; i < rank; i++) permuted[i] = xc.size(perm[i]);
                long rowLength = rows.length == 0 ? 0 : rows[0].length;
                double atol = switch (name) {
                    case "cumsum" -> sumAtol(out, rowLength, 4);
                    case "softmax" -> 1e-7;
                    // v - (max + log(sum)): a result near 0 is the difference of operands as large as the row's
                    // values, so its rounding is relative to them, not to the result (CUDA's float sum of the
                    // exponentials, as PyTorch's, is rounded at ulp(1)).
                    case "log_softmax" -> 4 * DeviceCases.epsilon(out) * (maxAbs(rows) + 1);
                    default -> 0;
                };
                check(d, run, new DType[] {out}, new long[][] {permuted},
                        new double[][] {cast(ref.stream().mapToDouble(Double::doubleValue).toArray(), out)}, atol, name);
            }
        });
    }

    @TestFactory
    List<DynamicTest> alongDimension() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (Layout l : Layout.values()) {
                alongCase(tests, "softmax", new In(t, new long[] {3, 5}, l, -4, 4), 1, null);
                alongCase(tests, "log_softmax", new In(t, new long[] {3, 5}, l, -4, 4), 0, null);
                alongCase(tests, "cumsum", new In(t, new long[] {3, 5}, l, -4, 4), -1, null);
                alongCase(tests, "cumprod", new In(t, new long[] {3, 5}, l, 0.5, 1.5), 0, null);
            }
            alongCase(tests, "softmax", new In(t, new long[] {2, 3, 4}, Layout.TRANSPOSED, -4, 4), 1, null);
        }
        for (DType t : new DType[] {DType.INT32, DType.INT64, DType.INT8, DType.UINT8}) {
            double lo = t == DType.UINT8 ? 0 : -3;
            alongCase(tests, "cumsum", new In(t, new long[] {4, 6}, Layout.TRANSPOSED, lo, 4), 1, null);
            alongCase(tests, "cumprod", new In(t, new long[] {4, 6}, Layout.SLICED, lo, 3), 1, null);
            alongCase(tests, "cumsum", new In(t, new long[] {4, 6}, Layout.CONTIGUOUS, lo, 4), 0, t);
        }
        alongCase(tests, "cumsum", new In(DType.BOOL, new long[] {3, 4}, Layout.CONTIGUOUS, 0, 2), 1, null);
        alongCase(tests, "softmax", new In(DType.INT32, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4), 1, null);
        alongCase(tests, "log_softmax", new In(DType.FLOAT16, new long[] {3, 4}, Layout.CONTIGUOUS, -4, 4), 1, DType.FLOAT32);
        alongCase(tests, "softmax", new In(DType.FLOAT32, new long[] {4, 3000}, Layout.CONTIGUOUS, -20, 20), 1, null);
        alongCase(tests, "log_softmax", new In(DType.FLOAT32, new long[] {999, 37}, Layout.TRANSPOSED, -4, 4), 0, null);
        alongCase(tests, "cumsum", new In(DType.FLOAT64, new long[] {2000, 3}, Layout.CONTIGUOUS, -4, 4), 0, null);
        alongCase(tests, "softmax", new In(DType.FLOAT32, new long[0], Layout.CONTIGUOUS, -4, 4), 0, null);
        alongCase(tests, "cumsum", new In(DType.FLOAT32, new long[] {3, 0}, Layout.CONTIGUOUS, -4, 4), 1, null);
        alongCase(tests, "softmax", new In(DType.FLOAT32, new long[] {0, 4}, Layout.CONTIGUOUS, -4, 4), 1, null);
        return tests;
    }
}
