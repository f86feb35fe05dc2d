package org.jtorch;

import java.util.List;
import org.jtorch.op.OpDef;
import org.jtorch.op.Param;
import org.jtorch.op.ReductionOps;
import org.jtorch.types.Arguments;

/**
 * The keywords of {@code torch.var} and {@code torch.std} for {@link Tensor#var(Variance)} and {@link Tensor#std(Variance)}:
 * {@code dim=None} (null: every dimension), {@code correction=1} (or PyTorch's older {@code unbiased}: true is correction 1,
 * false 0) and {@code keepdim=False}. The defaults are read from the registry's declaration of {@code var}
 * ({@link ReductionOps#VAR}), so they cannot drift from it. As every options record (see {@link org.jtorch.nn.F}),
 * {@link #options()} holds the defaults and each wither returns a copy:
 * {@code x.std(Variance.options().dim(1).unbiased(false).keepdim(true))}.
 */
public record Variance(int[] dim, double correction, boolean keepdim) {
    private static final Variance DEFAULTS = fromSignature(ReductionOps.VAR);

    public Variance {
        dim = dim == null ? null : dim.clone();
    }

    public static Variance options() {
        return DEFAULTS;
    }

    public Variance dim(int... dim) {
        Arguments.nonNull("Variance", "dim", dim);
        return new Variance(dim, correction, keepdim);
    }

    /** {@code sum (x - mean)^2 / max(0, N - correction)}. */
    public Variance correction(double correction) {
        return new Variance(dim, correction, keepdim);
    }

    /** PyTorch's {@code unbiased}: Bessel's correction (1) or none (0). */
    public Variance unbiased(boolean unbiased) {
        return new Variance(dim, unbiased ? 1 : 0, keepdim);
    }

    public Variance keepdim(boolean keepdim) {
        return new Variance(dim, correction, keepdim);
    }

    @Override
    public int[] dim() {
        return dim == null ? null : dim.clone();
    }

    /** The dims as the reductions take them: empty for every dimension. */
    int[] dims() {
        return dim == null ? new int[0] : dim.clone();
    }

    private static Variance fromSignature(OpDef op) {
        List<Param> params = op.signature().params();
        double correction = Double.parseDouble(param(op, params, "correction").defaultValue());
        boolean keepdim = Boolean.parseBoolean(param(op, params, "keepdim").defaultValue().toLowerCase(java.util.Locale.ROOT));
        String dim = param(op, params, "dim").defaultValue();
        if (dim != null && !dim.equals("None")) throw new IllegalStateException(op.name() + ": expected dim=None, declared " + dim);
        return new Variance(null, correction, keepdim);
    }

    private static Param param(OpDef op, List<Param> params, String name) {
        return params.stream().filter(p -> p.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalStateException(op.name() + " declares no parameter " + name));
    }
}
