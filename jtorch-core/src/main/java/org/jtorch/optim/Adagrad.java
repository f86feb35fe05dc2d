package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Adagrad, as {@code torch.optim.Adagrad} (PyTorch 1.13):
 * <pre>
 * g = ±grad + weight_decay * p
 * clr = lr / (1 + (step - 1) * lr_decay)
 * sum += g * g
 * p -= clr * g / (sqrt(sum) + eps)
 * </pre>
 * State per parameter, created when the parameter's group is added (as PyTorch does in the
 * constructor): {@code step} (a 0-d float32 tensor) and {@code sum} (filled with
 * {@code initial_accumulator_value}).
 */
public final class Adagrad extends Optimizer {
    /** Options: {@code lr} (1e-2), {@code lr_decay} (0), {@code weight_decay} (0), {@code initial_accumulator_value} (0), {@code eps} (1e-10), {@code maximize}, {@code foreach} (null). */
    public static final class Options extends OptimizerOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1e-2);
            d.put("lr_decay", 0.0);
            d.put("eps", 1e-10);
            d.put("weight_decay", 0.0);
            d.put("initial_accumulator_value", 0.0);
            d.put("maximize", false);
            d.put("foreach", null);
            return d;
        }

        public Options lrDecay(double lrDecay) {
            return set("lr_decay", lrDecay);
        }

        public Options initialAccumulatorValue(double value) {
            return set("initial_accumulator_value", value);
        }

        public Options eps(double eps) {
            return set("eps", eps);
        }
    }

    public static Options options() {
        return new Options();
    }

    public Adagrad(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("Adagrad", "params", params);
        Arguments.nonNull("Adagrad", "options", options);
        super("Adagrad", singleGroup(params), options);
    }

    public Adagrad(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("Adagrad", "groups", groups);
        Arguments.nonNull("Adagrad", "defaults", defaults);
        super("Adagrad", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        require(0 <= num(o, "lr"), "Invalid learning rate: " + num(o, "lr"));
        require(0 <= num(o, "lr_decay"), "Invalid lr_decay value: " + num(o, "lr_decay"));
        require(0 <= num(o, "weight_decay"), "Invalid weight_decay value: " + num(o, "weight_decay"));
        require(0 <= num(o, "initial_accumulator_value"),
                "Invalid initial_accumulator_value value: " + num(o, "initial_accumulator_value"));
        require(0 <= num(o, "eps"), "Invalid epsilon value: " + num(o, "eps"));
    }

    @Override
    protected void initState(ParamGroup group, Tensor param) {
        Map<String, Object> st = stateOf(param);
        st.put("step", newStepCounter());
        st.put("sum", newState(param, group.getDouble("initial_accumulator_value")));
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double lrDecay = group.getDouble("lr_decay");
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        boolean maximize = group.getBoolean("maximize");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            Tensor sum = stateTensor(st, "sum", p);
            double step = incrementStep(st);
            Tensor g = maximize ? grad.neg() : grad.alias();
            try {
                if (weightDecay != 0) {
                    Tensor decayed = g.add(p, weightDecay);
                    g.close();
                    g = decayed;
                }
                double clr = lr / (1 + (step - 1) * lrDecay);
                sum.addcmul_(g, g, 1);
                try (Tensor std = sum.sqrt()) {
                    std.add_(eps);
                    p.addcdiv_(g, std, -clr);
                }
            } finally {
                g.close();
            }
        }
    }
}
