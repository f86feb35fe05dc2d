package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.jtorch.op.Expr;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.junit.jupiter.api.Test;

/**
 * The formula declared for each op whose kernels are still hand-written computes, in double, exactly what the
 * hand-written scalar definition ({@link UnaryOp#apply}, {@link BinaryOp#apply}) computes: bit for bit, over
 * signed zeros, infinities, NaN, integers, halves and random values, for each op's parameter cases. The JIT fuses
 * these formulas, so they must be the ops' math, not an approximation of it.
 */
class HandWrittenFormulasTest {
    private static final Map<String, double[][]> PARAMS = Map.of(
            "clamp", new double[][] {{Double.NaN, Double.NaN}, {-1, 2}, {Double.NaN, 0.5}, {1, Double.NaN}, {3, -3}},
            "leaky_relu", new double[][] {{0.01, 0}, {-0.2, 0}},
            "softplus", new double[][] {{1, 20}, {2, 3}, {0.5, 1}},
            "pow_scalar", new double[][] {{0.5, 0}, {-0.5, 0}, {2, 0}, {3, 0}, {-1, 0}, {-2, 0}, {1.7, 0}, {0, 0}, {-3, 0}},
            "add", new double[][] {{1, 0}, {2.5, 0}, {-1, 0}},
            "sub", new double[][] {{1, 0}, {2.5, 0}, {-1, 0}});

    private static double[] values() {
        List<Double> v = new ArrayList<>(List.of(0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 1e-300, -1e-300, 1e300, -1e300,
                Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 20.0, -20.0, 88.0, 710.0));
        Random r = new Random(3);
        for (int i = 0; i < 40; i++) v.add(r.nextGaussian() * (i < 20 ? 2 : 100));
        return v.stream().mapToDouble(Double::doubleValue).toArray();
    }

    private static void assertSameDouble(double expected, double actual, String what) {
        if (Double.isNaN(expected) && Double.isNaN(actual)) return;
        assertEquals(Double.doubleToLongBits(expected), Double.doubleToLongBits(actual), what + ": expected " + expected + ", got " + actual);
    }

    private static boolean hasHandWrittenForm(OpDef op) {
        String key = op.kernel().toUpperCase(Locale.ROOT);
        for (UnaryOp u : UnaryOp.values()) if (u.name().equals(key)) return true;
        for (BinaryOp b : BinaryOp.values()) if (b.name().equals(key)) return true;
        return false;
    }

    private static boolean definedFor(Runnable r) {
        try {
            r.run();
            return true;
        } catch (UnsupportedOperationException | ArithmeticException e) {
            return false;
        }
    }

    @Test
    void everyHandWrittenOpsFormulaIsItsScalarDefinition() {
        double[] values = values();
        int checked = 0;
        for (OpDef op : OpRegistry.all()) {
            if (!op.kind().isPointwise() || op.formula() == null || !hasHandWrittenForm(op)) continue;
            if (!op.rule().admits(org.jtorch.DType.FLOAT32)) continue;
            Expr.ArrayFormula f = op.formula().compileArrays();
            String key = op.kernel().toUpperCase(Locale.ROOT);
            double[][] params = PARAMS.getOrDefault(op.name(), new double[][] {{0, 0}});
            for (double[] p : params) {
                if (op.kind() == OpDef.Kind.UNARY) {
                    UnaryOp u = UnaryOp.valueOf(key);
                    for (double a : values) {
                        assertSameDouble(u.apply(a, p[0], p[1]), f.eval(new double[] {a}, p), op.name() + "(" + a + "; " + p[0] + ", " + p[1] + ")");
                    }
                } else {
                    BinaryOp b = BinaryOp.valueOf(key);
                    for (double a : values) {
                        for (double c : values) {
                            assertSameDouble(b.apply(a, c, p[0]), f.eval(new double[] {a, c}, p), op.name() + "(" + a + ", " + c + "; " + p[0] + ")");
                        }
                    }
                }
            }
            checked++;
        }
        assertTrue(checked >= 50, "formulas checked: " + checked);
    }

    /** The same in integer compute, where the op admits integers: Java's long arithmetic, wrapping, with (long) parameters. */
    @Test
    void everyHandWrittenOpsIntegerFormulaIsItsIntegerDefinition() {
        long[] values = {0, 1, -1, 2, -2, 3, 7, -7, 63, 64, 65, -64, 100, -100, 127, -128, 255, Integer.MAX_VALUE, Integer.MIN_VALUE,
            Long.MAX_VALUE, Long.MIN_VALUE, 123456789012L, -987654321L};
        Map<String, long[][]> params = Map.of(
                "clamp", new long[][] {{Long.MIN_VALUE, Long.MAX_VALUE}, {-1, 2}, {3, -3}},
                "pow_scalar", new long[][] {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {5, 0}},
                "add", new long[][] {{1, 0}, {2, 0}, {-1, 0}},
                "sub", new long[][] {{1, 0}, {2, 0}, {-1, 0}});
        int checked = 0;
        for (OpDef op : OpRegistry.all()) {
            if (!op.kind().isPointwise() || op.formula() == null || !hasHandWrittenForm(op)) continue;
            if (!op.rule().admits(org.jtorch.DType.INT64)) continue;
            Expr.LongArrayFormula f = op.formula().compileLongArrays();
            String key = op.kernel().toUpperCase(Locale.ROOT);
            for (long[] p : params.getOrDefault(op.name(), new long[][] {{0, 0}})) {
                if (op.kind() == OpDef.Kind.UNARY) {
                    UnaryOp u = UnaryOp.valueOf(key);
                    for (long a : values) {
                        long[] expected = new long[1];
                        if (!definedFor(() -> expected[0] = u.applyLong(a, p[0], p[1]))) continue;
                        assertEquals(expected[0], f.eval(new long[] {a}, p), op.name() + "(" + a + "; " + p[0] + ")");
                    }
                } else {
                    BinaryOp b = BinaryOp.valueOf(key);
                    for (long a : values) {
                        for (long c : values) {
                            long[] expected = new long[1];
                            if (!definedFor(() -> expected[0] = b.applyLong(a, c, p[0]))) {
                                // Division by zero: both raise, naming the op.
                                if (c == 0 && op.integerDivision()) {
                                    ArithmeticException e = org.junit.jupiter.api.Assertions.assertThrows(ArithmeticException.class,
                                            () -> f.eval(new long[] {a, c}, p));
                                    assertTrue(e.getMessage().startsWith(op.kernel() + ":"), e.getMessage());
                                }
                                continue;
                            }
                            assertEquals(expected[0], f.eval(new long[] {a, c}, p), op.name() + "(" + a + ", " + c + "; " + p[0] + ")");
                        }
                    }
                }
            }
            checked++;
        }
        assertTrue(checked >= 30, "integer formulas checked: " + checked);
    }
}
