package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.op.OptimizerOps;
import org.jtorch.types.Arguments;

/**
 * Stochastic gradient descent with optional momentum, dampening, Nesterov momentum, weight decay and
 * maximisation, as {@code torch.optim.SGD} (PyTorch 1.13):
 * <pre>
 * d = ±grad + weight_decay * p
 * buf = d on the first step, else momentum * buf + (1 - dampening) * d
 * d = nesterov ? d + momentum * buf : buf        (when momentum != 0)
 * p -= lr * d
 * </pre>
 * <pre>{@code
 * var opt = new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9).nesterov(true));
 * }</pre>
 * The learning rate has no default. State per parameter: {@code momentum_buffer} (null without momentum).
 */
public final class SGD extends Optimizer {
    /** SGD's options: {@code lr} (required), {@code momentum}, {@code dampening}, {@code weight_decay}, {@code nesterov}, {@code maximize}, {@code foreach} (null). */
    public static final class Options extends OptimizerOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", REQUIRED);
            d.put("momentum", 0.0);
            d.put("dampening", 0.0);
            d.put("weight_decay", 0.0);
            d.put("nesterov", false);
            d.put("maximize", false);
            d.put("foreach", null);
            return d;
        }

        public Options momentum(double momentum) {
            return set("momentum", momentum);
        }

        public Options dampening(double dampening) {
            return set("dampening", dampening);
        }

        public Options nesterov(boolean nesterov) {
            return set("nesterov", nesterov);
        }
    }

    public static Options options() {
        return new Options();
    }

    public SGD(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("SGD", "params", params);
        Arguments.nonNull("SGD", "options", options);
        super("SGD", singleGroup(params), options);
    }

    public SGD(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("SGD", "groups", groups);
        Arguments.nonNull("SGD", "defaults", defaults);
        super("SGD", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        double lr = num(o, "lr");
        require(o.get("lr") == OptimizerOptions.REQUIRED || !(lr < 0), "Invalid learning rate: " + lr);
        require(!(num(o, "momentum") < 0), "Invalid momentum value: " + num(o, "momentum"));
        require(!(num(o, "weight_decay") < 0), "Invalid weight_decay value: " + num(o, "weight_decay"));
        if (Boolean.TRUE.equals(o.get("nesterov"))) {
            require(num(o, "momentum") > 0 && num(o, "dampening") == 0, "Nesterov momentum requires a momentum and zero dampening");
        }
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double momentum = group.getDouble("momentum");
        double dampening = group.getDouble("dampening");
        double weightDecay = group.getDouble("weight_decay");
        boolean nesterov = group.getBoolean("nesterov");
        boolean maximize = group.getBoolean("maximize");
        FusedBatches fused = new FusedBatches();
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            Tensor buf = (Tensor) st.get("momentum_buffer");
            if (momentum == 0) {
                st.putIfAbsent("momentum_buffer", null);
            }
            boolean first = momentum != 0 && buf == null;
            if (fusable(OptimizerOps.FUSED_SGD, p, grad, buf)) {
                if (first) {
                    buf = newState(p, 0);
                    st.put("momentum_buffer", buf);
                }
                fused.add(p.device(), first, p, grad, buf);
                continue;
            }
            Tensor d = maximize ? grad.neg() : grad.alias();
            try {
                if (weightDecay != 0) d = replace(d, d.add(p, weightDecay));
                if (momentum != 0) {
                    if (first) {
                        buf = own(d.clone());
                        st.put("momentum_buffer", buf);
                    } else {
                        buf.mul_(momentum).add_(d, 1 - dampening);
                    }
                    d = replace(d, nesterov ? d.add(buf, momentum) : buf.alias());
                }
                p.add_(d, -lr);
            } finally {
                d.close();
            }
        }
        fused.run(OptimizerOps.FUSED_SGD, first -> new double[] {weightDecay, momentum, lr, dampening, nesterov ? 1 : 0,
                maximize ? 1 : 0, (Boolean) first ? 1 : 0});
    }

    private static Tensor replace(Tensor old, Tensor next) {
        old.close();
        return next;
    }
}
