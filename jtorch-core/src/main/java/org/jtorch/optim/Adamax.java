package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Adamax, Adam with the infinity norm, as {@code torch.optim.Adamax} (PyTorch 1.13):
 * <pre>
 * g = ±grad + weight_decay * p
 * m = beta1 * m + (1 - beta1) * g;  u = max(beta2 * u, |g| + eps)
 * p -= lr / (1 - beta1^t) * m / u
 * </pre>
 * State per parameter: {@code step} (a 0-d float32 tensor, as PyTorch), {@code exp_avg}, {@code exp_inf}.
 */
public final class Adamax extends Optimizer {
    /** Options: {@code lr} (2e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8), {@code weight_decay} (0), {@code foreach} (null), {@code maximize}. */
    public static final class Options extends BetasOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 2e-3);
            d.put("betas", List.of(0.9, 0.999));
            d.put("eps", 1e-8);
            d.put("weight_decay", 0.0);
            d.put("foreach", null);
            d.put("maximize", false);
            return d;
        }
    }

    public static Options options() {
        return new Options();
    }

    public Adamax(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("Adamax", "params", params);
        Arguments.nonNull("Adamax", "options", options);
        super("Adamax", singleGroup(params), options);
    }

    public Adamax(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("Adamax", "groups", groups);
        Arguments.nonNull("Adamax", "defaults", defaults);
        super("Adamax", groups, defaults);
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
        boolean maximize = group.getBoolean("maximize");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", newStepCounter());
                st.put("exp_avg", newState(p, 0));
                st.put("exp_inf", newState(p, 0));
            }
            Tensor expAvg = stateTensor(st, "exp_avg", p);
            Tensor expInf = stateTensor(st, "exp_inf", p);
            double step = incrementStep(st);
            Tensor g = maximize ? grad.neg() : grad.alias();
            try {
                if (weightDecay != 0) {
                    Tensor decayed = g.add(p, weightDecay);
                    g.close();
                    g = decayed;
                }
                expAvg.mul_(beta1).add_(g, 1 - beta1);
                try (Tensor norm = g.abs(); Tensor max = expInf.mul_(beta2).maximum(norm.add_(eps))) {
                    expInf.copy_(max);
                }
                p.addcdiv_(expAvg, expInf, -(lr / (1 - Math.pow(beta1, step))));
            } finally {
                g.close();
            }
        }
    }
}
