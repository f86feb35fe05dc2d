package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every nn functional op, layer and loss against PyTorch 1.13 reference values
 * ({@code tools/fixtures/gen_nn.py}). Layer parameters are loaded with {@link Module#loadStateDict}
 * under PyTorch's state-dict names, so the cases also check the key names. Gradients are those of
 * {@code sum(output * w)} with {@code w[i] = sin(0.7 i + 0.3)}, as the generator computes them.
 */
class NnConformanceTest {
    private static final List<Case> CASES = Fixtures.load("nn");

    @TestFactory
    Stream<DynamicTest> forwardMatchesPyTorch() {
        return CASES.stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkForward(c)));
    }

    /** Gradients of every case whose ops have backward formulas on main (embedding records its own node). */
    @TestFactory
    Stream<DynamicTest> backwardMatchesPyTorch() {
        return CASES.stream().filter(c -> hasGradients(c) && !needsIndexingBackward(c))
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkBackward(c)));
    }

    @TestFactory
    Stream<DynamicTest> classIndexLossBackwardMatchesPyTorch() {
        return CASES.stream().filter(c -> hasGradients(c) && needsIndexingBackward(c))
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkBackward(c)));
    }

    /** nll_loss and class-index cross entropy pick the target's log-probability with gather and masked_fill. */
    private static boolean needsIndexingBackward(Case c) {
        return c.op().equals("nll_loss")
                || c.op().equals("cross_entropy") && !c.inputs().get(1).getAsJsonObject().get("dtype").getAsString().startsWith("float");
    }

    // ------------------------------------------------------------------ checks

    private static void checkForward(Case c) {
        Inputs in = inputs(c, false);
        try (in) {
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> readAndCloseAll(run(c, in)), c.toString());
                assertTrue(e.getMessage().toLowerCase().contains(javaName(c.op()).toLowerCase()),
                        c + ": message should name the op: " + e.getMessage());
                return;
            }
            List<Tensor> outs = run(c, in);
            try {
                int n = 1 + extraOutputs(c);
                for (int i = 0; i < n; i++) assertClose(c.expected().getAsJsonArray().get(i).getAsJsonObject(), outs.get(i), c + " output " + i);
            } finally {
                closeAll(outs);
            }
        }
    }

    private static void checkBackward(Case c) {
        Inputs in = inputs(c, true);
        try (in) {
            List<Tensor> outs = run(c, in);
            try (Tensor w = upstream(outs.get(0))) {
                outs.get(0).backward(w);
            } finally {
                closeAll(outs);
            }
            JsonArray expected = c.expected().getAsJsonArray();
            int k = 1 + extraOutputs(c);
            List<Tensor> wrt = new ArrayList<>(in.gradInputs);
            for (String key : in.keys) wrt.add(in.module != null ? in.module.namedParameters().get(key) : in.params.get(key));
            for (int i = 0; i < wrt.size(); i++) {
                Tensor g = wrt.get(i).grad();
                assertNotNull(g, c + ": no gradient for differentiable argument " + i);
                assertClose(expected.get(k + i).getAsJsonObject(), g, c + " gradient " + i);
            }
        }
    }

    private static boolean hasGradients(Case c) {
        if (c.expectsError() || c.boolArg("forward_only", false)) return false;
        long grads = c.longArg("grad_inputs", 0) + c.args().getAsJsonArray("keys").size();
        return c.expected().getAsJsonArray().size() == 1 + extraOutputs(c) + grads && grads > 0;
    }

    private static int extraOutputs(Case c) {
        return c.op().equals("mha") && c.boolArg("need_weights", false) ? 1 : 0;
    }

    private static void assertClose(JsonObject expected, Tensor actual, String what) {
        DType dtype = DType.parse(expected.get("dtype").getAsString());
        double tol = dtype == DType.FLOAT64 ? 1e-10 : 2e-5;
        Fixtures.assertMatches(expected, actual, tol, tol, what);
    }

    /** {@code w[i] = sin(0.7 i + 0.3)} in the output's shape and dtype. */
    private static Tensor upstream(Tensor out) {
        double[] w = new double[Math.toIntExact(out.numel())];
        for (int i = 0; i < w.length; i++) w[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor t = Torch.tensor(w, out.shape())) {
            return t.to(out.device(), out.dtype());
        }
    }

    // ------------------------------------------------------------------ inputs

    /** Op arguments, parameters by state-dict key, and the module built from them (for layer ops). */
    private static final class Inputs implements AutoCloseable {
        final List<Tensor> args = new ArrayList<>();
        final List<Tensor> gradInputs = new ArrayList<>();
        final Map<String, Tensor> params = new LinkedHashMap<>();
        final List<String> keys = new ArrayList<>();
        Module module;

        Tensor arg(int i) {
            return args.get(i);
        }

        @Override
        public void close() {
            closeAll(args);
            closeAll(params.values());
            if (module != null) module.close();
        }
    }

    private static Inputs inputs(Case c, boolean requireGrad) {
        Inputs in = new Inputs();
        JsonElement k = c.args().get("keys");
        if (k != null) for (JsonElement e : k.getAsJsonArray()) in.keys.add(e.getAsString());
        int nArgs = c.inputs().size() - in.keys.size();
        long gradInputs = c.longArg("grad_inputs", nArgs);
        for (int i = 0; i < nArgs; i++) {
            Tensor t = c.input(i);
            if (requireGrad && i < gradInputs && t.dtype().isFloatingPoint()) {
                t.requiresGrad_(true);
                in.gradInputs.add(t);
            }
            in.args.add(t);
        }
        for (int i = 0; i < in.keys.size(); i++) {
            Tensor p = c.input(nArgs + i);
            in.params.put(in.keys.get(i), p);
        }
        in.module = module(c, in);
        if (in.module != null && !in.keys.isEmpty()) {
            Map<String, Tensor> state = in.params;
            Module.LoadResult r = in.module.loadStateDict(state, true);
            assertEquals(List.of(), r.missingKeys(), c + ": missing keys");
        } else if (requireGrad) {
            for (Tensor p : in.params.values()) p.requiresGrad_(true);
        }
        return in;
    }

    /** The module a layer case describes, in the parameters' dtype; null for functional cases. */
    private static Module module(Case c, Inputs in) {
        DType dtype = in.params.isEmpty() ? (in.args.isEmpty() ? DType.FLOAT32 : in.arg(0).dtype())
                : in.params.values().iterator().next().dtype();
        if (!dtype.isFloatingPoint()) dtype = DType.FLOAT32;
        Module m = switch (c.op()) {
            case "linear" -> new Linear(c.longArg("in_features", 0), c.longArg("out_features", 0), c.boolArg("bias", true));
            case "bilinear" -> new Bilinear(c.longArg("in1", 0), c.longArg("in2", 0), c.longArg("out", 0), c.boolArg("bias", true),
                    DType.FLOAT32, org.jtorch.types.Device.cpu(), org.jtorch.types.Generator.defaultGenerator());
            case "embedding" -> new Embedding(c.longArg("num", 0), c.longArg("dim", 0),
                    c.args().get("padding_idx").isJsonNull() ? null : c.longArg("padding_idx", 0));
            case "layer_norm" -> new LayerNorm(c.longsArg("shape"), c.doubleArg("eps", 1e-5), c.boolArg("affine", true));
            case "rms_norm" -> new RMSNorm(c.longsArg("shape"), c.args().get("eps").isJsonNull() ? null : c.doubleArg("eps", 0), true);
            case "flatten" -> new Flatten((int) c.longArg("start_dim", 1), (int) c.longArg("end_dim", -1));
            case "unflatten" -> new Unflatten((int) c.longArg("dim", 0), c.longsArg("sizes"));
            case "identity" -> new Identity();
            case "dropout" -> new Dropout(c.doubleArg("p", 0.5)).eval();
            case "mha" -> new MultiheadAttention(c.longArg("embed_dim", 0), c.longArg("num_heads", 0), 0.0, c.boolArg("bias", true),
                    c.boolArg("batch_first", false));
            default -> null;
        };
        if (m != null && dtype != DType.FLOAT32) m.to(dtype);
        if (m != null) m.to(Fixtures.device());
        return m;
    }

    // ------------------------------------------------------------------ runners

    private static List<Tensor> run(Case c, Inputs in) {
        return switch (c.op()) {
            case "mha" -> runMha(c, in);
            case "bilinear" -> List.of(((Bilinear) in.module).forward(in.arg(0), in.arg(1)));
            default -> in.module != null ? List.of(in.module.forward(in.arg(0))) : List.of(functional(c, in));
        };
    }

    private static List<Tensor> runMha(Case c, Inputs in) {
        MultiheadAttention m = (MultiheadAttention) in.module;
        boolean self = c.boolArg("self_attn", false);
        int i = self ? 1 : 3;
        Tensor q = in.arg(0);
        Tensor k = self ? q : in.arg(1);
        Tensor v = self ? q : in.arg(2);
        Tensor kpm = c.boolArg("has_kpm", false) ? in.arg(i++) : null;
        Tensor am = c.boolArg("has_attn_mask", false) ? in.arg(i) : null;
        MultiheadAttention.Output o = m.forward(q, k, v, kpm, c.boolArg("need_weights", true), am, c.boolArg("average", true));
        List<Tensor> r = new ArrayList<>();
        r.add(o.output());
        if (o.weights() != null) r.add(o.weights());
        return r;
    }

    private static Tensor functional(Case c, Inputs in) {
        Tensor x = in.arg(0);
        F.Reduction red = reduction(c.stringArg("reduction", "mean"));
        return switch (c.op()) {
            case "relu" -> F.relu(x);
            case "leaky_relu" -> F.leakyRelu(x, c.doubleArg("negative_slope", 0.01));
            case "gelu", "gelu_tanh" -> F.gelu(x, c.stringArg("approximate", "none"));
            case "silu" -> F.silu(x);
            case "tanh" -> F.tanh(x);
            case "sigmoid" -> F.sigmoid(x);
            case "elu" -> F.elu(x, c.doubleArg("alpha", 1));
            case "hardswish" -> F.hardswish(x);
            case "softmax" -> F.softmax(x, (int) c.longArg("dim", -1));
            case "log_softmax" -> F.logSoftmax(x, (int) c.longArg("dim", -1));
            case "rms_norm" -> F.rmsNorm(x, c.longsArg("shape"), in.params.get("weight"),
                    c.args().get("eps").isJsonNull() ? null : c.doubleArg("eps", 0));
            case "sdpa" -> F.scaledDotProductAttention(x, in.arg(1), in.arg(2), in.args.size() > 3 ? in.arg(3) : null, 0,
                    c.boolArg("is_causal", false));
            case "cross_entropy" -> F.crossEntropy(x, in.arg(1), c.boolArg("has_weight", false) ? in.arg(2) : null,
                    c.longArg("ignore_index", -100), red, c.doubleArg("label_smoothing", 0));
            case "nll_loss" -> F.nllLoss(x, in.arg(1), c.boolArg("has_weight", false) ? in.arg(2) : null, c.longArg("ignore_index", -100), red);
            case "mse_loss" -> F.mseLoss(x, in.arg(1), red);
            case "l1_loss" -> F.l1Loss(x, in.arg(1), red);
            case "smooth_l1_loss" -> F.smoothL1Loss(x, in.arg(1), red, c.doubleArg("beta", 1));
            case "huber_loss" -> F.huberLoss(x, in.arg(1), red, c.doubleArg("delta", 1));
            case "bce" -> F.binaryCrossEntropy(x, in.arg(1), c.boolArg("has_weight", false) ? in.arg(2) : null, red);
            case "bce_with_logits" -> {
                int i = 2;
                Tensor w = c.boolArg("has_weight", false) ? in.arg(i++) : null;
                Tensor pw = c.boolArg("has_pos_weight", false) ? in.arg(i) : null;
                yield F.binaryCrossEntropyWithLogits(x, in.arg(1), w, pw, red);
            }
            case "kl_div" -> F.klDiv(x, in.arg(1), red, c.boolArg("log_target", false));
            default -> throw new IllegalStateException("no runner for op " + c.op());
        };
    }

    private static F.Reduction reduction(String r) {
        return F.Reduction.valueOf(r.toUpperCase());
    }

    /** The Java spelling of a fixture op name, which error messages must contain. */
    private static String javaName(String op) {
        return switch (op) {
            case "cross_entropy" -> "crossEntropy";
            case "layer_norm" -> "layerNorm";
            case "bce" -> "binaryCrossEntropy";
            default -> op;
        };
    }

    /** Reads the results back first: an accelerator may report a bad index at that synchronisation instead of at the op. */
    private static void readAndCloseAll(List<Tensor> ts) {
        try {
            for (Tensor t : ts) if (t != null) t.toDoubleArray();
        } finally {
            closeAll(ts);
        }
    }

    private static void closeAll(Iterable<Tensor> ts) {
        for (Tensor t : ts) if (t != null) t.close();
    }
}
