package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Pooling, unpooling, padding, interpolation and pixel (un)shuffle, and the 3-d pools and transposed convolution,
 * against PyTorch 1.13 reference values ({@code tools/fixtures/gen_spatial.py}, {@code gen_spatial3d.py}): outputs
 * (and max-pool indices) and the input gradient of {@code sum(output * w)} with {@code w[i] = sin(0.7 i + 0.3)}
 * (conv_transpose3d: the gradients of input, weight and bias); error cases must throw naming the op.
 */
class SpatialConformanceTest {
    private static final List<Case> CASES = Stream.concat(Fixtures.load("spatial").stream(), Fixtures.load("spatial3d").stream()).toList();

    @TestFactory
    Stream<DynamicTest> forwardMatchesPyTorch() {
        return CASES.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkForward(c)));
    }

    @TestFactory
    Stream<DynamicTest> inputGradientMatchesPyTorch() {
        return CASES.stream().filter(c -> c.boolArg("grad", false))
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkBackward(c)));
    }

    private static void checkForward(Case c) {
        List<Tensor> in = c.inputTensors();
        try {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> closeAll(run(c, in)), c.toString());
                assertTrue(e.getMessage().toLowerCase().contains(Fixtures.javaName(c.op()).toLowerCase()),
                        c + ": message should name the op: " + e.getMessage());
                return;
            }
            List<Tensor> outs = run(c, in);
            try {
                int n = (int) c.longArg("outputs", 1);
                assertEquals(n, outs.size(), c + ": outputs");
                for (int i = 0; i < n; i++) assertClose(c.expectedTensor(i), outs.get(i), c + " output " + i);
            } finally {
                closeAll(outs);
            }
        } finally {
            closeAll(in);
        }
    }

    private static void checkBackward(Case c) {
        List<Tensor> in = c.inputTensors();
        try {
            // conv_transpose3d differentiates every input (input, weight, bias); the pools their first.
            boolean all = c.op().equals("conv_transpose3d");
            List<Tensor> leaves = all ? in : in.subList(0, 1);
            for (Tensor t : leaves) t.requiresGrad_(true);
            List<Tensor> outs = run(c, in);
            try (Tensor w = upstream(outs.get(0))) {
                outs.get(0).backward(w);
            } finally {
                closeAll(outs);
            }
            int first = all ? 1 : (int) c.longArg("outputs", 1);
            for (int i = 0; i < leaves.size(); i++) {
                assertNotNull(leaves.get(i).grad(), c + ": no gradient of input " + i);
                assertClose(c.expectedTensor(first + i), leaves.get(i).grad(), c + " gradient of input " + i);
            }
        } finally {
            closeAll(in);
        }
    }

    /** The Java call for a case; max-pool style ops return values then indices. */
    private static List<Tensor> run(Case c, List<Tensor> in) {
        Tensor x = in.get(0);
        boolean ceil = c.boolArg("ceil_mode", false);
        return switch (c.op()) {
            case "max_pool2d" -> both(F.maxPool2dWithIndices(x, ints(c, "kernel_size"), ints(c, "stride"), ints(c, "padding"),
                    ints(c, "dilation"), ceil));
            case "max_pool1d" -> both(F.maxPool1dWithIndices(x, (int) c.longArg("kernel_size", 0), optionalInt(c, "stride"),
                    (int) c.longArg("padding", 0), (int) c.longArg("dilation", 1), ceil));
            case "avg_pool2d" -> List.of(F.avgPool2d(x, ints(c, "kernel_size"), ints(c, "stride"), ints(c, "padding"), ceil,
                    c.boolArg("count_include_pad", true), divisor(c)));
            case "avg_pool1d" -> List.of(F.avgPool1d(x, (int) c.longArg("kernel_size", 0), optionalInt(c, "stride"),
                    (int) c.longArg("padding", 0), ceil, c.boolArg("count_include_pad", true)));
            case "adaptive_avg_pool2d" -> List.of(hasNone(c) ? F.adaptiveAvgPool2d(x, size(c, 0), size(c, 1))
                    : F.adaptiveAvgPool2d(x, c.longsArg("output_size")));
            case "adaptive_avg_pool1d" -> List.of(F.adaptiveAvgPool1d(x, c.longsArg("output_size")[0]));
            case "adaptive_max_pool2d" -> both(hasNone(c) ? F.adaptiveMaxPool2dWithIndices(x, size(c, 0), size(c, 1))
                    : F.adaptiveMaxPool2dWithIndices(x, c.longsArg("output_size")));
            case "adaptive_max_pool1d" -> both(Pooling.adaptiveMaxPool1d(x, c.longsArg("output_size")[0]));
            case "max_unpool2d" -> List.of(F.maxUnpool2d(x, in.get(1), ints(c, "kernel_size"), ints(c, "stride"), ints(c, "padding"),
                    c.longsArg("output_size")));
            case "pad" -> List.of(F.pad(x, c.longsArg("pad"), c.stringArg("mode", "constant"), c.doubleArg("value", 0)));
            case "interpolate" -> List.of(c.args().has("antialias")
                    ? F.interpolate(x, F.Interpolate.options().size(c.longsArg("size")).scaleFactor(doubles(c, "scale_factor"))
                            .mode(c.stringArg("mode", "nearest")).alignCorners(c.args().has("align_corners") ? c.boolArg("align_corners", false) : null)
                            .antialias(c.boolArg("antialias", false)))
                    : F.interpolate(x, c.longsArg("size"), doubles(c, "scale_factor"), c.stringArg("mode", "nearest"),
                    c.args().has("align_corners") ? c.boolArg("align_corners", false) : null,
                    c.boolArg("recompute_scale_factor", false)));
            case "max_pool3d" -> both(F.maxPool3dWithIndices(x, ints(c, "kernel_size"), maxPool(c)));
            case "avg_pool3d" -> List.of(c.longArg("divisor_override", 1) == 0
                    // The options record refuses a zero divisor when built; the op's own check is reached directly.
                    ? Pooling3d.avgPool3d(x, ints(c, "kernel_size"), null, new int[] {0}, false, true, 0L)
                    : F.avgPool3d(x, ints(c, "kernel_size"), avgPool(c)));
            case "adaptive_avg_pool3d" -> List.of(hasNone(c) ? F.adaptiveAvgPool3d(x, size(c, 0), size(c, 1), size(c, 2))
                    : F.adaptiveAvgPool3d(x, c.longsArg("output_size")));
            case "adaptive_max_pool3d" -> both(hasNone(c) ? F.adaptiveMaxPool3dWithIndices(x, size(c, 0), size(c, 1), size(c, 2))
                    : F.adaptiveMaxPool3dWithIndices(x, c.longsArg("output_size")));
            case "max_unpool3d" -> List.of(F.maxUnpool3d(x, in.get(1), ints(c, "kernel_size"), ints(c, "stride"), ints(c, "padding"),
                    c.longsArg("output_size")));
            case "conv_transpose3d" -> List.of(F.convTranspose3d(x, in.get(1), convTranspose(c, in.size() > 2 ? in.get(2) : null)));
            case "pixel_shuffle" -> List.of(F.pixelShuffle(x, (int) c.longArg("factor", 1)));
            case "pixel_unshuffle" -> List.of(F.pixelUnshuffle(x, (int) c.longArg("factor", 1)));
            default -> throw new IllegalStateException("no Java call for " + c);
        };
    }

    private static long divisor(Case c) {
        // PyTorch's divisor_override=0 is an error; Java's 0 means "none", so the error case passes -1.
        if (!c.args().has("divisor_override")) return 0;
        long d = c.longArg("divisor_override", 0);
        return d == 0 ? -1 : d;
    }

    /** The case's keywords as options; absent ones keep PyTorch's defaults. */
    private static F.MaxPool maxPool(Case c) {
        F.MaxPool o = F.MaxPool.options().ceilMode(c.boolArg("ceil_mode", false));
        if (c.args().has("stride")) o = o.stride(ints(c, "stride"));
        if (c.args().has("padding")) o = o.padding(ints(c, "padding"));
        if (c.args().has("dilation")) o = o.dilation(ints(c, "dilation"));
        return o;
    }

    private static F.AvgPool avgPool(Case c) {
        F.AvgPool o = F.AvgPool.options().ceilMode(c.boolArg("ceil_mode", false)).countIncludePad(c.boolArg("count_include_pad", true));
        if (c.args().has("stride")) o = o.stride(ints(c, "stride"));
        if (c.args().has("padding")) o = o.padding(ints(c, "padding"));
        if (c.args().has("divisor_override")) o = o.divisorOverride(c.longArg("divisor_override", 0));
        return o;
    }

    private static F.ConvTranspose convTranspose(Case c, Tensor bias) {
        F.ConvTranspose o = F.ConvTranspose.options().bias(bias).groups((int) c.longArg("groups", 1));
        if (c.args().has("stride")) o = o.stride(ints(c, "stride"));
        if (c.args().has("padding")) o = o.padding(ints(c, "padding"));
        if (c.args().has("output_padding")) o = o.outputPadding(ints(c, "output_padding"));
        if (c.args().has("dilation")) o = o.dilation(ints(c, "dilation"));
        return o;
    }

    private static List<Tensor> both(ValuesIndices r) {
        List<Tensor> l = new ArrayList<>();
        l.add(r.values());
        l.add(r.indices());
        return l;
    }

    private static double[] doubles(Case c, String key) {
        if (!c.args().has(key)) return null;
        JsonArray a = c.args().getAsJsonArray(key);
        double[] r = new double[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsDouble();
        return r;
    }

    /** An int argument, or null (PyTorch's None) when the case leaves it out. */
    private static Integer optionalInt(Case c, String key) {
        return c.args().has(key) && !c.args().get(key).isJsonNull() ? (int) c.longArg(key, 0) : null;
    }

    private static int[] ints(Case c, String key) {
        long[] v = c.longsArg(key);
        if (v == null) return null;
        int[] r = new int[v.length];
        for (int i = 0; i < v.length; i++) r[i] = (int) v[i];
        return r;
    }

    /** The fixture tolerance by dtype (also UpsampleOpsTest's, whose cases gen_upsample.py writes as gen_spatial.py's). */
    static void assertClose(JsonObject expected, Tensor actual, String what) {
        DType dtype = DType.parse(expected.get("dtype").getAsString());
        double tol = switch (dtype) {
            case FLOAT64 -> 1e-10;
            case BFLOAT16 -> 1e-2;
            default -> 2e-5;
        };
        Fixtures.assertMatches(expected, actual, tol, tol, what);
    }

    /** {@code w[i] = sin(0.7 i + 0.3)} in the output's shape and dtype. */
    static Tensor upstream(Tensor out) {
        double[] w = new double[Math.toIntExact(out.numel())];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor t = Torch.tensor(w, out.shape())) {
            return t.to(out.device(), out.dtype());
        }
    }

    private static void closeAll(List<Tensor> ts) {
        for (Tensor t : ts) t.close();
    }

    /** The generator writes an adaptive pool's None output size as -1; jtorch takes null there. */
    private static boolean hasNone(Case c) {
        return java.util.Arrays.stream(c.longsArg("output_size")).anyMatch(v -> v == -1);
    }

    private static Long size(Case c, int i) {
        long v = c.longsArg("output_size")[i];
        return v == -1 ? null : v;
    }
}
