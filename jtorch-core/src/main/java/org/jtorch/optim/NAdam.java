package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * NAdam, Adam with Nesterov momentum, as {@code torch.optim.NAdam} (PyTorch 1.13, which has neither
 * {@code maximize} nor {@code decoupled_weight_decay}; both came in 2.0):
 * <pre>
 * g = grad + weight_decay * p
 * mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));  mu_product *= mu_t
 * m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g;  denom = sqrt(v / (1 - beta2^t)) + eps
 * p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom + lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
 * </pre>
 * State per parameter: {@code step} and {@code mu_product} (0-d float32 tensors, as PyTorch; loading a
 * state dict keeps {@code mu_product} in its saved dtype, so that a resumed run continues exactly),
 * {@code exp_avg}, {@code exp_avg_sq}.
 */
public final class NAdam extends Optimizer {
    /** Options: {@code lr} (2e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8), {@code weight_decay} (0), {@code momentum_decay} (4e-3), {@code foreach} (null). */
    public static final class Options extends BetasOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 2e-3);
            d.put("betas", List.of(0.9, 0.999));
            d.put("eps", 1e-8);
            d.put("weight_decay", 0.0);
            d.put("momentum_decay", 4e-3);
            d.put("foreach", null);
            return d;
        }

        public Options momentumDecay(double momentumDecay) {
            return set("momentum_decay", momentumDecay);
        }
    }

    public static Options options() {
        return new Options();
    }

    public NAdam(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("NAdam", "params", params);
        Arguments.nonNull("NAdam", "options", options);
        super("NAdam", singleGroup(params), options);
    }

    public NAdam(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("NAdam", "groups", groups);
        Arguments.nonNull("NAdam", "defaults", defaults);
        super("NAdam", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        AdamUpdate.validate(this, o);
        require(0 <= num(o, "momentum_decay"), "Invalid momentum_decay value: " + num(o, "momentum_decay"));
    }

    @Override
    protected boolean isScalarState(String key) {
        return key.equals("step") || key.equals("mu_product");
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double beta1 = group.beta(0);
        double beta2 = group.beta(1);
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        double momentumDecay = group.getDouble("momentum_decay");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", newStepCounter());
                st.put("mu_product", newStepCounter().fill_(1.0));
                st.put("exp_avg", newState(p, 0));
                st.put("exp_avg_sq", newState(p, 0));
            }
            Tensor muProduct = muProduct(st);
            Tensor expAvg = stateTensor(st, "exp_avg", p);
            Tensor expAvgSq = stateTensor(st, "exp_avg_sq", p);
            double step = incrementStep(st);
            double bias2 = 1 - Math.pow(beta2, step);
            double mu = beta1 * (1. - 0.5 * Math.pow(0.96, step * momentumDecay));
            double muNext = beta1 * (1. - 0.5 * Math.pow(0.96, (step + 1) * momentumDecay));
            // mu_product is a tensor in PyTorch: the products round to its dtype (float32) at each multiplication.
            double product = inDtype(muProduct.dtype(), muProduct.item() * inDtype(muProduct.dtype(), mu));
            double productNext = inDtype(muProduct.dtype(), inDtype(muProduct.dtype(), product * inDtype(muProduct.dtype(), mu))
                    * inDtype(muProduct.dtype(), muNext));
            muProduct.fill_(product);
            Tensor g = weightDecay != 0 ? grad.add(p, weightDecay) : grad.alias();
            try (g) {
                expAvg.mul_(beta1).add_(g, 1 - beta1);
                expAvgSq.mul_(beta2).addcmul_(g, g, 1 - beta2);
                try (Tensor scaled = expAvgSq.div(bias2); Tensor denom = scaled.sqrt()) {
                    denom.add_(eps);
                    p.addcdiv_(g, denom, -lr * (1. - mu) / (1. - product));
                    p.addcdiv_(expAvg, denom, -lr * muNext / (1. - productNext));
                }
            }
        }
    }

    /** The {@code mu_product} tensor; a number from an older state dict becomes a 0-d float32 tensor, as PyTorch's {@code __setstate__}. */
    private Tensor muProduct(Map<String, Object> st) {
        Object v = st.get("mu_product");
        if (v instanceof Tensor t) return t;
        Tensor t = newStepCounter().fill_(v instanceof Number n ? n.doubleValue() : 1.0);
        st.put("mu_product", t);
        return t;
    }

    /** {@code x} rounded to float32 when {@code dtype} is float32 (a 0-d tensor's arithmetic), unchanged otherwise. */
    private static double inDtype(DType dtype, double x) {
        return dtype == DType.FLOAT32 ? (double) (float) x : x;
    }
}
