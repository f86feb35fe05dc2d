package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The float64 vector reductions ({@link ReductionF64}) through the public ops, on lengths that cross their blocks,
 * chunks and tails, against sums computed here element by element in double (the formula is the reference; the
 * small-shape PyTorch fixtures are in {@code ReductionsConformanceTest}).
 */
class ReductionF64Test {
    private static final int[] LENGTHS = {1, 2, 7, 8, 9, 511, 512, 513, 8_191, 8_193, 65_537, 200_001};

    private static double[] random(int n, long seed) {
        Random r = new Random(seed);
        double[] x = new double[n];
        for (int i = 0; i < n; i++) x[i] = 0.25 + r.nextGaussian();
        return x;
    }

    /** Within 1e-13 of the sum of magnitudes: a few hundred ulps at most, where a wrong element would be far off. */
    private static void assertClose(String what, double expected, double actual, double magnitude) {
        assertTrue(Math.abs(actual - expected) <= 1e-13 * Math.max(1, magnitude), what + ": expected " + expected + ", got " + actual);
    }

    @Test
    void sumsNormsAndExtremaOfEveryLengthMatchTheElementByElementOnes() {
        for (int n : LENGTHS) {
            double[] x = random(n, n);
            double sum = 0, abs = 0, sq = 0, max = Double.NEGATIVE_INFINITY, min = Double.POSITIVE_INFINITY;
            for (double v : x) {
                sum += v;
                abs += Math.abs(v);
                sq += v * v;
                max = Math.max(max, v);
                min = Math.min(min, v);
            }
            try (Tensor t = Torch.tensor(x, n)) {
                assertEquals(DType.FLOAT64, t.dtype());
                assertClose("sum n=" + n, sum, t.sum().item(), abs);
                assertClose("mean n=" + n, sum / n, t.mean().item(), abs / n);
                assertClose("norm1 n=" + n, abs, t.norm(1).item(), abs);
                assertClose("norm2 n=" + n, Math.sqrt(sq), t.norm().item(), Math.sqrt(sq));
                assertEquals(max, t.amax().item(), 0, "max n=" + n);
                assertEquals(min, t.amin().item(), 0, "min n=" + n);
            }
        }
    }

    @Test
    void rowAndColumnSumsMatchTheElementByElementOnes() {
        for (int[] rc : new int[][] {{300, 2100}, {129, 17}, {1, 5000}, {1000, 1}, {97, 204}, {3, 9}}) {
            int rows = rc[0], cols = rc[1];
            double[] x = random(rows * cols, rows + 31L * cols);
            try (Tensor t = Torch.tensor(x, rows, cols); Tensor bycol = t.sum(new int[] {0}, false); Tensor byrow = t.sum(new int[] {1}, false);
                 Tensor rowMax = t.amax(new int[] {1}, false)) {
                double[] c = bycol.toDoubleArray(), r = byrow.toDoubleArray(), m = rowMax.toDoubleArray();
                for (int j = 0; j < cols; j++) {
                    double want = 0, abs = 0;
                    for (int i = 0; i < rows; i++) {
                        want += x[i * cols + j];
                        abs += Math.abs(x[i * cols + j]);
                    }
                    assertClose("column " + j + " of " + rows + "x" + cols, want, c[j], abs);
                }
                for (int i = 0; i < rows; i++) {
                    double want = 0, abs = 0, max = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < cols; j++) {
                        want += x[i * cols + j];
                        abs += Math.abs(x[i * cols + j]);
                        max = Math.max(max, x[i * cols + j]);
                    }
                    assertClose("row " + i + " of " + rows + "x" + cols, want, r[i], abs);
                    assertEquals(max, m[i], 0, "row max " + i + " of " + rows + "x" + cols);
                }
            }
        }
    }

    /**
     * Column sums (a bias gradient) add each column's rows in row order from zero, bit for bit, at widths around the
     * four-vector blocks held in registers, one vector and the scalar tail, over rows one stride apart: contiguous, padded
     * (a narrowed view), one row, none; a transposed view (columns not contiguous) against the same formula.
     */
    @Test
    void columnSumsAddTheRowsInOrderBitForBit() {
        int l = jdk.incubator.vector.DoubleVector.SPECIES_PREFERRED.length();
        for (int rows : new int[] {0, 1, 2, 97, 300}) {
            for (int cols : new int[] {1, l - 1, l, 4 * l - 1, 4 * l, 4 * l + l + 3, 204, 2100}) {
                for (int pad : new int[] {0, 5}) {
                    int width = cols + pad;
                    double[] x = random(rows * width, rows * 7919L + width);
                    if (rows > 1) x[width + cols - 1] = -0.0;
                    try (Tensor full = Torch.tensor(x, rows, width); Tensor t = full.narrow(1, pad, cols);
                         Tensor s = t.sum(new int[] {0}, false)) {
                        double[] got = s.toDoubleArray();
                        for (int j = 0; j < cols; j++) {
                            double want = 0, abs = 0;
                            for (int i = 0; i < rows; i++) {
                                want += x[i * width + pad + j];
                                abs += Math.abs(x[i * width + pad + j]);
                            }
                            if (cols == 1) { // one column: a reduction along it (the full or the blocked generic sum), not a column sum
                                assertClose("the column of " + rows + "x1 (rows " + width + " apart)", want, got[j], abs);
                                continue;
                            }
                            assertEquals(Double.doubleToLongBits(want), Double.doubleToLongBits(got[j]),
                                    "column " + j + " of " + rows + "x" + cols + " (rows " + width + " apart): " + want + " against " + got[j]);
                        }
                    }
                }
            }
        }
        double[] x = random(51 * 97, 3);
        try (Tensor t = Torch.tensor(x, 51, 97); Tensor tt = t.t(); Tensor s = tt.sum(new int[] {0}, false)) {
            double[] got = s.toDoubleArray();
            for (int j = 0; j < 51; j++) {
                double want = 0, abs = 0;
                for (int i = 0; i < 97; i++) {
                    want += x[j * 97 + i];
                    abs += Math.abs(x[j * 97 + i]);
                }
                assertClose("column " + j + " of a transposed [97, 51]", want, got[j], abs);
            }
        }
    }

    /** A bias gradient of a 3-D activation: the sum over the two outer dimensions, whose rows are not one stride apart. */
    @Test
    void sumOverTwoOuterDimensionsOfAView() {
        double[] x = random(5 * 7 * 24, 11);
        try (Tensor t = Torch.tensor(x, 5, 7, 24); Tensor v = t.narrow(2, 3, 19); Tensor s = v.sum(new int[] {0, 1}, false)) {
            double[] got = s.toDoubleArray();
            for (int k = 0; k < 19; k++) {
                double want = 0, abs = 0;
                for (int i = 0; i < 35; i++) {
                    want += x[i * 24 + 3 + k];
                    abs += Math.abs(x[i * 24 + 3 + k]);
                }
                assertClose("column " + k, want, got[k], abs);
            }
        }
    }

    @Test
    void nanPropagatesThroughMaximaAndSums() {
        double[] x = random(1000, 5);
        x[517] = Double.NaN;
        try (Tensor t = Torch.tensor(x, 1000)) {
            assertTrue(Double.isNaN(t.amax().item()));
            assertTrue(Double.isNaN(t.amin().item()));
            assertTrue(Double.isNaN(t.sum().item()));
        }
    }

    /** Softmax and log-softmax rows against the formulas in double, at lengths around the vector widths and with non-finite entries. */
    @Test
    void softmaxRowsMatchTheFormulas() {
        for (int n : new int[] {1, 3, 8, 15, 16, 17, 100, 1001}) {
            double[] x = random(3 * n, 17L * n);
            x[0] = Double.NEGATIVE_INFINITY; // a masked entry in row 0
            if (n > 1) java.util.Arrays.fill(x, n, 2 * n, Double.NEGATIVE_INFINITY); // row 1 fully masked: NaN
            x[2 * n] = Double.POSITIVE_INFINITY; // row 2 holds +inf: NaN
            try (Tensor t = Torch.tensor(x, 3, n); Tensor p = t.softmax(1); Tensor lp = t.logSoftmax(1)) {
                double[] sm = p.toDoubleArray(), lsm = lp.toDoubleArray();
                for (int r = 0; r < 3; r++) {
                    double max = Double.NEGATIVE_INFINITY, sum = 0;
                    for (int j = 0; j < n; j++) max = Math.max(max, x[r * n + j]);
                    for (int j = 0; j < n; j++) sum += Math.exp(x[r * n + j] - max);
                    for (int j = 0; j < n; j++) {
                        int k = r * n + j;
                        double want = Math.exp(x[k] - max) / sum, wantLog = x[k] - max - Math.log(sum);
                        String at = "n=" + n + " row " + r + " column " + j;
                        if (Double.isNaN(want)) {
                            assertTrue(Double.isNaN(sm[k]), at + ": softmax " + sm[k]);
                        } else {
                            assertEquals(want, sm[k], 1e-15 + 1e-14 * want, at);
                        }
                        if (Double.isNaN(wantLog) || Double.isInfinite(wantLog)) {
                            assertEquals(wantLog, lsm[k], 0, at);
                        } else {
                            assertEquals(wantLog, lsm[k], 1e-14 * Math.max(1, Math.abs(wantLog)), at);
                        }
                    }
                }
            }
        }
    }

    /**
     * argmax/argmin and max/min with indices along rows: lengths across the vector width and its tails, ties (the first
     * index wins), NaN (the first NaN wins), infinities; var/std along rows against the two-pass formula in double.
     */
    @Test
    void argExtremaAndVarianceAlongRowsMatchTheElementByElementOnes() {
        Random r = new Random(5);
        for (int n : new int[] {1, 2, 7, 8, 9, 17, 100, 513, 70_000}) {
            for (int pattern = 0; pattern < 4; pattern++) {
                int rows = 3;
                double[] x = new double[rows * n];
                for (int i = 0; i < x.length; i++) {
                    x[i] = switch (pattern) {
                        case 0 -> r.nextGaussian();
                        case 1 -> r.nextInt(3);
                        case 2 -> r.nextInt(50) == 0 ? Double.NaN : r.nextGaussian();
                        default -> r.nextInt(40) == 0 ? Double.POSITIVE_INFINITY : -r.nextDouble();
                    };
                }
                try (org.jtorch.memory.MemoryScope scope = new org.jtorch.memory.MemoryScope()) {
                    Tensor t = Torch.tensor(x, rows, n);
                    long[] am = t.argmax(1, false).toLongArray();
                    long[] an = t.argmin(1, false).toLongArray();
                    var mx = t.max(1, false);
                    double[] mv = mx.values().toDoubleArray();
                    long[] mi = mx.indices().toLongArray();
                    double[] var = t.var(new int[] {1}, 1, false).toDoubleArray();
                    for (int row = 0; row < rows; row++) {
                        int bestMax = 0, bestMin = 0;
                        for (int i = 1; i < n; i++) {
                            double v = x[row * n + i], bM = x[row * n + bestMax], bm = x[row * n + bestMin];
                            if (v > bM || (v != v && bM == bM)) bestMax = i;
                            if (v < bm || (v != v && bm == bm)) bestMin = i;
                        }
                        String at = "n=" + n + " pattern " + pattern + " row " + row;
                        assertEquals(bestMax, am[row], "argmax " + at);
                        assertEquals(bestMin, an[row], "argmin " + at);
                        assertEquals(bestMax, mi[row], "max index " + at);
                        assertEquals(x[row * n + bestMax], mv[row], 0, "max value " + at);
                        if (pattern >= 2 || n == 1) {
                            // A NaN or infinite element, or no degrees of freedom: NaN, as the definition gives.
                            boolean finite = true;
                            for (int i = 0; i < n; i++) finite &= Double.isFinite(x[row * n + i]);
                            if (!finite || n == 1) assertTrue(Double.isNaN(var[row]), "var " + at + ": got " + var[row]);
                            continue;
                        }
                        // The reference in 34 significant digits, so that its own rounding does not count.
                        java.math.MathContext mc = java.math.MathContext.DECIMAL128;
                        java.math.BigDecimal sum = java.math.BigDecimal.ZERO;
                        for (int i = 0; i < n; i++) sum = sum.add(new java.math.BigDecimal(x[row * n + i]));
                        java.math.BigDecimal mean = sum.divide(java.math.BigDecimal.valueOf(n), mc);
                        java.math.BigDecimal m2 = java.math.BigDecimal.ZERO;
                        for (int i = 0; i < n; i++) {
                            java.math.BigDecimal d = new java.math.BigDecimal(x[row * n + i]).subtract(mean, mc);
                            m2 = m2.add(d.multiply(d, mc), mc);
                        }
                        double expected = m2.divide(java.math.BigDecimal.valueOf(n - 1), mc).doubleValue();
                        assertClose("var " + at, expected, var[row], expected);
                    }
                }
            }
        }
    }
}
