package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.jtorch.DType;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.StridedView;
import org.junit.jupiter.api.Test;

/**
 * The generated float32 loops compute each formula function as its double reference does (exactly for the
 * exactly rounded functions, within a few ulps for the transcendentals), with inputs as rows or broadcast, at
 * every length around the vector width (vector body plus masked tail), with shared subexpressions, scalar
 * parameters (None taking the formula's default) and many inputs; and rows the generated loop cannot serve (a
 * strided input, float64) take the reference.
 */
class PointwiseCodegenTest {
    private static final float[] SPECIAL = {0f, -0f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1e-40f, 3e38f, -3e38f};
    private static final int[] LENGTHS = {0, 1, 7, 15, 16, 17, 31, 33, 64, 100};
    private static final int MAX = 100;

    private final Random random = new Random(11);

    private float value() {
        int k = random.nextInt(8);
        if (k == 0) return SPECIAL[random.nextInt(SPECIAL.length)];
        if (k == 1) return random.nextInt(5) - 2;
        return (float) (random.nextGaussian() * (k < 6 ? 2 : 50));
    }

    private MemorySegment row(Arena arena, int n) {
        MemorySegment s = arena.allocate(4L * Math.max(n, 1), 64);
        for (int i = 0; i < n; i++) s.set(ElementIO.F32, 4L * i, value());
        return s;
    }

    private static StridedView view(MemorySegment s, long n, long stride) {
        return new StridedView(s, 0, new long[] {n}, new long[] {stride}, DType.FLOAT32);
    }

    private static float at(MemorySegment s, long i, long stride) {
        return s.get(ElementIO.F32, 4 * i * stride);
    }

    /** Whether {@code fn}'s float form is exactly the double reference rounded once. */
    private static boolean exact(Fn fn) {
        return switch (fn) {
            case EXP, LOG, LOG1P, EXPM1, TANH, SIN, COS, SIGMOID, ERF, GELU, POW -> false;
            default -> true;
        };
    }

    private static void assertClose(String what, float expected, float actual, boolean exact) {
        if (Float.isNaN(expected) || Float.isNaN(actual)) {
            assertEquals(Float.isNaN(expected), Float.isNaN(actual), what + ": expected " + expected + ", got " + actual);
            return;
        }
        if (exact || Float.isInfinite(expected)) {
            assertEquals(expected, actual, 0f, what);
            return;
        }
        // Transcendentals: a few ulps, or an absolute 1e-7 near zero (sin of a large argument, 1 - erf).
        float tolerance = Math.max(8 * Math.ulp(expected), 1e-7f);
        assertTrue(Math.abs(expected - actual) <= tolerance, what + ": expected " + expected + ", got " + actual);
    }

    @Test
    void everyFunctionWithAVectorFormMatchesItsReference() {
        try (Arena arena = Arena.ofConfined()) {
            for (Fn fn : Fn.values()) {
                if (!VectorMath.supports(fn)) continue;
                List<Expr> args = new ArrayList<>();
                for (int k = 0; k < fn.arity(); k++) args.add(new Expr.In(k, "x" + k));
                Expr formula = new Expr.Math(fn, args);
                // The generated row itself, so that no fallback can hide a wrong loop.
                PointwiseCodegen.RowKernel kernel = PointwiseCodegen.kernel(formula, fn.arity(), 0);
                for (int n : LENGTHS) {
                    MemorySegment[] in = new MemorySegment[fn.arity()];
                    MemorySegment[] segs = new MemorySegment[fn.arity() + 1];
                    for (int k = 0; k < in.length; k++) segs[k + 1] = in[k] = row(arena, n);
                    MemorySegment out = arena.allocate(4L * Math.max(n, 1), 64);
                    segs[0] = out;
                    kernel.row(segs, new long[fn.arity() + 1], n, new double[0]);
                    for (int i = 0; i < n; i++) {
                        double a = at(in[0], i, 1);
                        double b = in.length > 1 ? at(in[1], i, 1) : 0;
                        double c = in.length > 2 ? at(in[2], i, 1) : 0;
                        float expected = (float) fn.apply(a, b, c);
                        assertClose(fn + "(" + a + ", " + b + ", " + c + ") at " + i + " of " + n, expected, at(out, i, 1), exact(fn));
                    }
                }
            }
        }
    }

    @Test
    void broadcastInputsSharedSubtreesAndParameters() {
        // where(x0 * x1 > p0, (x0 * x1) + x2, clamp(x2, p1 (None: -1), 3)) with x1 broadcast along the row.
        Expr x0 = new Expr.In(0, "x0");
        Expr x1 = new Expr.In(1, "x1");
        Expr x2 = new Expr.In(2, "x2");
        Expr product = new Expr.Math(Fn.MUL, List.of(x0, x1));
        Expr formula = new Expr.Math(Fn.SELECT, List.of(
                new Expr.Math(Fn.GT, List.of(product, new Expr.Scalar(0, "p0", Double.NaN))),
                new Expr.Math(Fn.ADD, List.of(product, x2)),
                new Expr.Math(Fn.CLAMP, List.of(x2, new Expr.Scalar(1, "p1", -1), new Expr.Const(3)))));
        CpuFormulaKernel kernel = new CpuFormulaKernel(formula, 3);
        Expr.ArrayFormula reference = formula.compileArrays();
        try (Arena arena = Arena.ofConfined()) {
            for (int n : LENGTHS) {
                MemorySegment a = row(arena, n);
                MemorySegment b = row(arena, 1);
                MemorySegment c = row(arena, n);
                MemorySegment out = arena.allocate(4L * Math.max(n, 1), 64);
                double[] params = {0.5, Double.NaN};
                kernel.run(0, DType.FLOAT32, view(out, n, 1), new StridedView[] {view(a, n, 1), view(b, n, 0), view(c, n, 1)}, params);
                MemorySegment direct = arena.allocate(4L * Math.max(n, 1), 64);
                PointwiseCodegen.kernel(formula, 3, 0b010).row(new MemorySegment[] {direct, a, b, c}, new long[4], n, params);
                for (int i = 0; i < n; i++) {
                    // The float loop rounds the product to float before adding: so does the reference here.
                    double p = (float) (at(a, i, 1) * at(b, 0, 0));
                    double expected = reference.eval(new double[] {p, 1, at(c, i, 1)}, params);
                    assertClose("at " + i + " of " + n, (float) expected, at(out, i, 1), true);
                    assertClose("generated at " + i + " of " + n, (float) expected, at(direct, i, 1), true);
                }
            }
        }
    }

    @Test
    void stridedAndDoubleRowsTakeTheReference() {
        Expr formula = new Expr.Math(Fn.TANH, List.of(new Expr.Math(Fn.SUB, List.of(new Expr.In(0, "x0"), new Expr.In(1, "x1")))));
        CpuFormulaKernel kernel = new CpuFormulaKernel(formula, 2);
        try (Arena arena = Arena.ofConfined()) {
            int n = 37;
            MemorySegment a = row(arena, 2 * n);
            MemorySegment b = row(arena, n);
            MemorySegment out = arena.allocate(4L * n, 64);
            kernel.run(0, DType.FLOAT32, view(out, n, 1), new StridedView[] {view(a, n, 2), view(b, n, 1)}, new double[0]);
            for (int i = 0; i < n; i++) {
                float expected = (float) Math.tanh((double) at(a, i, 2) - at(b, i, 1));
                assertClose("strided at " + i, expected, at(out, i, 1), true);
            }
            MemorySegment da = arena.allocate(8L * n, 64);
            MemorySegment db = arena.allocate(8L * n, 64);
            MemorySegment dout = arena.allocate(8L * n, 64);
            for (int i = 0; i < n; i++) {
                da.set(ElementIO.F64, 8L * i, random.nextGaussian());
                db.set(ElementIO.F64, 8L * i, random.nextGaussian());
            }
            StridedView[] in = {
                new StridedView(da, 0, new long[] {n}, new long[] {1}, DType.FLOAT64),
                new StridedView(db, 0, new long[] {n}, new long[] {1}, DType.FLOAT64)};
            kernel.run(0, DType.FLOAT64, new StridedView(dout, 0, new long[] {n}, new long[] {1}, DType.FLOAT64), in, new double[0]);
            for (int i = 0; i < n; i++) {
                double expected = Math.tanh(da.get(ElementIO.F64, 8L * i) - db.get(ElementIO.F64, 8L * i));
                assertEquals(expected, dout.get(ElementIO.F64, 8L * i), 0.0, "float64 at " + i);
            }
        }
    }

    @Test
    void generatedKernelsAreCachedPerFormulaAndBroadcastPattern() {
        Expr formula = new Expr.Math(Fn.ADD, List.of(new Expr.In(0, "x0"), new Expr.Math(Fn.EXP, List.of(new Expr.In(1, "x1")))));
        assertSame(PointwiseCodegen.kernel(formula, 2, 0), PointwiseCodegen.kernel(formula, 2, 0));
        assertTrue(PointwiseCodegen.kernel(formula, 2, 0) != PointwiseCodegen.kernel(formula, 2, 2));
    }
}
