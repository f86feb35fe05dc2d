package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Options shared by {@link Adam} and {@link AdamW}, which differ only in the default weight decay
 * (and in how it is applied): {@code lr} (1e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8),
 * {@code weight_decay}, {@code amsgrad}, {@code maximize}.
 */
public abstract class AdamFamilyOptions<O extends AdamFamilyOptions<O>> extends OptimizerOptions<O> {
    private final double defaultWeightDecay;

    protected AdamFamilyOptions(double defaultWeightDecay) {
        this.defaultWeightDecay = defaultWeightDecay;
    }

    @Override
    protected Map<String, Object> builtinDefaults() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("lr", 1e-3);
        d.put("betas", List.of(0.9, 0.999));
        d.put("eps", 1e-8);
        d.put("weight_decay", defaultWeightDecay);
        d.put("amsgrad", false);
        d.put("maximize", false);
        return d;
    }

    public O betas(double beta1, double beta2) {
        return set("betas", List.of(beta1, beta2));
    }

    public O eps(double eps) {
        return set("eps", eps);
    }

    public O amsgrad(boolean amsgrad) {
        return set("amsgrad", amsgrad);
    }
}
