package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * SparseAdam, as {@code torch.optim.SparseAdam} (PyTorch 1.13): Adam that updates only the rows a
 * gradient touches, leaving the moments and values of the other rows as they are (lazy Adam, for
 * embeddings whose gradients touch few rows).
 *
 * <p><b>Gradients are dense in jtorch,</b> which has no sparse tensors: a row (a slice along dimension
 * 0; an element of a 1-d parameter) is touched when any of its gradient entries is nonzero. This equals
 * PyTorch with the gradient {@code grad.to_sparse(1)}. It differs from an embedding's sparse gradient in
 * PyTorch only for a looked-up row whose gradient is exactly zero, which PyTorch updates (its moments decay)
 * and jtorch skips. PyTorch refuses dense gradients here; jtorch takes them.
 * <pre>
 * for the touched rows:  m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
 *                        p -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps)
 * </pre>
 * {@code t} counts the steps at which the parameter had a gradient, touched rows or not. State per
 * parameter: {@code step} (an integer, as PyTorch), {@code exp_avg}, {@code exp_avg_sq}.
 */
public final class SparseAdam extends Optimizer {
    /** Options: {@code lr} (1e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8), {@code maximize}. */
    public static final class Options extends BetasOptions<Options> {
        @Override
        protected Map<String, Object> builtinDefaults() {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("lr", 1e-3);
            d.put("betas", List.of(0.9, 0.999));
            d.put("eps", 1e-8);
            d.put("maximize", false);
            return d;
        }
    }

    public static Options options() {
        return new Options();
    }

    public SparseAdam(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("SparseAdam", "params", params);
        Arguments.nonNull("SparseAdam", "options", options);
        super("SparseAdam", singleGroup(params), options);
    }

    public SparseAdam(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("SparseAdam", "groups", groups);
        Arguments.nonNull("SparseAdam", "defaults", defaults);
        super("SparseAdam", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> o) {
        // Unlike Adam, PyTorch requires a strictly positive lr and eps here.
        require(0 < num(o, "lr"), "Invalid learning rate: " + num(o, "lr"));
        require(0 < num(o, "eps"), "Invalid epsilon value: " + num(o, "eps"));
        AdamUpdate.validateBetas(this, o);
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        double lr = group.lr();
        double beta1 = group.beta(0);
        double beta2 = group.beta(1);
        double eps = group.getDouble("eps");
        boolean maximize = group.getBoolean("maximize");
        for (Tensor p : group.params()) {
            Tensor grad = p.grad();
            if (grad == null) continue;
            Map<String, Object> st = stateOf(p);
            if (st.isEmpty()) {
                st.put("step", 0L);
                st.put("exp_avg", newState(p, 0));
                st.put("exp_avg_sq", newState(p, 0));
            }
            Tensor expAvg = stateTensor(st, "exp_avg", p);
            Tensor expAvgSq = stateTensor(st, "exp_avg_sq", p);
            long step = incrementCount(st);
            double stepSize = lr * Math.sqrt(1 - Math.pow(beta2, step)) / (1 - Math.pow(beta1, step));
            try (Tensor g = maximize ? grad.neg() : grad.alias(); Tensor rows = touchedRows(g)) {
                // PyTorch's sparse update, old += (1 - b) * (new - old), with the old values read on the
                // touched rows only: elsewhere g is 0, so every increment below is 0 and nothing moves.
                try (Tensor oldAvg = expAvg.mul(rows);
                     Tensor avgUpdate = g.sub(oldAvg).mul_(1 - beta1);
                     Tensor oldAvgSq = expAvgSq.mul(rows);
                     Tensor avgSqUpdate = g.mul(g).sub_(oldAvgSq).mul_(1 - beta2)) {
                    expAvg.add_(avgUpdate);
                    expAvgSq.add_(avgSqUpdate);
                    try (Tensor numer = avgUpdate.add_(oldAvg);
                         Tensor denom = avgSqUpdate.add_(oldAvgSq).sqrt_().add_(eps);
                         Tensor update = numer.div_(denom).mul(-stepSize)) {
                        p.add_(update);
                    }
                }
            }
        }
    }

    /** 1 on the rows of {@code g} holding a nonzero entry, 0 elsewhere, shaped to broadcast over {@code g}. */
    private static Tensor touchedRows(Tensor g) {
        try (Tensor nonzero = g.ne(0.0)) {
            if (g.dim() <= 1) return nonzero.to(g.dtype());
            int[] rest = new int[g.dim() - 1];
            for (int i = 0; i < rest.length; i++) rest[i] = i + 1;
            try (Tensor any = nonzero.any(rest, true)) {
                return any.to(g.dtype());
            }
        }
    }
}
