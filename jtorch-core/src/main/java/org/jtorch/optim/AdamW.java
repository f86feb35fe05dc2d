package org.jtorch.optim;

import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * AdamW, as {@code torch.optim.AdamW} (PyTorch 1.13): weight decay is decoupled, {@code p *= 1 - lr * weight_decay} before the Adam update (default 0.01).
 * <pre>
 * m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g;  (AMSGrad: vmax = max(vmax, v))
 * p -= lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)
 * </pre>
 * <pre>{@code
 * var opt = new AdamW(model.parameters(), AdamW.options().lr(1e-3).betas(0.9, 0.999));
 * }</pre>
 * State per parameter: {@code step} (a 0-d float32 tensor, as PyTorch), {@code exp_avg}, {@code exp_avg_sq}
 * and with AMSGrad {@code max_exp_avg_sq}.
 */
public final class AdamW extends Optimizer {
    /** Options: {@code lr} (1e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8), {@code weight_decay} (0.01), {@code amsgrad}, {@code maximize}, {@code foreach} (null). */
    public static final class Options extends AdamFamilyOptions<Options> {
        public Options() {
            super(0.01);
        }
    }

    public static Options options() {
        return new Options();
    }

    public AdamW(Iterable<Tensor> params, Options options) {
        Arguments.nonNull("AdamW", "params", params);
        Arguments.nonNull("AdamW", "options", options);
        super("AdamW", singleGroup(params), options);
    }

    public AdamW(List<ParamGroup> groups, Options defaults) {
        Arguments.nonNull("AdamW", "groups", groups);
        Arguments.nonNull("AdamW", "defaults", defaults);
        super("AdamW", groups, defaults);
    }

    @Override
    protected void validate(Map<String, Object> options) {
        AdamUpdate.validate(this, options);
    }

    @Override
    protected void updateGroup(ParamGroup group) {
        AdamUpdate.update(this, group, true);
    }
}
