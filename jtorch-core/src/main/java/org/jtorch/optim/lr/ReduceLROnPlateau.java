package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * Reduces the learning rate by {@code factor} when a metric has stopped improving for more than
 * {@code patience} epochs, as {@code torch.optim.lr_scheduler.ReduceLROnPlateau} (PyTorch 1.13).
 * Improvement is {@code a < best * (1 - threshold)} ({@code min}, {@code rel}), {@code a < best - threshold}
 * ({@code min}, {@code abs}), and mirrored for {@code max}. After a reduction, {@code cooldown} epochs
 * ignore bad epochs. Learning rates never go below {@code minLr}; reductions smaller than {@code eps}
 * are skipped.
 * <pre>{@code
 * var plateau = new ReduceLROnPlateau(opt, ReduceLROnPlateau.options().mode("max").patience(5));
 * plateau.step(validationAccuracy);
 * }</pre>
 */
public final class ReduceLROnPlateau {
    /** Settings with PyTorch's defaults. */
    public static final class Options {
        private String mode = "min";
        private double factor = 0.1;
        private int patience = 10;
        private double threshold = 1e-4;
        private String thresholdMode = "rel";
        private int cooldown;
        private double[] minLr = {0};
        private double eps = 1e-8;

        private Options() {}

        /** {@code "min"} or {@code "max"}. */
        public Options mode(String mode) {
            Arguments.nonNull("ReduceLROnPlateau.Options.mode", "mode", mode);
            this.mode = mode; return this;
        }
        public Options factor(double factor) { this.factor = factor; return this; }
        public Options patience(int patience) { this.patience = patience; return this; }
        public Options threshold(double threshold) { this.threshold = threshold; return this; }
        /** {@code "rel"} or {@code "abs"}. */
        public Options thresholdMode(String thresholdMode) {
            Arguments.nonNull("ReduceLROnPlateau.Options.thresholdMode", "thresholdMode", thresholdMode);
            this.thresholdMode = thresholdMode; return this;
        }
        public Options cooldown(int cooldown) { this.cooldown = cooldown; return this; }
        /** One lower bound, or one per group. */
        public Options minLr(double... minLr) {
            Arguments.nonNull("ReduceLROnPlateau.Options.minLr", "minLr", minLr);
            this.minLr = minLr.clone(); return this;
        }
        public Options eps(double eps) { this.eps = eps; return this; }
    }

    public static Options options() {
        return new Options();
    }

    private final Optimizer optimizer;
    private double factor;
    private double[] minLrs;
    private int patience;
    private int cooldown;
    private int cooldownCounter;
    private String mode;
    private double threshold;
    private String thresholdMode;
    private double best;
    private int numBadEpochs;
    private double eps;
    private int lastEpoch;
    private List<Double> lastLr;

    public ReduceLROnPlateau(Optimizer optimizer) {
        this(optimizer, options());
    }

    public ReduceLROnPlateau(Optimizer optimizer, Options o) {
        Arguments.nonNull("ReduceLROnPlateau", "optimizer", optimizer);
        Arguments.nonNull("ReduceLROnPlateau", "o", o);
        if (o.factor >= 1.0) throw new IllegalArgumentException("ReduceLROnPlateau: Factor should be < 1.0.");
        this.factor = o.factor;
        this.optimizer = optimizer;
        int groups = optimizer.paramGroups().size();
        if (o.minLr.length == 1) {
            minLrs = new double[groups];
            Arrays.fill(minLrs, o.minLr[0]);
        } else if (o.minLr.length != groups) {
            throw new IllegalArgumentException("ReduceLROnPlateau: expected " + groups + " min_lrs, got " + o.minLr.length);
        } else {
            minLrs = o.minLr.clone();
        }
        this.patience = o.patience;
        this.cooldown = o.cooldown;
        this.eps = o.eps;
        initIsBetter(o.mode, o.threshold, o.thresholdMode);
        best = worst();
        cooldownCounter = 0;
        numBadEpochs = 0;
        lastLr = currentLrs();
    }

    private void initIsBetter(String mode, double threshold, String thresholdMode) {
        if (!mode.equals("min") && !mode.equals("max")) throw new IllegalArgumentException("ReduceLROnPlateau: mode " + mode + " is unknown!");
        if (!thresholdMode.equals("rel") && !thresholdMode.equals("abs")) {
            throw new IllegalArgumentException("ReduceLROnPlateau: threshold mode " + thresholdMode + " is unknown!");
        }
        this.mode = mode;
        this.threshold = threshold;
        this.thresholdMode = thresholdMode;
    }

    private double worst() {
        return mode.equals("min") ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY;
    }

    /** Records one epoch's metric and reduces the learning rates if it has plateaued. */
    public void step(double metric) {
        lastEpoch++;
        if (isBetter(metric, best)) {
            best = metric;
            numBadEpochs = 0;
        } else {
            numBadEpochs++;
        }
        if (cooldownCounter > 0) {
            cooldownCounter--;
            numBadEpochs = 0;
        }
        if (numBadEpochs > patience) {
            reduceLr();
            cooldownCounter = cooldown;
            numBadEpochs = 0;
        }
        lastLr = currentLrs();
    }

    private void reduceLr() {
        List<ParamGroup> groups = optimizer.paramGroups();
        for (int i = 0; i < groups.size(); i++) {
            double old = groups.get(i).lr();
            double next = Math.max(old * factor, minLrs[i]);
            if (old - next > eps) groups.get(i).setLr(next);
        }
    }

    private boolean isBetter(double a, double best) {
        if (mode.equals("min") && thresholdMode.equals("rel")) return a < best * (1.0 - threshold);
        if (mode.equals("min")) return a < best - threshold;
        if (thresholdMode.equals("rel")) return a > best * (threshold + 1.0);
        return a > best + threshold;
    }

    private List<Double> currentLrs() {
        List<Double> lrs = new ArrayList<>();
        for (ParamGroup g : optimizer.paramGroups()) lrs.add(g.lr());
        return List.copyOf(lrs);
    }

    /** The learning rates after the last step (the optimizer's at construction). */
    public List<Double> getLastLr() {
        return lastLr;
    }

    /** The best metric seen so far. */
    public double best() {
        return best;
    }

    public int numBadEpochs() {
        return numBadEpochs;
    }

    /** State with PyTorch's keys (the optimizer is not part of it). */
    public Map<String, Object> stateDict() {
        Map<String, Object> sd = new LinkedHashMap<>();
        sd.put("factor", factor);
        sd.put("min_lrs", Arrays.stream(minLrs).boxed().toList());
        sd.put("patience", patience);
        sd.put("cooldown", cooldown);
        sd.put("cooldown_counter", cooldownCounter);
        sd.put("mode", mode);
        sd.put("threshold", threshold);
        sd.put("threshold_mode", thresholdMode);
        sd.put("best", best);
        sd.put("num_bad_epochs", numBadEpochs);
        sd.put("mode_worse", worst());
        sd.put("eps", eps);
        sd.put("last_epoch", lastEpoch);
        sd.put("_last_lr", lastLr);
        return sd;
    }

    /**
     * Restores a {@link #stateDict()}. Entries it lacks keep their values; an entry of the wrong kind
     * throws {@link IllegalArgumentException} naming it, and leaves the scheduler as it was.
     */
    public void loadStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull("ReduceLROnPlateau.loadStateDict", "stateDict", stateDict);
        StateReader r = new StateReader("ReduceLROnPlateau.loadStateDict", stateDict);
        int groups = optimizer.paramGroups().size();
        List<Double> newMinLrs = r.doublesOr("min_lrs", Arrays.stream(minLrs).boxed().toList(), groups);
        double newFactor = r.doubleOr("factor", factor);
        int newPatience = r.intOr("patience", patience);
        int newCooldown = r.intOr("cooldown", cooldown);
        int newCooldownCounter = r.intOr("cooldown_counter", cooldownCounter);
        double newBest = r.doubleOr("best", best);
        int newNumBadEpochs = r.intOr("num_bad_epochs", numBadEpochs);
        double newEps = r.doubleOr("eps", eps);
        int newLastEpoch = r.intOr("last_epoch", lastEpoch);
        List<Double> newLastLr = r.doublesOr("_last_lr", lastLr, groups);
        String newMode = r.stringOr("mode", mode);
        double newThreshold = r.doubleOr("threshold", threshold);
        String newThresholdMode = r.stringOr("threshold_mode", thresholdMode);
        initIsBetter(newMode, newThreshold, newThresholdMode); // checks the modes before anything else changes
        minLrs = newMinLrs.stream().mapToDouble(Double::doubleValue).toArray();
        factor = newFactor;
        patience = newPatience;
        cooldown = newCooldown;
        cooldownCounter = newCooldownCounter;
        best = newBest;
        numBadEpochs = newNumBadEpochs;
        eps = newEps;
        lastEpoch = newLastEpoch;
        lastLr = newLastLr;
    }
}
