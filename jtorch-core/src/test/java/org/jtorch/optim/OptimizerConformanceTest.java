package org.jtorch.optim;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Optimizer trajectories against PyTorch 1.13 ({@code tools/fixtures/gen_optim.py}): from fixed
 * parameters, five steps (RAdam: eight) with given gradients (one parameter without a gradient at steps 0 and 2),
 * every parameter checked after every step to 1e-6 relative (float32) or 1e-12 (float64). Each
 * case runs four ways: the default path (fused kernels for contiguous float32), the composed
 * tensor-op path, non-contiguous parameters, and resumed from a state dict saved after step 3 and
 * loaded into a fresh optimizer.
 */
class OptimizerConformanceTest {

    enum Mode { DEFAULT, COMPOSED, STRIDED, RESUMED }

    @TestFactory
    Stream<DynamicTest> trajectoriesMatchPyTorch() {
        List<Case> cases = Fixtures.load("optim").stream().filter(c -> !c.op().equals("lr_scheduler") && !c.op().equals("LBFGS")).toList();
        return cases.stream().flatMap(c -> Stream.of(Mode.values()).map(m -> DynamicTest.dynamicTest(
                c.op() + "/" + c.name() + (m == Mode.DEFAULT ? "" : "[" + m.name().toLowerCase() + "]"), () -> run(c, m))));
    }

    private static void run(Case c, Mode mode) {
        List<Tensor> params = initialParams(c, mode == Mode.STRIDED);
        JsonArray grads = c.args().getAsJsonArray("grads");
        JsonArray expected = c.expected().getAsJsonArray();
        Optimizer opt = build(c, params);
        if (mode == Mode.COMPOSED) opt.useFusedKernels(false);
        try {
            for (int step = 0; step < grads.size(); step++) {
                if (mode == Mode.RESUMED && step == 3) {
                    Map<String, Object> sd = opt.stateDict();
                    List<Tensor> copies = new ArrayList<>();
                    for (Tensor p : params) copies.add(p.detach().clone().requiresGrad_(true));
                    opt.close();
                    close(params);
                    params = copies;
                    opt = build(c, params);
                    opt.loadStateDict(sd);
                    Optimizer.closeStateDict(sd);
                }
                setGrads(opt, params, grads.get(step).getAsJsonArray());
                opt.step();
                JsonArray exp = expected.get(step).getAsJsonArray();
                for (int i = 0; i < params.size(); i++) {
                    JsonObject e = exp.get(i).getAsJsonObject();
                    boolean f64 = e.get("dtype").getAsString().equals("float64");
                    Fixtures.assertMatches(e, params.get(i), f64 ? 1e-12 : 1e-6, f64 ? 1e-12 : 1e-6,
                            c + " step " + step + " param " + i);
                }
            }
        } finally {
            opt.zeroGrad();
            opt.close();
            close(params);
        }
    }

    static List<Tensor> initialParams(Case c, boolean strided) {
        List<Tensor> params = new ArrayList<>();
        for (Tensor t : c.inputTensors()) {
            if (!strided) {
                params.add(t.requiresGrad_(true));
                continue;
            }
            // Every other element of a larger storage: same values, non-contiguous strides.
            long[] shape = t.shape();
            long[] wide = java.util.Arrays.copyOf(shape, shape.length + 1);
            wide[shape.length] = 2;
            try (Tensor base = org.jtorch.Torch.zeros(wide, t.dtype(), t.device())) {
                Tensor view = base.select(-1, 1);
                view.copy_(t);
                params.add(view.requiresGrad_(true));
            }
            t.close();
        }
        return params;
    }

    static void setGrads(Optimizer opt, List<Tensor> params, JsonArray row) {
        opt.zeroGrad();
        for (int i = 0; i < params.size(); i++) {
            JsonElement g = row.get(i);
            if (!g.isJsonNull()) params.get(i).setGrad(Fixtures.decode(g.getAsJsonObject(), params.get(i).device()));
        }
    }

    /** The optimizer a case names, with its defaults and groups (options by PyTorch name). */
    static Optimizer build(Case c, List<Tensor> params) {
        JsonObject defaults = c.args().getAsJsonObject("defaults");
        List<ParamGroup> groups = new ArrayList<>();
        for (JsonElement ge : c.args().getAsJsonArray("groups")) {
            JsonObject g = ge.getAsJsonObject();
            List<Tensor> ps = new ArrayList<>();
            for (JsonElement i : g.getAsJsonArray("params")) ps.add(params.get(i.getAsInt()));
            OptimizerOptions<?> overrides = options(c.op());
            apply(overrides, g);
            groups.add(ParamGroup.of(ps, overrides));
        }
        OptimizerOptions<?> d = options(c.op());
        apply(d, defaults);
        return switch (c.op()) {
            case "SGD" -> new SGD(groups, (SGD.Options) d);
            case "Adam" -> new Adam(groups, (Adam.Options) d);
            case "AdamW" -> new AdamW(groups, (AdamW.Options) d);
            case "Adadelta" -> new Adadelta(groups, (Adadelta.Options) d);
            case "RMSprop" -> new RMSprop(groups, (RMSprop.Options) d);
            case "Adagrad" -> new Adagrad(groups, (Adagrad.Options) d);
            case "NAdam" -> new NAdam(groups, (NAdam.Options) d);
            case "RAdam" -> new RAdam(groups, (RAdam.Options) d);
            case "Adamax" -> new Adamax(groups, (Adamax.Options) d);
            case "SparseAdam" -> new SparseAdam(groups, (SparseAdam.Options) d);
            default -> throw new IllegalArgumentException("unknown optimizer " + c.op());
        };
    }

    private static OptimizerOptions<?> options(String op) {
        return switch (op) {
            case "SGD" -> SGD.options();
            case "Adam" -> Adam.options();
            case "AdamW" -> AdamW.options();
            case "Adadelta" -> Adadelta.options();
            case "RMSprop" -> RMSprop.options();
            case "Adagrad" -> Adagrad.options();
            case "NAdam" -> NAdam.options();
            case "RAdam" -> RAdam.options();
            case "Adamax" -> Adamax.options();
            case "SparseAdam" -> SparseAdam.options();
            default -> throw new IllegalArgumentException("unknown optimizer " + op);
        };
    }

    private static void apply(OptimizerOptions<?> o, JsonObject values) {
        for (Map.Entry<String, JsonElement> e : values.entrySet()) {
            if (e.getKey().equals("params")) continue;
            JsonElement v = e.getValue();
            if (v.isJsonArray()) {
                List<Double> l = new ArrayList<>();
                for (JsonElement x : v.getAsJsonArray()) l.add(x.getAsDouble());
                o.set(e.getKey(), l);
            } else {
                JsonPrimitive p = v.getAsJsonPrimitive();
                o.set(e.getKey(), p.isBoolean() ? (Object) p.getAsBoolean() : (Object) p.getAsDouble());
            }
        }
    }

    static void close(List<Tensor> ts) {
        for (Tensor t : ts) t.close();
    }

    static boolean isFloat64(Tensor t) {
        return t.dtype() == DType.FLOAT64;
    }
}
