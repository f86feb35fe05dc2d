package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.Conv1d;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.ConvTranspose2d;
import org.jtorch.nn.F;
import org.jtorch.nn.Fold;
import org.jtorch.nn.Module;
import org.jtorch.nn.Unfold;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * conv1d, conv2d, conv_transpose2d, unfold and fold (functional and as modules) against PyTorch 1.13
 * reference values ({@code tools/fixtures/gen_convolution.py}): outputs, and the gradients of
 * {@code sum(out * u)} with {@code u[i] = sin(0.7 i + 0.3)} for every floating input and parameter.
 */
class ConvolutionConformanceTest {

    /**
     * PyTorch gives an empty batch's convolution zero weight and bias gradients. Each shape runs with two images first, so
     * that a kernel keeping buffers between calls would hand their old sums back (the CPU's fast weight gradients did).
     */
    @org.junit.jupiter.api.Test
    void emptyBatchGivesZeroWeightAndBiasGradients() {
        long[][] weights = {{32, 16, 1, 1}, {16, 16, 3, 3}, {8, 3, 7, 7}};
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (long[] ws : weights) {
                for (long images : new long[] {2, 0}) {
                    try (Tensor x = Torch.randn(new long[] {images, ws[1], 12, 12}, dtype, Fixtures.device(), Torch.manualSeed(5));
                         Tensor w = Torch.randn(ws, dtype, Fixtures.device(), Torch.manualSeed(6)).requiresGrad_(true);
                         Tensor b = Torch.randn(new long[] {ws[0]}, dtype, Fixtures.device(), Torch.manualSeed(7)).requiresGrad_(true);
                         Tensor y = F.conv2d(x, w, b, 1, (int) ws[2] / 2); Tensor loss = y.sum()) {
                        Tensor[] g = org.jtorch.autograd.Autograd.grad(new Tensor[] {loss}, new Tensor[] {w, b}, null, false, false, false);
                        try (Tensor gw = g[0]; Tensor gb = g[1]; Tensor gwAbs = gw.abs(); Tensor gwMax = gwAbs.max();
                             Tensor gbAbs = gb.abs(); Tensor gbMax = gbAbs.max()) {
                            if (images == 0) {
                                String what = dtype + " weight " + java.util.Arrays.toString(ws) + " on " + Fixtures.device();
                                assertEquals(0.0, gwMax.item(), what + ": weight gradient");
                                assertEquals(0.0, gbMax.item(), what + ": bias gradient");
                            }
                        }
                    }
                }
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("convolution").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> in = c.inputTensors();
        try {
            if (c.expectsError() && c.name().endsWith("_not_on_cpu") && !Fixtures.device().isCpu()) {
                // PyTorch's CPU refuses float16 convolutions; on CUDA they run (in float32, rounded once).
                List<Tensor> wide = in.stream().map(t -> t.to(DType.FLOAT32)).toList();
                try (Tensor out = run(c, in, null); Tensor outWide = out.to(DType.FLOAT32); Tensor ref = run(c, wide, null)) {
                    assertEquals(DType.FLOAT16, out.dtype(), c + ": dtype");
                    Fixtures.assertClose(ref, outWide, 2e-3, 2e-3, c + " against float32");
                } finally {
                    wide.forEach(Tensor::close);
                }
                return;
            }
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> run(c, in, null).close());
                assertTrue(e.getMessage().contains(c.op().toLowerCase().replace("conv_transpose2d", "conv_transpose2d")),
                        "error message should name the op: " + e.getMessage());
                return;
            }
            Module module = module(c);
            if (module != null) module.to(Fixtures.device());
            List<Tensor> wrt = new ArrayList<>();
            if (module != null) {
                Map<String, Tensor> state = new LinkedHashMap<>();
                JsonArray keys = c.args().getAsJsonArray("keys");
                for (int i = 0; i < keys.size(); i++) state.put(keys.get(i).getAsString(), in.get(1 + i));
                assertEquals(List.of(), module.loadStateDict(state, true).missingKeys(), c + ": missing keys");
                assertEquals(c.stringArg("repr", ""), module.toString(), c + ": repr");
                in.get(0).requiresGrad_(true);
                wrt.add(in.get(0));
                module.parameters().forEach(wrt::add);
            } else if (c.expected().getAsJsonArray().size() > 1) {
                for (Tensor t : in) {
                    t.requiresGrad_(true);
                    wrt.add(t);
                }
            }
            try (Tensor out = run(c, in, module)) {
                JsonArray expected = c.expected().getAsJsonArray();
                double tol = tolerance(out.dtype());
                Fixtures.assertMatches(expected.get(0).getAsJsonObject(), out, tol, tol, c + " output");
                if (expected.size() == 1) return;
                try (Tensor u = upstream(out); Tensor prod = out.mul(u); Tensor loss = prod.sum()) {
                    loss.backward();
                }
                for (int i = 0; i < wrt.size(); i++) {
                    Tensor g = wrt.get(i).grad();
                    assertNotNull(g, c + ": no gradient for input " + i);
                    Fixtures.assertMatches(expected.get(1 + i).getAsJsonObject(), g, tol, tol, c + " gradient " + i);
                }
            } finally {
                if (module != null) module.close();
            }
        } finally {
            in.forEach(Tensor::close);
        }
    }

    /** Sums of up to a few hundred products: float32 rounding order differs from oneDNN's. */
    private static double tolerance(DType d) {
        return switch (d) {
            case FLOAT64 -> 1e-10;
            case FLOAT32 -> 1e-4;
            case BFLOAT16, FLOAT16 -> 3e-2;
            default -> 0;
        };
    }

    /** {@code u[i] = sin(0.7 i + 0.3)} over the flattened output, in the output's dtype. */
    private static Tensor upstream(Tensor out) {
        double[] v = new double[(int) out.numel()];
        for (int i = 0; i < v.length; i++) v[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor t = Torch.tensor(v, out.shape())) {
            return t.to(out.device(), out.dtype());
        }
    }

    private static Tensor run(Case c, List<Tensor> in, Module module) {
        if (module != null) return module.forward(in.get(0));
        Tensor x = in.get(0);
        Tensor w = in.size() > 1 ? in.get(1) : null;
        Tensor b = in.size() > 2 ? in.get(2) : null;
        int groups = (int) c.longArg("groups", 1);
        JsonElement padding = c.args().get("padding");
        boolean paddingString = padding != null && padding.isJsonPrimitive() && padding.getAsJsonPrimitive().isString();
        return switch (c.op()) {
            case "conv2d" -> paddingString
                    ? F.conv2d(x, w, b, ints(c, "stride", 1), padding.getAsString(), ints(c, "dilation", 1), groups)
                    : F.conv2d(x, w, b, ints(c, "stride", 1), ints(c, "padding", 0), ints(c, "dilation", 1), groups);
            case "conv1d" -> paddingString
                    ? F.conv1d(x, w, b, ints(c, "stride", 1)[0], padding.getAsString(), ints(c, "dilation", 1)[0], groups)
                    : F.conv1d(x, w, b, ints(c, "stride", 1)[0], ints(c, "padding", 0)[0], ints(c, "dilation", 1)[0], groups);
            case "conv_transpose2d" -> F.convTranspose2d(x, w, b, ints(c, "stride", 1), ints(c, "padding", 0),
                    ints(c, "output_padding", 0), groups, ints(c, "dilation", 1));
            case "unfold" -> F.unfold(x, ints(c, "kernel_size", 1), ints(c, "dilation", 1), ints(c, "padding", 0), ints(c, "stride", 1));
            case "fold" -> F.fold(x, ints(c, "output_size", 1), ints(c, "kernel_size", 1), ints(c, "dilation", 1),
                    ints(c, "padding", 0), ints(c, "stride", 1));
            default -> throw new IllegalArgumentException("unknown op " + c.op());
        };
    }

    /** The Java spelling of the module each module case's generator built. */
    private static Module module(Case c) {
        return switch (c.op() + "/" + c.name()) {
            case "Conv2d/defaults" -> new Conv2d(3, 4, 3);
            case "Conv2d/stride_padding_no_bias" -> new Conv2d(3, 4, 3, Conv2d.options().stride(2).padding(1).bias(false));
            case "Conv2d/groups_dilation_pairs" -> new Conv2d(4, 6, new int[] {3, 2},
                    Conv2d.options().stride(1, 2).padding(2, 1).dilation(2, 1).groups(2));
            case "Conv2d/same" -> new Conv2d(2, 3, 4, Conv2d.options().padding("same"));
            case "Conv2d/reflect" -> new Conv2d(2, 3, 3, Conv2d.options().padding(1).paddingMode("reflect"));
            case "Conv2d/replicate_pairs" -> new Conv2d(2, 3, 3, Conv2d.options().padding(2, 1).paddingMode("replicate"));
            case "Conv2d/circular_stride2" -> new Conv2d(2, 2, 3, Conv2d.options().stride(2).padding(1).paddingMode("circular"));
            case "Conv2d/same_reflect_even" -> new Conv2d(2, 2, 4, Conv2d.options().padding("same").paddingMode("reflect").bias(false));
            case "Conv1d/circular" -> new Conv1d(2, 3, 3, Conv1d.options().padding(2).paddingMode("circular"));
            case "Conv1d/defaults" -> new Conv1d(3, 4, 3);
            case "Conv1d/options" -> new Conv1d(4, 2, 2, Conv1d.options().stride(2).padding(1).dilation(2).groups(2).bias(false));
            case "ConvTranspose2d/defaults" -> new ConvTranspose2d(3, 2, 3);
            case "ConvTranspose2d/options" -> new ConvTranspose2d(4, 2, 3,
                    ConvTranspose2d.options().stride(2).padding(1).outputPadding(1).groups(2));
            case "Unfold/options" -> new Unfold(new int[] {2, 3}, new int[] {1}, new int[] {1}, new int[] {2});
            case "Fold/options" -> new Fold(new int[] {4, 5}, new int[] {2}, new int[] {1}, new int[] {0}, new int[] {1});
            default -> {
                if (Character.isUpperCase(c.op().charAt(0))) throw new IllegalArgumentException("unknown module case " + c);
                yield null;
            }
        };
    }

    /** An int or a list of ints argument. */
    private static int[] ints(Case c, String key, int fallback) {
        JsonElement e = c.args().get(key);
        if (e == null) return new int[] {fallback};
        if (e.isJsonPrimitive()) return new int[] {e.getAsInt()};
        JsonArray a = e.getAsJsonArray();
        int[] r = new int[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsInt();
        return r;
    }
}
