package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
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
            case EXP, LOG, LOG1P, EXPM1, TANH, SIN, COS, SIGMOID, ERF, GELU, GELU_BACKWARD, POW, POW_SCALAR -> false;
            default -> true;
        };
    }

    private static void assertClose(String what, float expected, float actual, boolean exact) {
        assertClose(what, expected, actual, exact, 0f);
    }

    /** As above, within 8 ulps of {@code scale} too, where the function's error scales with an argument, not the result. */
    private static void assertClose(String what, float expected, float actual, boolean exact, float scale) {
        if (Float.isNaN(expected) || Float.isNaN(actual)) {
            assertEquals(Float.isNaN(expected), Float.isNaN(actual), what + ": expected " + expected + ", got " + actual);
            return;
        }
        if (exact || Float.isInfinite(expected)) {
            assertEquals(expected, actual, 0f, what);
            return;
        }
        // Transcendentals: a few ulps, or an absolute 1e-7 near zero (sin of a large argument, 1 - erf).
        float tolerance = Math.max(Math.max(8 * Math.ulp(expected), 8 * Math.ulp(scale)), 1e-7f);
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
                        // GELU's derivative cancels near its root (x = -0.75): its error scales with the gradient a, not the result.
                        float scale = fn == Fn.GELU_BACKWARD ? (float) Math.abs(a) : 0f;
                        assertClose(fn + "(" + a + ", " + b + ", " + c + ") at " + i + " of " + n, expected, at(out, i, 1), exact(fn), scale);
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
                // The vector tanh is C2's intrinsic once compiled and Math.tanh before: within 2 ulps, not bit-equal.
                double expected = StrictMath.tanh(da.get(ElementIO.F64, 8L * i) - db.get(ElementIO.F64, 8L * i));
                double actual = dout.get(ElementIO.F64, 8L * i);
                assertTrue(ulps(expected, actual) <= 2, "float64 at " + i + ": " + expected + " against " + actual);
            }
        }
    }

    @Test
    void generatedKernelsAreCachedPerFormulaAndBroadcastPattern() {
        Expr formula = new Expr.Math(Fn.ADD, List.of(new Expr.In(0, "x0"), new Expr.Math(Fn.EXP, List.of(new Expr.In(1, "x1")))));
        assertSame(PointwiseCodegen.kernel(formula, 2, 0), PointwiseCodegen.kernel(formula, 2, 0));
        assertTrue(PointwiseCodegen.kernel(formula, 2, 0) != PointwiseCodegen.kernel(formula, 2, 2));
    }

    /**
     * A row longer than the kernel's loop piece ({@link PointwiseCodegen#ROW_PIECE}) runs piece by piece and gives the
     * bits of one loop over the row: every lane type, lengths around the piece boundaries (vector steps and the masked
     * tail), an input broadcast or not, a scalar parameter.
     */
    @Test
    void rowsRunInPiecesGiveTheBitsOfOneLoop() {
        Expr x0 = new Expr.In(0, "x0");
        Expr x1 = new Expr.In(1, "x1");
        // where(x0 > x1, x0 * p0 + x1, x1 - x0): no transcendental, whose bits may depend on when C2 compiled it.
        Expr formula = new Expr.Math(Fn.SELECT, List.of(new Expr.Math(Fn.GT, List.of(x0, x1)),
                new Expr.Math(Fn.ADD, List.of(new Expr.Math(Fn.MUL, List.of(x0, new Expr.Scalar(0, "p0", Double.NaN))), x1)),
                new Expr.Math(Fn.SUB, List.of(x1, x0))));
        record Case(DType dtype, PointwiseCodegen.Layout layout) {}
        List<Case> cases = List.of(
                new Case(DType.FLOAT32, PointwiseCodegen.Layout.f32(2)),
                new Case(DType.FLOAT64, new PointwiseCodegen.Layout(PointwiseCodegen.Compute.F64, List.of(F64, F64, F64))),
                new Case(DType.BFLOAT16, new PointwiseCodegen.Layout(PointwiseCodegen.Compute.F32,
                        List.of(PointwiseCodegen.Storage.BF16, PointwiseCodegen.Storage.BF16, PointwiseCodegen.Storage.BF16))),
                new Case(DType.INT32, new PointwiseCodegen.Layout(PointwiseCodegen.Compute.I32,
                        List.of(PointwiseCodegen.Storage.I32, PointwiseCodegen.Storage.I32, PointwiseCodegen.Storage.I32))),
                new Case(DType.INT8, new PointwiseCodegen.Layout(PointwiseCodegen.Compute.I8,
                        List.of(PointwiseCodegen.Storage.I8, PointwiseCodegen.Storage.I8, PointwiseCodegen.Storage.I8))));
        int[] lengths = {0, 1, 63, 64, 65, 127, 128, 129, 191, 200, 1000, 1027};
        double[] params = {3};
        try (Arena arena = Arena.ofConfined()) {
            for (Case c : cases) {
                long es = c.dtype().byteSize();
                for (int broadcast : new int[] {0, 0b10}) {
                    PointwiseCodegen.RowKernel oneLoop = PointwiseCodegen.define(PointwiseCodegen.generate(formula, 2, broadcast, c.layout(), 0));
                    for (long piece : new long[] {64, 128}) {
                        PointwiseCodegen.RowKernel pieces = PointwiseCodegen.define(PointwiseCodegen.generate(formula, 2, broadcast, c.layout(), piece));
                        for (int n : lengths) {
                            MemorySegment a = arena.allocate(es * Math.max(n, 1), 64);
                            MemorySegment b = arena.allocate(es * Math.max(n, 1), 64);
                            for (int i = 0; i < n; i++) {
                                boolean integral = !c.dtype().isFloatingPoint();
                                ElementCodec.setDouble(c.dtype(), a, es * i, integral ? random.nextInt(41) - 20 : value());
                                ElementCodec.setDouble(c.dtype(), b, es * i, integral ? random.nextInt(41) - 20 : value());
                            }
                            MemorySegment expected = arena.allocate(es * Math.max(n, 1), 64);
                            MemorySegment actual = arena.allocate(es * Math.max(n, 1), 64);
                            oneLoop.row(new MemorySegment[] {expected, a, b}, new long[3], n, params);
                            pieces.row(new MemorySegment[] {actual, a, b}, new long[3], n, params);
                            assertEquals(-1, expected.mismatch(actual), c.dtype() + " broadcast " + broadcast + " piece " + piece + " n=" + n);
                            if (n > 0 && broadcast == 0) {
                                double x = ElementCodec.getDouble(c.dtype(), a, es * (n - 1));
                                double y = ElementCodec.getDouble(c.dtype(), b, es * (n - 1));
                                double last = ElementCodec.getDouble(c.dtype(), actual, es * (n - 1));
                                if (c.dtype() == DType.FLOAT64 && !Double.isNaN(x) && !Double.isNaN(y)) {
                                    assertEquals(x > y ? x * 3 + y : y - x, last, 0.0, "float64 n=" + n + ", the last element");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- other layouts: float64, halves, bool

    private static final PointwiseCodegen.Storage F64 = PointwiseCodegen.Storage.F64;

    /** The ulps between {@code a} and {@code b} (0 when both are NaN or equal). */
    private static double ulps(double expected, double actual) {
        if (Double.isNaN(expected) && Double.isNaN(actual)) return 0;
        if (expected == actual) return 0;
        if (Double.isNaN(expected) || Double.isNaN(actual) || Double.isInfinite(expected) || Double.isInfinite(actual)) {
            return Double.POSITIVE_INFINITY;
        }
        return Math.abs(expected - actual) / Math.ulp(expected);
    }

    private static MemorySegment doubles(Arena arena, double[] v) {
        MemorySegment s = arena.allocate(8L * Math.max(v.length, 1), 64);
        for (int i = 0; i < v.length; i++) s.set(ElementIO.F64, 8L * i, v[i]);
        return s;
    }

    /** Wide ranges (every binade from 1e-300 to 1e300, both signs), the specials and the points where each function turns. */
    private static double[] wideDoubles() {
        List<Double> v = new ArrayList<>(List.of(0.0, -0.0, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.MIN_VALUE, -Double.MIN_VALUE, Double.MIN_NORMAL, Double.MAX_VALUE, -Double.MAX_VALUE, 1.0, -1.0,
                709.78, 709.79, -745.1, -745.2, 710.0, -708.4, 1e-17, -1e-17, 0.5, -0.5, 19.0, -19.0, 22.0, -22.0, 40.0));
        Random r = new Random(20);
        for (int e = -300; e <= 300; e++) {
            for (int k = 0; k < 6; k++) {
                double x = (1 + r.nextDouble()) * Math.pow(10, e);
                v.add(k % 2 == 0 ? x : -x);
            }
        }
        for (int i = 0; i < 20_000; i++) v.add((r.nextDouble() - 0.5) * (i < 10_000 ? 4 : 1500));
        return v.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /** The float64 vector forms of exp, expm1, log, log1p, tanh and sigmoid are within 2 ulps of StrictMath's over wide ranges and the specials. */
    @Test
    void float64TranscendentalsAreWithinTwoUlpsOfStrictMath() {
        double[] x = wideDoubles();
        Map<Fn, java.util.function.DoubleUnaryOperator> strict = new java.util.LinkedHashMap<>();
        strict.put(Fn.EXP, StrictMath::exp);
        strict.put(Fn.EXPM1, StrictMath::expm1);
        strict.put(Fn.LOG, StrictMath::log);
        strict.put(Fn.LOG1P, StrictMath::log1p);
        strict.put(Fn.TANH, StrictMath::tanh);
        strict.put(Fn.SIGMOID, a -> 1.0 / (1.0 + StrictMath.exp(-a)));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = doubles(arena, x);
            MemorySegment out = arena.allocate(8L * x.length, 64);
            for (var e : strict.entrySet()) {
                Expr formula = new Expr.Math(e.getKey(), List.of(new Expr.In(0, "x0")));
                PointwiseCodegen.kernel(formula, 1, 0, new PointwiseCodegen.Layout(true, List.of(F64, F64)))
                        .row(new MemorySegment[] {out, in}, new long[2], x.length, new double[0]);
                double worst = 0;
                double at = 0;
                for (int i = 0; i < x.length; i++) {
                    double u = ulps(e.getValue().applyAsDouble(x[i]), out.get(ElementIO.F64, 8L * i));
                    if (u > worst) {
                        worst = u;
                        at = x[i];
                    }
                }
                assertTrue(worst <= 2, e.getKey() + ": " + worst + " ulps at " + at);
            }
        }
    }

    /** Every function with a float64 vector form computes, in double lanes, its double reference (transcendentals within 2 ulps). */
    @Test
    void everyFunctionWithAFloat64FormMatchesItsReference() {
        double[] values = {0.0, -0.0, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 1, -1, 2, 3, 0.5, -0.5, 1e-310, 7.25, -3.5};
        try (Arena arena = Arena.ofConfined()) {
            for (Fn fn : Fn.values()) {
                if (!VectorMathF64.supports(fn)) continue;
                List<Expr> args = new ArrayList<>();
                for (int k = 0; k < fn.arity(); k++) args.add(new Expr.In(k, "x" + k));
                List<PointwiseCodegen.Storage> layout = java.util.Collections.nCopies(fn.arity() + 1, F64);
                PointwiseCodegen.RowKernel kernel = PointwiseCodegen.kernel(new Expr.Math(fn, args), fn.arity(), 0,
                        new PointwiseCodegen.Layout(true, layout));
                for (int n : LENGTHS) {
                    double[][] in = new double[fn.arity()][n];
                    MemorySegment[] segs = new MemorySegment[fn.arity() + 1];
                    for (int k = 0; k < in.length; k++) {
                        for (int i = 0; i < n; i++) in[k][i] = random.nextInt(3) == 0 ? values[random.nextInt(values.length)] : random.nextGaussian() * 4;
                        segs[k + 1] = doubles(arena, in[k]);
                    }
                    segs[0] = arena.allocate(8L * Math.max(n, 1), 64);
                    kernel.row(segs, new long[fn.arity() + 1], n, new double[0]);
                    for (int i = 0; i < n; i++) {
                        double a = in[0][i];
                        double b = in.length > 1 ? in[1][i] : 0;
                        double c = in.length > 2 ? in[2][i] : 0;
                        double expected = fn.apply(a, b, c);
                        double actual = segs[0].get(ElementIO.F64, 8L * i);
                        double u = ulps(expected, actual);
                        // erf and GELU (and its derivative): the reference (SpecialFunctions) is the looser side, about 1e-15 relative (10 ulps off
                        // glibc at erf(-1.95)); VectorErfF64Test checks the vector forms against an exact reference.
                        boolean erfLike = fn == Fn.ERF || fn == Fn.GELU || fn == Fn.GELU_BACKWARD;
                        // GELU's derivative (b = x) cancels mildly in the negative tail: its error scales with the gradient a.
                        assertTrue(exact(fn) ? u == 0 : u <= 2 || Math.abs(expected - actual) < 1e-15
                                || erfLike && Math.abs(expected - actual) <= 4e-15 * Math.abs(expected)
                                || fn == Fn.GELU_BACKWARD && Math.abs(expected - actual) <= 4e-15 * Math.abs(a),
                                fn + "(" + a + ", " + b + ", " + c + "): expected " + expected + ", got " + actual);
                    }
                }
            }
        }
    }

    /** float16 bits widen exactly, for all 65,536 of them (NaN payloads kept). */
    @Test
    void float16WidensExactly() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(2L * 65536, 64);
            for (int b = 0; b < 65536; b++) h.set(ElementIO.I16, 2L * b, (short) b);
            MemorySegment out = arena.allocate(4L * 65536, 64);
            for (long i = 0; i < 65536; i += VectorMath.LANES) VectorMath.store(VectorMath.loadF16(h, 0, i), out, 0, i);
            for (int b = 0; b < 65536; b++) {
                float expected = Float.float16ToFloat((short) b);
                assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(out.get(ElementIO.F32, 4L * b)),
                        "half 0x" + Integer.toHexString(b) + " = " + expected);
            }
        }
    }

    /**
     * float32 rounds to float16 as {@code Float.floatToFloat16} does (to nearest even, subnormals, overflow, signed
     * zeros), at every half's neighbourhood (the half itself, the midpoints to its neighbours and one float ulp either
     * side of them) and at random floats; a NaN stays NaN.
     */
    @Test
    void float32RoundsToFloat16AsTheJdk() {
        List<Float> v = new ArrayList<>();
        for (int b = 0; b < 0x7c00; b++) {
            float x = Float.float16ToFloat((short) b);
            float next = Float.float16ToFloat((short) (b + 1));
            float mid = (float) (((double) x + next) / 2);
            for (float f : new float[] {x, mid, Math.nextUp(mid), Math.nextDown(mid)}) {
                v.add(f);
                v.add(-f);
            }
        }
        v.addAll(List.of(65520f, 65519.99f, 1e9f, Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, 1e-10f,
                Float.MIN_VALUE, -0f));
        for (int i = 0; i < 100_000; i++) v.add(Float.intBitsToFloat(random.nextInt()));
        int n = v.size();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment f = arena.allocate(4L * n, 64);
            for (int i = 0; i < n; i++) f.set(ElementIO.F32, 4L * i, v.get(i));
            MemorySegment h = arena.allocate(2L * n, 64);
            long i = 0;
            for (; i + VectorMath.LANES <= n; i += VectorMath.LANES) VectorMath.storeF16(VectorMath.load(f, 0, i), h, 0, i);
            VectorMath.storeF16Masked(VectorMath.loadMasked(f, 0, i, VectorMath.mask(i, n)), h, 0, i, VectorMath.mask(i, n));
            for (int k = 0; k < n; k++) {
                float x = v.get(k);
                short expected = Float.floatToFloat16(x);
                short actual = h.get(ElementIO.I16, 2L * k);
                if (Float.isNaN(x)) {
                    assertTrue(Float.isNaN(Float.float16ToFloat(actual)), "NaN -> 0x" + Integer.toHexString(actual & 0xffff));
                } else {
                    assertEquals(expected, actual, x + " (0x" + Integer.toHexString(Float.floatToRawIntBits(x)) + ")");
                }
            }
        }
    }

    /**
     * The kernel of a declared formula serves half-precision rows (widened, computed in float, rounded once on store),
     * bool outputs and float64 rows through generated loops, with the reference's results: exactly for exact
     * functions, at every length around the vector width, with a broadcast operand.
     */
    @Test
    void halfBoolAndFloat64RowsComputeWhatTheReferenceComputes() {
        Expr x0 = new Expr.In(0, "x0");
        Expr x1 = new Expr.In(1, "x1");
        Expr formula = new Expr.Math(Fn.SUB, List.of(new Expr.Math(Fn.MAX, List.of(x0, x1)), new Expr.Math(Fn.MUL, List.of(x0,
                new Expr.Scalar(0, "p0", Double.NaN)))));
        Expr compare = new Expr.Math(Fn.LT, List.of(x0, x1));
        CpuFormulaKernel kernel = new CpuFormulaKernel(formula, 2);
        CpuFormulaKernel comparison = new CpuFormulaKernel(compare, 2);
        double[] params = {0.75};
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : new DType[] {DType.BFLOAT16, DType.FLOAT16, DType.FLOAT64, DType.FLOAT32}) {
                for (int n : LENGTHS) {
                    for (int bStride : new int[] {1, 0}) {
                        long es = t.byteSize();
                        MemorySegment a = arena.allocate(es * Math.max(n, 1), 64);
                        MemorySegment b = arena.allocate(es * Math.max(n, 1), 64);
                        double[] av = new double[n];
                        double[] bv = new double[n];
                        for (int i = 0; i < n; i++) {
                            ElementCodec.setDouble(t, a, es * i, value());
                            ElementCodec.setDouble(t, b, es * i, value());
                            av[i] = ElementCodec.getDouble(t, a, es * i);
                        }
                        for (int i = 0; i < n; i++) bv[i] = ElementCodec.getDouble(t, b, es * i * bStride);
                        MemorySegment out = arena.allocate(es * Math.max(n, 1), 64);
                        MemorySegment bools = arena.allocate(Math.max(n, 1), 64);
                        StridedView[] in = {
                            new StridedView(a, 0, new long[] {n}, new long[] {1}, t), new StridedView(b, 0, new long[] {n}, new long[] {bStride}, t)};
                        kernel.run(0, t, new StridedView(out, 0, new long[] {n}, new long[] {1}, t), in, params);
                        comparison.run(0, t, new StridedView(bools, 0, new long[] {n}, new long[] {1}, DType.BOOL), in, params);
                        for (int i = 0; i < n; i++) {
                            double m = Math.max(av[i], bv[i]);
                            // Float lanes round the product to float first (exact for halves' values times 0.75).
                            double expected = t == DType.FLOAT64 ? m - av[i] * 0.75 : (float) ((float) m - (float) (av[i] * 0.75));
                            MemorySegment ref = arena.allocate(8);
                            ElementCodec.setDouble(t, ref, 0, expected);
                            double rounded = ElementCodec.getDouble(t, ref, 0);
                            double actual = ElementCodec.getDouble(t, out, es * i);
                            String what = t + " n=" + n + " stride " + bStride + " at " + i + ": max(" + av[i] + ", " + bv[i] + ") - 0.75 x";
                            if (Double.isNaN(rounded)) assertTrue(Double.isNaN(actual), what);
                            else assertEquals(rounded, actual, 0.0, what);
                            assertEquals(av[i] < bv[i] ? 1 : 0, bools.get(ElementIO.I8, i), t + " lt at " + i);
                        }
                    }
                }
            }
        }
    }

    /**
     * GELU's tanh form in float32 stays within a few ulps of its definition, evaluated in double as {@code x / (1 +
     * exp(-2z))}, also for negative inputs, where {@code 1 + tanh(z)} cancels (the hand-written loop computed that form once:
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
