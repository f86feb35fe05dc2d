package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.ops.Pooling;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The spatial family ({@code pool.cu} on CUDA: max pooling with indices, average pooling with
 * {@code count_include_pad} and {@code divisor_override}, adaptive average and max pooling, and the
 * gradients of all of them) run through the public ops ({@code F.maxPool2d}, {@code Pooling.*},
 * {@code backward}) on every device: {@code cpu} always and {@code cuda:0}, whose cases are skipped with
 * CUDA's unavailability reason where there is no GPU (never passed).
 *
 * <p>References are PyTorch's definitions evaluated in double on the input's stored values: the
 * output size {@code floor((in + 2p - d(k - 1) - 1 [+ s - 1 with ceil_mode]) / s) + 1} (one less when
 * the last window would start in the right padding); max over the dilated taps inside the input, a
 * NaN replacing the running maximum, ties keeping the first tap in row-major order, the index
 * {@code ih * W + iw}; average windows clipped to the padded input for their size and to the input for
 * their elements; adaptive windows {@code [floor(o I / O), ceil((o + 1) I / O))}; gradients as the
 * adjoints (the output gradient scattered to the indices, or shared over each window). Values of max
 * pooling and indices are compared exactly; averages within the dtype's rounding.
 */
class SpatialDeviceConformanceTest {
    private static final List<DType> FLOATS = List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16);

    // ------------------------------------------------------------------ inputs

    /** Deterministic values in [lo, hi) (a low-discrepancy sequence); integral ones give many ties. */
    private static double[] values(long n, double lo, double hi, boolean integral, double... special) {
        double[] v = new double[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) {
            v[i] = lo + (hi - lo) * ((i * 0.6180339887498949 + 0.137) % 1.0);
            if (integral) v[i] = Math.floor(v[i]);
        }
        for (int i = 0; i < special.length; i++) v[(int) ((i * 7919L) % v.length)] = special[i];
        return v;
    }

    /** A tensor of dtype {@code t} on {@code d} holding {@code v}; channels-last (a permuted view) when asked. */
    private static Tensor tensor(Device d, DType t, long[] shape, double[] v, boolean channelsLast) {
        if (!channelsLast) {
            try (Tensor host = Torch.tensor(v, t, shape)) {
                return host.to(d);
            }
        }
        // Stored as [N, H, W, C], viewed as [N, C, H, W]: the same logical values, not contiguous.
        int r = shape.length;
        long[] nhwc = {shape[0], shape[r - 2], shape[r - 1], shape[1]};
        double[] stored = new double[v.length];
        long c = shape[1], h = shape[2], w = shape[3];
        for (long n = 0; n < shape[0]; n++)
            for (long ch = 0; ch < c; ch++)
                for (long y = 0; y < h; y++)
                    for (long x = 0; x < w; x++) stored[(int) (((n * h + y) * w + x) * c + ch)] = v[(int) (((n * c + ch) * h + y) * w + x)];
        try (Tensor host = Torch.tensor(stored, t, nhwc); Tensor dev = host.to(d)) {
            return dev.permute(0, 3, 1, 2);
        }
    }

    /** The values as stored in dtype {@code t} (the reference reads what the op reads). */
    private static double[] stored(double[] v, DType t) {
        try (Tensor host = Torch.tensor(v, t, v.length)) {
            return host.toDoubleArray();
        }
    }

    private static double rtol(DType t) {
        return switch (t) {
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            case FLOAT32 -> 2e-6;
            default -> 1e-12;
        };
    }

    /** {@code |actual - expected| <= rtol(t) * scale[i]} (scale: the sum of the magnitudes that made the element; null: |expected|). */
    private static void assertClose(double[] expected, double[] scale, double[] actual, DType t, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i], a = actual[i];
            if (Double.isNaN(e) && Double.isNaN(a) || e == a) continue;
            double s = Math.max(scale == null ? Math.abs(e) : scale[i], Double.MIN_NORMAL);
            if (Math.abs(a - e) <= rtol(t) * s) continue;
            fail(what + ": element " + i + " expected " + e + " but was " + a + " (" + t + ")\nexpected "
                    + Arrays.toString(Arrays.copyOf(expected, Math.min(12, expected.length))) + "\nactual   "
                    + Arrays.toString(Arrays.copyOf(actual, Math.min(12, actual.length))));
        }
    }

    /** Exact equality of max values (NaN equals NaN): the result is one of the stored inputs. */
    private static void assertSame(double[] expected, double[] actual, String what) {
        assertEquals(expected.length, actual.length, what + ": element count");
        for (int i = 0; i < expected.length; i++) {
            if (Double.isNaN(expected[i]) && Double.isNaN(actual[i])) continue;
            if (Double.compare(expected[i], actual[i]) != 0 && expected[i] != actual[i]) {
                fail(what + ": element " + i + " expected " + expected[i] + " but was " + actual[i]);
            }
        }
    }

    // ------------------------------------------------------------------ geometry and references

    /** A pooling call: input shape [planes-dims..., H, W], kernel, stride, padding, dilation per dimension, ceil mode. */
    record Geo(long[] shape, int kH, int kW, int sH, int sW, int pH, int pW, int dH, int dW, boolean ceil) {
        long inH() { return shape[shape.length - 2]; }
        long inW() { return shape[shape.length - 1]; }
        long planes() { return Arrays.stream(shape).reduce(1, (a, b) -> a * b) / (inH() * inW()); }
        long outH() { return outSize(inH(), kH, sH, pH, dH, ceil); }
        long outW() { return outSize(inW(), kW, sW, pW, dW, ceil); }

        long[] outShape() {
            long[] o = shape.clone();
            o[o.length - 2] = outH();
            o[o.length - 1] = outW();
            return o;
        }

        String describe() {
            return Arrays.toString(shape) + " k" + kH + "x" + kW + " s" + sH + "x" + sW + " p" + pH + "x" + pW + " d" + dH + "x" + dW
                    + (ceil ? " ceil" : "");
        }
    }

    /** PyTorch's pooling_output_shape. */
    static long outSize(long in, int k, int s, int p, int d, boolean ceil) {
        long o = Math.floorDiv(in + 2L * p - (long) d * (k - 1) - 1 + (ceil ? s - 1 : 0), s) + 1;
        if (ceil && (o - 1) * s >= in + p) o--;
        return o;
    }

    /** Max pooling by definition: values and flat indices. */
    static double[][] maxPoolRef(double[] x, Geo g) {
        long inH = g.inH(), inW = g.inW(), outH = g.outH(), outW = g.outW();
        double[] vals = new double[(int) (g.planes() * outH * outW)];
        double[] idx = new double[vals.length];
        int o = 0;
        for (long p = 0; p < g.planes(); p++) {
            for (long oh = 0; oh < outH; oh++) {
                for (long ow = 0; ow < outW; ow++, o++) {
                    double max = Double.NEGATIVE_INFINITY;
                    long at = -1;
                    for (int kh = 0; kh < g.kH(); kh++) {
                        long ih = oh * g.sH() - g.pH() + (long) kh * g.dH();
                        if (ih < 0 || ih >= inH) continue;
                        for (int kw = 0; kw < g.kW(); kw++) {
                            long iw = ow * g.sW() - g.pW() + (long) kw * g.dW();
                            if (iw < 0 || iw >= inW) continue;
                            double v = x[(int) (p * inH * inW + ih * inW + iw)];
                            if (at < 0) at = ih * inW + iw; // the first tap stands until something beats -inf
                            if (v > max || Double.isNaN(v)) {
                                max = v;
                                at = ih * inW + iw;
                            }
                        }
                    }
                    vals[o] = max;
                    idx[o] = at;
                }
            }
        }
        return new double[][] {vals, idx};
    }

    /** The window of average pooling (clipped) and its divisor, by PyTorch's avg_pool2d definition. */
    private static long[] avgWindow(Geo g, long oh, long ow, boolean countIncludePad, long divisorOverride) {
        long h0 = oh * g.sH() - g.pH(), w0 = ow * g.sW() - g.pW();
        long h1 = Math.min(h0 + g.kH(), g.inH() + g.pH()), w1 = Math.min(w0 + g.kW(), g.inW() + g.pW());
        long poolSize = (h1 - h0) * (w1 - w0);
        h0 = Math.max(h0, 0);
        w0 = Math.max(w0, 0);
        h1 = Math.min(h1, g.inH());
        w1 = Math.min(w1, g.inW());
        long divisor = divisorOverride > 0 ? divisorOverride : countIncludePad ? poolSize : (h1 - h0) * (w1 - w0);
        return new long[] {h0, h1, w0, w1, divisor};
    }

    /** Average pooling (backward: the adjoint, with {@code x} the output gradient) by definition; [values, magnitudes]. */
    static double[][] avgPoolRef(double[] x, Geo g, boolean countIncludePad, long divisorOverride, boolean backward) {
        long inH = g.inH(), inW = g.inW(), outH = g.outH(), outW = g.outW();
        int n = (int) (g.planes() * (backward ? inH * inW : outH * outW));
        double[] r = new double[n], mag = new double[n];
        for (long p = 0; p < g.planes(); p++) {
            for (long oh = 0; oh < outH; oh++) {
                for (long ow = 0; ow < outW; ow++) {
                    long[] w = avgWindow(g, oh, ow, countIncludePad, divisorOverride);
                    int o = (int) (p * outH * outW + oh * outW + ow);
                    for (long ih = w[0]; ih < w[1]; ih++) {
                        for (long iw = w[2]; iw < w[3]; iw++) {
                            int i = (int) (p * inH * inW + ih * inW + iw);
                            if (backward) {
                                r[i] += x[o] / w[4];
                                mag[i] += Math.abs(x[o] / w[4]);
                            } else {
                                r[o] += x[i] / w[4];
                                mag[o] += Math.abs(x[i] / w[4]);
                            }
                        }
                    }
                }
            }
        }
        return new double[][] {r, mag};
    }

    static long start(long o, long in, long out) {
        return Math.floorDiv(o * in, out);
    }

    static long end(long o, long in, long out) {
        return -Math.floorDiv(-(o + 1) * in, out);
    }

    /** Adaptive average (or its adjoint) and adaptive max (values, indices) by definition over planes [planes, inH, inW]. */
    static double[][] adaptiveRef(double[] x, long planes, long inH, long inW, long outH, long outW, boolean max, boolean backward) {
        int n = (int) (planes * (backward ? inH * inW : outH * outW));
        double[] r = new double[n], aux = new double[n];
        for (long p = 0; p < planes; p++) {
            for (long oh = 0; oh < outH; oh++) {
                for (long ow = 0; ow < outW; ow++) {
                    long h0 = start(oh, inH, outH), h1 = end(oh, inH, outH), w0 = start(ow, inW, outW), w1 = end(ow, inW, outW);
                    long count = (h1 - h0) * (w1 - w0);
                    int o = (int) (p * outH * outW + oh * outW + ow);
                    double best = Double.NEGATIVE_INFINITY;
                    long at = h0 * inW + w0;
                    for (long ih = h0; ih < h1; ih++) {
                        for (long iw = w0; iw < w1; iw++) {
                            int i = (int) (p * inH * inW + ih * inW + iw);
                            if (max) {
                                if (x[i] > best || Double.isNaN(x[i])) {
                                    best = x[i];
                                    at = ih * inW + iw;
                                }
                            } else if (backward) {
                                r[i] += x[o] / count;
                                aux[i] += Math.abs(x[o] / count);
                            } else {
                                r[o] += x[i] / count;
                                aux[o] += Math.abs(x[i] / count);
                            }
                        }
                    }
                    if (max) {
                        r[o] = best;
                        aux[o] = at;
                    }
                }
            }
        }
        return new double[][] {r, aux};
    }

    /** {@code grad[j]} added at each plane's {@code indices[j]}: the gradient of max pooling; [values, magnitudes]. */
    static double[][] scatterRef(double[] grad, double[] indices, long planes, long inPlane) {
        long outPlane = grad.length / planes;
        double[] r = new double[(int) (planes * inPlane)], mag = new double[r.length];
        for (int j = 0; j < grad.length; j++) {
            int at = (int) ((j / outPlane) * inPlane + (long) indices[j]);
            r[at] += grad[j];
            mag[at] += Math.abs(grad[j]);
        }
        return new double[][] {r, mag};
    }

    private static long numel(long[] shape) {
        return Arrays.stream(shape).reduce(1, (a, b) -> a * b);
    }

    // ------------------------------------------------------------------ max pooling

    private static void maxPoolCase(Device d, DType t, Geo g, boolean channelsLast, boolean integral, boolean backward, double... special) {
        double[] v = stored(values(numel(g.shape()), -4, 4, integral, special), t);
        String what = "maxPool2d " + t + " " + g.describe() + (channelsLast ? " channels-last" : "");
        double[][] ref = maxPoolRef(v, g);
        Tensor x = tensor(d, t, g.shape(), v, channelsLast);
        if (backward) x.requiresGrad_(true);
        ValuesIndices r = Pooling.maxPool2dWithIndices(x, new int[] {g.kH(), g.kW()}, new int[] {g.sH(), g.sW()},
                new int[] {g.pH(), g.pW()}, new int[] {g.dH(), g.dW()}, g.ceil());
        assertEquals(d, r.values().device(), what);
        assertEquals(t, r.values().dtype(), what);
        assertArrayEquals(g.outShape(), r.values().shape(), what + ": shape");
        assertSame(ref[0], r.values().toDoubleArray(), what + ": values");
        assertArrayEquals(Arrays.stream(ref[1]).mapToLong(a -> (long) a).toArray(), r.indices().toLongArray(), what + ": indices");
        if (!backward) return;
        double[] gv = stored(values(numel(g.outShape()), -1, 1, false), t);
        r.values().backward(tensor(d, t, g.outShape(), gv, false));
        double[][] expected = scatterRef(gv, ref[1], g.planes(), g.inH() * g.inW());
        assertEquals(d, x.grad().device(), what);
        assertClose(expected[0], expected[1], x.grad().toDoubleArray(), t, what + ": gradient");
    }

    @TestFactory
    List<DynamicTest> maxPooling() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : FLOATS) {
            Geo padded = new Geo(new long[] {2, 3, 9, 11}, 3, 3, 2, 2, 1, 1, 1, 1, false);
            add(tests, "maxPool2d/" + t + "/padded", d -> maxPoolCase(d, t, padded, false, false, true));
            Geo dilated = new Geo(new long[] {1, 2, 10, 7}, 3, 2, 2, 1, 1, 1, 2, 1, true);
            add(tests, "maxPool2d/" + t + "/dilated-ceil", d -> maxPoolCase(d, t, dilated, false, false, true));
            Geo overlapping = new Geo(new long[] {2, 2, 8, 8}, 3, 3, 1, 1, 1, 1, 1, 1, false);
            add(tests, "maxPool2d/" + t + "/ties-first-index", d -> maxPoolCase(d, t, overlapping, false, true, true));
            add(tests, "maxPool2d/" + t + "/nan-and-inf", d -> maxPoolCase(d, t, overlapping, false, false, true, Double.NaN,
                    Double.NEGATIVE_INFINITY, Double.POSITIVE_INFINITY, Double.NaN, Double.NEGATIVE_INFINITY));
            Geo unbatched = new Geo(new long[] {3, 8, 8}, 2, 2, 2, 2, 0, 0, 1, 1, false);
            add(tests, "maxPool2d/" + t + "/unbatched", d -> maxPoolCase(d, t, unbatched, false, false, true));
            Geo nchw = new Geo(new long[] {2, 5, 6, 7}, 3, 3, 2, 2, 1, 1, 1, 1, true);
            add(tests, "maxPool2d/" + t + "/channels-last", d -> maxPoolCase(d, t, nchw, true, false, false));
        }
        // All-(-inf) windows keep the first tap's index; 262,144 outputs take many blocks.
        Geo allNegInf = new Geo(new long[] {1, 1, 4, 4}, 2, 2, 2, 2, 0, 0, 1, 1, false);
        add(tests, "maxPool2d/float32/all-negative-infinity", d -> maxPoolCase(d, DType.FLOAT32, allNegInf, false, false, false,
                Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY));
        Geo large = new Geo(new long[] {8, 32, 64, 64}, 2, 2, 2, 2, 0, 0, 1, 1, false);
        add(tests, "maxPool2d/float32/large", d -> maxPoolCase(d, DType.FLOAT32, large, false, false, true));
        add(tests, "maxPool1d/float64", d -> {
            double[] v = values(2 * 3 * 50, -2, 2, false);
            Tensor x = tensor(d, DType.FLOAT64, new long[] {2, 3, 50}, v, false);
            Geo g = new Geo(new long[] {2, 3, 1, 50}, 1, 4, 1, 3, 0, 2, 1, 1, false);
            double[][] ref = maxPoolRef(v, g);
            ValuesIndices r = Pooling.maxPool1dWithIndices(x, 4, 3, 2, 1, false);
            assertArrayEquals(new long[] {2, 3, g.outW()}, r.values().shape());
            assertSame(ref[0], r.values().toDoubleArray(), "maxPool1d values");
            assertArrayEquals(Arrays.stream(ref[1]).mapToLong(a -> (long) a).toArray(), r.indices().toLongArray(), "maxPool1d indices");
        });
        add(tests, "maxPool2d/float32/F-without-indices", d -> {
            Geo g = new Geo(new long[] {2, 3, 9, 11}, 3, 3, 2, 2, 1, 1, 1, 1, false);
            double[] v = stored(values(numel(g.shape()), -4, 4, false), DType.FLOAT32);
            Tensor y = F.maxPool2d(tensor(d, DType.FLOAT32, g.shape(), v, false), 3, 2, 1);
            assertSame(maxPoolRef(v, g)[0], y.toDoubleArray(), "F.maxPool2d");
        });
        return tests;
    }

    // ------------------------------------------------------------------ average pooling

    private static void avgPoolCase(Device d, DType t, Geo g, boolean countIncludePad, long divisorOverride, boolean channelsLast) {
        double[] v = stored(values(numel(g.shape()), -4, 4, false), t);
        String what = "avgPool2d " + t + " " + g.describe() + " countIncludePad=" + countIncludePad + " divisor=" + divisorOverride;
        Tensor x = tensor(d, t, g.shape(), v, channelsLast);
        x.requiresGrad_(true);
        Tensor y = Pooling.avgPool2d(x, new int[] {g.kH(), g.kW()}, new int[] {g.sH(), g.sW()}, new int[] {g.pH(), g.pW()}, g.ceil(),
                countIncludePad, divisorOverride);
        assertEquals(d, y.device(), what);
        assertArrayEquals(g.outShape(), y.shape(), what + ": shape");
        double[][] ref = avgPoolRef(v, g, countIncludePad, divisorOverride, false);
        assertClose(ref[0], ref[1], y.toDoubleArray(), t, what);
        double[] gv = stored(values(numel(g.outShape()), -1, 1, false), t);
        y.backward(tensor(d, t, g.outShape(), gv, false));
        double[][] grad = avgPoolRef(gv, g, countIncludePad, divisorOverride, true);
        assertClose(grad[0], grad[1], x.grad().toDoubleArray(), t, what + ": gradient");
    }

    @TestFactory
    List<DynamicTest> averagePooling() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType t : FLOATS) {
            Geo padded = new Geo(new long[] {2, 3, 9, 11}, 3, 3, 2, 2, 1, 1, 1, 1, false);
            for (boolean cip : new boolean[] {true, false}) {
                add(tests, "avgPool2d/" + t + "/padded/countIncludePad=" + cip, d -> avgPoolCase(d, t, padded, cip, 0, false));
            }
            add(tests, "avgPool2d/" + t + "/divisorOverride", d -> avgPoolCase(d, t, padded, true, 5, false));
            // ceil mode: the last windows reach past the padded input (clipped there for their size too).
            Geo ceil = new Geo(new long[] {1, 2, 8, 8}, 3, 3, 2, 2, 1, 1, 1, 1, true);
            add(tests, "avgPool2d/" + t + "/ceil", d -> avgPoolCase(d, t, ceil, true, 0, false));
            Geo rect = new Geo(new long[] {2, 2, 7, 10}, 2, 3, 1, 2, 1, 1, 1, 1, false);
            add(tests, "avgPool2d/" + t + "/rectangular-overlapping", d -> avgPoolCase(d, t, rect, false, 0, false));
        }
        Geo nchw = new Geo(new long[] {2, 5, 6, 7}, 3, 3, 2, 2, 1, 1, 1, 1, false);
        add(tests, "avgPool2d/float32/channels-last", d -> avgPoolCase(d, DType.FLOAT32, nchw, true, 0, true));
        Geo large = new Geo(new long[] {8, 32, 56, 56}, 3, 3, 2, 2, 1, 1, 1, 1, false);
        add(tests, "avgPool2d/float32/large", d -> avgPoolCase(d, DType.FLOAT32, large, false, 0, false));
        add(tests, "avgPool1d/float64", d -> {
            double[] v = values(2 * 3 * 50, -2, 2, false);
            Geo g = new Geo(new long[] {2, 3, 1, 50}, 1, 5, 1, 3, 0, 2, 1, 1, false);
            Tensor y = Pooling.avgPool1d(tensor(d, DType.FLOAT64, new long[] {2, 3, 50}, v, false), 5, 3, 2, false, false);
            double[][] ref = avgPoolRef(v, g, false, 0, false);
            assertClose(ref[0], ref[1], y.toDoubleArray(), DType.FLOAT64, "avgPool1d");
        });
        return tests;
    }

    // ------------------------------------------------------------------ adaptive pooling

    private static void adaptiveCase(Device d, DType t, long[] shape, long outH, long outW, boolean max) {
        int r = shape.length;
        long inH = shape[r - 2], inW = shape[r - 1];
        long planes = numel(shape) / (inH * inW);
        long[] outShape = shape.clone();
        outShape[r - 2] = outH;
        outShape[r - 1] = outW;
        double[] v = stored(values(numel(shape), -4, 4, max, max ? new double[] {Double.NaN} : new double[0]), t);
        String what = (max ? "adaptiveMaxPool2d " : "adaptiveAvgPool2d ") + t + " " + Arrays.toString(shape) + " -> " + outH + "x" + outW;
        Tensor x = tensor(d, t, shape, v, false);
        x.requiresGrad_(true);
        double[][] ref = adaptiveRef(v, planes, inH, inW, outH, outW, max, false);
        Tensor y;
        if (max) {
            ValuesIndices vi = Pooling.adaptiveMaxPool2d(x, outH, outW);
            y = vi.values();
            assertSame(ref[0], y.toDoubleArray(), what + ": values");
            assertArrayEquals(Arrays.stream(ref[1]).mapToLong(a -> (long) a).toArray(), vi.indices().toLongArray(), what + ": indices");
        } else {
            y = F.adaptiveAvgPool2d(x, outH, outW);
            assertClose(ref[0], ref[1], y.toDoubleArray(), t, what);
        }
        assertEquals(d, y.device(), what);
        assertArrayEquals(outShape, y.shape(), what + ": shape");
        double[] gv = stored(values(numel(outShape), -1, 1, false), t);
        y.backward(tensor(d, t, outShape, gv, false));
        double[][] grad = max ? scatterRef(gv, ref[1], planes, inH * inW) : adaptiveRef(gv, planes, inH, inW, outH, outW, false, true);
        assertClose(grad[0], grad[1], x.grad().toDoubleArray(), t, what + ": gradient");
    }

    @TestFactory
    List<DynamicTest> adaptivePooling() {
        List<DynamicTest> tests = new ArrayList<>();
        long[][] sizes = {{3, 4}, {7, 9}, {1, 1}, {5, 13}};
        for (DType t : FLOATS) {
            for (long[] o : sizes) {
                for (boolean max : new boolean[] {false, true}) {
                    add(tests, (max ? "adaptiveMaxPool2d/" : "adaptiveAvgPool2d/") + t + "/7x9->" + o[0] + "x" + o[1],
                            d -> adaptiveCase(d, t, new long[] {2, 3, 7, 9}, o[0], o[1], max));
                }
            }
        }
        add(tests, "adaptiveAvgPool2d/float32/unbatched-10x10->4x4", d -> adaptiveCase(d, DType.FLOAT32, new long[] {3, 10, 10}, 4, 4, false));
        add(tests, "adaptiveAvgPool2d/float32/global-large", d -> adaptiveCase(d, DType.FLOAT32, new long[] {16, 512, 7, 7}, 1, 1, false));
        return tests;
    }
}
