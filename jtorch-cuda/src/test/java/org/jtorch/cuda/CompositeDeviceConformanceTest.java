package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Ops that core composes from primitives (interpolation, padding, pixel shuffle, embedding, losses,
 * layer norm, attention, dropout, joining) on every device: {@code cpu} always, {@code cuda:0} skipped
 * with CUDA's unavailability reason where there is no GPU (never passed). These catch front ends that
 * build helper tensors on the host next to device inputs, and device kernels the composites reach.
 *
 * <p>Each case runs in float64. Forward: against a definition written here in double. Backward: the
 * gradient's directional derivative {@code sum(grad(sum(w * f(x))) * v)} against the central difference
 * of the same device's forward along {@code v}.
 */
class CompositeDeviceConformanceTest {
    private static final double TOL = 1e-9;

    /** The op under test: float64 inputs on {@code d} in, one output; constant operands are made on {@code d}. */
    private interface Op {
        Tensor apply(Tensor[] in, Device d);
    }

    private record Case(String name, long[][] shapes, Op op, Function<double[][], double[]> reference, boolean differentiable) {}

    private static double[] values(long n, int salt) {
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = ((i * 0.6180339887498949 + 0.237 * salt) % 1.0) * 2 - 1;
        return v;
    }

    private static long numel(long[] shape) {
        long n = 1;
        for (long s : shape) n *= s;
        return n;
    }

    private static Tensor on(double[] v, long[] shape, Device d) {
        try (Tensor h = Torch.tensor(v, DType.FLOAT64, shape)) {
            return h.to(d);
        }
    }

    private static Tensor longs(Device d, long[] v, long... shape) {
        try (Tensor h = Torch.tensor(v, shape)) {
            return h.to(d);
        }
    }

    private static double forwardSum(Case c, double[][] x, double[] w, Device d) {
        Tensor[] in = new Tensor[x.length];
        for (int i = 0; i < x.length; i++) in[i] = on(x[i], c.shapes[i], d);
        try (Tensor out = c.op.apply(in, d)) {
            double[] o = out.toDoubleArray();
            double s = 0;
            for (int i = 0; i < o.length; i++) s += w[i] * o[i];
            return s;
        } finally {
            for (Tensor t : in) t.close();
        }
    }

    private static void check(Case c, Device d) {
        double[][] x = new double[c.shapes.length][];
        for (int i = 0; i < x.length; i++) x[i] = values(numel(c.shapes[i]), i + 1);
        double[] expected = c.reference.apply(x);
        Tensor[] in = new Tensor[x.length];
        for (int i = 0; i < x.length; i++) in[i] = on(x[i], c.shapes[i], d).requiresGrad_(c.differentiable);
        try (Tensor out = c.op.apply(in, d)) {
            assertEquals(d, out.device(), c.name + ": output device");
            double[] got = out.toDoubleArray();
            assertEquals(expected.length, got.length, c.name + ": element count");
            for (int i = 0; i < got.length; i++) {
                assertEquals(expected[i], got[i], TOL * Math.max(1, Math.abs(expected[i])), c.name + " on " + d + ": element " + i);
            }
            if (!c.differentiable) return;
            double[] w = values(got.length, 7);
            try (Tensor wt = on(w, out.shape(), d); Tensor loss = out.mul(wt).sum()) {
                loss.backward();
            }
            double[][] v = new double[x.length][];
            double analytic = 0;
            for (int i = 0; i < x.length; i++) {
                v[i] = values(x[i].length, 11 + i);
                double[] g = in[i].grad().toDoubleArray();
                for (int j = 0; j < g.length; j++) analytic += g[j] * v[i][j];
            }
            double eps = 1e-6;
            double[][] plus = new double[x.length][];
            double[][] minus = new double[x.length][];
            for (int i = 0; i < x.length; i++) {
                plus[i] = x[i].clone();
                minus[i] = x[i].clone();
                for (int j = 0; j < x[i].length; j++) {
                    plus[i][j] += eps * v[i][j];
                    minus[i][j] -= eps * v[i][j];
                }
            }
            double numeric = (forwardSum(c, plus, w, d) - forwardSum(c, minus, w, d)) / (2 * eps);
            assertEquals(numeric, analytic, 1e-6 * Math.max(1, Math.abs(numeric)), c.name + " on " + d + ": directional derivative");
        } finally {
            for (Tensor t : in) t.close();
        }
    }

    // ------------------------------------------------------------------ definitions in double

    /** Bilinear resampling of one axis as PyTorch's {@code area_pixel_compute_source_index} (float64 path). */
    private static double[] linearAxis(double[] x, int outer, int in, int inner, int out, boolean align) {
        double[] r = new double[outer * out * inner];
        for (int o = 0; o < outer; o++) {
            for (int j = 0; j < out; j++) {
                double src = align ? (out > 1 ? (double) (in - 1) / (out - 1) * j : 0) : Math.max((double) in / out * (j + 0.5) - 0.5, 0);
                int i0 = (int) src;
                int i1 = i0 < in - 1 ? i0 + 1 : i0;
                double l1 = src - i0;
                for (int k = 0; k < inner; k++) {
                    r[(o * out + j) * inner + k] = (1 - l1) * x[(o * in + i0) * inner + k] + l1 * x[(o * in + i1) * inner + k];
                }
            }
        }
        return r;
    }

    /** Picks {@code src[j]} along one axis. */
    private static double[] gatherAxis(double[] x, int outer, int in, int inner, int[] src) {
        double[] r = new double[outer * src.length * inner];
        for (int o = 0; o < outer; o++) {
            for (int j = 0; j < src.length; j++) {
                for (int k = 0; k < inner; k++) r[(o * src.length + j) * inner + k] = x[(o * in + src[j]) * inner + k];
            }
        }
        return r;
    }

    private static int[] padSource(String mode, int n, int l, int r) {
        int[] s = new int[n + l + r];
        for (int j = 0; j < s.length; j++) {
            int i = j - l;
            s[j] = switch (mode) {
                case "reflect" -> i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
                case "replicate" -> Math.min(Math.max(i, 0), n - 1);
                case "circular" -> Math.floorMod(i, n);
                default -> throw new IllegalArgumentException(mode);
            };
        }
        return s;
    }

    private static double[] logSoftmaxRow(double[] x, int off, int n) {
        double m = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) m = Math.max(m, x[off + i]);
        double s = 0;
        for (int i = 0; i < n; i++) s += Math.exp(x[off + i] - m);
        double lse = m + Math.log(s);
        double[] r = new double[n];
        for (int i = 0; i < n; i++) r[i] = x[off + i] - lse;
        return r;
    }

    // ------------------------------------------------------------------ cases

    private static List<Case> cases() {
        List<Case> cs = new ArrayList<>();
        // interpolate: [2, 3, 4, 5] -> [7, 3] (upsampling rows, downsampling columns)
        long[] img = {2, 3, 4, 5};
        for (boolean align : new boolean[] {false, true}) {
            cs.add(new Case("interpolate bilinear alignCorners=" + align, new long[][] {img},
                    (in, d) -> F.interpolate(in[0], new long[] {7, 3}, "bilinear", align),
                    x -> linearAxis(linearAxis(x[0], 6 * 4, 5, 1, 3, align), 6, 4, 3, 7, align), true));
        }
        cs.add(new Case("interpolate nearest", new long[][] {img},
                (in, d) -> F.interpolate(in[0], new long[] {7, 3}, "nearest", null),
                x -> {
                    int[] rows = new int[7];
                    for (int j = 0; j < 7; j++) rows[j] = (int) Math.floor(j * (4.0 / 7));
                    int[] cols = new int[3];
                    for (int j = 0; j < 3; j++) cols[j] = (int) Math.floor(j * (5.0 / 3));
                    return gatherAxis(gatherAxis(x[0], 6 * 4, 5, 1, cols), 6, 4, 3, rows);
                }, true));
        for (String mode : new String[] {"reflect", "replicate", "circular"}) {
            cs.add(new Case("pad " + mode, new long[][] {img},
                    (in, d) -> F.pad(in[0], new long[] {2, 1, 1, 3}, mode),
                    x -> gatherAxis(gatherAxis(x[0], 6 * 4, 5, 1, padSource(mode, 5, 2, 1)), 6, 4, 8, padSource(mode, 4, 1, 3)), true));
        }
        cs.add(new Case("pad constant", new long[][] {{2, 3}}, (in, d) -> F.pad(in[0], new long[] {1, 2}, "constant", 0.5),
                x -> {
                    double[] r = new double[2 * 6];
                    java.util.Arrays.fill(r, 0.5);
                    for (int i = 0; i < 2; i++) System.arraycopy(x[0], i * 3, r, i * 6 + 1, 3);
                    return r;
                }, true));
        cs.add(new Case("pixelShuffle 2", new long[][] {{2, 8, 3, 2}}, (in, d) -> F.pixelShuffle(in[0], 2),
                x -> {
                    // out[n, c, h*2+i, w*2+j] = in[n, c*4 + i*2 + j, h, w]
                    double[] r = new double[x[0].length];
                    for (int n = 0; n < 2; n++) for (int c = 0; c < 2; c++) for (int h = 0; h < 6; h++) for (int w = 0; w < 4; w++) {
                        r[((n * 2 + c) * 6 + h) * 4 + w] = x[0][((n * 8 + c * 4 + (h % 2) * 2 + w % 2) * 3 + h / 2) * 2 + w / 2];
                    }
                    return r;
                }, true));
        long[] ids = {3, 0, 4, 3, 1, 4};
        cs.add(new Case("embedding", new long[][] {{5, 4}}, (in, d) -> F.embedding(longs(d, ids, 2, 3), in[0]),
                x -> {
                    double[] r = new double[ids.length * 4];
                    for (int i = 0; i < ids.length; i++) System.arraycopy(x[0], (int) ids[i] * 4, r, i * 4, 4);
                    return r;
                }, true));
        long[] targets = {2, -100, 0, 4};
        cs.add(new Case("crossEntropy weighted, ignore_index", new long[][] {{4, 5}, {5}},
                (in, d) -> F.crossEntropy(in[0], longs(d, targets, 4), in[1].abs().add(0.5), -100, F.Reduction.MEAN, 0),
                x -> {
                    double num = 0;
                    double den = 0;
                    for (int n = 0; n < 4; n++) {
                        if (targets[n] == -100) continue;
                        double w = Math.abs(x[1][(int) targets[n]]) + 0.5;
                        num -= w * logSoftmaxRow(x[0], n * 5, 5)[(int) targets[n]];
                        den += w;
                    }
                    return new double[] {num / den};
                }, true));
        cs.add(new Case("crossEntropy label smoothing 0.1", new long[][] {{3, 5}},
                (in, d) -> F.crossEntropy(in[0], longs(d, new long[] {1, 4, 0}, 3), null, -100, F.Reduction.SUM, 0.1),
                x -> {
                    long[] t = {1, 4, 0};
                    double s = 0;
                    for (int n = 0; n < 3; n++) {
                        double[] ls = logSoftmaxRow(x[0], n * 5, 5);
                        for (int k = 0; k < 5; k++) s -= ((k == t[n] ? 0.9 : 0) + 0.1 / 5) * ls[k];
                    }
                    return new double[] {s};
                }, true));
        cs.add(new Case("binaryCrossEntropyWithLogits", new long[][] {{6}, {6}},
                (in, d) -> F.binaryCrossEntropyWithLogits(in[0].mul(3), in[1].abs()),
                x -> {
                    double s = 0;
                    for (int i = 0; i < 6; i++) {
                        double z = 3 * x[0][i];
                        double y = Math.abs(x[1][i]);
                        s += Math.max(z, 0) - z * y + Math.log1p(Math.exp(-Math.abs(z)));
                    }
                    return new double[] {s / 6};
                }, true));
        cs.add(new Case("mseLoss", new long[][] {{3, 4}, {3, 4}}, (in, d) -> F.mseLoss(in[0], in[1]),
                x -> {
                    double s = 0;
                    for (int i = 0; i < 12; i++) s += (x[0][i] - x[1][i]) * (x[0][i] - x[1][i]);
                    return new double[] {s / 12};
                }, true));
        cs.add(new Case("layerNorm [6] affine", new long[][] {{3, 6}, {6}, {6}},
                (in, d) -> F.layerNorm(in[0], new long[] {6}, in[1], in[2], 1e-5),
                x -> {
                    double[] r = new double[18];
                    for (int n = 0; n < 3; n++) {
                        double m = 0;
                        for (int i = 0; i < 6; i++) m += x[0][n * 6 + i] / 6;
                        double var = 0;
                        for (int i = 0; i < 6; i++) var += (x[0][n * 6 + i] - m) * (x[0][n * 6 + i] - m) / 6;
                        for (int i = 0; i < 6; i++) r[n * 6 + i] = (x[0][n * 6 + i] - m) / Math.sqrt(var + 1e-5) * x[1][i] + x[2][i];
                    }
                    return r;
                }, true));
        cs.add(new Case("scaledDotProductAttention causal", new long[][] {{2, 4, 3}, {2, 4, 3}, {2, 4, 3}},
                (in, d) -> F.scaledDotProductAttention(in[0], in[1], in[2], null, 0, true),
                x -> {
                    double[] r = new double[2 * 4 * 3];
                    for (int b = 0; b < 2; b++) for (int i = 0; i < 4; i++) {
                        double[] s = new double[i + 1];
                        double m = Double.NEGATIVE_INFINITY;
                        for (int j = 0; j <= i; j++) {
                            for (int e = 0; e < 3; e++) s[j] += x[0][(b * 4 + i) * 3 + e] * x[1][(b * 4 + j) * 3 + e] / Math.sqrt(3);
                            m = Math.max(m, s[j]);
                        }
                        double z = 0;
                        for (int j = 0; j <= i; j++) z += Math.exp(s[j] - m);
                        for (int j = 0; j <= i; j++) {
                            for (int e = 0; e < 3; e++) r[(b * 4 + i) * 3 + e] += Math.exp(s[j] - m) / z * x[2][(b * 4 + j) * 3 + e];
                        }
                    }
                    return r;
                }, true));
        cs.add(new Case("cat dim 1 of a transposed and a contiguous tensor", new long[][] {{3, 2}, {2, 4}},
                (in, d) -> Torch.cat(List.of(in[0].transpose(0, 1), in[1]), 1),
                x -> {
                    double[] r = new double[2 * 7];
                    for (int i = 0; i < 2; i++) {
                        for (int j = 0; j < 3; j++) r[i * 7 + j] = x[0][j * 2 + i];
                        for (int j = 0; j < 4; j++) r[i * 7 + 3 + j] = x[1][i * 4 + j];
                    }
                    return r;
                }, true));
        return cs;
    }

    @TestFactory
    List<DynamicTest> compositeOps() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Case c : cases()) {
            for (Device d : DeviceCases.DEVICES) {
                tests.add(DynamicTest.dynamicTest(d + "/" + c.name, () -> {
                    DeviceCases.assumeAvailable(d);
                    check(c, d);
                }));
            }
        }
        return tests;
    }

    /** Dropout in training keeps each element with probability 1 - p, scaled by 1 / (1 - p), on the input's device. */
    @TestFactory
    List<DynamicTest> dropoutKeepsAboutOneMinusPScaled() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Device d : DeviceCases.DEVICES) {
            tests.add(DynamicTest.dynamicTest(d + "/dropout p=0.3", () -> {
                DeviceCases.assumeAvailable(d);
                int n = 20_000;
                try (Tensor x = Torch.full(new long[] {n}, 2.0, DType.FLOAT32, d); Tensor y = F.dropout(x, 0.3, true)) {
                    assertEquals(d, y.device());
                    double[] v = y.toDoubleArray();
                    int kept = 0;
                    for (double e : v) {
                        if (e != 0) {
                            kept++;
                            assertEquals(2 / 0.7, e, 1e-6);
                        }
                    }
                    // 20,000 Bernoulli(0.7) draws: mean 14,000, standard deviation about 65; 6 sigma either side.
                    assertTrue(Math.abs(kept - 14_000) < 390, "kept " + kept + " of " + n);
                }
            }));
        }
        return tests;
    }

    /** The host-built index tensors of padding and interpolation move to the input's device (output shape sanity). */
    @TestFactory
    List<DynamicTest> paddingShapes() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Device d : DeviceCases.DEVICES) {
            tests.add(DynamicTest.dynamicTest(d + "/reflect pad of a 1-D signal", () -> {
                DeviceCases.assumeAvailable(d);
                try (Tensor x = on(new double[] {1, 2, 3, 4}, new long[] {1, 1, 4}, d); Tensor y = F.pad(x, new long[] {2, 2}, "reflect")) {
                    assertArrayEquals(new double[] {3, 2, 1, 2, 3, 4, 3, 2}, y.toDoubleArray());
                }
            }));
        }
        return tests;
    }
    /** {@code Module.cuda()} / {@code Tensor.cuda()} move to cuda:0 and {@code cpu()} back, the forward running where the module is. */
    @TestFactory
    List<DynamicTest> modulesAndTensorsMoveWithCudaAndCpu() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Device d : DeviceCases.DEVICES) {
            tests.add(DynamicTest.dynamicTest(d + "/Module.cuda() and cpu()", () -> {
                DeviceCases.assumeAvailable(d);
                org.jtorch.nn.Linear layer = new org.jtorch.nn.Linear(3, 2);
                try (Tensor host = on(new double[] {1, -2, 0.5}, new long[] {1, 3}, Device.cpu()).to(DType.FLOAT32);
                     Tensor expected = layer.forward(host)) {
                    if (d.isCuda()) layer.cuda();
                    assertEquals(d, layer.weight().device());
                    try (Tensor x = d.isCuda() ? host.cuda() : host.cpu(); Tensor y = layer.forward(x)) {
                        assertEquals(d, y.device());
                        assertArrayEquals(expected.toDoubleArray(), y.toDoubleArray(), 1e-6);
                    }
                    layer.cpu();
                    assertEquals(Device.cpu(), layer.weight().device());
                }
            }));
        }
        return tests;
    }
}
