package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.UnaryOp;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The ops wired to CUDA (copies between devices, fill, the unary and binary ops of
 * {@code elementwise.cu}, where), run on every device: {@code cpu} always and {@code cuda:0}. Each
 * cuda case is skipped with CUDA's unavailability reason where there is no GPU (never passed).
 *
 * <p>References: the op's scalar definition ({@link UnaryOp#apply}, {@link BinaryOp#apply} in double,
 * or their long forms for integral compute) on the inputs' values, converted to the result dtype by
 * {@code to(dtype)} on the CPU; results compared within the dtype's tolerance (integers exactly). On
 * cuda, results must also match the CPU backend's result for the same inputs. Inputs cover float32,
 * float64, float16, bfloat16 and integer dtypes; contiguous, transposed, sliced (stride 2), offset
 * (misaligned) and broadcast operands; empty, zero-dim and multi-block sizes; mixed dtypes.
 */
class ElementwiseDeviceConformanceTest {
    private static final Device CUDA = DeviceCases.CUDA;

    private static List<Device> devices() {
        return DeviceCases.DEVICES;
    }

    private interface Body {
        void run(Device d);
    }

    private static void add(List<DynamicTest> tests, String name, Body body) {
        for (Device d : devices()) {
            tests.add(DynamicTest.dynamicTest(d + "/" + name, () -> {
                DeviceCases.assumeAvailable(d);
                body.run(d);
            }));
        }
    }

    /** Cases that only mean something across devices (on the CPU, {@code to(cpu)} is the same tensor): cuda:0 only. */
    private static void addCrossDevice(List<DynamicTest> tests, String name, Body body) {
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

    private static double[] unaryReference(UnaryOp op, Tensor x, DType out) {
        double[] xs = x.toDoubleArray();
        double[] r = new double[xs.length];
        boolean floating = out.isFloatingPoint();
        for (int i = 0; i < xs.length; i++) r[i] = floating ? op.apply(xs[i], 0, 0) : op.applyLong((long) xs[i], 0, 0);
        try (Tensor ref = Torch.tensor(r, DType.FLOAT64, x.shape()); Tensor cast = ref.to(out)) {
            return cast.toDoubleArray();
        }
    }

    private static void unaryCase(List<DynamicTest> tests, UnaryOp op, DType t, long[] shape, Layout layout) {
        boolean positive = op == UnaryOp.LOG || op == UnaryOp.SQRT || op == UnaryOp.RSQRT;
        double lo = positive ? 0.25 : t == DType.UINT8 ? 0 : -4, hi = t.isFloatingPoint() ? 4 : 20;
        add(tests, op.pyName() + "/" + t + Arrays.toString(shape) + "/" + layout.name().toLowerCase(), d -> {
            Function<Device, Tensor> run = dev -> {
                try (Tensor x = input(dev, t, shape, layout, lo, hi)) {
                    return Elementwise.unary(op, x, 0, 0);
                }
            };
            try (Tensor y = run.apply(d); Tensor xc = input(Device.cpu(), t, shape, layout, lo, hi)) {
                check(d, y, unaryReference(op, xc, y.dtype()), run, op.pyName());
            }
        });
    }

    @TestFactory
    List<DynamicTest> unary() {
        List<DynamicTest> tests = new ArrayList<>();
        for (UnaryOp op : UnaryOp.values()) {
            if (ElementwisePlan.kernelName(op) == null) continue;
            boolean numeric = ElementwisePlan.supports(op, DType.INT64);
            List<DType> types = new ArrayList<>(List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16));
            if (numeric) types.addAll(List.of(DType.INT32, DType.INT64, DType.INT8));
            for (DType t : types) {
                for (Layout l : new Layout[] {Layout.CONTIGUOUS, Layout.TRANSPOSED, Layout.SLICED}) {
                    unaryCase(tests, op, t, new long[] {3, 5}, l);
                }
            }
            if (!numeric) unaryCase(tests, op, DType.INT32, new long[] {4, 3}, Layout.CONTIGUOUS); // promotes to float32
        }
        unaryCase(tests, UnaryOp.EXP, DType.FLOAT32, new long[0], Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.NEG, DType.FLOAT32, new long[] {0}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.TANH, DType.FLOAT32, new long[] {999, 37}, Layout.CONTIGUOUS);
        unaryCase(tests, UnaryOp.RELU, DType.BFLOAT16, new long[] {1001}, Layout.OFFSET);
        unaryCase(tests, UnaryOp.SIGMOID, DType.FLOAT32, new long[] {2, 3, 4, 5}, Layout.TRANSPOSED);
        return tests;
    }

    // ------------------------------------------------------------------ binary

    private static double[] binaryReference(BinaryOp op, Tensor a, Tensor b, long[] shape, DType out, double alpha) {
        double[] as = a.broadcastTo(shape).toDoubleArray(), bs = b.broadcastTo(shape).toDoubleArray();
        double[] r = new double[as.length];
        boolean floating = out.isFloatingPoint();
        for (int i = 0; i < r.length; i++) {
            r[i] = floating ? op.apply(as[i], bs[i], alpha) : op.applyLong((long) as[i], (long) bs[i], (long) alpha);
        }
        try (Tensor ref = Torch.tensor(r, DType.FLOAT64, shape); Tensor cast = ref.to(out)) {
            return cast.toDoubleArray();
        }
    }

    private record Operand(DType t, long[] shape, Layout layout) {
        Tensor make(Device d, boolean nonZero) {
            boolean unsigned = t == DType.UINT8 || t == DType.BOOL;
            double lo = nonZero ? 0.5 : unsigned ? 0 : -6, hi = t == DType.BOOL ? 2 : t.isFloatingPoint() ? 6 : 12;
            return input(d, t, shape, layout, lo, hi);
        }

        @Override
        public String toString() {
            return t + Arrays.toString(shape) + (layout == Layout.CONTIGUOUS ? "" : "/" + layout.name().toLowerCase());
        }
    }

    private static void binaryCase(List<DynamicTest> tests, BinaryOp op, Operand a, Operand b, double alpha) {
        boolean divisor = op == BinaryOp.DIV;
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
            if (ElementwisePlan.kernelName(op) == null) continue;
            List<DType> types = new ArrayList<>(List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16,
                    DType.INT32, DType.INT64, DType.UINT8));
            if (op != BinaryOp.SUB) types.add(DType.BOOL);
            for (DType t : types) {
                binaryCase(tests, op, new Operand(t, s, Layout.CONTIGUOUS), new Operand(t, s, Layout.CONTIGUOUS), 1);
                binaryCase(tests, op, new Operand(t, new long[] {3, 1}, Layout.CONTIGUOUS), new Operand(t, new long[] {1, 5}, Layout.CONTIGUOUS), 1);
            }
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
