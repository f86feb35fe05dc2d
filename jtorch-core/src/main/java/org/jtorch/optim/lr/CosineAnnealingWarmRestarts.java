package org.jtorch.optim.lr;

import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * Cosine annealing with warm restarts (SGDR), as {@code torch.optim.lr_scheduler.CosineAnnealingWarmRestarts}:
 * {@code lr = etaMin + (base - etaMin) * (1 + cos(pi * tCur / tI)) / 2}, where {@code tCur} counts the
 * epochs since the last restart and the period {@code tI} starts at {@code t0} and is multiplied by
 * {@code tMult} at each restart. {@link #step(double)} takes fractional epochs, to step per batch:
 * {@code sched.step(epoch + i / (double) batches)}.
 */
public final class CosineAnnealingWarmRestarts extends LRScheduler {
    private int t0;
    private long tI;
    private int tMult;
    private double etaMin;
    private double tCur;

    public CosineAnnealingWarmRestarts(Optimizer optimizer, int t0) {
        this(optimizer, t0, 1, 0, -1);
    }

    public CosineAnnealingWarmRestarts(Optimizer optimizer, int t0, int tMult, double etaMin) {
        this(optimizer, t0, tMult, etaMin, -1);
    }

    public CosineAnnealingWarmRestarts(Optimizer optimizer, int t0, int tMult, double etaMin, int lastEpoch) {
        Arguments.nonNull("CosineAnnealingWarmRestarts", "optimizer", optimizer);
        if (t0 <= 0) throw new IllegalArgumentException("CosineAnnealingWarmRestarts: Expected positive integer T_0, but got " + t0);
        if (tMult < 1) throw new IllegalArgumentException("CosineAnnealingWarmRestarts: Expected integer T_mult >= 1, but got " + tMult);
        super(optimizer, lastEpoch);
        this.t0 = t0;
        this.tI = t0;
        this.tMult = tMult;
        this.etaMin = etaMin;
        this.tCur = lastEpoch;
        // PyTorch's overriding step() does not count steps, so _step_count stays 0.
        step();
    }

    @Override
    protected double[] computeLr() {
        double[] r = new double[baseLrs.size()];
        for (int i = 0; i < r.length; i++) r[i] = etaMin + (baseLrs.get(i) - etaMin) * (1 + Math.cos(Math.PI * tCur / tI)) / 2;
        return r;
    }

    /** Advances one epoch, restarting the cosine when the period is over. */
    @Override
    public void step() {
        if (lastEpoch < 0) {
            step(0.0);
            return;
        }
        lastEpoch++;
        tCur = tCur + 1;
        if (tCur >= tI) {
            tCur = tCur - tI;
            tI = tI * tMult;
        }
        apply(computeLr());
    }

    @Override
    public void step(int epoch) {
        step((double) epoch);
    }

    /** Goes to a (fractional) epoch: the position in its period follows from {@code t0} and {@code tMult}. */
    public void step(double epoch) {
        if (epoch < 0) throw new IllegalArgumentException("CosineAnnealingWarmRestarts: Expected non-negative epoch, but got " + epoch);
        if (epoch >= t0) {
            if (tMult == 1) {
                tCur = epoch % t0;
            } else {
                int n = (int) (Math.log(epoch / t0 * (tMult - 1) + 1) / Math.log(tMult));
                tCur = epoch - t0 * (Math.pow(tMult, n) - 1) / (tMult - 1);
                tI = (long) t0 * (long) Math.pow(tMult, n);
            }
        } else {
            tI = t0;
            tCur = epoch;
        }
        lastEpoch = (int) Math.floor(epoch);
        apply(computeLr());
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("T_0", t0);
        sd.put("T_i", tI);
        sd.put("T_mult", tMult);
        sd.put("eta_min", etaMin);
        sd.put("T_cur", tCur);
    }

    @Override
    protected void loadSettings(StateReader r) {
        int newT0 = r.intOr("T_0", t0);
        long newTI = (long) r.doubleOr("T_i", tI);
        int newTMult = r.intOr("T_mult", tMult);
        double newEtaMin = r.doubleOr("eta_min", etaMin);
        tCur = r.doubleOr("T_cur", tCur);
        t0 = newT0;
        tI = newTI;
        tMult = newTMult;
        etaMin = newEtaMin;
    }
}
