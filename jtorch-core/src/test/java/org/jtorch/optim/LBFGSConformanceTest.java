package org.jtorch.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * LBFGS trajectories against PyTorch 1.13 ({@code tools/fixtures/gen_optim.py}, op "LBFGS"): Rosenbrock,
 * least squares and logistic regression, with a fixed step and with the strong-Wolfe line search, in
 * float64 and float32. After every step: the parameters (1e-9 relative in float64, 1e-4 in float32, where
 * reductions summed in another order move the trajectory by a few ulps per iteration), the returned loss,
 * the state's {@code func_evals} and {@code n_iter} exactly (the same iterations, line-search evaluations
 * and stopping decisions) and its keys in PyTorch's order. Each case also runs resumed: a state dict saved after the first
 * step is loaded into a fresh optimizer over copies of the parameters. Parameters and data are on
 * {@link Fixtures#device()} ({@code scripts/cuda-sim test} and {@code scripts/gpu-check} run this on cuda:0).
 */
class LBFGSConformanceTest {

    @TestFactory
    Stream<DynamicTest> trajectoriesMatchPyTorch() {
        List<Case> cases = Fixtures.load("optim").stream().filter(c -> c.op().equals("LBFGS")).toList();
        return cases.stream().flatMap(c -> Stream.of(false, true).map(resumed -> DynamicTest.dynamicTest(
                c.name() + (resumed ? "[resumed]" : ""), () -> run(c, resumed))));
    }

    private static void run(Case c, boolean resumed) {
        List<Tensor> inputs = c.inputTensors();
        int n = c.args().get("params").getAsInt();
        List<Tensor> params = new ArrayList<>();
        for (int i = 0; i < n; i++) params.add(inputs.get(i).requiresGrad_(true));
        List<Tensor> data = inputs.subList(n, inputs.size());
        String problem = c.args().get("problem").getAsString();
        JsonObject expected = c.expected().getAsJsonObject();
        boolean f64 = params.get(0).dtype() == DType.FLOAT64;
        LBFGS opt = new LBFGS(params, options(c.args().getAsJsonObject("options")));
        try {
            int steps = c.args().get("steps").getAsInt();
            for (int step = 0; step < steps; step++) {
                if (resumed && step == 1) {
                    Map<String, Object> sd = opt.stateDict();
                    List<Tensor> copies = new ArrayList<>();
                    for (Tensor p : params) copies.add(p.detach().clone().requiresGrad_(true));
                    opt.zeroGrad();
                    opt.close();
                    closeAll(params);
                    params = copies;
                    opt = new LBFGS(params, options(c.args().getAsJsonObject("options")));
                    opt.loadStateDict(sd);
                    Optimizer.closeStateDict(sd);
                }
                LBFGS o = opt;
                List<Tensor> ps = params;
                Supplier<Tensor> closure = () -> {
                    o.zeroGrad();
                    Tensor loss = loss(problem, ps, data);
                    loss.backward();
                    return loss;
                };
                String at = c + (resumed ? " resumed" : "") + " step " + step;
                try (Tensor loss = opt.step(closure)) {
                    double want = expected.getAsJsonArray("losses").get(step).getAsDouble();
                    assertEquals(want, loss.item(), Math.abs(want) * (f64 ? 1e-9 : 1e-4), at + " loss");
                }
                Map<String, Object> state = opt.state(params.get(0));
                assertEquals(expected.getAsJsonArray("func_evals").get(step).getAsLong(), ((Number) state.get("func_evals")).longValue(),
                        at + " func_evals");
                assertEquals(expected.getAsJsonArray("n_iter").get(step).getAsLong(), ((Number) state.get("n_iter")).longValue(), at + " n_iter");
                List<String> keys = new ArrayList<>();
                for (JsonElement k : expected.getAsJsonArray("state_keys").get(step).getAsJsonArray()) keys.add(k.getAsString());
                assertEquals(keys, new ArrayList<>(state.keySet()), at + " state keys");
                JsonArray want = expected.getAsJsonArray("params").get(step).getAsJsonArray();
                for (int i = 0; i < params.size(); i++) {
                    Fixtures.assertMatches(want.get(i).getAsJsonObject(), params.get(i), f64 ? 1e-9 : 1e-4, f64 ? 1e-12 : 1e-5,
                            at + " param " + i);
                }
            }
        } finally {
            opt.zeroGrad();
            opt.close();
            closeAll(params);
            closeAll(data);
        }
    }

    static LBFGS.Options options(JsonObject values) {
        LBFGS.Options o = LBFGS.options();
        for (Map.Entry<String, JsonElement> e : values.entrySet()) {
            JsonElement v = e.getValue();
            o.set(e.getKey(), v.isJsonNull() ? null : v.getAsJsonPrimitive().isString() ? (Object) v.getAsString() : (Object) v.getAsDouble());
        }
        return o;
    }

    /** The problems of gen_optim.py, written with the same operations. */
    static Tensor loss(String problem, List<Tensor> params, List<Tensor> data) {
        return switch (problem) {
            case "rosenbrock" -> {
                Tensor x = params.get(0);
                long len = x.size(0);
                Tensor head = x.narrow(0, 0, len - 1);
                Tensor tail = x.narrow(0, 1, len - 1);
                yield tail.sub(head.pow(2)).pow(2).mul(100).add(head.neg().add(1).pow(2)).sum();
            }
            case "least_squares" -> data.get(0).matmul(params.get(0).t()).add(params.get(1)).sub(data.get(1)).pow(2).mean();
            case "logistic" -> {
                Tensor z = data.get(0).matmul(params.get(0)).add(params.get(1));
                yield z.exp().add(1).log().sub(data.get(1).mul(z)).mean();
            }
            default -> throw new IllegalArgumentException("unknown problem " + problem);
        };
    }

    private static void closeAll(List<Tensor> ts) {
        for (Tensor t : ts) t.close();
    }
}
