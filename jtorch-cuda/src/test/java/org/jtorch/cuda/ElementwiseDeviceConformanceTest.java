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
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.op.DTypeRule;
import org.jtorch.op.Expr;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.UnaryOp;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The ops wired to CUDA (copies between devices, fill, the unary and binary pointwise ops, where), run on
 * every device: {@code cpu} always and {@code cuda:0}. Each cuda case is skipped with CUDA's unavailability
 * reason where there is no GPU (never passed).
 *
 * <p>References: the op's declared formula ({@code Expr.compileArrays} in double, or its long form
 * for integral compute) on the inputs' values, converted to the result dtype by
 * {@code to(dtype)} on the CPU; results compared within the dtype's tolerance (integers exactly). On
 * cuda, results must also match the CPU backend's result for the same inputs. Inputs cover float32,
 * float64, float16, bfloat16 and integer dtypes; contiguous, transposed, sliced (stride 2), offset
 * (misaligned) and broadcast operands; empty, zero-dim and multi-block sizes; mixed dtypes.
 */
class ElementwiseDeviceConformanceTest {
    private static final Device CUDA = DeviceCases.CUDA;

    /** Cases that only mean something across devices (on the CPU, {@code to(cpu)} is the same tensor): cuda:0 only. */
    private static void addCrossDevice(List<DynamicTest> tests, String name, DeviceCases.Body body) {
        tests.add(DynamicTest.dynamicTest(CUDA + "/" + name, () -> {
            DeviceCases.assumeAvailable(CUDA);
            body.run(CUDA);
        }));
    }

    // ------------------------------------------------------------------ inputs

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

    /** How an operand is laid out on the device. */
    enum Layout { CONTIGUOUS, TRANSPOSED, SLICED, OFFSET }

    /** A CPU tensor of {@code shape} with layout {@code layout} once moved to {@code d} (views are taken on the device). */
    private static Tensor input(Device d, DType t, long[] shape, Layout layout, double lo, double hi) {
        boolean integral = !t.isFloatingPoint();
        long[] base = shape.clone();
        switch (layout) {
            case TRANSPOSED -> {
                for (int i = 0; i < shape.length; i++) base[i] = shape[shape.length - 1 - i];
            }
            case SLICED -> base[base.length - 1] *= 2;
            case OFFSET -> base[0] += 1;
            default -> {}
        }
        long n = 1;
        for (long s : base) n *= s;
        Tensor b;
        try (Tensor host = Torch.tensor(values(n, lo, hi, integral), t, base)) {
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
                case OFFSET -> b.narrow(0, 1, shape[0]);
            };
        }
    }

    private static double rtol(DType t) {
        return switch (t) {
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            case FLOAT32 -> 2e-6;
            case FLOAT64 -> 1e-13;
            default -> 0;
        };
    }

    private static void assertClose(double[] expected, double[] actual, DType t, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        double rtol = rtol(t), atol = rtol * 1e-2;
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i], a = actual[i];
            if (Double.isNaN(e) && Double.isNaN(a)) continue;
            if (e == a) continue;
            if (Math.abs(a - e) <= atol + rtol * Math.abs(e)) continue;
            fail(what + ": element " + i + " expected " + e + " but was " + a + " (" + t + ", rtol " + rtol + ")\nexpected "
                    + Arrays.toString(Arrays.copyOf(expected, Math.min(12, expected.length))) + "\nactual   "
                    + Arrays.toString(Arrays.copyOf(actual, Math.min(12, actual.length))));
        }
    }

    /** Checks {@code result} (on {@code d}) against {@code expected}, and on CUDA against the CPU backend's {@code cpuResult}. */
    private static void check(Device d, Tensor result, double[] expected, Function<Device, Tensor> sameOnCpu, String what) {
        assertEquals(d, result.device(), what + ": result device");
        double[] actual = result.toDoubleArray();
        assertClose(expected, actual, result.dtype(), what + " vs the scalar definition");
        if (d.isCuda()) {
            try (Tensor cpu = sameOnCpu.apply(Device.cpu())) {
                assertEquals(cpu.dtype(), result.dtype(), what + ": dtype vs the CPU backend");
                assertArrayEquals(cpu.shape(), result.shape(), what + ": shape vs the CPU backend");
                assertClose(cpu.toDoubleArray(), actual, result.dtype(), what + " vs the CPU backend");
            }
        }
    }

    // ------------------------------------------------------------------ unary

    /** The op's formula on x's values in the compute dtype's form (double, or long with Java's (long) params), cast to {@code out}. */
    private static double[] unaryReference(UnaryOp op, Tensor x, DType out, double p0, double p1) {
        if (op == UnaryOp.BITWISE_NOT && x.dtype() == DType.BOOL) op = UnaryOp.LOGICAL_NOT; // the front end's bool form: ~True == False
        boolean floating = computeType(op, x.dtype()).isFloatingPoint();
        Expr formula = Elementwise.declaration(op).formula();
        Expr.ArrayFormula f = formula.compileArrays();
        Expr.LongArrayFormula g = formula.compileLongArrays();
        if (floating) {
            double[] xs = x.toDoubleArray();
            double[] r = new double[xs.length];
            for (int i = 0; i < xs.length; i++) r[i] = f.eval(new double[] {xs[i]}, new double[] {p0, p1});
            try (Tensor ref = Torch.tensor(r, DType.FLOAT64, x.shape()); Tensor cast = ref.to(out)) {
                return cast.toDoubleArray();
            }
        }
        long[] xs = x.toLongArray();
        long[] r = new long[xs.length];
        for (int i = 0; i < xs.length; i++) r[i] = g.eval(new long[] {xs[i]}, new long[] {(long) p0, (long) p1});
        try (Tensor ref = Torch.tensor(r, x.shape()); Tensor cast = ref.to(out)) {
            return cast.toDoubleArray();
        }
    }

    /** The scalar parameters each parameterised op is tested with (p0, p1), others (0, 0). */
    private static double[][] parameters(UnaryOp op) {
        return switch (op) {
            case LEAKY_RELU -> new double[][] {{0.01, 0}, {-1.5, 0}};
            case CLAMP -> new double[][] {{-1.5, 2.25}, {Double.NaN, 1}, {-2, Double.NaN}, {Double.NEGATIVE_INFINITY, 0.5}};
            case SOFTPLUS -> new double[][] {{1, 20}, {2, 3}, {0.5, -1}};
            case POW_SCALAR -> new double[][] {{2, 0}, {3, 0}, {0.5, 0}, {-1, 0}, {2.5, 0}, {0, 0}};
            default -> new double[][] {{0, 0}};
        };
    }

    /** Input range of the random cases: inside each op's domain (log, sqrt, log1p; pow's exponent -1 of an integer is 0 anyway). */
    private static double[] range(UnaryOp op, DType t) {
        double lo = switch (op) {
            case LOG, SQRT, RSQRT -> 0.25;
            case LOG1P -> -0.75;
            default -> t == DType.UINT8 || t == DType.BOOL ? 0 : -4;
        };
        double hi = t == DType.BOOL ? 2 : t.isFloatingPoint() ? 4 : 20;
        return new double[] {lo, hi};
    }

    private static void unaryCase(List<DynamicTest> tests, UnaryOp op, DType t, long[] shape, Layout layout) {
        unaryCase(tests, op, t, shape, layout, 0, 0);
    }

    private static void unaryCase(List<DynamicTest> tests, UnaryOp op, DType t, long[] shape, Layout layout, double p0, double p1) {
        double[] range = range(op, t);
        double lo = range[0], hi = range[1];
        String params = p0 == 0 && p1 == 0 ? "" : "(" + p0 + "," + p1 + ")";
        add(tests, op.pyName() + params + "/" + t + Arrays.toString(shape) + "/" + layout.name().toLowerCase(), d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor x = input(dev, t, shape, layout, lo, hi)) {
                    return Elementwise.unary(op, x, p0, p1);
                }
            };
            try (Tensor y = run.apply(d); Tensor xc = input(Device.cpu(), t, shape, layout, lo, hi)) {
                check(d, y, unaryReference(op, xc, y.dtype(), p0, p1), run, op.pyName());
            }
        });
    }

    /** The dtype {@code op} computes in for input dtype {@code in}, from its declaration (throws where the front end refuses it). */
    private static DType computeType(UnaryOp op, DType in) {
        return Elementwise.declaration(op).computeType(in, Torch.defaultDtype());
    }

    /** The same for a binary op and promoted dtype; the front end also refuses {@code sub} of bools. */
    private static DType computeType(BinaryOp op, DType promoted) {
        if (op == BinaryOp.SUB && promoted == DType.BOOL) throw new IllegalArgumentException("sub: bool");
        return Elementwise.declaration(op).computeType(promoted, Torch.defaultDtype());
    }

    /** Whether the front end accepts {@code op} on {@code t} (e.g. not abs of bool, not bitwise_not of float). */
    private static boolean accepts(UnaryOp op, DType t) {
        try {
            computeType(op, t);
            return true;
        } catch (IllegalArgumentException refused) {
            return false;
        }
    }

    @TestFactory
    List<DynamicTest> unary() {
        List<DynamicTest> tests = new ArrayList<>();
        for (UnaryOp op : UnaryOp.values()) {
            List<DType> types = new ArrayList<>();
            for (DType t : List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16, DType.INT32, DType.INT64, DType.INT8,
                    DType.UINT8, DType.BOOL)) {
                if (accepts(op, t) && ElementwisePlan.supports(Elementwise.declaration(op), computeType(op, t))) types.add(t);
            }
            boolean floatOnly = !ElementwisePlan.supports(Elementwise.declaration(op), DType.INT64);
            double[][] params = parameters(op);
            for (DType t : types) {
                if (floatOnly && !t.isFloatingPoint()) continue;
                for (Layout l : new Layout[] {Layout.CONTIGUOUS, Layout.TRANSPOSED, Layout.SLICED}) {
                    for (double[] p : params) unaryCase(tests, op, t, new long[] {3, 5}, l, p[0], p[1]);
                }
            }
            // Integer inputs to floating-only ops compute in the default float dtype (strided, converting).
            if (floatOnly) unaryCase(tests, op, DType.INT32, new long[] {4, 3}, Layout.CONTIGUOUS, params[0][0], params[0][1]);
        }
        unaryCase(tests, UnaryOp.EXP, DType.FLOAT32, new long[0], Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.NEG, DType.FLOAT32, new long[] {0}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.TANH, DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.RELU, DType.BFLOAT16, new long[] {1001}, Layout.OFFSET);
        unaryCase(tests, UnaryOp.SIGMOID, DType.FLOAT32, new long[] {2, 3, 4, 5}, Layout.TRANSPOSED);
        // Bool outputs from the vector kernel over several blocks, and a misaligned input (scalar loop).
        unaryCase(tests, UnaryOp.ISFINITE, DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.LOGICAL_NOT, DType.INT16, new long[] {1001}, Layout.OFFSET);
        unaryCase(tests, UnaryOp.GELU, DType.BFLOAT16, new long[] {999, 37}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.CLAMP, DType.INT8, new long[] {1001}, Layout.OFFSET, -3, 7);
        // In place (output = input): the contiguous kernel reads and writes the same elements, the strided one a view.
        for (Layout l : new Layout[] {Layout.CONTIGUOUS, Layout.TRANSPOSED}) {
            add(tests, "clamp_/in-place/float32[37,29]/" + l.name().toLowerCase(), d -> {
                Function<Device, Tensor> run = dev -> {
                    try (Tensor x = input(dev, DType.FLOAT32, new long[] {37, 29}, l, -4, 4)) {
                        x.clamp_(-1.5, Double.NaN);
                        return x.alias();
                    }
                };
                try (Tensor y = run.apply(d); Tensor xc = input(Device.cpu(), DType.FLOAT32, new long[] {37, 29}, l, -4, 4)) {
                    check(d, y, unaryReference(UnaryOp.CLAMP, xc, DType.FLOAT32, -1.5, Double.POSITIVE_INFINITY), run, "clamp_");
                }
            });
            add(tests, "pow_/in-place/float64[37,29]/" + l.name().toLowerCase(), d -> {
                Function<Device, Tensor> run = dev -> {
                    try (Tensor x = input(dev, DType.FLOAT64, new long[] {37, 29}, l, 0.25, 4)) {
                        x.pow_(1.5);
                        return x.alias();
                    }
                };
                try (Tensor y = run.apply(d); Tensor xc = input(Device.cpu(), DType.FLOAT64, new long[] {37, 29}, l, 0.25, 4)) {
                    check(d, y, unaryReference(UnaryOp.POW_SCALAR, xc, DType.FLOAT64, 1.5, 0), run, "pow_");
                }
            });
        }
        return tests;
    }

    // ------------------------------------------------------------------ binary

    /**
     * The op's formula on the operands' values converted to the compute dtype (in double after rounding to it, as
     * the CPU; in long on exact longs), cast to {@code out}.
     */
    private static double[] binaryReference(BinaryOp op, Tensor a, Tensor b, long[] shape, DType out, double alpha) {
        Expr formula = Elementwise.declaration(op).formula();
        Expr.ArrayFormula f = formula.compileArrays();
        Expr.LongArrayFormula g = formula.compileLongArrays();
        DType compute = computeType(op, org.jtorch.ops.TypePromotion.resultType(a, b));
        if (compute.isFloatingPoint()) {
            double[] as, bs;
            try (Tensor ac = a.broadcastTo(shape).to(compute); Tensor bc = b.broadcastTo(shape).to(compute)) {
                as = ac.toDoubleArray();
                bs = bc.toDoubleArray();
            }
            double[] r = new double[as.length];
            for (int i = 0; i < r.length; i++) r[i] = f.eval(new double[] {as[i], bs[i]}, new double[] {alpha});
            try (Tensor ref = Torch.tensor(r, DType.FLOAT64, shape); Tensor cast = ref.to(out)) {
                return cast.toDoubleArray();
            }
        }
        long[] as = a.broadcastTo(shape).toLongArray(), bs = b.broadcastTo(shape).toLongArray();
        long[] r = new long[as.length];
        for (int i = 0; i < r.length; i++) r[i] = g.eval(new long[] {as[i], bs[i]}, new long[] {(long) alpha});
        try (Tensor ref = Torch.tensor(r, shape); Tensor cast = ref.to(out)) {
            return cast.toDoubleArray();
        }
    }

    private record Operand(DType t, long[] shape, Layout layout) {
        Tensor make(Device d, boolean nonZero) {
            boolean unsigned = t == DType.UINT8 || t == DType.BOOL;
            // A divisor of an integer dtype starts at 1 (integer division by zero throws: its own cases).
            double lo = nonZero ? (t.isFloatingPoint() ? 0.5 : 1) : unsigned ? 0 : -6, hi = t == DType.BOOL ? 2 : t.isFloatingPoint() ? 6 : 12;
            return input(d, t, shape, layout, lo, hi);
        }

        @Override
        public String toString() {
            return t + Arrays.toString(shape) + (layout == Layout.CONTIGUOUS ? "" : "/" + layout.name().toLowerCase());
        }
    }

    private static void binaryCase(List<DynamicTest> tests, BinaryOp op, Operand a, Operand b, double alpha) {
        boolean divisor = op == BinaryOp.DIV || op == BinaryOp.DIV_TRUNC || op == BinaryOp.DIV_FLOOR || op == BinaryOp.REMAINDER;
        add(tests, op.pyName() + "/" + a + "," + b + (alpha != 1 ? "/alpha=" + alpha : ""), d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor x = a.make(dev, false); Tensor y = b.make(dev, divisor)) {
                    return Elementwise.binary(op, x, y, alpha);
                }
            };
            try (Tensor r = run.apply(d); Tensor xc = a.make(Device.cpu(), false); Tensor yc = b.make(Device.cpu(), divisor)) {
                check(d, r, binaryReference(op, xc, yc, r.shape(), r.dtype(), alpha), run, op.pyName());
            }
        });
    }

    @TestFactory
    List<DynamicTest> binary() {
        List<DynamicTest> tests = new ArrayList<>();
        long[] s = {3, 5};
        for (BinaryOp op : BinaryOp.values()) {
            boolean integral = Elementwise.declaration(op).rule() == DTypeRule.INTEGRAL_OR_BOOL;
            List<DType> types = new ArrayList<>(integral ? List.of(DType.INT8, DType.INT16)
                    : List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16));
            types.addAll(List.of(DType.INT32, DType.INT64, DType.UINT8));
            if (op != BinaryOp.SUB) types.add(DType.BOOL);
            for (DType t : types) {
                binaryCase(tests, op, new Operand(t, s, Layout.CONTIGUOUS), new Operand(t, s, Layout.CONTIGUOUS), 1);
                binaryCase(tests, op, new Operand(t, new long[] {3, 1}, Layout.CONTIGUOUS), new Operand(t, new long[] {1, 5}, Layout.CONTIGUOUS), 1);
            }
            if (integral) {
                binaryCase(tests, op, new Operand(DType.INT32, s, Layout.TRANSPOSED), new Operand(DType.INT32, s, Layout.SLICED), 1);
                binaryCase(tests, op, new Operand(DType.INT64, new long[] {1001}, Layout.OFFSET), new Operand(DType.INT8, new long[] {1001}, Layout.CONTIGUOUS), 1);
                binaryCase(tests, op, new Operand(DType.UINT8, new long[] {999, 37}, Layout.CONTIGUOUS), new Operand(DType.UINT8, new long[] {999, 37}, Layout.CONTIGUOUS), 1);
                binaryCase(tests, op, new Operand(DType.BOOL, s, Layout.TRANSPOSED), new Operand(DType.INT16, new long[] {5}, Layout.CONTIGUOUS), 1);
                continue;
            }
            binaryCase(tests, op, new Operand(DType.INT16, s, Layout.SLICED), new Operand(DType.INT8, s, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.FLOAT32, s, Layout.TRANSPOSED), new Operand(DType.FLOAT32, s, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.FLOAT16, s, Layout.SLICED), new Operand(DType.FLOAT16, new long[] {5}, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.INT32, s, Layout.CONTIGUOUS), new Operand(DType.FLOAT32, s, Layout.TRANSPOSED), 1);
            binaryCase(tests, op, new Operand(DType.INT8, new long[] {2, 3, 4}, Layout.CONTIGUOUS), new Operand(DType.FLOAT64, new long[] {4}, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.FLOAT32, new long[] {1001}, Layout.OFFSET), new Operand(DType.FLOAT32, new long[] {1001}, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS), new Operand(DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS), 1);
            binaryCase(tests, op, new Operand(DType.FLOAT32, new long[0], Layout.CONTIGUOUS), new Operand(DType.FLOAT32, new long[] {0, 3}, Layout.CONTIGUOUS), 1);
        }
        for (BinaryOp op : new BinaryOp[] {BinaryOp.ADD, BinaryOp.SUB}) {
            binaryCase(tests, op, new Operand(DType.FLOAT32, s, Layout.CONTIGUOUS), new Operand(DType.FLOAT32, s, Layout.TRANSPOSED), 2.5);
            binaryCase(tests, op, new Operand(DType.INT64, s, Layout.CONTIGUOUS), new Operand(DType.INT64, s, Layout.CONTIGUOUS), 3);
        }
        // A CPU zero-dim tensor next to a device tensor (allowed, as in PyTorch) and a Java scalar.
        add(tests, "mul/cpu-zero-dim-operand", d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor x = input(dev, DType.FLOAT32, s, Layout.TRANSPOSED, -3, 3); Tensor k = Torch.tensor(new double[] {1.5}, DType.FLOAT64)
                        .reshape()) {
                    return x.mul(k);
                }
            };
            try (Tensor r = run.apply(d); Tensor xc = input(Device.cpu(), DType.FLOAT32, s, Layout.TRANSPOSED, -3, 3)) {
                double[] e = xc.toDoubleArray();
                for (int i = 0; i < e.length; i++) e[i] = (float) (e[i] * 1.5);
                check(d, r, e, run, "mul");
            }
        });
        add(tests, "add/java-scalar", d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor x = input(dev, DType.INT64, s, Layout.CONTIGUOUS, -9, 9)) {
                    return x.add(1L << 40);
                }
            };
            try (Tensor r = run.apply(d); Tensor xc = input(Device.cpu(), DType.INT64, s, Layout.CONTIGUOUS, -9, 9)) {
                long[] e = xc.toLongArray();
                long[] a = r.toLongArray();
                for (int i = 0; i < e.length; i++) assertEquals(e[i] + (1L << 40), a[i], "element " + i);
                check(d, r, Arrays.stream(e).mapToDouble(v -> v + (double) (1L << 40)).toArray(), run, "add");
            }
        });
        return tests;
    }

    // ------------------------------------------------------------------ edge values

    private static final double NAN = Double.NaN, INF = Double.POSITIVE_INFINITY;
    /** Floating edge values: NaN, infinities, both zeros, halves (round-half-even), tiny and large magnitudes. */
    private static final double[] FLOAT_EDGES = {NAN, INF, -INF, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1, -1, 3.75, -3.75, 7, -7,
            1e-3, -1e-3, 1e4, -1e4};
    private static final List<DType> FLOATS = List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16);
    private static final List<DType> INTEGERS = List.of(DType.INT64, DType.INT32, DType.INT16, DType.INT8, DType.UINT8, DType.BOOL);

    /** Integer edge values of {@code t}: its minimum and maximum, +-1, 0, small values of both signs and shift counts. */
    private static long[] integerEdges(DType t) {
        long min = switch (t) {
            case INT64 -> Long.MIN_VALUE;
            case INT32 -> Integer.MIN_VALUE;
            case INT16 -> Short.MIN_VALUE;
            case INT8 -> Byte.MIN_VALUE;
            default -> 0;
        };
        long max = switch (t) {
            case INT64 -> Long.MAX_VALUE;
            case INT32 -> Integer.MAX_VALUE;
            case INT16 -> Short.MAX_VALUE;
            case INT8 -> Byte.MAX_VALUE;
            case UINT8 -> 255;
            default -> 1;
        };
        return java.util.stream.LongStream.of(min, max, min + 1, max - 1, 0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 31, 32, 33, 63, 64, 100, -64, 200,
                        1L << 40).filter(v -> v >= min && v <= max).distinct().toArray();
    }

    /** Results whose value is exactly determined (no transcendental function): compared bit for bit, signed zeros and NaN included. */
    private static boolean exact(UnaryOp op) {
        return switch (op) {
            case NEG, ABS, SIGN, FLOOR, CEIL, ROUND, TRUNC, RELU, CLAMP, RECIPROCAL, LOGICAL_NOT, BITWISE_NOT, ISNAN, ISINF, ISFINITE -> true;
            default -> false;
        };
    }

    private static boolean exact(BinaryOp op) {
        return switch (op) {
            case DIV_TRUNC, DIV_FLOOR, REMAINDER, THRESHOLD_BACKWARD, EQ, NE, LT, LE, GT, GE, LOGICAL_AND, LOGICAL_OR,
                 LOGICAL_XOR -> true;
            default -> false;
        };
    }

    private static void assertSameBits(double[] expected, double[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        for (int i = 0; i < expected.length; i++) {
            if (Double.doubleToLongBits(expected[i]) != Double.doubleToLongBits(actual[i])) {
                fail(what + ": element " + i + " expected " + expected[i] + " but was " + actual[i] + " (bit for bit)\nexpected "
                        + Arrays.toString(expected) + "\nactual   " + Arrays.toString(actual));
            }
        }
    }

    /** Compares a result with the reference: bit for bit for exact ops and integer results, else within the dtype's tolerance. */
    private static void checkEdges(Device d, Tensor result, double[] expected, boolean exact, Function<Device, Tensor> sameOnCpu, String what) {
        if (!exact && result.dtype().isFloatingPoint()) {
            check(d, result, expected, sameOnCpu, what);
            return;
        }
        assertEquals(d, result.device(), what + ": result device");
        assertSameBits(expected, result.toDoubleArray(), what + " vs the scalar definition");
        if (d.isCuda()) {
            try (Tensor cpu = sameOnCpu.apply(Device.cpu())) {
                assertSameBits(cpu.toDoubleArray(), result.toDoubleArray(), what + " vs the CPU backend");
            }
        }
    }

    /** An edge-value tensor: floating dtypes from {@link #FLOAT_EDGES}, integers exactly from {@link #integerEdges}. */
    private static Tensor edges(DType t, Device d) {
        if (t.isFloatingPoint()) {
            try (Tensor host = Torch.tensor(FLOAT_EDGES, t, FLOAT_EDGES.length)) {
                return host.to(d);
            }
        }
        long[] v = integerEdges(t);
        try (Tensor wide = Torch.tensor(v, v.length); Tensor host = wide.to(t)) {
            return host.to(d);
        }
    }

    /** The exact integer reference: applyLong on the operands' longs, wrapped to {@code out} by the CPU's cast. */
    private static double[] longReference(long[] r, long[] shape, DType out) {
        try (Tensor ref = Torch.tensor(r, shape); Tensor cast = ref.to(out)) {
            return cast.toDoubleArray();
        }
    }

    @TestFactory
    List<DynamicTest> unaryEdgeValues() {
        List<DynamicTest> tests = new ArrayList<>();
        for (UnaryOp op : UnaryOp.values()) {
            for (DType t : concat(FLOATS, INTEGERS)) {
                if (!accepts(op, t)) continue;
                DType compute = computeType(op, t);
                DType out = Elementwise.declaration(op).resultType(compute);
                if (!t.isFloatingPoint() && compute.isFloatingPoint()) continue; // integer inputs of float ops: the random cases
                for (double[] p : parameters(op)) {
                    String params = p[0] == 0 && p[1] == 0 ? "" : "(" + p[0] + "," + p[1] + ")";
                    add(tests, "edges/" + op.pyName() + params + "/" + t, d -> {
                        Function<Device, Tensor> run = dev -> {
                            try (Tensor x = edges(t, dev)) {
                                return Elementwise.unary(op, x, p[0], p[1]);
                            }
                        };
                        try (Tensor y = run.apply(d); Tensor xc = edges(t, Device.cpu())) {
                            checkEdges(d, y, unaryReference(op, xc, y.dtype(), p[0], p[1]), exact(op), run, op.pyName());
                        }
                    });
                }
            }
        }
        return tests;
    }

    private static List<DType> concat(List<DType> a, List<DType> b) {
        List<DType> r = new ArrayList<>(a);
        r.addAll(b);
        return r;
    }

    /**
     * Every binary op on all pairs of edge values of one dtype: {@code a} as a column against {@code b} as a row (broadcast,
     * strided kernel) and the same pairs as two contiguous vectors (vector kernel). Integer divisors leave out 0 (its own cases).
     */
    private static void binaryEdgeCase(List<DynamicTest> tests, BinaryOp op, DType t, boolean broadcast) {
        boolean divides = op == BinaryOp.DIV_TRUNC || op == BinaryOp.DIV_FLOOR || op == BinaryOp.REMAINDER;
        add(tests, "edges/" + op.pyName() + "/" + t + (broadcast ? "/broadcast" : "/contiguous"), d -> {
            Function<Device, Tensor[]> operands = dev -> {
                try (Tensor all = edges(t, dev); Tensor b = divides && !t.isFloatingPoint() ? nonZero(all) : all.alias()) {
                    long n = all.numel(), m = b.numel();
                    Tensor col = all.reshape(n, 1), row = b.reshape(1, m);
                    if (broadcast) return new Tensor[] {col, row};
                    try (col; row; Tensor ea = col.expand(n, m); Tensor eb = row.expand(n, m)) {
                        return new Tensor[] {ea.contiguous(), eb.contiguous()};
                    }
                }
            };
            Function<Device, Tensor> run = dev -> {
                Tensor[] ab = operands.apply(dev);
                try (Tensor a = ab[0]; Tensor b = ab[1]) {
                    return Elementwise.binary(op, a, b, 1);
                }
            };
            Tensor[] host = operands.apply(Device.cpu());
            try (Tensor r = run.apply(d); Tensor a = host[0]; Tensor b = host[1]) {
                long[] shape = r.shape();
                double[] expected;
                if (t.isFloatingPoint()) {
                    expected = binaryReference(op, a, b, shape, r.dtype(), 1);
                } else {
                    long[] as = a.broadcastTo(shape).toLongArray(), bs = b.broadcastTo(shape).toLongArray();
                    long[] e = new long[as.length];
                    for (int i = 0; i < e.length; i++) e[i] = Elementwise.declaration(op).formula().compileLongArrays().eval(new long[] {as[i], bs[i]}, new long[] {1});
                    expected = longReference(e, shape, r.dtype());
                }
                checkEdges(d, r, expected, exact(op) || !r.dtype().isFloatingPoint(), run, op.pyName());
            }
        });
    }

    private static Tensor nonZero(Tensor t) {
        long[] v = t.toLongArray();
        long[] kept = Arrays.stream(v).filter(x -> x != 0).toArray();
        try (Tensor wide = Torch.tensor(kept, kept.length); Tensor typed = wide.to(t.dtype())) {
            return typed.to(t.device());
        }
    }

    @TestFactory
    List<DynamicTest> binaryEdgeValues() {
        List<DynamicTest> tests = new ArrayList<>();
        for (BinaryOp op : BinaryOp.values()) {
            for (DType t : concat(FLOATS, INTEGERS)) {
                DType compute;
                try {
                    compute = computeType(op, t);
                } catch (IllegalArgumentException refused) {
                    continue;
                }
                if (compute != t) continue; // integer true division: promoted, the random cases cover it
                binaryEdgeCase(tests, op, t, true);
                if (t != DType.BOOL) binaryEdgeCase(tests, op, t, false);
            }
        }
        return tests;
    }

    /** Integer division by zero throws ArithmeticException naming the op on every device (PyTorch's ZeroDivisionError). */
    @TestFactory
    List<DynamicTest> integerDivisionByZero() {
        List<DynamicTest> tests = new ArrayList<>();
        for (BinaryOp op : new BinaryOp[] {BinaryOp.DIV_TRUNC, BinaryOp.DIV_FLOOR, BinaryOp.REMAINDER}) {
            for (DType t : List.of(DType.INT64, DType.INT32, DType.UINT8, DType.BOOL)) {
                add(tests, "division-by-zero/" + op.pyName() + "/" + t, d -> {
                    try (Tensor a = input(d, t, new long[] {3, 5}, Layout.CONTIGUOUS, 1, 2);
                         Tensor wide = Torch.tensor(new long[] {3, 1, 0, 2, 1}, 1, 5); Tensor typed = wide.to(t); Tensor b = typed.to(d)) {
                        ArithmeticException e = org.junit.jupiter.api.Assertions.assertThrows(ArithmeticException.class,
                                () -> Elementwise.binary(op, a, b, 1).close());
                        assertEquals(op.pyName() + ": integer division by zero", e.getMessage());
                    }
                });
            }
            add(tests, "division-by-zero/" + op.pyName() + "/java-scalar", d -> {
                try (Tensor a = input(d, DType.INT64, new long[] {4}, Layout.SLICED, -5, 5)) {
                    ArithmeticException e = org.junit.jupiter.api.Assertions.assertThrows(ArithmeticException.class,
                            () -> Elementwise.binaryScalar(op, a, 0, 0, DType.INT64, false, 1).close());
                    assertEquals(op.pyName() + ": integer division by zero", e.getMessage());
                }
            });
            add(tests, "division-by-zero/" + op.pyName() + "/float-is-not-an-error", d -> {
                try (Tensor a = input(d, DType.FLOAT32, new long[] {4}, Layout.CONTIGUOUS, -5, 5); Tensor z = Torch.zeros(new long[] {4}, DType.FLOAT32, d);
                     Tensor r = Elementwise.binary(op, a, z, 1)) {
                    for (double v : r.toDoubleArray()) {
                        assertEquals(true, Double.isNaN(v) || Double.isInfinite(v), op.pyName() + " by 0.0 gives inf or NaN, got " + v);
                    }
                }
            });
        }
        return tests;
    }

    // ------------------------------------------------------------------ where

    private static void whereCase(List<DynamicTest> tests, Operand c, Operand a, Operand b) {
        add(tests, "where/" + c + "," + a + "," + b, d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor cc = c.make(dev, false); Tensor x = a.make(dev, false); Tensor y = b.make(dev, false)) {
                    return Torch.where(cc, x, y);
                }
            };
            try (Tensor r = run.apply(d); Tensor cc = c.make(Device.cpu(), false); Tensor x = a.make(Device.cpu(), false);
                 Tensor y = b.make(Device.cpu(), false)) {
                long[] shape = r.shape();
                double[] cs = cc.broadcastTo(shape).toDoubleArray(), xs = x.broadcastTo(shape).toDoubleArray(),
                        ys = y.broadcastTo(shape).toDoubleArray();
                double[] e = new double[cs.length];
                for (int i = 0; i < e.length; i++) e[i] = cs[i] != 0 ? xs[i] : ys[i];
                try (Tensor ref = Torch.tensor(e, DType.FLOAT64, shape); Tensor cast = ref.to(r.dtype())) {
                    check(d, r, cast.toDoubleArray(), run, "where");
                }
            }
        });
    }

    @TestFactory
    List<DynamicTest> where() {
        List<DynamicTest> tests = new ArrayList<>();
        long[] s = {3, 5};
        whereCase(tests, new Operand(DType.BOOL, s, Layout.CONTIGUOUS), new Operand(DType.FLOAT32, s, Layout.CONTIGUOUS),
                new Operand(DType.FLOAT32, s, Layout.CONTIGUOUS));
        whereCase(tests, new Operand(DType.BOOL, new long[] {3, 1}, Layout.CONTIGUOUS), new Operand(DType.FLOAT16, s, Layout.TRANSPOSED),
                new Operand(DType.FLOAT16, new long[] {5}, Layout.CONTIGUOUS));
        whereCase(tests, new Operand(DType.BOOL, s, Layout.SLICED), new Operand(DType.INT64, s, Layout.CONTIGUOUS),
                new Operand(DType.FLOAT32, s, Layout.CONTIGUOUS));
        whereCase(tests, new Operand(DType.BOOL, s, Layout.TRANSPOSED), new Operand(DType.INT64, s, Layout.CONTIGUOUS),
                new Operand(DType.INT32, new long[] {1, 5}, Layout.CONTIGUOUS));
        whereCase(tests, new Operand(DType.BOOL, new long[] {999, 37}, Layout.CONTIGUOUS), new Operand(DType.BFLOAT16, new long[] {999, 37}, Layout.CONTIGUOUS),
                new Operand(DType.FLOAT64, new long[0], Layout.CONTIGUOUS));
        return tests;
    }

    // ------------------------------------------------------------------ copies and fill

    @TestFactory
    List<DynamicTest> copiesAndFill() {
        List<DynamicTest> tests = new ArrayList<>();
        long[] s = {3, 5};
        for (DType t : DType.values()) {
            addCrossDevice(tests, "to-and-back/" + t, d -> {
                try (Tensor x = input(Device.cpu(), t, s, Layout.CONTIGUOUS, t == DType.UINT8 || t == DType.BOOL ? 0 : -50, t == DType.BOOL ? 2 : 50);
                     Tensor on = x.to(d); Tensor back = on.cpu()) {
                    assertEquals(d, on.device());
                    assertArrayEquals(x.toDoubleArray(), back.toDoubleArray(), "values survive the round trip exactly");
                }
            });
        }
        addCrossDevice(tests, "to-and-back/int64-exact", d -> {
            long[] big = {Long.MAX_VALUE, Long.MIN_VALUE, (1L << 53) + 1, -1};
            try (Tensor x = Torch.tensor(big); Tensor on = x.to(d)) {
                assertArrayEquals(big, on.toLongArray());
            }
        });
        for (Layout l : new Layout[] {Layout.TRANSPOSED, Layout.SLICED, Layout.OFFSET}) {
            add(tests, "to-host/" + l.name().toLowerCase() + "-float16-source", d -> {
                try (Tensor x = input(d, DType.FLOAT16, s, l, -3, 3); Tensor xc = input(Device.cpu(), DType.FLOAT16, s, l, -3, 3);
                     Tensor host = x.cpu()) {
                    assertArrayEquals(xc.toDoubleArray(), host.toDoubleArray());
                }
            });
        }
        add(tests, "copy_/host-float64-into-transposed-device-bfloat16", d -> {
            try (Tensor src = input(Device.cpu(), DType.FLOAT64, s, Layout.CONTIGUOUS, -3, 3);
                 Tensor base = Tensor.empty(new long[] {5, 3}, DType.BFLOAT16, d); Tensor dst = base.t()) {
                dst.copy_(src);
                try (Tensor expected = src.to(DType.BFLOAT16)) {
                    assertArrayEquals(expected.toDoubleArray(), dst.toDoubleArray());
                }
            }
        });
        add(tests, "copy_/device-int32-sliced-into-host-transposed-float32", d -> {
            try (Tensor src = input(d, DType.INT32, s, Layout.SLICED, -100, 100);
                 Tensor base = Tensor.empty(new long[] {5, 3}, DType.FLOAT32, Device.cpu()); Tensor dst = base.t();
                 Tensor expected = input(Device.cpu(), DType.INT32, s, Layout.SLICED, -100, 100)) {
                dst.copy_(src);
                assertArrayEquals(expected.toDoubleArray(), dst.toDoubleArray());
            }
        });
        add(tests, "copy_/broadcast-host-row-into-device", d -> {
            try (Tensor row = Torch.tensor(new double[] {1, 2, 3, 4, 5}, DType.FLOAT32, 5); Tensor dst = Torch.zeros(s, DType.INT16, d)) {
                dst.copy_(row);
                assertArrayEquals(new long[] {1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5}, dst.toLongArray());
            }
        });
        add(tests, "contiguous-and-to-dtype-on-device", d -> {
            try (Tensor x = input(d, DType.FLOAT32, new long[] {4, 6}, Layout.TRANSPOSED, -3, 3); Tensor c = x.contiguous();
                 Tensor h = x.to(DType.FLOAT16); Tensor xc = input(Device.cpu(), DType.FLOAT32, new long[] {4, 6}, Layout.TRANSPOSED, -3, 3);
                 Tensor hc = xc.to(DType.FLOAT16)) {
                assertEquals(d, c.device());
                assertArrayEquals(xc.toDoubleArray(), c.toDoubleArray());
                assertArrayEquals(hc.toDoubleArray(), h.toDoubleArray());
            }
        });
        add(tests, "copy_/large-multi-block", d -> {
            try (Tensor x = input(d, DType.FLOAT32, new long[] {999, 37}, Layout.TRANSPOSED, -3, 3);
                 Tensor xc = input(Device.cpu(), DType.FLOAT32, new long[] {999, 37}, Layout.TRANSPOSED, -3, 3);
                 Tensor y = Tensor.empty(new long[] {999, 37}, DType.FLOAT64, d)) {
                y.copy_(x);
                assertArrayEquals(xc.toDoubleArray(), y.toDoubleArray());
            }
        });
        record FillCase(String name, DType t, long[] shape, boolean transposed, double value, long longValue, boolean useLong) {}
        for (FillCase f : List.of(
                new FillCase("float32", DType.FLOAT32, new long[] {1001}, false, 2.5, 2, false),
                new FillCase("zero-memset", DType.FLOAT64, new long[] {7, 3}, false, 0, 0, false),
                new FillCase("negative-zero", DType.FLOAT32, new long[] {5}, false, -0.0, 0, false),
                new FillCase("int64-exact", DType.INT64, new long[] {9}, false, 0, (1L << 53) + 1, true),
                new FillCase("bfloat16-rounds", DType.BFLOAT16, new long[] {17}, false, 1.1, 1, false),
                new FillCase("bool", DType.BOOL, new long[] {3}, false, 1, 1, true),
                new FillCase("uint8-transposed", DType.UINT8, new long[] {3, 4}, true, 200, 200, true),
                new FillCase("float16-transposed", DType.FLOAT16, new long[] {3, 4}, true, -0.3, 0, false))) {
            add(tests, "fill_/" + f.name, d -> {
                long[] base = f.transposed ? new long[] {f.shape[1], f.shape[0]} : f.shape;
                try (Tensor b = Torch.full(base, 7L, f.t, d); Tensor x = f.transposed ? b.t() : b.alias();
                     Tensor value = f.useLong ? Torch.tensor(new long[] {f.longValue}) : Torch.tensor(new double[] {f.value}, DType.FLOAT64, 1);
                     Tensor one = value.to(f.t)) {
                    // Expected: the value converted to the dtype by the CPU's cast (to), in every element.
                    if (f.useLong) x.fill_(f.longValue);
                    else x.fill_(f.value);
                    double e = one.toDoubleArray()[0];
                    long el = one.toLongArray()[0];
                    double[] a = x.toDoubleArray();
                    long[] al = x.toLongArray();
                    for (int i = 0; i < a.length; i++) {
                        assertEquals(Double.doubleToRawLongBits(e), Double.doubleToRawLongBits(a[i]), "bits of element " + i);
                        assertEquals(el, al[i], "element " + i + " as long");
                    }
                }
            });
        }
        return tests;
    }
}
