package org.jtorch.optim.lr;

import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * Cosine annealing from the initial learning rate to {@code etaMin} over {@code tMax} epochs (then back
 * up, periodically), as {@code torch.optim.lr_scheduler.CosineAnnealingLR}: with no outside changes,
 * {@code lr = etaMin + (base - etaMin) * (1 + cos(pi * epoch / tMax)) / 2}. The recursive form is PyTorch's.
 */
public final class CosineAnnealingLR extends LRScheduler {
    private int tMax;
    private double etaMin;

    public CosineAnnealingLR(Optimizer optimizer, int tMax) {
        this(optimizer, tMax, 0, -1);
    }

    public CosineAnnealingLR(Optimizer optimizer, int tMax, double etaMin) {
        this(optimizer, tMax, etaMin, -1);
    }

    public CosineAnnealingLR(Optimizer optimizer, int tMax, double etaMin, int lastEpoch) {
        Arguments.nonNull("CosineAnnealingLR", "optimizer", optimizer);
        super(optimizer, lastEpoch);
        this.tMax = tMax;
        this.etaMin = etaMin;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        List<ParamGroup> groups = optimizer.paramGroups();
        double[] r = new double[groups.size()];
        for (int i = 0; i < r.length; i++) {
            double lr = groups.get(i).lr();
            double base = baseLrs.get(i);
            if (lastEpoch == 0) {
                r[i] = lr;
            } else if (stepCount == 1 && lastEpoch > 0) {
                r[i] = etaMin + (base - etaMin) * (1 + Math.cos(lastEpoch * Math.PI / tMax)) / 2;
            } else if (Math.floorMod(lastEpoch - 1 - tMax, 2 * tMax) == 0) {
                r[i] = lr + (base - etaMin) * (1 - Math.cos(Math.PI / tMax)) / 2;
            } else {
                r[i] = (1 + Math.cos(Math.PI * lastEpoch / tMax)) / (1 + Math.cos(Math.PI * (lastEpoch - 1) / tMax))
                        * (lr - etaMin) + etaMin;
            }
        }
        return r;
    }

    @Override
    protected double[] closedFormLr() {
        double[] r = new double[baseLrs.size()];
        for (int i = 0; i < r.length; i++) {
            r[i] = etaMin + (baseLrs.get(i) - etaMin) * (1 + Math.cos(Math.PI * lastEpoch / tMax)) / 2;
        }
        return r;
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("T_max", tMax);
        sd.put("eta_min", etaMin);
    }

    @Override
    protected void loadSettings(StateReader r) {
        int newTMax = r.intOr("T_max", tMax);
        etaMin = r.doubleOr("eta_min", etaMin);
        tMax = newTMax;
    }
}
