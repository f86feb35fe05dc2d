package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * RMSprop, as {@code torch.optim.RMSprop} (PyTorch 1.13):
 * <pre>
 * g = ±grad + weight_decay * p
 * square_avg = alpha * square_avg + (1 - alpha) * g * g
 * avg = sqrt(square_avg - grad_avg^2) + eps   with grad_avg = alpha * grad_avg + (1 - alpha) * g  (centered)
 *       sqrt(square_avg) + eps                 (otherwise)
 * momentum > 0: buf = momentum * buf + g / avg;  p -= lr * buf
 * otherwise:    p -= lr * g / avg
 * </pre>
 * State per parameter: {@code step} (an integer), {@code square_avg}, {@code momentum_buffer} (momentum &gt; 0),
 * {@code grad_avg} (centered).
 */
public final class RMSprop extends Optimizer {
    /** Options: {@code lr} (1e-2), {@code alpha} (0.99), {@code eps} (1e-8), {@code weight_decay}, {@code momentum}, {@code centered}, {@code maximize}, {@code foreach} (null). */
    public static final class Options extends OptimizerOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1e-2);
            d.put("momentum", 0.0);
            d.put("alpha", 0.99);
            d.put("eps", 1e-8);
            d.put("centered", false);
            d.put("weight_decay", 0.0);
            d.put("maximize", false);
            d.put("foreach", null);
            return d;
        }

        public Options alpha(double alpha) {
            return set("alpha", alpha);
        }

        public Options eps(double eps) {
            return set("eps", eps);
        }

        public Options momentum(double momentum) {
            return set("momentum", momentum);
        }

        public Options centered(boolean centered) {
            return set("centered", centered);
        }
    }

    public static Options options() {
        return new Options();
    }

    public RMSprop(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("RMSprop", "params", params);
        Arguments.nonNull("RMSprop", "options", options);
        super("RMSprop", singleGroup(params), options);
    }

    public RMSprop(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("RMSprop", "groups", groups);
        Arguments.nonNull("RMSprop", "defaults", defaults);
        super("RMSprop", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        require(0 <= num(o, "lr"), "Invalid learning rate: " + num(o, "lr"));
        require(0 <= num(o, "eps"), "Invalid epsilon value: " + num(o, "eps"));
        require(0 <= num(o, "momentum"), "Invalid momentum value: " + num(o, "momentum"));
        require(0 <= num(o, "weight_decay"), "Invalid weight_decay value: " + num(o, "weight_decay"));
        require(0 <= num(o, "alpha"), "Invalid alpha value: " + num(o, "alpha"));
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double alpha = group.getDouble("alpha");
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        double momentum = group.getDouble("momentum");
        boolean centered = group.getBoolean("centered");
        boolean maximize = group.getBoolean("maximize");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", 0L);
                st.put("square_avg", newState(p, 0));
                if (momentum > 0) st.put("momentum_buffer", newState(p, 0));
                if (centered) st.put("grad_avg", newState(p, 0));
            }
            Tensor squareAvg = stateTensor(st, "square_avg", p);
            Tensor buf = momentum > 0 ? stateTensor(st, "momentum_buffer", p) : null;
            Tensor gradAvg = centered ? stateTensor(st, "grad_avg", p) : null;
            incrementCount(st);
            Tensor g = maximize ? grad.neg() : grad.alias();
            try {
                if (weightDecay != 0) {
                    Tensor decayed = g.add(p, weightDecay);
                    g.close();
                    g = decayed;
                }
                squareAvg.mul_(alpha).addcmul_(g, g, 1 - alpha);
                Tensor avg;
                if (centered) {
                    gradAvg.mul_(alpha).add_(g, 1 - alpha);
                    avg = squareAvg.addcmul(gradAvg, gradAvg, -1).sqrt_();
                } else {
                    avg = squareAvg.sqrt();
                }
                try (avg) {
                    avg.add_(eps);
                    if (momentum > 0) {
                        buf.mul_(momentum).addcdiv_(g, avg, 1);
                        p.add_(buf, -lr);
                    } else {
                        p.addcdiv_(g, avg, -lr);
                    }
                }
            } finally {
                g.close();
            }
        }
    }
}
