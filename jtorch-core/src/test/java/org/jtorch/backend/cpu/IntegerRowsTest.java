package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The generated integer rows (int64, int32, int16, int8, uint8 lanes of the dtype's width) store what the long
 * reference stores, element for element: every function with an integer vector form on random values and the
 * edge values (the dtype's minimum and maximum, -1, 0, 1), at lengths around every lane count (masked tails),
 * with broadcast inputs and bool outputs; chains whose narrow lanes would differ from the reference are declined
 * and served by the reference; integer division still raises on zero.
 */
class IntegerRowsTest {
    private static final DType[] INTEGERS = {DType.INT64, DType.INT32, DType.INT16, DType.INT8, DType.UINT8};
    private static final int[] LENGTHS = {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130};

    private final Random random = new Random(15);

    private static PointwiseCodegen.Compute lanes(DType t) {
        return CpuFormulaKernel.lanes(t);
    }

    /** A value of {@code t}: often an edge value, else random bits. */
    private long value(DType t) {
        PointwiseCodegen.Compute c = lanes(t);
        return switch (random.nextInt(6)) {
            case 0 -> c.min;
            case 1 -> c.max;
            case 2 -> random.nextInt(3) - 1 + (t == DType.UINT8 ? 1 : 0);
            case 3 -> random.nextInt(11) - 5 & (t == DType.UINT8 ? 0xff : -1);
            default -> narrow(t, random.nextLong());
        };
    }

    /** What a store of {@code v} to {@code t} keeps, read back as the reference reads it. */
    private static long narrow(DType t, long v) {
        return switch (t) {
            case INT64 -> v;
            case INT32 -> (int) v;
            case INT16 -> (short) v;
            case INT8 -> (byte) v;
            default -> v & 0xff;
        };
    }

    private MemorySegment row(Arena arena, DType t, long[] values) {
        MemorySegment s = arena.allocate(t.byteSize() * Math.max(values.length, 1), 64);
        for (int i = 0; i < values.length; i++) ElementCodec.setLong(t, s, i * t.byteSize(), values[i]);
        return s;
    }

    private static long[] read(MemorySegment s, DType t, int n) {
        long[] r = new long[n];
        for (int i = 0; i < n; i++) r[i] = ElementCodec.getLong(t, s, i * t.byteSize());
        return r;
    }

    private static StridedView view(MemorySegment s, DType t, int n, long stride) {
        return new StridedView(s, 0, new long[] {n}, new long[] {stride}, t);
    }

    /**
     * Runs {@code formula} through the generated kernel of {@code compute}'s lanes directly (so no fallback can hide a
     * wrong loop) and checks it element for element against the long reference, narrowed as a store narrows.
     */
    private void checkGenerated(Expr formula, int inputs, DType t, boolean boolOut, int broadcast, double[] params) {
        List<PointwiseCodegen.Storage> layout = new ArrayList<>(Collections.nCopies(inputs + 1, lanes(t).storage));
        if (boolOut) layout.set(0, PointwiseCodegen.Storage.BOOL);
        PointwiseCodegen.RowKernel kernel = PointwiseCodegen.kernel(formula, inputs, broadcast, new PointwiseCodegen.Layout(lanes(t), layout));
        Expr.LongArrayFormula reference = formula.compileLongArrays();
        long[] p = new long[params.length];
        for (int j = 0; j < p.length; j++) p[j] = (long) params[j];
        DType outType = boolOut ? DType.BOOL : t;
        try (Arena arena = Arena.ofConfined()) {
            for (int n : LENGTHS) {
                long[][] in = new long[inputs][];
                MemorySegment[] segs = new MemorySegment[inputs + 1];
                for (int k = 0; k < inputs; k++) {
                    in[k] = new long[(broadcast & (1 << k)) != 0 ? 1 : n];
                    for (int i = 0; i < in[k].length; i++) in[k][i] = value(t);
                    segs[k + 1] = row(arena, t, in[k]);
                }
                segs[0] = arena.allocate(outType.byteSize() * Math.max(n, 1), 64);
                kernel.row(segs, new long[inputs + 1], n, params);
                long[] got = read(segs[0], outType, n);
                long[] x = new long[inputs];
                for (int i = 0; i < n; i++) {
                    for (int k = 0; k < inputs; k++) x[k] = in[k][in[k].length == 1 ? 0 : i];
                    long r = reference.eval(x, p);
                    long expected = boolOut ? (r != 0 ? 1 : 0) : narrow(t, r);
                    assertEquals(expected, got[i], formula + " in " + t + (boolOut ? " to bool" : "") + " at " + i + " of " + n
                            + ", inputs " + java.util.Arrays.toString(x));
                }
            }
        }
    }

    private static Expr in(int k) {
        return new Expr.In(k, "x" + k);
    }

    @Test
    void everyFunctionWithAnIntegerFormStoresWhatTheReferenceStores() {
        int checked = 0;
        for (Fn fn : Fn.values()) {
            if (!VectorMathInt.supports(fn)) continue;
            List<Expr> args = new ArrayList<>();
            for (int k = 0; k < fn.arity(); k++) args.add(in(k));
            Expr formula = new Expr.Math(fn, args);
            for (DType t : INTEGERS) {
                PointwiseCodegen.IntegerForm form = PointwiseCodegen.integerForm(formula, lanes(t));
                assertNotNull(form, fn + " in " + t);
                checkGenerated(formula, fn.arity(), t, false, 0, new double[0]);
                if (form == PointwiseCodegen.IntegerForm.EXACT) checkGenerated(formula, fn.arity(), t, true, 0, new double[0]);
                if (fn.arity() > 1) checkGenerated(formula, fn.arity(), t, false, 0b10, new double[0]);
                checked++;
            }
        }
        assertTrue(checked >= 5 * 25, "functions checked: " + checked);
    }

    @Test
    void declaredFormulasWithParametersAndBroadcasts() {
        Expr x = in(0);
        Expr y = in(1);
        Expr p0 = new Expr.Scalar(0, "p0", Double.NaN);
        Expr p1 = new Expr.Scalar(1, "p1", Double.NaN);
        Expr addAlpha = new Expr.Math(Fn.ADD, List.of(x, new Expr.Math(Fn.MUL, List.of(p0, y))));
        Expr clamp = new Expr.Math(Fn.CLAMP, List.of(x, p0, p1));
        Expr where = new Expr.Math(Fn.SELECT, List.of(new Expr.Math(Fn.GT, List.of(x, y)), x, new Expr.Math(Fn.NEG, List.of(y))));
        for (DType t : INTEGERS) {
            for (double alpha : new double[] {1, -1, 3}) {
                checkGenerated(addAlpha, 2, t, false, 0, new double[] {alpha});
                checkGenerated(addAlpha, 2, t, false, 0b01, new double[] {alpha});
            }
            checkGenerated(clamp, 1, t, false, 0, new double[] {t == DType.UINT8 ? 3 : -3, 100});
            checkGenerated(where, 2, t, false, 0b10, new double[0]);
        }
    }

    /** In narrow lanes a comparison of a wrapped sum differs from the long reference's: the generator declines it. */
    @Test
    void chainsThatWouldCompareWrappedValuesAreDeclinedAndServedByTheReference() {
        Expr sum = new Expr.Math(Fn.ADD, List.of(in(0), in(1)));
        Expr compared = new Expr.Math(Fn.GT, List.of(sum, in(2)));
        assertEquals(PointwiseCodegen.IntegerForm.EXACT, PointwiseCodegen.integerForm(compared, PointwiseCodegen.Compute.I64));
        assertEquals(PointwiseCodegen.IntegerForm.WRAPPED, PointwiseCodegen.integerForm(sum, PointwiseCodegen.Compute.I8));
        assertNull(PointwiseCodegen.integerForm(compared, PointwiseCodegen.Compute.I8));
        assertNull(PointwiseCodegen.integerForm(new Expr.Math(Fn.ABS, List.of(sum)), PointwiseCodegen.Compute.I32));
        assertNull(PointwiseCodegen.integerForm(new Expr.Math(Fn.EQ, List.of(in(0), new Expr.Const(300))), PointwiseCodegen.Compute.I8));
        assertNull(PointwiseCodegen.integerForm(new Expr.Math(Fn.DIV_FLOOR, List.of(in(0), in(1))), PointwiseCodegen.Compute.I64));
        // A wrapped sum cannot be stored as a bool either (256 is nonzero, its int8 residue is not).
        assertThrows(IllegalArgumentException.class, () -> PointwiseCodegen.kernel(sum, 2, 0,
                new PointwiseCodegen.Layout(PointwiseCodegen.Compute.U8, List.of(PointwiseCodegen.Storage.BOOL, PointwiseCodegen.Storage.U8,
                        PointwiseCodegen.Storage.U8))));

        CpuFormulaKernel kernel = new CpuFormulaKernel(compared, 3);
        int n = 100;
        try (Arena arena = Arena.ofConfined()) {
            long[][] v = new long[3][n];
            for (int k = 0; k < 3; k++) for (int i = 0; i < n; i++) v[k][i] = value(DType.INT8);
            MemorySegment out = arena.allocate(n, 64);
            kernel.run(0, DType.INT8, view(out, DType.INT8, n, 1), new StridedView[] {
                view(row(arena, DType.INT8, v[0]), DType.INT8, n, 1), view(row(arena, DType.INT8, v[1]), DType.INT8, n, 1),
                view(row(arena, DType.INT8, v[2]), DType.INT8, n, 1)}, new double[0]);
            for (int i = 0; i < n; i++) assertEquals(v[0][i] + v[1][i] > v[2][i] ? 1 : 0, out.get(ElementIO.I8, i), "at " + i);
        }
    }

    /** A parameter outside the lanes' range takes the reference, which compares with the long parameter. */
    @Test
    void parametersOutsideTheLanesTakeTheReference() {
        Expr formula = new Expr.Math(Fn.CLAMP, List.of(in(0), new Expr.Scalar(0, "lo", Double.NaN), new Expr.Scalar(1, "hi", Double.NaN)));
        CpuFormulaKernel kernel = new CpuFormulaKernel(formula, 1);
        int n = 70;
        try (Arena arena = Arena.ofConfined()) {
            long[] v = new long[n];
            for (int i = 0; i < n; i++) v[i] = value(DType.INT8);
            MemorySegment out = arena.allocate(n, 64);
            // clamp(x, -300, 5): -300 does not fit int8 lanes (its residue, -44, would clamp -128 up to -44).
            kernel.run(0, DType.INT8, view(out, DType.INT8, n, 1), new StridedView[] {view(row(arena, DType.INT8, v), DType.INT8, n, 1)},
                    new double[] {-300, 5});
            for (int i = 0; i < n; i++) assertEquals(Math.min(v[i], 5), out.get(ElementIO.I8, i), "at " + i);
        }
    }

    /** Through the kernel: a contiguous int32 add takes the generated loop and wraps around; division by zero still raises. */
    @Test
    void kernelRowsWrapAroundAndIntegerDivisionStillRaises() {
        Expr add = new Expr.Math(Fn.ADD, List.of(in(0), new Expr.Math(Fn.MUL, List.of(new Expr.Scalar(0, "alpha", Double.NaN), in(1)))));
        CpuFormulaKernel kernel = new CpuFormulaKernel(add, 2);
        int n = 1000;
        try (Arena arena = Arena.ofConfined()) {
            long[] a = new long[n];
            long[] b = new long[n];
            for (int i = 0; i < n; i++) {
                a[i] = value(DType.INT32);
                b[i] = value(DType.INT32);
            }
            MemorySegment out = arena.allocate(4L * n, 64);
            kernel.run(0, DType.INT32, view(out, DType.INT32, n, 1), new StridedView[] {
                view(row(arena, DType.INT32, a), DType.INT32, n, 1), view(row(arena, DType.INT32, b), DType.INT32, n, 1)}, new double[] {2});
            for (int i = 0; i < n; i++) assertEquals((int) (a[i] + 2 * b[i]), out.get(ElementIO.I32, 4L * i), "at " + i);

            Expr div = new Expr.Math(Fn.DIV_FLOOR, List.of(in(0), in(1)));
            CpuFormulaKernel floorDiv = new CpuFormulaKernel(div, 2);
            b[n / 2] = 0;
            ArithmeticException e = assertThrows(ArithmeticException.class, () -> floorDiv.run(0, DType.INT32, view(out, DType.INT32, n, 1),
                    new StridedView[] {view(row(arena, DType.INT32, a), DType.INT32, n, 1), view(row(arena, DType.INT32, b), DType.INT32, n, 1)},
                    new double[0]));
            assertTrue(e.getMessage().contains("division by zero"), e.getMessage());
        }
    }
}
