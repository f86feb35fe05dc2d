package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.UnaryOp;
import org.junit.jupiter.api.Test;

/**
 * The float32 vector loops agree bit for bit with the ops' scalar float definitions, for every op with exactly rounded
 * arithmetic, both operands as rows or either one broadcast, and lengths around the vector width (vector body plus
 * tail). Reference: IEEE float arithmetic ({@code a + b}, {@code a + b * alpha}, ...) and the ops' {@code apply}
 * where it is exact in float (comparisons, max/min, threshold_backward, relu, clamp, sqrt); NaNs compare equal
 * whatever their payload.
 */
class VectorF32Test {
    private static final float[] SPECIAL = {0f, -0f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1e-40f, -1e-40f, 3e38f, -3e38f};
    private static final int MAX = 100;
    private static final int[] LENGTHS = {0, 1, 7, 15, 16, 17, 31, 32, 33, 64, 65, 100};

    private final Random random = new Random(7);

    private float value() {
        int k = random.nextInt(8);
        if (k == 0) return SPECIAL[random.nextInt(SPECIAL.length)];
        return (float) (random.nextGaussian() * (k < 4 ? 1 : 1000));
    }

    private MemorySegment row(Arena arena) {
        MemorySegment s = arena.allocate(4L * MAX, 64);
        for (int i = 0; i < MAX; i++) s.set(ElementIO.F32, 4L * i, value());
        return s;
    }

    private static float f(MemorySegment s, long i) {
        return s.get(ElementIO.F32, 4 * i);
    }

    private static float binaryReference(BinaryOp op, float a, float b, float alpha) {
        return switch (op) {
            case ADD -> alpha == 1f ? a + b : a + b * alpha;
            case SUB -> alpha == 1f ? a - b : a - b * alpha;
            case MUL -> a * b;
            case DIV -> a / b;
            default -> (float) op.apply(a, b, alpha);
        };
    }

    @Test
    void binaryRowsAndBroadcastsMatchTheScalarDefinitions() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(4L * MAX, 64);
            for (int trial = 0; trial < 20; trial++) {
                MemorySegment a = row(arena);
                MemorySegment b = row(arena);
                for (BinaryOp op : BinaryOp.values()) {
                    if (!VectorF32.hasBinary(op)) continue;
                    for (float alpha : new float[] {1f, -2.5f}) {
                        for (int pattern = 0; pattern < 4; pattern++) {
                            boolean aConst = (pattern & 1) != 0;
                            boolean bConst = (pattern & 2) != 0;
                            for (int n : LENGTHS) {
                                VectorF32.binary(op, a, 0, aConst, b, 0, bConst, out, 0, n, alpha);
                                for (int i = 0; i < n; i++) {
                                    float x = f(a, aConst ? 0 : i);
                                    float y = f(b, bConst ? 0 : i);
                                    // Both broadcast: one value, from the op's double definition, fills the row.
                                    float expected = aConst && bConst ? (float) op.apply(x, y, alpha) : binaryReference(op, x, y, alpha);
                                    assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(f(out, i)),
                                            () -> op + " alpha " + alpha + " broadcast a " + aConst + " b " + bConst + " n " + n);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void comparisonsMatchTheScalarDefinitions() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(MAX, 64);
            for (int trial = 0; trial < 20; trial++) {
                MemorySegment a = row(arena);
                MemorySegment b = trial % 2 == 0 ? row(arena) : a;
                for (BinaryOp op : BinaryOp.values()) {
                    if (!VectorF32.hasComparison(op)) continue;
                    for (int pattern = 0; pattern < 4; pattern++) {
                        boolean aConst = (pattern & 1) != 0;
                        boolean bConst = (pattern & 2) != 0;
                        for (int n : LENGTHS) {
                            VectorF32.compare(op, a, 0, aConst, b, 0, bConst, out, 0, n);
                            for (int i = 0; i < n; i++) {
                                int expected = op.apply(f(a, aConst ? 0 : i), f(b, bConst ? 0 : i), 1) != 0 ? 1 : 0;
                                assertEquals(expected, out.get(ElementIO.I8, i), op + " broadcast a " + aConst + " b " + bConst + " n " + n);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void exactUnaryOpsMatchTheScalarDefinitions() {
        UnaryOp[] exact = {UnaryOp.NEG, UnaryOp.ABS, UnaryOp.RELU, UnaryOp.LEAKY_RELU, UnaryOp.CLAMP, UnaryOp.SQRT, UnaryOp.RECIPROCAL};
        float[][] params = {{0.01f, 0f}, {-0.5f, 0.75f}, {Float.NaN, 2f}, {-1f, Float.NaN}};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(4L * MAX, 64);
            for (int trial = 0; trial < 20; trial++) {
                MemorySegment x = row(arena);
                for (UnaryOp op : exact) {
                    for (float[] p : params) {
                        for (int n : LENGTHS) {
                            VectorF32.unary(op, x, 0, out, 0, n, p[0], p[1]);
                            for (int i = 0; i < n; i++) {
                                float v = f(x, i);
                                float expected = switch (op) {
                                    case LEAKY_RELU -> v > 0 ? v : v * p[0];
                                    case RECIPROCAL -> 1f / v;
                                    default -> (float) op.apply(v, p[0], p[1]);
                                };
                                assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(f(out, i)),
                                        op + " params " + p[0] + ", " + p[1] + " n " + n + " x " + v);
                            }
                        }
                    }
                }
            }
        }
    }
    /**
     * GELU's tanh form in float32 stays within a few ulps of its definition, evaluated in double as {@code x / (1 +
     * exp(-2z))}, also for negative inputs, where {@code 1 + tanh(z)} cancels (the loop computed that form before:
     * 15 ulps off near x = -4.5, and 0 instead of -4e-16 at x = -7.2).
     */
    @Test
    void geluTanhIsAccurateWhereOnePlusTanhCancels() {
        int n = 1051;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = -7.5f + 0.01f * i;
        try (org.jtorch.Tensor t = org.jtorch.Torch.tensor(x); org.jtorch.Tensor y = t.gelu("tanh")) {
            float[] got = y.toFloatArray();
            for (int i = 0; i < n; i++) {
                double z = Math.sqrt(2 / Math.PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i]);
                float expected = (float) (x[i] / (1 + Math.exp(-2 * z)));
                // exp(-2z) turns the few float roundings in z into about 2|z| float ulps each of relative error.
                assertEquals(expected, got[i], (4 + 6 * Math.abs(z)) * Math.ulp(expected), "gelu_tanh(" + x[i] + ")");
            }
        }
    }
}
