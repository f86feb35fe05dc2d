package org.jtorch.optim;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Options shared by {@link Adam} and {@link AdamW}, which differ only in the default weight decay
 * (and in how it is applied): {@code lr} (1e-3), {@code betas} (0.9, 0.999), {@code eps} (1e-8),
 * {@code weight_decay}, {@code amsgrad}, {@code maximize}, {@code foreach} (null).
 */
public abstract class AdamFamilyOptions<O extends AdamFamilyOptions<O>> extends BetasOptions<O> {
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
        d.put("foreach", null);
        return d;
    }

    public O amsgrad(boolean amsgrad) {
        return set("amsgrad", amsgrad);
    }
}
