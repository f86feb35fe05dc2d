package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/**
 * The float32 vector reductions and softmax ({@link ReductionF32}, {@link SoftmaxF32}) through the public ops, on
 * sizes that cross their blocks, chunks and tails, against references computed here in double from the same floats
 * (the formula is the reference; the small-shape PyTorch fixtures are in {@code ReductionsConformanceTest}).
 */
class ReductionF32Test {
    private static final int[] LENGTHS = {1, 2, 15, 16, 17, 63, 1023, 1024, 1025, 16_383, 16_385, 65_537, 200_001};

    private static float[] random(int n, long seed, float offset) {
        Random r = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = offset + (float) r.nextGaussian();
        return x;
    }

    private static void assertClose(String what, double expected, double actual, double rel) {
        assertTrue(Math.abs(actual - expected) <= rel * Math.max(1, Math.abs(expected)),
                what + ": expected " + expected + ", got " + actual);
    }

    /**
     * 1e7 values in [0, 1): a sequential f32 sum drifts by about 1e-3 relative here (each add to a total near 5e6
     * rounds to 0.25), while a cascaded sum stays near 1e-7 (PyTorch's float sum gives 4.999e6 within 1e-7 too).
     * The bound 1e-6 fails the naive sum and passes the cascade with room.
     */
    @Test
    void tenMillionFloatSumMatchesDoubleWithinOnePartPerMillion() {
        Torch.manualSeed(3);
        try (Tensor x = Torch.rand(10_000_000); Tensor s = x.sum()) {
            double exact = 0;
            for (float v : x.toFloatArray()) exact += v;
            assertClose("sum", exact, s.item(), 1e-6);
        }
    }

    @Test
    void sumsAndNormsOfEveryLengthMatchDouble() {
        for (int n : LENGTHS) {
            float[] x = random(n, n, 0.25f);
            double sum = 0, abs = 0, sq = 0, max = Double.NEGATIVE_INFINITY, min = Double.POSITIVE_INFINITY;
            for (float v : x) {
                sum += v;
                abs += Math.abs(v);
                sq += (double) v * v;
                max = Math.max(max, Math.abs(v));
                min = Math.min(min, Math.abs(v));
            }
            try (Tensor t = Torch.tensor(x)) {
                assertClose("sum n=" + n, sum, t.sum().item(), 1e-6 * Math.max(1, abs / Math.max(1, Math.abs(sum))));
                assertClose("norm1 n=" + n, abs, t.norm(1).item(), 1e-6);
                assertClose("norm2 n=" + n, Math.sqrt(sq), t.norm().item(), 1e-6);
                assertEquals((float) max, t.norm(Double.POSITIVE_INFINITY).item(), 0, "norm inf n=" + n);
                assertEquals((float) min, t.norm(Double.NEGATIVE_INFINITY).item(), 0, "norm -inf n=" + n);
            }
        }
    }

    /** Two-pass variance in double; the input sits at 1000 + N(0, 1), where a one-pass sum of squares would cancel. */
    @Test
    void varianceOfEveryLengthMatchesTwoPassDouble() {
        for (int n : LENGTHS) {
            if (n < 2) continue;
            float[] x = random(n, 7 * n, 1000f);
            double mean = 0;
            for (float v : x) mean += v;
            mean /= n;
            double m2 = 0;
            for (float v : x) m2 += (v - mean) * (v - mean);
            try (Tensor t = Torch.tensor(x); Tensor rows = Torch.tensor(x).view(1, n)) {
                assertClose("var n=" + n, m2 / (n - 1), t.var().item(), 1e-5);
                assertClose("std rows n=" + n, Math.sqrt(m2 / n), rows.std(new int[] {1}, 0, false).item(), 1e-5);
            }
        }
    }

    /** First occurrence on ties, the first NaN over every number; the winner placed in each block, chunk and tail. */
    @Test
    void argmaxAndArgminFindTheFirstOccurrence() {
        for (int n : LENGTHS) {
            for (int at : new int[] {0, n / 3, n - 1}) {
                float[] x = random(n, n + at, 0f);
                x[at] = 100f;
                x[n - 1 - (n - 1 - at) / 2] = 100f; // a tie at or after the first
                try (Tensor t = Torch.tensor(x)) {
                    assertEquals(at, t.argmax().item(), "argmax n=" + n + " at " + at);
                    assertEquals(100f, t.max().item(), 0);
                }
                for (int i = 0; i < n; i++) x[i] = -x[i];
                try (Tensor t = Torch.tensor(x)) {
                    assertEquals(at, t.argmin().item(), "argmin n=" + n + " at " + at);
                }
                if (n > 2) {
                    x[n - 1] = Float.NaN;
                    x[n / 2] = Float.NaN;
                    try (Tensor t = Torch.tensor(x)) {
                        assertEquals(n / 2, t.argmax().item(), "argmax with NaN n=" + n);
                        assertEquals(n / 2, t.argmin().item(), "argmin with NaN n=" + n);
                    }
                }
            }
        }
    }

    /** Column sums (dim 0) over more rows than one partial holds and more columns than one strip, odd tails. */
    @Test
    void columnSumsMatchDouble() {
        for (int[] rc : new int[][] {{300, 2100}, {129, 17}, {1, 5000}, {1000, 1}}) {
            int rows = rc[0], cols = rc[1];
            float[] x = random(rows * cols, rows + cols, 0.5f);
            try (Tensor t = Torch.tensor(x, rows, cols); Tensor s = t.sum(new int[] {0}, false)) {
                float[] got = s.toFloatArray();
                for (int j = 0; j < cols; j++) {
                    double want = 0, abs = 0;
                    for (int r = 0; r < rows; r++) {
                        want += x[r * cols + j];
                        abs += Math.abs(x[r * cols + j]);
                    }
                    assertClose("column " + j + " of " + rows + "x" + cols, want, got[j], 1e-6 * Math.max(1, abs));
                }
            }
        }
    }

    /**
     * The reference order of a float32 column sum: each column adds its rows in order into a partial that joins the
     * column's total every 128 rows, all in float.
     */
    private static float columnSumInOrder(float[] x, int rows, long firstAt, java.util.function.IntToLongFunction rowAt) {
        float total = 0;
        for (int k0 = 0; k0 < rows; k0 += 128) {
            float partial = 0;
            for (int k = k0; k < Math.min(rows, k0 + 128); k++) partial += x[(int) (firstAt + rowAt.applyAsLong(k))];
            total += partial;
        }
        return total;
    }

    /**
     * Column sums (a bias gradient) bit for bit in that order, at widths around the four-vector blocks held in
     * registers, one vector and the scalar tail, and past a strip; rows around the 128-row flush; rows one stride apart
     * (contiguous, a narrowed view), rows over two reduced dims that do not coalesce, and a kept outer dim.
     */
    @Test
    void columnSumsAddTheRowsInTheirOrderBitForBit() {
        int l = FloatVector.SPECIES_PREFERRED.length();
        for (int rows : new int[] {0, 1, 2, 127, 128, 129, 300}) {
            for (int cols : new int[] {2, l - 1, l, 4 * l - 1, 4 * l, 5 * l + 3, 204, 2049}) {
                for (int pad : new int[] {0, 5}) {
                    int width = cols + pad;
                    float[] x = random(rows * width, rows * 7919L + width, 0.25f);
                    if (rows > 1) x[width + pad + cols - 1] = -0.0f;
                    try (Tensor full = Torch.tensor(x, rows, width); Tensor t = full.narrow(1, pad, cols);
                         Tensor s = t.sum(new int[] {0}, false)) {
                        float[] got = s.toFloatArray();
                        for (int j = 0; j < cols; j++) {
                            float want = columnSumInOrder(x, rows, pad + j, k -> (long) k * width);
                            assertEquals(Float.floatToIntBits(want), Float.floatToIntBits(got[j]),
                                    "column " + j + " of " + rows + "x" + cols + " (rows " + width + " apart): " + want + " against " + got[j]);
                        }
                    }
                }
            }
        }
        // [7, 40, 37] narrowed to [7, 39, 37] along dim 1: the reduced dims 0 and 1 do not coalesce (273 rows).
        int a = 7, b = 40, c = 37;
        float[] x = random(a * b * c, 17, 0.25f);
        try (Tensor full = Torch.tensor(x, a, b, c); Tensor t = full.narrow(1, 1, b - 1); Tensor s = t.sum(new int[] {0, 1}, false)) {
            float[] got = s.toFloatArray();
            for (int j = 0; j < c; j++) {
                float want = columnSumInOrder(x, a * (b - 1), c + j, k -> (long) (k / (b - 1)) * b * c + (long) (k % (b - 1)) * c);
                assertEquals(Float.floatToIntBits(want), Float.floatToIntBits(got[j]), "column " + j + " of dims 0, 1 of a narrowed [7, 40, 37]");
            }
        }
        // dim 1 of [3, 129, 67]: a kept outer dim, one column sum per outer index.
        float[] y = random(3 * 129 * 67, 19, 0.25f);
        try (Tensor t = Torch.tensor(y, 3, 129, 67); Tensor s = t.sum(new int[] {1}, false)) {
            float[] got = s.toFloatArray();
            for (int o = 0; o < 3; o++) {
                for (int j = 0; j < 67; j++) {
                    float want = columnSumInOrder(y, 129, (long) o * 129 * 67 + j, k -> (long) k * 67);
                    assertEquals(Float.floatToIntBits(want), Float.floatToIntBits(got[o * 67 + j]), "[" + o + ", " + j + "] of dim 1 of [3, 129, 67]");
                }
            }
        }
    }

    @Test
    void rowArgmaxMatchesScalarScan() {
        int rows = 37, cols = 1000;
        float[] x = random(rows * cols, 11, 0f);
        for (int r = 0; r < rows; r++) x[r * cols + (r * 31) % cols] = 50f;
        try (Tensor t = Torch.tensor(x, rows, cols); Tensor idx = t.argmax(1, false)) {
            long[] got = idx.toLongArray();
            for (int r = 0; r < rows; r++) assertEquals((r * 31) % cols, got[r], "row " + r);
        }
    }

    /** argmax/argmin/max along dim 1 of [3, 70, 2100] (strips, tails, ties, a NaN) against a scalar scan. */
    @Test
    void argReductionsAlongAnInnerDimensionMatchScalarScan() {
        int outer = 3, len = 70, inner = 2100;
        float[] x = random(outer * len * inner, 9, 0f);
        for (int i = 0; i < x.length; i += 7) x[i] = Math.round(x[i]); // ties
        x[(1 * len + 33) * inner + 2099] = Float.NaN;
        try (Tensor t = Torch.tensor(x, outer, len, inner); Tensor am = t.argmax(1, false); Tensor an = t.argmin(1, false);
             Tensor mx = t.amax(new int[] {1}, false)) {
            long[] gotMax = am.toLongArray(), gotMin = an.toLongArray();
            float[] gotVal = mx.toFloatArray();
            for (int o = 0; o < outer; o++) {
                for (int j = 0; j < inner; j++) {
                    int bi = 0, wi = 0;
                    for (int k = 1; k < len; k++) {
                        float v = x[(o * len + k) * inner + j];
                        float b = x[(o * len + bi) * inner + j], w = x[(o * len + wi) * inner + j];
                        // PyTorch's rule: strictly better, or the first NaN.
                        if (v > b || (v != v && b == b)) bi = k;
                        if (v < w || (v != v && w == w)) wi = k;
                    }
                    assertEquals(bi, gotMax[o * inner + j], "argmax at " + o + "," + j);
                    assertEquals(wi, gotMin[o * inner + j], "argmin at " + o + "," + j);
                    assertEquals(x[(o * len + bi) * inner + j], gotVal[o * inner + j], 0);
                }
            }
        }
    }

    /** exp(x) for x <= 0 within 1 ulp of Math.exp (whose result is within 1 ulp of exact), 0 below the normals. */
    @Test
    void softmaxExponentialIsWithinOneUlpOnTheNonPositiveLine() {
        int fl = FloatVector.SPECIES_PREFERRED.length();
        int n = 400_000 - 400_000 % fl;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (-104.0 * i / (n - 1));
        double worst = 0;
        float at = 0;
        float[] e = new float[fl];
        for (int i = 0; i < n; i += fl) {
            SoftmaxF32.expNonPositive(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, x, i)).intoArray(e, 0);
            for (int l = 0; l < fl; l++) {
                float v = x[i + l];
                double exact = Math.exp(v);
                if (v < -87.33654f) {
                    assertEquals(0f, e[l], 0, "exp(" + v + ") flushes to 0");
                    continue;
                }
                double u = Math.abs(e[l] - exact) / Math.ulp((float) exact);
                if (u > worst) {
                    worst = u;
                    at = v;
                }
            }
        }
        assertTrue(worst <= 1.0, "exp: " + worst + " ulps at x = " + at);
        float[] special = new float[fl];
        special[0] = Float.NEGATIVE_INFINITY;
        special[1] = Float.NaN;
        special[2] = -0f;
        SoftmaxF32.expNonPositive(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, special, 0)).intoArray(e, 0);
        assertEquals(0f, e[0], 0);
        assertTrue(Float.isNaN(e[1]));
        assertEquals(1f, e[2], 0);
    }

    /** Softmax and log-softmax along every dimension of a contiguous 3-d tensor (odd sizes: masked tails) against double. */
    @Test
    void softmaxAlongEveryDimensionMatchesDouble() {
        long[] shape = {3, 37, 19};
        float[] x = random(3 * 37 * 19, 5, 0f);
        for (int i = 0; i < x.length; i++) x[i] *= 4;
        for (int dim = 0; dim < 3; dim++) {
            for (boolean log : new boolean[] {false, true}) {
                try (Tensor t = Torch.tensor(x, shape); Tensor y = log ? t.logSoftmax(dim) : t.softmax(dim)) {
                    float[] got = y.toFloatArray();
                    double[] want = softmaxReference(x, shape, dim, log);
                    for (int i = 0; i < x.length; i++) {
                        assertClose((log ? "logSoftmax" : "softmax") + " dim " + dim + " at " + i, want[i], got[i], 2e-6);
                    }
                }
            }
        }
    }

    @Test
    void softmaxOfARowWithInfinityOrNanIsNanAsPyTorch() {
        float[] x = {1f, Float.POSITIVE_INFINITY, 2f};
        try (Tensor t = Torch.tensor(x); Tensor y = t.softmax(0)) {
            for (float v : y.toFloatArray()) assertTrue(Float.isNaN(v), "PyTorch 1.13: softmax([1, inf, 2]) is all NaN");
        }
        float[] big = random(100, 1, 0f);
        big[40] = Float.NaN;
        try (Tensor t = Torch.tensor(big); Tensor y = t.softmax(0)) {
            for (float v : y.toFloatArray()) assertTrue(Float.isNaN(v));
        }
    }

    /**
     * Rows whose maximum is not finite are NaN throughout in softmax and log-softmax (PyTorch 1.13: a row of -inf
     * gives NaN, -inf - -inf), while -inf entries beside finite ones give exact zeros (an attention mask); rows past
     * a vector's width, with the odd entry at the end (the masked tail).
     */
    @Test
    void softmaxRowsWithNonFiniteMaximaAreNanAndMaskedEntriesZero() {
        int n = 37;
        float[][] rows = new float[4][];
        for (int r = 0; r < 4; r++) rows[r] = random(n, 9 + r, 0f);
        rows[0][n - 1] = Float.POSITIVE_INFINITY;
        rows[1][n - 1] = Float.NaN;
        java.util.Arrays.fill(rows[2], Float.NEGATIVE_INFINITY);
        for (int i = 0; i < n; i += 3) rows[3][i] = Float.NEGATIVE_INFINITY;
        float[] x = new float[4 * n];
        for (int r = 0; r < 4; r++) System.arraycopy(rows[r], 0, x, r * n, n);
        for (boolean log : new boolean[] {false, true}) {
            try (Tensor t = Torch.tensor(x, new long[] {4, n}); Tensor y = log ? t.logSoftmax(1) : t.softmax(1)) {
                float[] got = y.toFloatArray();
                for (int i = 0; i < 3 * n; i++) assertTrue(Float.isNaN(got[i]), (log ? "log_softmax" : "softmax") + " at " + i);
                double[] want = softmaxReference(x, new long[] {4, n}, 1, log);
                for (int i = 3 * n; i < 4 * n; i++) {
                    if (x[i] == Float.NEGATIVE_INFINITY) {
                        assertEquals(log ? Float.NEGATIVE_INFINITY : 0f, got[i], 0f, "masked entry " + i);
                    } else {
                        assertClose("row 3 at " + i, want[i], got[i], 2e-6);
                    }
                }
            }
        }
    }

    private static double[] softmaxReference(float[] x, long[] shape, int dim, boolean log) {
        int outer = 1, inner = 1, len = (int) shape[dim];
        for (int d = 0; d < dim; d++) outer *= (int) shape[d];
        for (int d = dim + 1; d < shape.length; d++) inner *= (int) shape[d];
        double[] y = new double[x.length];
        for (int o = 0; o < outer; o++) {
            for (int j = 0; j < inner; j++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int k = 0; k < len; k++) max = Math.max(max, x[(o * len + k) * inner + j]);
                double sum = 0;
                for (int k = 0; k < len; k++) sum += Math.exp(x[(o * len + k) * inner + j] - max);
                for (int k = 0; k < len; k++) {
                    int i = (o * len + k) * inner + j;
                    y[i] = log ? x[i] - max - Math.log(sum) : Math.exp(x[i] - max) / sum;
                }
            }
        }
        return y;
    }

    /**
     * Many short rows (a global average pool: ResNet-20's mean over 8x8 maps, 8192 rows of 64) take
     * {@code CpuReductionKernels.manyShortRowsF32}: each row's sum, 1-norm and 2-norm must have the bits of
     * {@link ReductionF32#shortSum}, the per-row sum the general loop uses for these lengths, whatever the length's tail.
     */
    @Test
    void manyShortRowsHaveTheBitsOfTheShortSum() {
        int rows = (int) CpuReductionKernels.MANY_ROWS + 3;
        for (int n : new int[] {16, 17, 31, 48, 63, 64}) {
            float[] x = random(rows * n, 1000 + n, 0.5f);
            try (Tensor t = Torch.tensor(x).view(rows, n); Tensor sums = t.sum(new int[] {1}, false);
                 Tensor l1 = t.norm(1, new int[] {1}, false); Tensor l2 = t.norm(2, new int[] {1}, false)) {
                float[] s = sums.toFloatArray(), a = l1.toFloatArray(), q = l2.toFloatArray();
                java.lang.foreign.MemorySegment seg = java.lang.foreign.MemorySegment.ofArray(x);
                for (int r = 0; r < rows; r++) {
                    long off = 4L * r * n;
                    assertEquals(ReductionF32.shortSum(seg, off, n, ReductionF32.Term.VALUE), s[r], 0f, "sum row " + r + " n=" + n);
                    assertEquals(ReductionF32.shortSum(seg, off, n, ReductionF32.Term.ABS), a[r], 0f, "1-norm row " + r + " n=" + n);
                    assertEquals((float) Math.sqrt(ReductionF32.shortSum(seg, off, n, ReductionF32.Term.SQUARE)), q[r], 0f,
                            "2-norm row " + r + " n=" + n);
                }
            }
        }
    }

    /** ResNet-20's global average pool, [128, 64, 8, 8] averaged over the map, against double sums of the same floats. */
    @Test
    void globalAveragePoolOfResNet20MatchesDouble() {
        float[] x = random(128 * 64 * 64, 7, -0.25f);
        try (Tensor t = Torch.tensor(x).view(128, 64, 8, 8); Tensor m = t.mean(new int[] {2, 3}, false)) {
            assertEquals(2, m.dim());
            float[] got = m.toFloatArray();
            for (int r = 0; r < 128 * 64; r++) {
                double exact = 0;
                for (int i = 0; i < 64; i++) exact += x[r * 64 + i];
                assertClose("mean of plane " + r, exact / 64, got[r], 1e-6);
            }
        }
    }
}
