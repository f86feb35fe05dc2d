package org.jtorch.fuzz;

import java.util.Arrays;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.nn.F;
import org.jtorch.types.DType;

/**
 * Convolution and pooling calls with generated geometry near the edge of what is possible (kernels larger than the
 * padded input, zero or negative stride, padding and dilation, groups not dividing the channels, empty inputs), each
 * with PyTorch 1.13's verdict: the error it raises or the output shape it gives, from its shape rules
 * ({@code at::native::conv_output_size}, {@code pooling_output_shape}, and their checks).
 */
final class Geometry {
    private Geometry() {}

    static ApiFuzzer.Call call(ArgumentGenerator g) {
        Random r = g.random();
        return switch (r.nextInt(5)) {
            case 0 -> conv(g, 2, false);
            case 1 -> conv(g, 1, false);
            case 2 -> conv(g, 2, true);
            case 3 -> pool(g, 2, r.nextBoolean());
            default -> pool(g, 1, r.nextBoolean());
        };
    }

    private static int small(Random r, int lo, int hi) {
        return lo + r.nextInt(hi - lo + 1);
    }

    /** Mostly {@code usual}, now and then 0 or -1. */
    private static int edgy(Random r, int usual) {
        int k = r.nextInt(12);
        return k == 0 ? 0 : k == 1 ? -1 : usual;
    }

    private static ApiFuzzer.Call conv(ArgumentGenerator g, int spatial, boolean transposed) {
        Random r = g.random();
        boolean batched = r.nextInt(5) != 0;
        long n = r.nextInt(8) == 0 ? 0 : small(r, 1, 2);
        int groups = r.nextInt(10) == 0 ? edgy(r, 1) : small(r, 1, 2);
        long c = r.nextInt(4) == 0 ? small(r, 1, 4) : Math.max(1, groups) * small(r, 1, 2);
        long o = r.nextInt(4) == 0 ? small(r, 0, 4) : Math.max(1, groups) * small(r, 1, 2);
        long[] in = new long[spatial];
        int[] kernel = new int[spatial], stride = new int[spatial], padding = new int[spatial], dilation = new int[spatial],
                outputPadding = new int[spatial];
        for (int i = 0; i < spatial; i++) {
            in[i] = r.nextInt(10) == 0 ? 0 : small(r, 1, 5);
            kernel[i] = small(r, 1, 4);
            stride[i] = edgy(r, small(r, 1, 3));
            padding[i] = r.nextInt(12) == 0 ? -1 : small(r, 0, 2);
            dilation[i] = edgy(r, small(r, 1, 2));
            outputPadding[i] = r.nextInt(3) == 0 ? small(r, 0, 2) : 0;
        }
        long inPerGroup = groups > 0 && r.nextInt(6) != 0 ? c / groups : small(r, 1, 3);
        long[] inputShape = concat(batched ? new long[] {n, c} : new long[] {c}, in);
        long[] weightShape = transposed ? concat(new long[] {c, groups > 0 && o % groups == 0 ? o / groups : 1}, kernel)
                : concat(new long[] {o, inPerGroup}, kernel);
        if (transposed) o = weightShape[1] * Math.max(groups, 1);
        if (r.nextInt(15) == 0) weightShape = Arrays.copyOf(weightShape, weightShape.length - 1);
        long biasSize = r.nextInt(8) == 0 ? o + 1 : o;
        Tensor input = g.tensor(DType.FLOAT32, inputShape, true);
        Tensor weight = g.tensor(DType.FLOAT32, weightShape, r.nextInt(4) == 0);
        Tensor bias = r.nextBoolean() ? null : g.tensor(DType.FLOAT32, new long[] {biasSize}, false);
        String expected = null;
        long[] outShape = null;
        if (weightShape.length != spatial + 2) expected = "weight of " + weightShape.length + " dims";
        else if (groups <= 0) expected = "non-positive groups";
        else if (Arrays.stream(stride).anyMatch(v -> v <= 0)) expected = "non-positive stride";
        else if (Arrays.stream(padding).anyMatch(v -> v < 0)) expected = "negative padding";
        else if (Arrays.stream(dilation).anyMatch(v -> v <= 0)) expected = "non-positive dilation";
        else if (o == 0) expected = "weight with 0 output channels";
        else if (Arrays.stream(in).anyMatch(v -> v == 0)) expected = "an empty spatial dim";
        else if (!transposed && o % groups != 0) expected = "output channels not divisible by groups";
        else if (!transposed && c != inPerGroup * groups) expected = "input channels do not match the weight's times groups";
        else if (transposed && c % groups != 0) expected = "input channels not divisible by groups";
        else if (bias != null && biasSize != o) expected = "bias of " + biasSize + " for " + o + " channels";
        else {
            outShape = new long[inputShape.length];
            outShape[0] = batched ? n : o;
            if (batched) outShape[1] = o;
            for (int i = 0; i < spatial; i++) {
                long size;
                if (transposed) {
                    if (outputPadding[i] >= stride[i] && outputPadding[i] >= dilation[i]) {
                        expected = "output padding not smaller than stride or dilation";
                        break;
                    }
                    size = (in[i] - 1) * stride[i] - 2L * padding[i] + (long) dilation[i] * (kernel[i] - 1) + outputPadding[i] + 1;
                } else {
                    long padded = in[i] + 2L * padding[i];
                    if (padded < (long) dilation[i] * (kernel[i] - 1) + 1) {
                        expected = "kernel larger than the padded input";
                        break;
                    }
                    size = (padded - (long) dilation[i] * (kernel[i] - 1) - 1) / stride[i] + 1;
                }
                if (size <= 0) {
                    expected = "output size " + size;
                    break;
                }
                outShape[outShape.length - spatial + i] = size;
            }
            if (expected != null) outShape = null;
        }
        String op = transposed ? "F.convTranspose2d" : spatial == 1 ? "F.conv1d" : "F.conv2d";
        String d = op + "(" + g.describe(input) + ", " + g.describe(weight) + ", " + g.describe(bias) + ", stride="
                + Arrays.toString(stride) + ", padding=" + Arrays.toString(padding) + ", dilation=" + Arrays.toString(dilation)
                + (transposed ? ", outputPadding=" + Arrays.toString(outputPadding) : "") + ", groups=" + groups + ")";
        if (!transposed) Arrays.fill(outputPadding, 0);
        if (batched && n == 0) { // PyTorch skips its geometry checks for an empty batch: not judged
            expected = null;
            outShape = null;
        }
        if (input.isClosed() || weight.isClosed() || bias != null && bias.isClosed()) {
            expected = "closed tensor";
            outShape = null;
        }
        // "Expected all tensors to be on the same device" (PyTorch 1.13), whatever the geometry
        java.util.Map<String, Object> tensors = new java.util.HashMap<>(java.util.Map.of("input", input, "weight", weight));
        if (bias != null) tensors.put("bias", bias);
        boolean mixed = Oracle.devices(null, tensors).size() > 1;
        if (mixed) {
            expected = "tensors on two devices";
            outShape = null;
        }
        long[] expectedShape = outShape;
        String why = expected;
        return new ApiFuzzer.Call(op, d, () -> switch (op) {
            case "F.conv1d" -> F.conv1d(input, weight, bias, stride[0], padding[0], dilation[0], groups);
            case "F.conv2d" -> F.conv2d(input, weight, bias, stride, padding, dilation, groups);
            default -> F.convTranspose2d(input, weight, bias, stride, padding, outputPadding, groups, dilation);
        }, why, expectedShape, mixed);
    }

    private static ApiFuzzer.Call pool(ArgumentGenerator g, int spatial, boolean max) {
        Random r = g.random();
        boolean batched = r.nextInt(4) != 0;
        long[] in = new long[spatial];
        int[] kernel = new int[spatial], stride = new int[spatial], padding = new int[spatial], dilation = new int[spatial];
        for (int i = 0; i < spatial; i++) {
            in[i] = r.nextInt(10) == 0 ? 0 : small(r, 1, 6);
            kernel[i] = edgy(r, small(r, 1, 4));
            stride[i] = edgy(r, small(r, 1, 3));
            padding[i] = r.nextInt(12) == 0 ? -1 : small(r, 0, 2);
            dilation[i] = max ? edgy(r, small(r, 1, 2)) : 1;
        }
        boolean ceil = r.nextBoolean();
        long n = r.nextInt(8) == 0 ? 0 : small(r, 1, 2);
        long c = r.nextInt(12) == 0 ? 0 : small(r, 1, 3);
        long[] inputShape = concat(batched ? new long[] {n, c} : new long[] {c}, in);
        Tensor input = g.tensor(DType.FLOAT32, inputShape, true);
        String expected = null;
        long[] outShape = inputShape.clone();
        for (int i = 0; i < spatial && expected == null; i++) {
            if (kernel[i] <= 0) expected = "non-positive kernel size";
            else if (stride[i] <= 0) expected = "non-positive stride";
            else if (padding[i] < 0) expected = "negative padding";
            else if (dilation[i] <= 0) expected = "non-positive dilation";
            else if (padding[i] > kernel[i] / 2) expected = "padding more than half the kernel";
        }
        for (int i = batched ? 1 : 0; i < inputShape.length && expected == null; i++) {
            if (inputShape[i] == 0) expected = "an empty non-batch dim";
        }
        for (int i = 0; i < spatial && expected == null; i++) {
            long span = in[i] + 2L * padding[i] - (long) dilation[i] * (kernel[i] - 1) - 1;
            long size = (ceil ? Math.floorDiv(span + stride[i] - 1, stride[i]) : Math.floorDiv(span, stride[i])) + 1;
            if (ceil && (size - 1) * stride[i] >= in[i] + padding[i]) size--;
            if (size <= 0) expected = "output size " + size;
            outShape[outShape.length - spatial + i] = size;
            // PyTorch 1.13's CPU max_pool1d (without indices) has its own check, which lets an output size of 0 through
            // (max_pool1d(randn(2, 3, 1), 2, 1) has shape [2, 3, 0]), unless the input requires grad: then it calls
            // max_pool1d_with_indices, which refuses it; so does it on CUDA.
            if (size == 0 && max && spatial == 1 && !input.isClosed() && !input.requiresGrad() && input.device().isCpu()) {
                expected = null;
            }
        }
        if (input.isClosed()) expected = "closed tensor";
        String op = (max ? "F.maxPool" : "F.avgPool") + spatial + "d";
        String d = op + "(" + g.describe(input) + ", kernel=" + Arrays.toString(kernel) + ", stride=" + Arrays.toString(stride)
                + ", padding=" + Arrays.toString(padding) + (max ? ", dilation=" + Arrays.toString(dilation) : "") + ", ceil=" + ceil + ")";
        long[] expectedShape = expected == null ? outShape : null;
        return new ApiFuzzer.Call(op, d, () -> switch (op) {
            case "F.maxPool1d" -> F.maxPool1d(input, kernel[0], stride[0], padding[0], dilation[0], ceil);
            case "F.maxPool2d" -> F.maxPool2d(input, kernel, stride, padding, dilation, ceil);
            case "F.avgPool1d" -> F.avgPool1d(input, kernel[0], stride[0], padding[0], ceil, true);
            default -> F.avgPool2d(input, kernel, stride, padding, ceil, true, 0);
        }, expected, expectedShape);
    }

    private static long[] concat(long[] a, int[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        for (int i = 0; i < b.length; i++) out[a.length + i] = b[i];
        return out;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
