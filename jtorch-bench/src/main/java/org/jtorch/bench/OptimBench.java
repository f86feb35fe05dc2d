package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Adamax;
import org.jtorch.optim.LBFGS;
import org.jtorch.optim.NAdam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.RAdam;
import org.jtorch.optim.SparseAdam;

/**
 * Optimizer steps on the CPU: one step of Adam (its fused kernel) and of NAdam, RAdam, Adamax and SparseAdam
 * (composed tensor ops, as PyTorch 1.13's per-tensor loop) on a 1024x1024 float32 parameter with a dense
 * gradient; and one LBFGS step with the strong-Wolfe line search (10 iterations, tolerances 0) on a least-squares
 * problem (X 1024x512, W 128x512, 65,536 parameters), with the closure evaluations it took.
 */
final class OptimBench {
    private OptimBench() {}

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 5 : 21;
        Torch.manualSeed(1);
        Map<String, Function<List<Tensor>, Optimizer>> steps = new LinkedHashMap<>();
        steps.put("adam", ps -> new Adam(ps, Adam.options().lr(1e-3)));
        steps.put("nadam", ps -> new NAdam(ps, NAdam.options()));
        steps.put("radam", ps -> new RAdam(ps, RAdam.options()));
        steps.put("adamax", ps -> new Adamax(ps, Adamax.options()));
        steps.put("sparse_adam", ps -> new SparseAdam(ps, SparseAdam.options()));
        try (Tensor grad = Torch.randn(1024, 1024)) {
            for (Map.Entry<String, Function<List<Tensor>, Optimizer>> e : steps.entrySet()) {
                Tensor p = Torch.randn(1024, 1024).requiresGrad_(true);
                try (Optimizer opt = e.getValue().apply(List.of(p))) {
                    p.setGrad(grad.clone());
                    r.put(e.getKey() + "_step_1024x1024_ms", Timing.median(40, reps, opt::step) * 1e3);
                    opt.zeroGrad();
                }
                p.close();
            }
        }
        lbfgs(r, quick ? 3 : 7);
        return r;
    }

    private static void lbfgs(Map<String, Double> r, int reps) {
        try (Tensor x = Torch.randn(1024, 512); Tensor target = Torch.randn(1024, 128)) {
            Tensor w = Torch.randn(128, 512).mul(0.01).requiresGrad_(true);
            Tensor start = w.detach().clone();
            long[] evals = new long[1];
            LBFGS[] opt = new LBFGS[1];
            double t = Timing.median(3, reps, () -> {
                try (var g = org.jtorch.autograd.Grad.noGrad()) {
                    w.copy_(start);
                }
                opt[0] = new LBFGS(List.of(w), LBFGS.options().lineSearchFn("strong_wolfe").maxIter(10).toleranceGrad(0).toleranceChange(0));
                try (MemoryScope s = new MemoryScope()) {
                    opt[0].step(() -> {
                        opt[0].zeroGrad();
                        Tensor loss = x.matmul(w.t()).sub(target).pow(2).mean();
                        loss.backward();
                        return loss;
                    });
                }
                evals[0] = ((Number) opt[0].state(w).get("func_evals")).longValue();
                opt[0].zeroGrad();
                opt[0].close();
            });
            r.put("lbfgs_strong_wolfe_10_iter_65536_params_ms", t * 1e3);
            r.put("lbfgs_strong_wolfe_10_iter_closure_evals", (double) evals[0]);
            w.close();
            start.close();
        }
    }
}
