package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The normalisation family ({@code norm.cu} on CUDA: batch-norm statistics, apply and backward; group
 * and instance norm, which compose tensor ops or run batch norm over a reshaped view) run through the
 * public ops ({@code F.batchNorm}, {@code F.groupNorm}, {@code F.instanceNorm}, {@code backward}) on every
 * device: {@code cpu} always and {@code cuda:0}, whose cases are skipped with CUDA's unavailability reason
 * where there is no GPU (never passed).
 *
 * <p>References, in double on the input's stored values: each group of elements (batch norm: a channel
 * over batch and space; group norm: a sample's group of channels; instance norm: one sample's channel)
 * is normalised with its mean and biased variance, {@code y = (x - mean) / sqrt(var + eps) * w + b};
 * evaluation uses the running statistics; the running statistics become {@code (1 - m) r + m s} with the
 * unbiased batch variance (instance norm: averaged over the batch). Gradients: with {@code xhat} the
 * normalised input and {@code d = g * w}, training's input gradient is
 * {@code invstd * (d - mean(d) - xhat * mean(d * xhat))} over each group, evaluation's {@code g * w * invstd};
 * {@code grad_w = sum(g * xhat)}, {@code grad_b = sum(g)} per channel. Compared within the result dtype's
 * rounding relative to the magnitudes that make each element.
 */
class NormalizationDeviceConformanceTest {
    private static final List<DType> FLOATS = List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16);
    private static final double EPS = 1e-5;
    private static final double MOMENTUM = 0.1;

    private static double[] values(long n, double lo, double hi, double phase) {
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = lo + (hi - lo) * ((i * 0.6180339887498949 + phase) % 1.0);
        return v;
    }

    private static double[] stored(double[] v, DType t) {
        try (Tensor host = Torch.tensor(v, t, v.length)) {
            return host.toDoubleArray();
        }
    }

    private static Tensor tensor(Device d, DType t, long[] shape, double[] v) {
        try (Tensor host = Torch.tensor(v, t, shape)) {
            return host.to(d);
        }
    }

    private static double rtol(DType t) {
        return switch (t) {
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            case FLOAT32 -> 4e-6;
            default -> 1e-11;
        };
    }

    private static void assertClose(double[] expected, double[] scale, double[] actual, double rtol, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i], a = actual[i];
            if (Double.isNaN(e) && Double.isNaN(a) || e == a) continue;
            if (Math.abs(a - e) <= rtol * Math.max(scale[i], 1e-30)) continue;
            fail(what + ": element " + i + " expected " + e + " but was " + a + " (rtol " + rtol + " of " + scale[i] + ")\nexpected "
                    + Arrays.toString(Arrays.copyOf(expected, Math.min(10, expected.length))) + "\nactual   "
                    + Arrays.toString(Arrays.copyOf(actual, Math.min(10, actual.length))));
        }
    }

    // ------------------------------------------------------------------ the reference

    /** Which elements share statistics: {@code group(n, c)} in {@code [0, groups)}. */
    private interface Grouping {
        int group(int n, int c);
    }

    /** Reference results: output, input gradient and per-channel gradients with their scales, and per-group statistics. */
    private record Ref(double[] y, double[] yScale, double[] gi, double[] giScale, double[] gw, double[] gwScale, double[] gb,
                       double[] gbScale, double[] mean, double[] var, long groupCount) {}

    /**
     * Normalisation of {@code x} viewed as {@code [N, C, S]} by definition. {@code fixedMean}/{@code fixedVar}
     * (per group) replace the batch statistics in evaluation; {@code w}, {@code b} per channel (null: 1, 0).
     */
    private static Ref reference(double[] x, int n, int c, int s, Grouping grouping, int groups, double[] fixedMean, double[] fixedVar,
                                 double[] w, double[] b, double[] g) {
        double[] sum = new double[groups], count = new double[groups];
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++)
                for (int j = 0; j < s; j++) {
                    sum[grouping.group(i, ch)] += x[(i * c + ch) * s + j];
                    count[grouping.group(i, ch)]++;
                }
        double[] mean = new double[groups], var = new double[groups];
        for (int k = 0; k < groups; k++) mean[k] = sum[k] / count[k];
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++)
                for (int j = 0; j < s; j++) {
                    int k = grouping.group(i, ch);
                    double dv = x[(i * c + ch) * s + j] - mean[k];
                    var[k] += dv * dv / count[k];
                }
        double[] m = fixedMean != null ? fixedMean : mean, v = fixedMean != null ? fixedVar : var;
        int total = n * c * s;
        double[] y = new double[total], yScale = new double[total], xhat = new double[total];
        double[] meanD = new double[groups], meanDX = new double[groups], meanAbs = new double[groups];
        double[] gw = new double[c], gwScale = new double[c], gb = new double[c], gbScale = new double[c];
        for (int i = 0; i < n; i++)
            for (int ch = 0; ch < c; ch++)
                for (int j = 0; j < s; j++) {
                    int e = (i * c + ch) * s + j, k = grouping.group(i, ch);
                    double invstd = 1 / Math.sqrt(v[k] + EPS), wc = w == null ? 1 : w[ch], bc = b == null ? 0 : b[ch];
                    xhat[e] = (x[e] - m[k]) * invstd;
                    y[e] = xhat[e] * wc + bc;
                    yScale[e] = (Math.abs(x[e]) + Math.abs(m[k])) * invstd * Math.abs(wc) + Math.abs(bc);
                    if (g == null) continue;
                    double dd = g[e] * wc;
                    meanD[k] += dd / count[k];
                    meanDX[k] += dd * xhat[e] / count[k];
                    meanAbs[k] += (Math.abs(dd) + Math.abs(dd * xhat[e])) / count[k];
                    gw[ch] += g[e] * xhat[e];
                    gwScale[ch] += Math.abs(g[e] * xhat[e]);
                    gb[ch] += g[e];
                    gbScale[ch] += Math.abs(g[e]);
                }
        double[] gi = null, giScale = null;
        if (g != null) {
            gi = new double[total];
            giScale = new double[total];
            for (int i = 0; i < n; i++)
                for (int ch = 0; ch < c; ch++)
                    for (int j = 0; j < s; j++) {
                        int e = (i * c + ch) * s + j, k = grouping.group(i, ch);
                        double invstd = 1 / Math.sqrt(v[k] + EPS), dd = g[e] * (w == null ? 1 : w[ch]);
                        gi[e] = fixedMean != null ? dd * invstd : invstd * (dd - meanD[k] - xhat[e] * meanDX[k]);
                        giScale[e] = invstd * (Math.abs(dd) + (fixedMean != null ? 0 : meanAbs[k] * (1 + Math.abs(xhat[e]))));
                    }
        }
        return new Ref(y, yScale, gi, giScale, gw, gwScale, gb, gbScale, mean, var, (long) count[0]);
    }

    // ------------------------------------------------------------------ batch norm

    /** One batch-norm case: input dtype, shape, weight/bias dtype (null: none), training, backward. */
    private static void batchNormCase(Device d, DType t, long[] shape, DType affine, boolean training, boolean backward) {
        int n = (int) shape[0], c = (int) shape[1];
        int s = (int) (Arrays.stream(shape).reduce(1, (a, b) -> a * b) / ((long) n * c));
        String what = "batchNorm " + t + Arrays.toString(shape) + " affine=" + affine + (training ? " train" : " eval");
        double[] x = stored(values((long) n * c * s, -3, 5, 0.137), t);
        double[] w = affine == null ? null : stored(values(c, 0.5, 1.5, 0.3), affine);
        double[] b = affine == null ? null : stored(values(c, -1, 1, 0.7), affine);
        double[] rm = stored(values(c, -0.5, 0.5, 0.11), DType.FLOAT32);
        double[] rv = stored(values(c, 0.5, 2, 0.23), DType.FLOAT32);
        double[] g = backward ? stored(values((long) n * c * s, -1, 1, 0.41), t) : null;
        Ref ref = reference(x, n, c, s, (i, ch) -> ch, c, training ? null : rm, training ? null : rv, w, b, g);

        Tensor input = tensor(d, t, shape, x);
        Tensor weight = affine == null ? null : tensor(d, affine, new long[] {c}, w);
        Tensor bias = affine == null ? null : tensor(d, affine, new long[] {c}, b);
        Tensor runningMean = tensor(d, DType.FLOAT32, new long[] {c}, rm);
        Tensor runningVar = tensor(d, DType.FLOAT32, new long[] {c}, rv);
        if (backward) {
            input.requiresGrad_(true);
            if (weight != null) weight.requiresGrad_(true);
            if (bias != null) bias.requiresGrad_(true);
        }
        Tensor y = F.batchNorm(input, runningMean, runningVar, weight, bias, training, MOMENTUM, EPS);
        assertEquals(d, y.device(), what);
        assertEquals(t, y.dtype(), what);
        assertArrayEquals(shape, y.shape(), what + ": shape");
        assertClose(ref.y(), ref.yScale(), y.toDoubleArray(), 2 * rtol(t), what + ": output");
        if (training) {
            long count = ref.groupCount();
            double[] em = new double[c], ev = new double[c], sm = new double[c], sv = new double[c];
            for (int ch = 0; ch < c; ch++) {
                em[ch] = (1 - MOMENTUM) * rm[ch] + MOMENTUM * ref.mean()[ch];
                ev[ch] = (1 - MOMENTUM) * rv[ch] + MOMENTUM * ref.var()[ch] * count / (count - 1);
                sm[ch] = Math.abs(rm[ch]) + Math.abs(ref.mean()[ch]) + 5;
                sv[ch] = Math.abs(ev[ch]);
            }
            assertClose(em, sm, runningMean.toDoubleArray(), 4e-6, what + ": running mean");
            assertClose(ev, sv, runningVar.toDoubleArray(), 4e-6, what + ": running var");
        } else {
            assertArrayEquals(rm, runningMean.toDoubleArray(), what + ": running mean untouched in evaluation");
        }
        if (!backward) return;
        y.backward(tensor(d, t, shape, g));
        assertEquals(d, input.grad().device(), what);
        assertClose(ref.gi(), ref.giScale(), input.grad().toDoubleArray(), 2 * rtol(t), what + ": input gradient");
        if (affine != null) {
            // The per-channel sums are in double from the stored values; the saved float32 statistics round a little.
            double r = Math.max(rtol(affine), 4e-6);
            assertClose(ref.gw(), ref.gwScale(), weight.grad().toDoubleArray(), r, what + ": weight gradient");
            assertClose(ref.gb(), ref.gbScale(), bias.grad().toDoubleArray(), r, what + ": bias gradient");
        }
    }

    @TestFactory
    List<DynamicTest> batchNorm() {
        List<DynamicTest> tests = new ArrayList<>();
        long[][] shapes = {{4, 3, 5, 6}, {16, 5}, {2, 4, 37}};
        for (DType t : FLOATS) {
            DType affine = t == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
            for (long[] shape : shapes) {
                for (boolean training : new boolean[] {true, false}) {
                    add(tests, "batchNorm/" + t + Arrays.toString(shape) + (training ? "/train" : "/eval"),
                            d -> batchNormCase(d, t, shape, affine, training, true));
                }
            }
            add(tests, "batchNorm/" + t + "/no-affine/train", d -> batchNormCase(d, t, new long[] {4, 3, 5, 6}, null, true, true));
            add(tests, "batchNorm/" + t + "/no-affine/eval", d -> batchNormCase(d, t, new long[] {4, 3, 5, 6}, null, false, true));
        }
        // Per-channel tensors of another dtype than the input's (read and written converting in the kernels).
        add(tests, "batchNorm/float32/float64-affine/train", d -> batchNormCase(d, DType.FLOAT32, new long[] {3, 4, 7}, DType.FLOAT64, true, true));
        add(tests, "batchNorm/float64/bfloat16-affine/eval", d -> batchNormCase(d, DType.FLOAT64, new long[] {3, 4, 7}, DType.BFLOAT16, false, true));
        add(tests, "batchNorm/float32/large/train", d -> batchNormCase(d, DType.FLOAT32, new long[] {8, 16, 32, 32}, DType.FLOAT32, true, true));
        // [N, C] blocks take the one-channel-a-lane kernels: 70 channels = two full tiles and a partial one; 9,000 rows split.
        add(tests, "batchNorm/float32/rows-70-channels/train", d -> batchNormCase(d, DType.FLOAT32, new long[] {300, 70}, DType.FLOAT32, true, true));
        add(tests, "batchNorm/bfloat16/rows-many/train", d -> batchNormCase(d, DType.BFLOAT16, new long[] {9000, 40}, DType.FLOAT32, true, true));
        add(tests, "batchNorm/float32/many-channels/train", d -> batchNormCase(d, DType.FLOAT32, new long[] {2, 2000, 3}, DType.FLOAT32, true, true));
        add(tests, "batchNorm/float32/large-mean", d -> {
            // Statistics shifted by the channel's first element: a mean of 1e4 does not cancel a variance of ~1.
            long[] shape = {8, 2, 50};
            double[] x = values(800, -1, 1, 0.3);
            for (int i = 0; i < x.length; i++) x[i] += 1e4;
            x = stored(x, DType.FLOAT32);
            Ref ref = reference(x, 8, 2, 50, (i, ch) -> ch, 2, null, null, null, null, null);
            Tensor y = F.batchNorm(tensor(d, DType.FLOAT32, shape, x), null, null, null, null, true, MOMENTUM, EPS);
            double[] scale = new double[x.length];
            Arrays.fill(scale, 1);
            assertClose(ref.y(), scale, y.toDoubleArray(), 2e-3, "batchNorm large mean");
        });
        add(tests, "batchNorm/float32/nan-channel/train", d -> {
            // A NaN makes its channel's statistics, output and running statistics NaN, and no other channel's.
            long[] shape = {4, 3, 5};
            double[] x = stored(values(60, -2, 2, 0.6), DType.FLOAT32);
            x[5 + 2] = Double.NaN;
            Ref ref = reference(x, 4, 3, 5, (i, ch) -> ch, 3, null, null, null, null, null);
            Tensor runningVar = tensor(d, DType.FLOAT32, new long[] {3}, new double[] {1, 1, 1});
            Tensor y = F.batchNorm(tensor(d, DType.FLOAT32, shape, x), null, runningVar, null, null, true, MOMENTUM, EPS);
            assertClose(ref.y(), ref.yScale(), y.toDoubleArray(), 2 * rtol(DType.FLOAT32), "batchNorm with a NaN");
            double[] rv = runningVar.toDoubleArray();
            assertEquals(List.of(false, true, false), List.of(Double.isNaN(rv[0]), Double.isNaN(rv[1]), Double.isNaN(rv[2])),
                    "running var NaN only in channel 1: " + Arrays.toString(rv));
        });
        add(tests, "batchNorm/float32/strided-affine/eval", d -> {
            // Weight and bias as stride-2 views: the kernels read per-channel tensors where they lie.
            long[] shape = {3, 4, 5};
            double[] x = stored(values(60, -2, 2, 0.1), DType.FLOAT32);
            double[] wide = stored(values(8, 0.5, 1.5, 0.2), DType.FLOAT32);
            double[] w = {wide[0], wide[2], wide[4], wide[6]};
            double[] b = {wide[1], wide[3], wide[5], wide[7]};
            double[] rm = {0.1, -0.2, 0.3, 0};
            double[] rv = {1, 2, 0.5, 1.5};
            Ref ref = reference(x, 3, 4, 5, (i, ch) -> ch, 4, rm, rv, w, b, null);
            Tensor base = tensor(d, DType.FLOAT32, new long[] {8}, wide);
            Tensor y = F.batchNorm(tensor(d, DType.FLOAT32, shape, x), tensor(d, DType.FLOAT32, new long[] {4}, rm),
                    tensor(d, DType.FLOAT32, new long[] {4}, rv), base.slice(0, 0, 8, 2), base.slice(0, 1, 8, 2), false, MOMENTUM, EPS);
            assertClose(ref.y(), ref.yScale(), y.toDoubleArray(), 2 * rtol(DType.FLOAT32), "batchNorm strided affine");
        });
        add(tests, "batchNorm/float32/weight-only-gradient", d -> {
            // Only the weight requires a gradient: the input gradient is not computed (null output of the kernel).
            long[] shape = {4, 3, 6};
            double[] x = stored(values(72, -2, 3, 0.5), DType.FLOAT32);
            double[] w = stored(values(3, 0.5, 1.5, 0.3), DType.FLOAT32);
            double[] g = stored(values(72, -1, 1, 0.9), DType.FLOAT32);
            Ref ref = reference(x, 4, 3, 6, (i, ch) -> ch, 3, null, null, w, null, g);
            Tensor input = tensor(d, DType.FLOAT32, shape, x);
            Tensor weight = tensor(d, DType.FLOAT32, new long[] {3}, w).requiresGrad_(true);
            Tensor y = F.batchNorm(input, null, null, weight, null, true, MOMENTUM, EPS);
            y.backward(tensor(d, DType.FLOAT32, shape, g));
            assertNull(input.grad());
            assertClose(ref.gw(), ref.gwScale(), weight.grad().toDoubleArray(), 4e-6, "weight gradient alone");
        });
        return tests;
    }

    // ------------------------------------------------------------------ group and instance norm

    private static void groupNormCase(Device d, DType t, long[] shape, int groups, boolean affine) {
        int n = (int) shape[0], c = (int) shape[1];
        int s = (int) (Arrays.stream(shape).reduce(1, (a, b) -> a * b) / ((long) n * c));
        String what = "groupNorm " + t + Arrays.toString(shape) + " groups=" + groups;
        double[] x = stored(values((long) n * c * s, -3, 5, 0.21), t);
        double[] w = affine ? stored(values(c, 0.5, 1.5, 0.3), t) : null;
        double[] b = affine ? stored(values(c, -1, 1, 0.7), t) : null;
        double[] g = stored(values((long) n * c * s, -1, 1, 0.43), t);
        int per = c / groups;
        Ref ref = reference(x, n, c, s, (i, ch) -> i * groups + ch / per, n * groups, null, null, w, b, g);
        Tensor input = tensor(d, t, shape, x).requiresGrad_(true);
        Tensor weight = affine ? tensor(d, t, new long[] {c}, w).requiresGrad_(true) : null;
        Tensor bias = affine ? tensor(d, t, new long[] {c}, b).requiresGrad_(true) : null;
        Tensor y = F.groupNorm(input, groups, weight, bias, EPS);
        assertEquals(d, y.device(), what);
        assertEquals(t, y.dtype(), what);
        // Composed of tensor ops, whose reductions may accumulate float32 in float: a looser bound than batch norm's.
        double r = 8 * rtol(t);
        assertClose(ref.y(), ref.yScale(), y.toDoubleArray(), r, what + ": output");
        y.backward(tensor(d, t, shape, g));
        assertClose(ref.gi(), ref.giScale(), input.grad().toDoubleArray(), r, what + ": input gradient");
        if (affine) {
            assertClose(ref.gw(), ref.gwScale(), weight.grad().toDoubleArray(), r, what + ": weight gradient");
            assertClose(ref.gb(), ref.gbScale(), bias.grad().toDoubleArray(), r, what + ": bias gradient");
        }
    }

    private static void instanceNormCase(Device d, DType t, long[] shape, boolean affine, boolean running) {
        int n = (int) shape[0], c = (int) shape[1];
        int s = (int) (Arrays.stream(shape).reduce(1, (a, b) -> a * b) / ((long) n * c));
        String what = "instanceNorm " + t + Arrays.toString(shape) + " affine=" + affine + " running=" + running;
        double[] x = stored(values((long) n * c * s, -3, 5, 0.33), t);
        double[] w = affine ? stored(values(c, 0.5, 1.5, 0.3), DType.FLOAT32) : null;
        double[] b = affine ? stored(values(c, -1, 1, 0.7), DType.FLOAT32) : null;
        double[] g = stored(values((long) n * c * s, -1, 1, 0.47), t);
        Ref ref = reference(x, n, c, s, (i, ch) -> i * c + ch, n * c, null, null, w, b, g);
        Tensor input = tensor(d, t, shape, x).requiresGrad_(true);
        Tensor weight = affine ? tensor(d, DType.FLOAT32, new long[] {c}, w).requiresGrad_(true) : null;
        Tensor bias = affine ? tensor(d, DType.FLOAT32, new long[] {c}, b).requiresGrad_(true) : null;
        double[] rm = {0.1, -0.2, 0.3, 0, 0.5}, rv = {1, 2, 0.5, 1.5, 1};
        Tensor runningMean = running ? tensor(d, DType.FLOAT32, new long[] {c}, Arrays.copyOf(rm, c)) : null;
        Tensor runningVar = running ? tensor(d, DType.FLOAT32, new long[] {c}, Arrays.copyOf(rv, c)) : null;
        Tensor y = F.instanceNorm(input, runningMean, runningVar, weight, bias, true, MOMENTUM, EPS);
        assertEquals(d, y.device(), what);
        assertClose(ref.y(), ref.yScale(), y.toDoubleArray(), 2 * rtol(t), what + ": output");
        if (running) {
            double[] em = new double[c], ev = new double[c], scale = new double[c];
            for (int ch = 0; ch < c; ch++) {
                double mm = 0, vv = 0;
                for (int i = 0; i < n; i++) {
                    mm += ref.mean()[i * c + ch] / n;
                    vv += ref.var()[i * c + ch] * s / (s - 1) / n;
                }
                em[ch] = (1 - MOMENTUM) * rm[ch] + MOMENTUM * mm;
                ev[ch] = (1 - MOMENTUM) * rv[ch] + MOMENTUM * vv;
                scale[ch] = 5;
            }
            assertClose(em, scale, runningMean.toDoubleArray(), 4e-6, what + ": running mean");
            assertClose(ev, scale, runningVar.toDoubleArray(), 4e-6, what + ": running var");
        }
        y.backward(tensor(d, t, shape, g));
        assertClose(ref.gi(), ref.giScale(), input.grad().toDoubleArray(), 2 * rtol(t), what + ": input gradient");
        if (affine) {
            double r = Math.max(rtol(t), 4e-6);
            assertClose(ref.gw(), ref.gwScale(), weight.grad().toDoubleArray(), r, what + ": weight gradient");
            assertClose(ref.gb(), ref.gbScale(), bias.grad().toDoubleArray(), r, what + ": bias gradient");
        }
    }

    @TestFactory
    List<DynamicTest> groupAndInstanceNorm() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : FLOATS) {
            add(tests, "groupNorm/" + t + "/6ch-3groups", d -> groupNormCase(d, t, new long[] {2, 6, 4, 5}, 3, true));
            add(tests, "groupNorm/" + t + "/1group-no-affine", d -> groupNormCase(d, t, new long[] {3, 4, 7}, 1, false));
            add(tests, "instanceNorm/" + t + "/affine-running", d -> instanceNormCase(d, t, new long[] {3, 5, 4, 6}, true, true));
            add(tests, "instanceNorm/" + t + "/plain", d -> instanceNormCase(d, t, new long[] {2, 3, 10}, false, false));
        }
        return tests;
    }
}
