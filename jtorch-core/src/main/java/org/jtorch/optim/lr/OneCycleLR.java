package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * The 1cycle policy, as {@code torch.optim.lr_scheduler.OneCycleLR} (PyTorch 1.13): the learning rate
 * anneals from {@code maxLr / divFactor} up to {@code maxLr} over {@code pctStart} of the steps, then
 * down to {@code initial / finalDivFactor} (with {@code threePhase}: back to the initial value first,
 * then down). With {@code cycleMomentum} the momentum (SGD, RMSprop) or beta1 (Adam, AdamW) cycles
 * inversely between {@code maxMomentum} and {@code baseMomentum}. Stepped once per batch.
 * <pre>{@code
 * var sched = new OneCycleLR(opt, OneCycleLR.options(0.1).totalSteps(1000).annealStrategy("linear"));
 * }</pre>
 */
public final class OneCycleLR extends LRScheduler {
    /** OneCycleLR's settings, with PyTorch's defaults. */
    public static final class Options {
        private double[] maxLr;
        private int totalSteps = -1;
        private int epochs = -1;
        private int stepsPerEpoch = -1;
        private double pctStart = 0.3;
        private String annealStrategy = "cos";
        private boolean cycleMomentum = true;
        private double[] baseMomentum = {0.85};
        private double[] maxMomentum = {0.95};
        private double divFactor = 25;
        private double finalDivFactor = 1e4;
        private boolean threePhase;
        private int lastEpoch = -1;

        private Options(double[] maxLr) {
            this.maxLr = maxLr.clone();
        }

        public Options totalSteps(int totalSteps) { this.totalSteps = totalSteps; return this; }
        /** With {@link #stepsPerEpoch}, instead of {@link #totalSteps}. */
        public Options epochs(int epochs) { this.epochs = epochs; return this; }
        public Options stepsPerEpoch(int stepsPerEpoch) { this.stepsPerEpoch = stepsPerEpoch; return this; }
        public Options pctStart(double pctStart) { this.pctStart = pctStart; return this; }
        /** {@code "cos"} or {@code "linear"}. */
        public Options annealStrategy(String annealStrategy) { this.annealStrategy = annealStrategy; return this; }
        public Options cycleMomentum(boolean cycleMomentum) { this.cycleMomentum = cycleMomentum; return this; }
        /** One value, or one per group. */
        public Options baseMomentum(double... baseMomentum) { this.baseMomentum = baseMomentum.clone(); return this; }
        public Options maxMomentum(double... maxMomentum) { this.maxMomentum = maxMomentum.clone(); return this; }
        public Options divFactor(double divFactor) { this.divFactor = divFactor; return this; }
        public Options finalDivFactor(double finalDivFactor) { this.finalDivFactor = finalDivFactor; return this; }
        public Options threePhase(boolean threePhase) { this.threePhase = threePhase; return this; }
        public Options lastEpoch(int lastEpoch) { this.lastEpoch = lastEpoch; return this; }
    }

    /** Settings with the peak learning rate: one value, or one per group. */
    public static Options options(double... maxLr) {
        Arguments.nonNull("OneCycleLR.options", "maxLr", maxLr);
        return new Options(maxLr);
    }

    private record Phase(double endStep, String startLr, String endLr, String startMomentum, String endMomentum) {}

    private int totalSteps;
    private final List<Phase> phases;
    private final boolean linear;
    private final boolean cycleMomentum;
    private final boolean useBeta1;

    public OneCycleLR(Optimizer optimizer, Options o) {
        Arguments.nonNull("OneCycleLR", "optimizer", optimizer);
        Arguments.nonNull("OneCycleLR", "o", o);
        super(initialLrs(optimizer, o), o.lastEpoch);
        this.totalSteps = o.totalSteps;
        this.phases = phases(o, totalSteps);
        this.linear = o.annealStrategy.equals("linear");
        this.cycleMomentum = o.cycleMomentum;
        this.useBeta1 = optimizer.defaults().containsKey("betas");
        if (cycleMomentum && o.lastEpoch == -1) {
            List<ParamGroup> groups = optimizer.paramGroups();
            double[] maxM = perGroup("OneCycleLR", "max_momentum", o.maxMomentum, groups.size());
            double[] baseM = perGroup("OneCycleLR", "base_momentum", o.baseMomentum, groups.size());
            for (int i = 0; i < groups.size(); i++) {
                ParamGroup g = groups.get(i);
                setMomentum(g, maxM[i]);
                g.set("max_momentum", maxM[i]);
                g.set("base_momentum", baseM[i]);
            }
        }
        initialStep();
    }

    /** Validates, resolves the step count and sets the groups' initial/max/min lr before the base records them. */
    private static Optimizer initialLrs(Optimizer optimizer, Options o) {
        if (o.totalSteps == -1 && o.epochs == -1 && o.stepsPerEpoch == -1) {
            throw new IllegalArgumentException("OneCycleLR: You must define either total_steps OR (epochs AND steps_per_epoch)");
        } else if (o.totalSteps != -1) {
            if (o.totalSteps <= 0) throw new IllegalArgumentException("OneCycleLR: Expected positive integer total_steps, but got " + o.totalSteps);
        } else {
            if (o.epochs <= 0) throw new IllegalArgumentException("OneCycleLR: Expected positive integer epochs, but got " + o.epochs);
            if (o.stepsPerEpoch <= 0) {
                throw new IllegalArgumentException("OneCycleLR: Expected positive integer steps_per_epoch, but got " + o.stepsPerEpoch);
            }
            o.totalSteps = o.epochs * o.stepsPerEpoch;
        }
        if (o.pctStart < 0 || o.pctStart > 1 || Double.isNaN(o.pctStart)) {
            throw new IllegalArgumentException("OneCycleLR: Expected float between 0 and 1 pct_start, but got " + o.pctStart);
        }
        if (!o.annealStrategy.equals("cos") && !o.annealStrategy.equals("linear")) {
            throw new IllegalArgumentException("OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got "
                    + o.annealStrategy);
        }
        if (o.cycleMomentum && !optimizer.defaults().containsKey("momentum") && !optimizer.defaults().containsKey("betas")) {
            throw new IllegalArgumentException("OneCycleLR: optimizer must support momentum with `cycle_momentum` option enabled");
        }
        List<ParamGroup> groups = optimizer.paramGroups();
        double[] maxLrs = perGroup("OneCycleLR", "max_lr", o.maxLr, groups.size());
        if (o.lastEpoch == -1) {
            for (int i = 0; i < groups.size(); i++) {
                ParamGroup g = groups.get(i);
                g.set("initial_lr", maxLrs[i] / o.divFactor);
                g.set("max_lr", maxLrs[i]);
                g.set("min_lr", g.getDouble("initial_lr") / o.finalDivFactor);
            }
        }
        return optimizer;
    }

    private static List<Phase> phases(Options o, int total) {
        List<Phase> p = new ArrayList<>();
        if (o.threePhase) {
            p.add(new Phase(o.pctStart * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"));
            p.add(new Phase(2 * o.pctStart * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"));
            p.add(new Phase(total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"));
        } else {
            p.add(new Phase(o.pctStart * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"));
            p.add(new Phase(total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"));
        }
        return p;
    }

    private void setMomentum(ParamGroup g, double m) {
        if (useBeta1) {
            List<?> betas = (List<?>) g.get("betas");
            List<Double> next = new ArrayList<>();
            next.add(m);
            for (int i = 1; i < betas.size(); i++) next.add(((Number) betas.get(i)).doubleValue());
            g.set("betas", next);
        } else {
            g.set("momentum", m);
        }
    }

    private double anneal(double start, double end, double pct) {
        if (linear) return (end - start) * pct + start;
        double cosOut = Math.cos(Math.PI * pct) + 1;
        return end + (start - end) / 2.0 * cosOut;
    }

    /** Also sets the groups' momentum (or beta1) when cycling it. */
    @Override
    protected double[] computeLr() {
        int stepNum = lastEpoch;
        if (stepNum > totalSteps) {
            throw new IllegalStateException("OneCycleLR: Tried to step " + (stepNum + 1) + " times. The specified number of total steps is "
                    + totalSteps);
        }
        List<ParamGroup> groups = optimizer.paramGroups();
        double[] lrs = new double[groups.size()];
        for (int gi = 0; gi < groups.size(); gi++) {
            ParamGroup g = groups.get(gi);
            double start = 0;
            for (int i = 0; i < phases.size(); i++) {
                Phase ph = phases.get(i);
                if (stepNum <= ph.endStep || i == phases.size() - 1) {
                    double pct = (stepNum - start) / (ph.endStep - start);
                    lrs[gi] = anneal(g.getDouble(ph.startLr), g.getDouble(ph.endLr), pct);
                    if (cycleMomentum) setMomentum(g, anneal(g.getDouble(ph.startMomentum), g.getDouble(ph.endMomentum), pct));
                    break;
                }
                start = ph.endStep;
            }
        }
        return lrs;
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("total_steps", totalSteps);
        sd.put("cycle_momentum", cycleMomentum);
        sd.put("use_beta1", useBeta1);
    }

    @Override
    protected void loadSettings(StateReader r) {
        totalSteps = r.intOr("total_steps", totalSteps);
    }
}
