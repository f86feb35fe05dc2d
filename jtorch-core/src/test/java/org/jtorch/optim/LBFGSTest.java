package org.jtorch.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;

/** LBFGS beyond its trajectories ({@link LBFGSConformanceTest}): options, refusals, state and memory. */
class LBFGSTest {

    /** (x - 3)^2 summed, with its gradient, as a closure over {@code x}. */
    private static Supplier<Tensor> quadratic(LBFGS opt, Tensor x, List<Tensor> returned) {
        return () -> {
            opt.zeroGrad();
            Tensor loss = x.sub(3.0).pow(2).sum();
            loss.backward();
            returned.add(loss);
            return loss;
        };
    }

    @Test
    void maxEvalDefaultsToFiveQuartersOfMaxIterAsPyTorch() {
        Tensor x = Torch.tensor(1.0, 2.0).requiresGrad_(true);
        try (LBFGS a = new LBFGS(List.of(x), LBFGS.options());
             LBFGS b = new LBFGS(List.of(x), LBFGS.options().maxIter(10));
             LBFGS c = new LBFGS(List.of(x), LBFGS.options().maxIter(10).maxEval(7))) {
            assertEquals(25.0, a.defaults().get("max_eval"));
            assertEquals(12.0, b.defaults().get("max_eval"));   // 10 * 5 // 4
            assertEquals(7.0, c.defaults().get("max_eval"));
            assertNull(a.defaults().get("line_search_fn"));
        }
        x.close();
    }

    @Test
    void invalidOptionsAndUsesAreRefusedClearly() {
        Tensor x = Torch.tensor(1.0, 2.0).requiresGrad_(true);
        Tensor y = Torch.tensor(1f).requiresGrad_(true);
        assertMessage(IllegalArgumentException.class, "only 'strong_wolfe' is supported",
                () -> new LBFGS(List.of(x), LBFGS.options().lineSearchFn("backtracking")));
        assertMessage(IllegalArgumentException.class, "history_size must be a positive integer",
                () -> new LBFGS(List.of(x), LBFGS.options().historySize(0)));
        assertMessage(IllegalArgumentException.class, "max_iter must be a non-negative integer",
                () -> new LBFGS(List.of(x), LBFGS.options().set("max_iter", 2.5)));
        assertMessage(IllegalArgumentException.class, "unknown option 'momentum'", () -> LBFGS.options().set("momentum", 0.9));
        assertMessage(IllegalArgumentException.class, "one floating dtype and one device", () -> new LBFGS(List.of(x, y), LBFGS.options()));
        try (LBFGS opt = new LBFGS(List.of(x), LBFGS.options())) {
            assertMessage(IllegalArgumentException.class, "doesn't support per-parameter options", () -> opt.addParamGroup(ParamGroup.of(List.of(y))));
            assertMessage(IllegalStateException.class, "needs a closure", opt::step);
            assertMessage(IllegalStateException.class, "one-element loss", () -> opt.step(() -> x.mul(2.0)));
            assertMessage(IllegalStateException.class, "returned null", () -> opt.step(() -> null));
        }
        x.close();
        y.close();
    }

    @Test
    void theFirstLossIsReturnedAndTheOtherClosureResultsAreReleased() {
        Tensor x = Torch.tensor(0.0, 1.0, 5.0).requiresGrad_(true);
        List<Tensor> returned = new ArrayList<>();
        try (LBFGS opt = new LBFGS(List.of(x), LBFGS.options().lineSearchFn("strong_wolfe"))) {
            Tensor loss = opt.step(quadratic(opt, x, returned));
            assertTrue(returned.size() > 2, "several evaluations: " + returned.size());
            assertSame(returned.get(0), loss);
            assertFalse(loss.isClosed());
            assertEquals(4 + 9 + 4, loss.item(), 0.0);
            for (Tensor t : returned.subList(1, returned.size())) assertTrue(t.isClosed());
            loss.close();
            double[] at = x.toDoubleArray();
            for (double v : at) assertEquals(3.0, v, 1e-6, "a quadratic is solved in one step");
            opt.zeroGrad();
        }
        x.close();
    }

    @Test
    void historyDroppedFromTheStateIsReleasedAndCloseReleasesTheRest() {
        Tensor x = Torch.tensor(-1.2, 1.0, 0.3).requiresGrad_(true);
        List<Tensor> returned = new ArrayList<>();
        Supplier<Tensor> rosenbrock;
        try (LBFGS opt = new LBFGS(List.of(x), LBFGS.options().historySize(1).maxIter(3))) {
            rosenbrock = () -> {
                opt.zeroGrad();
                Tensor head = x.narrow(0, 0, 2);
                Tensor tail = x.narrow(0, 1, 2);
                Tensor loss = tail.sub(head.pow(2)).pow(2).mul(100).add(head.neg().add(1).pow(2)).sum();
                loss.backward();
                returned.add(loss);
                return loss;
            };
            opt.step(rosenbrock).close();
            @SuppressWarnings("unchecked")
            List<Tensor> dirs = new ArrayList<>((List<Tensor>) opt.state(x).get("old_dirs"));
            Tensor d = (Tensor) opt.state(x).get("d");
            assertEquals(1, dirs.size());
            opt.step(rosenbrock).close();
            assertTrue(dirs.get(0).isClosed(), "the pair pushed out of a history of 1 is released");
            assertTrue(d.isClosed(), "the replaced direction is released");
            Tensor live = (Tensor) opt.state(x).get("prev_flat_grad");
            assertFalse(live.isClosed());
            opt.zeroGrad();
            opt.close();
            assertTrue(live.isClosed());
        }
        x.close();
    }

    @Test
    void stateDictCarriesPyTorchsStateAndRefusesAnotherParameterSize() {
        Tensor x = Torch.tensor(0.0, 1.0, 5.0).requiresGrad_(true);
        Tensor z = Torch.tensor(0.0, 1.0).requiresGrad_(true);
        List<Tensor> returned = new ArrayList<>();
        try (LBFGS opt = new LBFGS(List.of(x), LBFGS.options().maxIter(2)); LBFGS other = new LBFGS(List.of(z), LBFGS.options().maxIter(2))) {
            // As PyTorch 1.13: max_eval = 2 * 5 // 4 = 2 ends each step after one iteration (n_iter 1, 2; func_evals 2, 4).
            opt.step(quadratic(opt, x, returned)).close();
            opt.step(quadratic(opt, x, returned)).close();
            Map<String, Object> sd = opt.stateDict();
            @SuppressWarnings("unchecked")
            Map<String, Object> st = ((Map<Integer, Map<String, Object>>) sd.get("state")).get(0);
            assertEquals(2L, st.get("n_iter"));
            assertEquals(4L, st.get("func_evals"));
            assertEquals(List.of(3L), List.of(((Tensor) st.get("d")).shape()[0]));
            assertTrue(st.get("ro") instanceof List<?> ro && ro.get(0) instanceof Tensor t && t.dim() == 0, "ro holds 0-d tensors: " + st.get("ro"));
            @SuppressWarnings("unchecked")
            Map<String, Object> group = ((List<Map<String, Object>>) sd.get("param_groups")).get(0);
            assertTrue(group.containsKey("line_search_fn") && group.get("line_search_fn") == null);
            assertMessage(IllegalArgumentException.class, "state[0].d has shape [3] but LBFGS's flat vectors have shape [2]",
                    () -> other.loadStateDict(sd));
            Optimizer.closeStateDict(sd);
            opt.zeroGrad();
        }
        x.close();
        z.close();
    }

    /** The state (flat tensors, lists of 0-d tensors, nulls, numbers) goes through a checkpoint file, and the run continues exactly. */
    @Test
    void aCheckpointedRunContinuesExactly(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws java.io.IOException {
        double[][] finals = new double[2][];
        for (int way = 0; way < 2; way++) {
            Tensor x = Torch.tensor(-1.2, 1.0, 0.3, 2.0).requiresGrad_(true);
            LBFGS opt = new LBFGS(List.of(x), LBFGS.options().lineSearchFn("strong_wolfe").maxIter(4).historySize(3));
            List<Tensor> returned = new ArrayList<>();
            for (int step = 0; step < 4; step++) {
                if (way == 1 && step == 2) {
                    java.nio.file.Path file = dir.resolve("lbfgs.ckpt");
                    new org.jtorch.io.Checkpoint().optimizer(opt).save(file, 0, step);
                    Tensor copy = x.detach().clone().requiresGrad_(true);
                    opt.zeroGrad();
                    opt.close();
                    x.close();
                    x = copy;
                    opt = new LBFGS(List.of(x), LBFGS.options().lineSearchFn("strong_wolfe").maxIter(4).historySize(3));
                    new org.jtorch.io.Checkpoint().optimizer(opt).load(file);
                }
                Tensor xs = x;
                LBFGS o = opt;
                o.step(() -> {
                    o.zeroGrad();
                    Tensor head = xs.narrow(0, 0, 3);
                    Tensor tail = xs.narrow(0, 1, 3);
                    Tensor loss = tail.sub(head.pow(2)).pow(2).mul(100).add(head.neg().add(1).pow(2)).sum();
                    loss.backward();
                    returned.add(loss);
                    return loss;
                }).close();
            }
            finals[way] = x.toDoubleArray();
            opt.zeroGrad();
            opt.close();
            x.close();
        }
        org.junit.jupiter.api.Assertions.assertArrayEquals(finals[0], finals[1]);
    }

    private static void assertMessage(Class<? extends RuntimeException> type, String fragment, org.junit.jupiter.api.function.Executable body) {
        RuntimeException e = assertThrows(type, body);
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' should contain '" + fragment + "'");
    }
}
