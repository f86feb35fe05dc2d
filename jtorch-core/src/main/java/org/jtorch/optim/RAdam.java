package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * RAdam, Adam with a rectified adaptive learning rate, as {@code torch.optim.RAdam} (PyTorch 1.13,
 * which has neither {@code maximize} nor {@code decoupled_weight_decay}; both came in 2.0):
 * <pre>
 * g = grad + weight_decay * p
 * m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
 * rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
 * rho_t &gt; 5: p -= lr * m / (1 - beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * rect,
 *             rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
 * otherwise:  p -= lr * m / (1 - beta1^t)
 * </pre>
 * State per parameter: {@code step} (a 0-d float32 tensor, as PyTorch), {@code exp_avg}, {@code exp_avg_sq}.
 */
public final class RAdam extends Optimizer {
    /** Options: {@code lr} (1e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8), {@code weight_decay} (0), {@code foreach} (null). */
    public static final class Options extends BetasOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1e-3);
            d.put("betas", List.of(0.9, 0.999));
            d.put("eps", 1e-8);
            d.put("weight_decay", 0.0);
            d.put("foreach", null);
            return d;
        }
    }

    public static Options options() {
        return new Options();
    }

    public RAdam(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("RAdam", "params", params);
        Arguments.nonNull("RAdam", "options", options);
        super("RAdam", singleGroup(params), options);
    }

    public RAdam(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("RAdam", "groups", groups);
        Arguments.nonNull("RAdam", "defaults", defaults);
        super("RAdam", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        AdamUpdate.validate(this, o);
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double beta1 = group.beta(0);
        double beta2 = group.beta(1);
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", newStepCounter());
                st.put("exp_avg", newState(p, 0));
                st.put("exp_avg_sq", newState(p, 0));
            }
            Tensor expAvg = stateTensor(st, "exp_avg", p);
            Tensor expAvgSq = stateTensor(st, "exp_avg_sq", p);
            double step = incrementStep(st);
            double bias1 = 1 - Math.pow(beta1, step);
            double bias2 = 1 - Math.pow(beta2, step);
            Tensor g = weightDecay != 0 ? grad.add(p, weightDecay) : grad.alias();
            try (g) {
                expAvg.mul_(beta1).add_(g, 1 - beta1);
                expAvgSq.mul_(beta2).addcmul_(g, g, 1 - beta2);
            }
            double rhoInf = 2 / (1 - beta2) - 1;
            double rhoT = rhoInf - 2 * step * Math.pow(beta2, step) / bias2;
            // The same tensor operations in PyTorch's order, so that float32 rounds as it does there.
            try (Tensor corrected = expAvg.div(bias1); Tensor scaled = corrected.mul(lr)) {
                if (rhoT > 5.) {
                    double rect = Math.sqrt((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT));
                    try (Tensor root = expAvgSq.sqrt();
                         Tensor inverse = root.add_(eps).reciprocal();
                         Tensor adaptiveLr = inverse.mul(Math.sqrt(bias2));
                         Tensor update = scaled.mul(adaptiveLr)) {
                        update.mul_(rect);
                        p.add_(update, -1.0);
                    }
                } else {
                    p.add_(scaled, -1.0);
                }
            }
        }
    }
}
