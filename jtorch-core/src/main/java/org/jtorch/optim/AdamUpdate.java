package org.jtorch.optim;

import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.op.OpDef;
import org.jtorch.op.OptimizerOps;

/** The Adam/AdamW update shared by {@link Adam} and {@link AdamW} (PyTorch 1.13's {@code _single_tensor_adam(w)}). */
final class AdamUpdate {
    private AdamUpdate() {}

    static void validate(Optimizer opt, Map<String, Object> o) {
        double lr = Optimizer.num(o, "lr");
        // PyTorch checks "not 0.0 <= v" here, so NaN is invalid (SGD checks "v < 0.0", which NaN passes).
        opt.require(0 <= lr, "Invalid learning rate: " + lr);
        opt.require(0 <= Optimizer.num(o, "eps"), "Invalid epsilon value: " + Optimizer.num(o, "eps"));
        validateBetas(opt, o);
        opt.require(0 <= Optimizer.num(o, "weight_decay"), "Invalid weight_decay value: " + Optimizer.num(o, "weight_decay"));
    }

    /** Both betas in [0, 1), with PyTorch's messages. */
    static void validateBetas(Optimizer opt, Map<String, Object> o) {
        Object betas = o.get("betas");
        double b0 = betas instanceof java.util.List<?> l && l.size() == 2 ? ((Number) l.get(0)).doubleValue() : Double.NaN;
        double b1 = betas instanceof java.util.List<?> l && l.size() == 2 ? ((Number) l.get(1)).doubleValue() : Double.NaN;
        opt.require(0 <= b0 && b0 < 1, "Invalid beta parameter at index 0: " + b0);
        opt.require(0 <= b1 && b1 < 1, "Invalid beta parameter at index 1: " + b1);
    }

    /** {@code decoupled}: AdamW's {@code p *= 1 - lr * weight_decay} instead of Adam's L2 term in the gradient. */
    static void update(Optimizer opt, ParamGroup group, boolean decoupled) {
        double lr = group.lr();
        double beta1 = group.beta(0);
        double beta2 = group.beta(1);
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        boolean amsgrad = group.getBoolean("amsgrad");
        boolean maximize = group.getBoolean("maximize");
        FusedBatches fused = new FusedBatches();
        OpDef op = decoupled ? OptimizerOps.FUSED_ADAMW : OptimizerOps.FUSED_ADAM;
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = opt.stateOf(p);
            if (st.isEmpty()) {
                st.put("step", Optimizer.newStepCounter());
                st.put("exp_avg", Optimizer.newState(p, 0));
                st.put("exp_avg_sq", Optimizer.newState(p, 0));
                if (amsgrad) st.put("max_exp_avg_sq", Optimizer.newState(p, 0));
            }
            Tensor expAvg = opt.stateTensor(st, "exp_avg", p);
            Tensor expAvgSq = opt.stateTensor(st, "exp_avg_sq", p);
            Tensor maxExpAvgSq = amsgrad ? opt.stateTensor(st, "max_exp_avg_sq", p) : null;
            double step = opt.incrementStep(st);
            double bias1 = 1 - Math.pow(beta1, step);
            double bias2 = 1 - Math.pow(beta2, step);
            double stepSize = lr / bias1;
            double bias2Sqrt = Math.sqrt(bias2);
            if (opt.fusable(op, p, grad, expAvg, expAvgSq, maxExpAvgSq)) {
                fused.add(p.device(), step, p, grad, expAvg, expAvgSq, maxExpAvgSq);
                continue;
            }
            Tensor g = maximize ? grad.neg() : grad.alias();
            try {
                if (decoupled) {
                    p.mul_(1 - lr * weightDecay);
                } else if (weightDecay != 0) {
                    Tensor decayed = g.add(p, weightDecay);
                    g.close();
                    g = decayed;
                }
                expAvg.mul_(beta1).add_(g, 1 - beta1);
                expAvgSq.mul_(beta2).addcmul_(g, g, 1 - beta2);
                Tensor second = expAvgSq;
                if (amsgrad) {
                    try (Tensor max = maxExpAvgSq.maximum(expAvgSq)) {
                        maxExpAvgSq.copy_(max);
                    }
                    second = maxExpAvgSq;
                }
                try (Tensor denom = second.sqrt()) {
                    denom.div_(bias2Sqrt).add_(eps);
                    p.addcdiv_(expAvg, denom, -stepSize);
                }
            } finally {
                g.close();
            }
        }
        // The op computes the scalars for each batch's step count as the composed path does (OptimizerOps.AdamScalars).
        fused.run(op, step -> new double[] {(Double) step, lr, beta1, beta2, weightDecay, eps, amsgrad ? 1 : 0, maximize ? 1 : 0});
    }
}
