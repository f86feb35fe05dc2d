package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/**
 * The scalar forms of short rows (softmax rows and their exponential sums, short sums, short extrema) against the
 * vector forms they stand in for: the same bits, on every length up to the threshold and one past it, with special
 * values among random ones.
 */
class ShortRowsTest {
    private static final int FL = FloatVector.SPECIES_PREFERRED.length();
    private static final float[] SPECIAL = {-0f, 0f, Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, Float.NaN, -90f, -87.3f, 1e-30f};

    /** {@code n} floats at byte offset 4 (unaligned rows, as a row of a matrix): gaussian, times {@code scale}, with a special value in one row of three. */
    private static MemorySegment row(Arena arena, int n, long seed, float scale) {
        Random r = new Random(seed);
        MemorySegment s = arena.allocate(4L * (n + 1), 64);
        for (int i = 0; i < n; i++) s.set(ElementIO.F32, 4 + 4L * i, scale * (float) r.nextGaussian());
        if (seed % 3 == 0) s.set(ElementIO.F32, 4 + 4L * r.nextInt(n), SPECIAL[r.nextInt(SPECIAL.length)]);
        return s;
    }

    private static void assertSameBits(String what, float expected, float actual) {
        assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(actual), what + ": expected " + expected + ", got " + actual);
    }

    /**
     * Softmax's exponential scales its polynomial by 2^n with one multiply; its bits are those of adding n to the
     * polynomial's exponent field (the form before issue 22, exp26), checked here on every 613th float of [-87.34, 0]
     * (every float there, 1.1 billion, was checked once when the multiply came in).
     */
    @Test
    void softmaxExponentialHasTheExponentFieldFormsBits() {
        int from = Float.floatToRawIntBits(-0f), to = Float.floatToRawIntBits(-87.33654f);
        float[] x = new float[(to - from) / 613 / FL * FL];
        for (int i = 0; i < x.length; i++) x[i] = Float.intBitsToFloat(from + 613 * i);
        float[] e = new float[FL];
        for (int i = 0; i < x.length; i += FL) {
            SoftmaxF32.expNonPositive(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, x, i)).intoArray(e, 0);
            for (int l = 0; l < FL; l++) assertSameBits("exp(" + x[i + l] + ")", exponentFieldExp(x[i + l]), e[l]);
        }
    }

    /** exp(x) for x in [-87.34, 0] as 2^n e^r with n added to the polynomial's exponent field. */
    private static float exponentFieldExp(float x) {
        float rounder = 12582912f;
        float t = Math.fma(x, 1.44269504088896341f, rounder);
        float n = t - rounder;
        float r = Math.fma(n, 2.12194440e-4f, Math.fma(n, -0.693359375f, x));
        float p = 1f / 5040f;
        for (float c : new float[] {1f / 720f, 1f / 120f, 1f / 24f, 1f / 6f, 0.5f, 1f, 1f}) p = Math.fma(p, r, c);
        int ni = Float.floatToRawIntBits(t) - Float.floatToRawIntBits(rounder);
        return Float.intBitsToFloat(Float.floatToRawIntBits(p) + (ni << 23));
    }

    @Test
    void shortSumsHaveTheVectorSumsBits() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n = 0; n <= ReductionF32.SHORT_SUM + 1; n++) {
                for (long seed = 0; seed < 12; seed++) {
                    MemorySegment s = row(arena, Math.max(n, 1), seed * 100 + n, 3f);
                    for (ReductionF32.Term t : ReductionF32.Term.values()) {
                        double want = ReductionF32.vectorSum(s, 4, n, t);
                        assertEquals(Double.doubleToLongBits(want), Double.doubleToLongBits(ReductionF32.sum(s, 4, n, t)),
                                "sum of " + t + " over " + n + " (seed " + seed + ")");
                    }
                }
            }
        }
    }

    @Test
    void shortExtremaHaveTheVectorExtremaBits() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n = 1; n <= 2 * FL + 1; n++) {
                for (long seed = 0; seed < 12; seed++) {
                    MemorySegment s = row(arena, n, seed * 100 + n, 3f);
                    for (boolean max : new boolean[] {true, false}) {
                        assertSameBits((max ? "max" : "min") + " of " + n + " (seed " + seed + ")",
                                ReductionF32.vectorExtremum(s, 4, n, max), ReductionF32.extremum(s, 4, n, max));
                    }
                }
            }
        }
    }

    @Test
    void scalarSoftmaxExponentialHasTheVectorLanesBits() {
        float[] x = new float[FL];
        float[] e = new float[FL];
        for (int i = 0; i <= 200_000; i += FL) {
            for (int l = 0; l < FL; l++) x[l] = (float) (-110.0 * (i + l) / 200_000);
            SoftmaxF32.expNonPositive(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, x, 0)).intoArray(e, 0);
            for (int l = 0; l < FL; l++) assertSameBits("exp(" + x[l] + ")", e[l], SoftmaxF32.expNonPositive(x[l]));
        }
        for (float v : SPECIAL) {
            if (v > 0) continue;
            assertSameBits("exp(" + v + ")", SoftmaxF32.expNonPositive(FloatVector.broadcast(FloatVector.SPECIES_PREFERRED, v)).lane(0),
                    SoftmaxF32.expNonPositive(v));
        }
    }

    @Test
    void shortSoftmaxRowsHaveTheVectorRowsBits() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n = 1; n <= SoftmaxF32.SHORT_ROW + 1; n++) {
                for (long seed = 0; seed < 12; seed++) {
                    MemorySegment in = row(arena, n, seed * 100 + n, 6f);
                    for (boolean log : new boolean[] {false, true}) {
                        MemorySegment want = arena.allocate(4L * n), got = arena.allocate(4L * n);
                        SoftmaxF32.vectorRow(in, 4, want, 0, n, log);
                        SoftmaxF32.row(in, 4, got, 0, n, log);
                        String what = (log ? "log-softmax" : "softmax") + " of " + n + " (seed " + seed + ")";
                        for (int i = 0; i < n; i++) {
                            assertSameBits(what + " at " + i, want.get(ElementIO.F32, 4L * i), got.get(ElementIO.F32, 4L * i));
                        }
                    }
                    float max = ReductionF32.extremum(in, 4, n, true);
                    assertSameBits("exponential sum of " + n + " (seed " + seed + ")", SoftmaxF32.vectorExpSum(in, 4, n, max),
                            SoftmaxF32.expSum(in, 4, n, max));
                }
            }
        }
    }

    /** Many contiguous rows at once (several of the scalar form's blocks), as log-softmax over classes runs them. */
    @Test
    void blocksOfShortSoftmaxRowsHaveTheVectorRowsBits() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n : new int[] {1, 10, SoftmaxF32.SHORT_ROW}) {
                int rows = 5000 / n + 3;
                MemorySegment in = row(arena, rows * n, n, 5f);
                for (boolean log : new boolean[] {false, true}) {
                    MemorySegment want = arena.allocate(4L * rows * n), got = arena.allocate(4L * rows * n);
                    for (int r = 0; r < rows; r++) SoftmaxF32.vectorRow(in, 4 + 4L * r * n, want, 4L * r * n, n, log);
                    SoftmaxF32.shortRows(in, 4, got, 0, rows, n, log);
                    for (int i = 0; i < rows * n; i++) {
                        assertSameBits((log ? "log-softmax" : "softmax") + " rows of " + n + " at " + i,
                                want.get(ElementIO.F32, 4L * i), got.get(ElementIO.F32, 4L * i));
                    }
                }
            }
        }
    }
}
