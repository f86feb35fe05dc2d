package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The convolution family through the public ops on every device: {@code cpu} always, and {@code cuda:0}
 * twice, through cuDNN and through the fallback (im2col/col2im of {@code conv.cu} and cuBLASLt GEMMs,
 * forced with {@link CudaConvolutionKernels#forceFallback}); each cuda case is skipped with CUDA's
 * unavailability reason where there is no GPU (never passed). Ops: {@code F.conv2d} forward and the
 * gradients of input, weight and bias (float16 too on cuda:0, refused on the cpu; strides, asymmetric
 * padding, "same" padding with an even kernel, dilation, groups, depthwise with and without a channel multiplier, 1x1 pointwise and strided, a
 * multi-block size), {@code F.conv1d}, {@code F.convTranspose2d} (output padding, groups) with its three
 * gradients, {@code F.unfold} (float16/bfloat16 too: it only moves elements) and {@code F.fold}; float32
 * and float64.
 *
 * <p>Reference: {@link ConvDefinitions} evaluated in double on the inputs' values (multiples of 1/4).
 * Tolerance per element: {@code 32 * eps_acc * (sum of |terms| + the largest such sum in the tensor)}
 * (the second part admits FFT and Winograd algorithms, whose error scales with the whole signal), with
 * {@code eps_acc} float32's or float64's epsilon; unfold is exact.
 */
class ConvolutionDeviceConformanceTest {
    /** Where a case runs: the CPU backend, or cuda:0 through cuDNN or through the fallback. */
    enum Path {
        CPU(Device.cpu()), CUDNN(DeviceCases.CUDA), FALLBACK(DeviceCases.CUDA);

        final Device device;

        Path(Device device) {
            this.device = device;
        }
    }

    /** A conv2d case: shapes and options as {@code F.conv2d} takes them ({@code same}: padding "same"). */
    private record Conv(String name, int n, int cin, int h, int w, int cout, int kh, int kw, int[] stride, int[] pad, int[] dil,
                        int groups, boolean bias, boolean same) {}

    private static final List<Conv> CONVS = List.of(
            new Conv("3x3 pad 1", 2, 3, 8, 7, 4, 3, 3, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true, false),
            new Conv("stride 2x3 pad 1x2", 2, 3, 9, 8, 5, 3, 2, new int[] {2, 3}, new int[] {1, 2}, new int[] {1, 1}, 1, true, false),
            new Conv("dilation 2x3", 2, 2, 9, 9, 3, 3, 3, new int[] {1, 2}, new int[] {2, 1}, new int[] {2, 3}, 1, false, false),
            new Conv("groups 2", 3, 4, 6, 7, 6, 3, 3, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 2, true, false),
            new Conv("depthwise stride 2", 2, 6, 6, 6, 6, 3, 3, new int[] {2, 2}, new int[] {1, 1}, new int[] {1, 1}, 6, true, false),
            new Conv("depthwise x2", 2, 3, 5, 5, 6, 3, 3, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 3, true, false),
            new Conv("pointwise 1x1", 3, 4, 5, 6, 6, 1, 1, new int[] {1, 1}, new int[] {0, 0}, new int[] {1, 1}, 1, true, false),
            new Conv("1x1 stride 2", 2, 4, 7, 7, 3, 1, 1, new int[] {2, 2}, new int[] {0, 0}, new int[] {1, 1}, 1, false, false),
            new Conv("same 4x4", 2, 2, 5, 6, 3, 4, 4, new int[] {1, 1}, null, new int[] {1, 1}, 1, true, true),
            new Conv("multi-block 16->32 20x20", 4, 16, 20, 20, 32, 3, 3, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true, false));

    private static final List<DType> DTYPES = List.of(DType.FLOAT32, DType.FLOAT64);

    @TestFactory
    List<DynamicTest> conv2d() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path p : Path.values()) {
            for (DType t : DTYPES) {
                for (Conv c : CONVS) tests.add(DynamicTest.dynamicTest(p + "/" + t + "/" + c.name(), () -> on(p, () -> conv2d(p.device, t, c))));
            }
            // float16 (autocast's dtype on CUDA) computes in float32 there; the CPU refuses it, as PyTorch 1.13's.
            for (Conv c : List.of(CONVS.get(0), CONVS.get(3), CONVS.get(4))) {
                tests.add(DynamicTest.dynamicTest(p + "/" + DType.FLOAT16 + "/" + c.name(), () -> on(p, () -> {
                    if (p == Path.CPU) {
                        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> conv2d(p.device, DType.FLOAT16, c));
                        assertTrue(e.getMessage().contains("not implemented for"), e.getMessage());
                    } else {
                        conv2d(p.device, DType.FLOAT16, c);
                    }
                })));
            }
        }
        return tests;
    }

    @TestFactory
    List<DynamicTest> conv1dTransposedAndFolds() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Path p : Path.values()) {
            for (DType t : DTYPES) {
                tests.add(DynamicTest.dynamicTest(p + "/" + t + "/conv1d", () -> on(p, () -> conv1d(p.device, t))));
                tests.add(DynamicTest.dynamicTest(p + "/" + t + "/conv_transpose2d", () -> on(p, () -> convTranspose2d(p.device, t, 1))));
                tests.add(DynamicTest.dynamicTest(p + "/" + t + "/conv_transpose2d groups 2", () -> on(p, () -> convTranspose2d(p.device, t, 2))));
                tests.add(DynamicTest.dynamicTest(p + "/" + t + "/fold", () -> on(p, () -> fold(p.device, t))));
            }
            for (DType t : List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16)) {
                tests.add(DynamicTest.dynamicTest(p + "/" + t + "/unfold", () -> on(p, () -> unfold(p.device, t))));
            }
        }
        return tests;
    }

    /** Runs {@code body} on {@code p}: skipped where cuda:0 is unavailable; the cuDNN path requires cuDNN, the fallback path forces it. */
    private static void on(Path p, Runnable body) {
        DeviceCases.assumeAvailable(p.device);
        if (p == Path.CUDNN) {
            String status = ((CudaConvolutionKernels) CudaBackend.get().convolution()).cudnnStatus();
            assertTrue(status.startsWith("cuDNN"), "the cuDNN path needs cuDNN: " + status);
        }
        CudaConvolutionKernels.forceFallback = p == Path.FALLBACK;
        try {
            body.run();
        } finally {
            CudaConvolutionKernels.forceFallback = false;
        }
    }

    // ------------------------------------------------------------------ cases

    private static void conv2d(Device d, DType t, Conv c) {
        int ph = c.same() ? (c.kh() - 1) / 2 : c.pad()[0], pw = c.same() ? (c.kw() - 1) / 2 : c.pad()[1];
        int oh = c.same() ? c.h() : (c.h() + 2 * ph - c.dil()[0] * (c.kh() - 1) - 1) / c.stride()[0] + 1;
        int ow = c.same() ? c.w() : (c.w() + 2 * pw - c.dil()[1] * (c.kw() - 1) - 1) / c.stride()[1] + 1;
        Geometry g = new Geometry(c.n(), c.cin(), c.h(), c.w(), c.cout(), c.kh(), c.kw(), c.stride()[0], c.stride()[1], ph, pw,
                c.dil()[0], c.dil()[1], c.groups(), oh, ow);
        SplittableRandom rnd = new SplittableRandom(c.name().hashCode());
        double[] x = values(g.n() * g.cin() * g.h() * g.w(), rnd), w = values(g.cout() * g.cinG() * g.kh() * g.kw(), rnd);
        double[] b = values(g.cout(), rnd), gy = values(g.n() * g.cout() * g.oh() * g.ow(), rnd);
        long[] xs = {g.n(), g.cin(), g.h(), g.w()}, ws = {g.cout(), g.cinG(), g.kh(), g.kw()}, ys = {g.n(), g.cout(), g.oh(), g.ow()};
        try (Tensor xt = leaf(x, t, xs, d); Tensor wt = leaf(w, t, ws, d); Tensor bt = c.bias() ? leaf(b, t, new long[] {g.cout()}, d) : null;
             Tensor y = c.same() ? F.conv2d(xt, wt, bt, c.stride(), "same", c.dil(), c.groups())
                     : F.conv2d(xt, wt, bt, c.stride(), c.pad(), c.dil(), c.groups());
             Tensor gyt = onDevice(gy, t, ys, d)) {
            double[][] ref = withBounds(v -> ConvDefinitions.forward(g, v[0], v[1]), x, w);
            if (c.bias()) addBias(ref[0], b, g.cout(), g.oh() * g.ow(), g.n());
            check(y, ys, ref, t, d, "y");
            y.backward(gyt);
            check(xt.grad(), xs, withBounds(v -> ConvDefinitions.backwardData(g, v[0], v[1]), gy, w), t, d, "x.grad");
            check(wt.grad(), ws, withBounds(v -> ConvDefinitions.backwardFilter(g, v[0], v[1]), gy, x), t, d, "w.grad");
            if (c.bias()) check(bt.grad(), new long[] {g.cout()}, biasGrad(gy, g.n(), g.cout(), g.oh() * g.ow()), t, d, "b.grad");
        }
    }

    private static void conv1d(Device d, DType t) {
        // [2, 3, 12] with weight [4, 3, 5], stride 2, padding 2, dilation 2: a 2-D convolution of height 1.
        int ow = (12 + 4 - 2 * 4 - 1) / 2 + 1;
        Geometry g = new Geometry(2, 3, 1, 12, 4, 1, 5, 1, 2, 0, 2, 1, 2, 1, 1, ow);
        SplittableRandom rnd = new SplittableRandom(1);
        double[] x = values(2 * 3 * 12, rnd), w = values(4 * 3 * 5, rnd), b = values(4, rnd), gy = values(2 * 4 * ow, rnd);
        try (Tensor xt = leaf(x, t, new long[] {2, 3, 12}, d); Tensor wt = leaf(w, t, new long[] {4, 3, 5}, d);
             Tensor bt = leaf(b, t, new long[] {4}, d); Tensor y = F.conv1d(xt, wt, bt, 2, 2, 2, 1);
             Tensor gyt = onDevice(gy, t, new long[] {2, 4, ow}, d)) {
            double[][] ref = withBounds(v -> ConvDefinitions.forward(g, v[0], v[1]), x, w);
            addBias(ref[0], b, 4, ow, 2);
            check(y, new long[] {2, 4, ow}, ref, t, d, "y");
            y.backward(gyt);
            check(xt.grad(), new long[] {2, 3, 12}, withBounds(v -> ConvDefinitions.backwardData(g, v[0], v[1]), gy, w), t, d, "x.grad");
            check(wt.grad(), new long[] {4, 3, 5}, withBounds(v -> ConvDefinitions.backwardFilter(g, v[0], v[1]), gy, x), t, d, "w.grad");
            check(bt.grad(), new long[] {4}, biasGrad(gy, 2, 4, ow), t, d, "b.grad");
        }
    }

    /**
     * {@code conv_transpose2d(x [2, 4, 5, 5], w [4, 6 / groups, 3, 3], stride 2, padding 1, output_padding 1)}:
     * the input gradient of the convolution {@code [2, 6, 10, 10] -> [2, 4, 5, 5]} with weight {@code w}, plus bias.
     */
    private static void convTranspose2d(Device d, DType t, int groups) {
        int hOut = (5 - 1) * 2 - 2 + 2 + 1 + 1;
        Geometry g = new Geometry(2, 6, hOut, hOut, 4, 3, 3, 2, 2, 1, 1, 1, 1, groups, 5, 5);
        SplittableRandom rnd = new SplittableRandom(groups);
        double[] x = values(2 * 4 * 25, rnd), w = values(4 * (6 / groups) * 9, rnd), b = values(6, rnd), gy = values(2 * 6 * hOut * hOut, rnd);
        long[] xs = {2, 4, 5, 5}, ws = {4, 6 / groups, 3, 3}, ys = {2, 6, hOut, hOut};
        try (Tensor xt = leaf(x, t, xs, d); Tensor wt = leaf(w, t, ws, d); Tensor bt = leaf(b, t, new long[] {6}, d);
             Tensor y = F.convTranspose2d(xt, wt, bt, new int[] {2, 2}, new int[] {1, 1}, new int[] {1, 1}, groups, new int[] {1, 1});
             Tensor gyt = onDevice(gy, t, ys, d)) {
            double[][] ref = withBounds(v -> ConvDefinitions.backwardData(g, v[0], v[1]), x, w);
            addBias(ref[0], b, 6, hOut * hOut, 2);
            check(y, ys, ref, t, d, "y");
            y.backward(gyt);
            check(xt.grad(), xs, withBounds(v -> ConvDefinitions.forward(g, v[0], v[1]), gy, w), t, d, "x.grad");
            check(wt.grad(), ws, withBounds(v -> ConvDefinitions.backwardFilter(g, v[0], v[1]), x, gy), t, d, "w.grad");
            check(bt.grad(), new long[] {6}, biasGrad(gy, 2, 6, hOut * hOut), t, d, "b.grad");
        }
    }

    /** The window of unfold and fold: [2, 3, 7, 6], kernel 3x2, dilation (2, 1), padding 1, stride (2, 1). */
    private static final Geometry WINDOW = window();

    private static Geometry window() {
        int oh = (7 + 2 - 2 * 2 - 1) / 2 + 1, ow = (6 + 2 - 1 - 1) + 1;
        return new Geometry(2, 3, 7, 6, 3, 3, 2, 2, 1, 1, 1, 2, 1, 1, oh, ow);
    }

    private static void unfold(Device d, DType t) {
        Geometry g = WINDOW;
        double[] x = values(2 * 3 * 7 * 6, new SplittableRandom(5));
        int rows = 3 * 3 * 2, l = g.oh() * g.ow();
        double[] col = new double[2 * rows * l];
        ConvDefinitions.im2col(g, x, 0, 2, col);
        try (Tensor xt = onDevice(x, t, new long[] {2, 3, 7, 6}, d);
             Tensor u = F.unfold(xt, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 1}, new int[] {2, 1})) {
            check(u, new long[] {2, rows, l}, new double[][] {col, new double[col.length]}, t, d, "unfold");
        }
    }

    private static void fold(Device d, DType t) {
        Geometry g = WINDOW;
        int rows = 3 * 3 * 2, l = g.oh() * g.ow();
        double[] col = values(2 * rows * l, new SplittableRandom(6));
        double[][] ref = withBounds(v -> {
            double[] out = new double[2 * 3 * 7 * 6];
            ConvDefinitions.col2im(g, v[0], 0, 2, out);
            return out;
        }, col);
        try (Tensor ct = onDevice(col, t, new long[] {2, rows, l}, d);
             Tensor f = F.fold(ct, new int[] {7, 6}, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 1}, new int[] {2, 1})) {
            check(f, new long[] {2, 3, 7, 6}, ref, t, d, "fold");
        }
    }

    // ------------------------------------------------------------------ helpers

    /** Multiples of 1/4 in [-2, 2]: exact in every dtype tested. */
    private static double[] values(int n, SplittableRandom rnd) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = rnd.nextInt(-8, 9) / 4.0;
        return v;
    }

    private static Tensor onDevice(double[] v, DType t, long[] shape, Device d) {
        try (Tensor host = Torch.tensor(v, t, shape)) {
            return host.to(d);
        }
    }

    private static Tensor leaf(double[] v, DType t, long[] shape, Device d) {
        return onDevice(v, t, shape, d).requiresGrad_();
    }

    private interface Definition {
        double[] of(double[][] operands);
    }

    /** {@code {values, bounds}}: the definition on the operands, and the tolerance from the definition on their absolute values. */
    private static double[][] withBounds(Definition def, double[]... operands) {
        double[] values = def.of(operands);
        double[][] abs = new double[operands.length][];
        for (int k = 0; k < operands.length; k++) {
            abs[k] = operands[k].clone();
            for (int i = 0; i < abs[k].length; i++) abs[k][i] = Math.abs(abs[k][i]);
        }
        double[] magnitude = def.of(abs);
        return new double[][] {values, magnitude};
    }

    private static void addBias(double[] y, double[] b, int channels, int plane, int images) {
        for (int n = 0; n < images; n++) {
            for (int c = 0; c < channels; c++) {
                for (int p = 0; p < plane; p++) y[(n * channels + c) * plane + p] += b[c];
            }
        }
    }

    private static double[][] biasGrad(double[] gy, int images, int channels, int plane) {
        double[] s = new double[channels], m = new double[channels];
        for (int n = 0; n < images; n++) {
            for (int c = 0; c < channels; c++) {
                for (int p = 0; p < plane; p++) {
                    s[c] += gy[(n * channels + c) * plane + p];
                    m[c] += Math.abs(gy[(n * channels + c) * plane + p]);
                }
            }
        }
        return new double[][] {s, m};
    }

    private static void check(Tensor result, long[] shape, double[][] ref, DType t, Device d, String what) {
        assertNotNull(result, what + " missing");
        assertEquals(d, result.device(), what + ": device");
        assertEquals(t, result.dtype(), what + ": dtype");
        assertArrayEquals(shape, result.shape(), what + ": shape");
        double[] got = result.to(Device.cpu()).toDoubleArray();
        double[] want = ref[0], magnitude = ref[1];
        double largest = 0;
        for (double m : magnitude) largest = Math.max(largest, m);
        double eps = t == DType.FLOAT64 ? 0x1p-52 : 0x1p-23;
        // float16 results are float32 results rounded once (half an ulp: 2^-11 relative).
        double rounding = t == DType.FLOAT16 ? 0x1p-11 : 0;
        for (int i = 0; i < got.length; i++) {
            double bound = 32 * eps * (magnitude[i] + largest) + rounding * Math.abs(want[i]);
            if (!(Math.abs(got[i] - want[i]) <= bound)) {
                throw new AssertionError(what + " on " + d + " (" + t + ") element " + i + ": expected " + want[i] + " +- " + bound
                        + " but was " + got[i]);
            }
        }
    }
}
