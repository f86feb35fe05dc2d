package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.op.OptimizerOps;
import org.jtorch.types.Arguments;

/**
 * Adadelta, as {@code torch.optim.Adadelta} (PyTorch 1.13):
 * <pre>
 * g = ±grad + weight_decay * p
 * square_avg = rho * square_avg + (1 - rho) * g * g
 * delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
 * acc_delta = rho * acc_delta + (1 - rho) * delta * delta
 * p -= lr * delta
 * </pre>
 * State per parameter: {@code step} (an integer), {@code square_avg}, {@code acc_delta}. Contiguous float32 parameters
 * take one fused pass ({@link OptimizerOps#FUSED_ADADELTA}) where their device has its kernel; the others take the
 * composed tensor ops below, with the same float operations in the same order.
 */
public final class Adadelta extends Optimizer {
    /** Options: {@code lr} (1.0), {@code rho} (0.9), {@code eps} (1e-6), {@code weight_decay} (0), {@code maximize}, {@code foreach} (null). */
    public static final class Options extends OptimizerOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1.0);
            d.put("rho", 0.9);
            d.put("eps", 1e-6);
            d.put("weight_decay", 0.0);
            d.put("maximize", false);
            d.put("foreach", null);
            return d;
        }

        public Options rho(double rho) {
            return set("rho", rho);
        }

        public Options eps(double eps) {
            return set("eps", eps);
        }
    }

    public static Options options() {
        return new Options();
    }

    public Adadelta(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("Adadelta", "params", params);
        Arguments.nonNull("Adadelta", "options", options);
        super("Adadelta", singleGroup(params), options);
    }

    public Adadelta(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("Adadelta", "groups", groups);
        Arguments.nonNull("Adadelta", "defaults", defaults);
        super("Adadelta", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        require(0 <= num(o, "lr"), "Invalid learning rate: " + num(o, "lr"));
        double rho = num(o, "rho");
        require(0 <= rho && rho <= 1, "Invalid rho value: " + rho);
        require(0 <= num(o, "eps"), "Invalid epsilon value: " + num(o, "eps"));
        require(0 <= num(o, "weight_decay"), "Invalid weight_decay value: " + num(o, "weight_decay"));
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double rho = group.getDouble("rho");
        double eps = group.getDouble("eps");
        double weightDecay = group.getDouble("weight_decay");
        boolean maximize = group.getBoolean("maximize");
        FusedBatches fused = new FusedBatches();
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", 0L);
                st.put("square_avg", newState(p, 0));
                st.put("acc_delta", newState(p, 0));
            }
            Tensor squareAvg = stateTensor(st, "square_avg", p);
            Tensor accDelta = stateTensor(st, "acc_delta", p);
            incrementCount(st);
            if (fusable(OptimizerOps.FUSED_ADADELTA, p, grad, squareAvg, accDelta)) {
                fused.add(p.device(), Boolean.TRUE, p, grad, squareAvg, accDelta);
                continue;
            }
            Tensor g = maximize ? grad.neg() : grad.alias();
            try {
                if (weightDecay != 0) {
                    Tensor decayed = g.add(p, weightDecay);
                    g.close();
                    g = decayed;
                }
                squareAvg.mul_(rho).addcmul_(g, g, 1 - rho);
                try (Tensor std = squareAvg.add(eps).sqrt_(); Tensor delta = accDelta.add(eps).sqrt_()) {
                    delta.div_(std).mul_(g);
                    accDelta.mul_(rho).addcmul_(delta, delta, 1 - rho);
                    p.add_(delta, -lr);
                }
            } finally {
                g.close();
            }
        }
        fused.run(OptimizerOps.FUSED_ADADELTA, variant -> new double[] {lr, rho, eps, weightDecay, maximize ? 1 : 0});
    }
}
