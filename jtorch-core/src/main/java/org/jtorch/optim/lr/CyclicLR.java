package org.jtorch.optim.lr;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleUnaryOperator;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * The cyclical learning-rate policy, as {@code torch.optim.lr_scheduler.CyclicLR} (PyTorch 1.13): the
 * learning rate goes from {@code baseLr} up to {@code maxLr} over {@code stepSizeUp} steps and back over
 * {@code stepSizeDown}, the amplitude scaled per cycle ({@code "triangular"}: constant,
 * {@code "triangular2"}: halved each cycle) or per step ({@code "exp_range"}: {@code gamma^step}), or by
 * a custom {@code scaleFn}. With {@code cycleMomentum} (the default; PyTorch 1.13 requires an optimizer
 * with a {@code momentum} option, as SGD or RMSprop) the momentum cycles inversely between
 * {@code maxMomentum} and {@code baseMomentum}. Stepped once per batch. Building it sets the groups'
 * learning rates (and momenta) to their base values.
 * <pre>{@code
 * var sched = new CyclicLR(opt, CyclicLR.options(0.001, 0.1).stepSizeUp(200).mode("triangular2"));
 * }</pre>
 * A custom {@code scaleFn} is not part of the state dict (PyTorch 1.13 cannot save it either).
 */
public final class CyclicLR extends LRScheduler {
    /** CyclicLR's settings, with PyTorch's defaults. */
    public static final class Options {
        private final double[] baseLr;
        private final double[] maxLr;
        private double stepSizeUp = 2000;
        private Double stepSizeDown;
        private String mode = "triangular";
        private double gamma = 1;
        private DoubleUnaryOperator scaleFn;
        private String scaleMode = "cycle";
        private boolean cycleMomentum = true;
        private double[] baseMomentum = {0.8};
        private double[] maxMomentum = {0.9};
        private int lastEpoch = -1;

        private Options(double[] baseLr, double[] maxLr) {
            this.baseLr = baseLr.clone();
            this.maxLr = maxLr.clone();
        }

        /** Steps from the base to the peak (2000). */
        public Options stepSizeUp(double stepSizeUp) { this.stepSizeUp = stepSizeUp; return this; }
        /** Steps from the peak back to the base; null (the default) for {@link #stepSizeUp}. */
        public Options stepSizeDown(Double stepSizeDown) { this.stepSizeDown = stepSizeDown; return this; }
        /** {@code "triangular"}, {@code "triangular2"} or {@code "exp_range"}; ignored with a {@link #scaleFn}. */
        public Options mode(String mode) { this.mode = mode; return this; }
        /** The base of {@code "exp_range"}'s {@code gamma^step}. */
        public Options gamma(double gamma) { this.gamma = gamma; return this; }
        /** A custom amplitude scale, of the cycle number or of the step as {@link #scaleMode} says; null for the mode's. */
        public Options scaleFn(DoubleUnaryOperator scaleFn) { this.scaleFn = scaleFn; return this; }
        /** {@code "cycle"} or {@code "iterations"}: what a custom {@link #scaleFn} is given. */
        public Options scaleMode(String scaleMode) { this.scaleMode = scaleMode; return this; }
        public Options cycleMomentum(boolean cycleMomentum) { this.cycleMomentum = cycleMomentum; return this; }
        /** One value, or one per group. */
        public Options baseMomentum(double... baseMomentum) { this.baseMomentum = baseMomentum.clone(); return this; }
        public Options maxMomentum(double... maxMomentum) { this.maxMomentum = maxMomentum.clone(); return this; }
        public Options lastEpoch(int lastEpoch) { this.lastEpoch = lastEpoch; return this; }
    }

    public static Options options(double baseLr, double maxLr) {
        return new Options(new double[] {baseLr}, new double[] {maxLr});
    }

    /** Per-group base and peak learning rates. */
    public static Options options(double[] baseLrs, double[] maxLrs) {
        Arguments.nonNull("CyclicLR.options", "baseLrs", baseLrs);
        Arguments.nonNull("CyclicLR.options", "maxLrs", maxLrs);
        return new Options(baseLrs, maxLrs);
    }

    private double[] maxLrs;
    private double totalSize;
    private double stepRatio;
    private String mode;
    private double gamma;
    private final DoubleUnaryOperator customScaleFn;
    private String scaleMode;
    private final boolean cycleMomentum;
    private double[] baseMomentums;
    private double[] maxMomentums;

    public CyclicLR(Optimizer optimizer, Options o) {
        Arguments.nonNull("CyclicLR", "optimizer", optimizer);
        Arguments.nonNull("CyclicLR", "o", o);
        super(baseValues(optimizer, o), o.lastEpoch);
        int groups = optimizer.paramGroups().size();
        this.maxLrs = perGroup("CyclicLR", "max_lr", o.maxLr, groups);
        double down = o.stepSizeDown != null ? o.stepSizeDown : o.stepSizeUp;
        this.totalSize = o.stepSizeUp + down;
        this.stepRatio = o.stepSizeUp / totalSize;
        this.mode = o.mode;
        this.gamma = o.gamma;
        this.customScaleFn = o.scaleFn;
        this.scaleMode = o.scaleFn != null ? o.scaleMode : o.mode.equals("exp_range") ? "iterations" : "cycle";
        this.cycleMomentum = o.cycleMomentum;
        if (cycleMomentum) {
            baseMomentums = optimizer.paramGroups().stream().mapToDouble(g -> g.getDouble("momentum")).toArray();
            maxMomentums = perGroup("CyclicLR", "max_momentum", o.maxMomentum, groups);
        }
        initialStep();
        // As PyTorch, the first step used the recorded initial_lr; from now on the base values are the given ones.
        this.baseLrs = Arrays.stream(perGroup("CyclicLR", "base_lr", o.baseLr, groups)).boxed().toList();
    }

    /** Validates and sets the groups' learning rates (and momenta) to their base values before the base records them. */
    private static Optimizer baseValues(Optimizer optimizer, Options o) {
        if (!List.of("triangular", "triangular2", "exp_range").contains(o.mode) && o.scaleFn == null) {
            throw new IllegalArgumentException("CyclicLR: mode is invalid and scale_fn is None (mode '" + o.mode + "')");
        }
        if (o.scaleFn != null && !o.scaleMode.equals("cycle") && !o.scaleMode.equals("iterations")) {
            throw new IllegalArgumentException("CyclicLR: scale_mode must be 'cycle' or 'iterations', not '" + o.scaleMode + "'");
        }
        List<ParamGroup> groups = optimizer.paramGroups();
        double[] baseLrs = perGroup("CyclicLR", "base_lr", o.baseLr, groups.size());
        perGroup("CyclicLR", "max_lr", o.maxLr, groups.size());
        if (o.cycleMomentum && !optimizer.defaults().containsKey("momentum")) {
            throw new IllegalArgumentException("CyclicLR: optimizer must support momentum with `cycle_momentum` option enabled");
        }
        double[] baseMomentums = o.cycleMomentum ? perGroup("CyclicLR", "base_momentum", o.baseMomentum, groups.size()) : null;
        if (o.cycleMomentum) perGroup("CyclicLR", "max_momentum", o.maxMomentum, groups.size());
        if (o.lastEpoch == -1) {
            for (int i = 0; i < groups.size(); i++) {
                groups.get(i).setLr(baseLrs[i]);
                if (o.cycleMomentum) groups.get(i).set("momentum", baseMomentums[i]);
            }
        }
        return optimizer;
    }

    private double scale(double x) {
        if (customScaleFn != null) return customScaleFn.applyAsDouble(x);
        return switch (mode) {
            case "triangular2" -> 1 / Math.pow(2., x - 1);
            case "exp_range" -> Math.pow(gamma, x);
            default -> 1.;
        };
    }

    /** Also sets the groups' momentum when cycling it. */
    @Override
    protected double[] computeLr() {
        double cycle = Math.floor(1 + lastEpoch / totalSize);
        double x = 1. + lastEpoch / totalSize - cycle;
        double scaleFactor = x <= stepRatio ? x / stepRatio : (x - 1) / (stepRatio - 1);
        double amplitude = scale(scaleMode.equals("cycle") ? cycle : lastEpoch);
        double[] lrs = new double[maxLrs.length];
        for (int i = 0; i < lrs.length; i++) lrs[i] = baseLrs.get(i) + (maxLrs[i] - baseLrs.get(i)) * scaleFactor * amplitude;
        if (cycleMomentum) {
            List<ParamGroup> groups = optimizer.paramGroups();
            for (int i = 0; i < groups.size(); i++) {
                groups.get(i).set("momentum", maxMomentums[i] - (maxMomentums[i] - baseMomentums[i]) * scaleFactor * amplitude);
            }
        }
        return lrs;
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("max_lrs", Arrays.stream(maxLrs).boxed().toList());
        sd.put("total_size", totalSize);
        sd.put("step_ratio", stepRatio);
        sd.put("mode", mode);
        sd.put("gamma", gamma);
        sd.put("scale_mode", scaleMode);
        sd.put("cycle_momentum", cycleMomentum);
        if (cycleMomentum) {
            sd.put("base_momentums", Arrays.stream(baseMomentums).boxed().toList());
            sd.put("max_momentums", Arrays.stream(maxMomentums).boxed().toList());
        }
    }

    @Override
    protected void loadSettings(StateReader r) {
        int groups = maxLrs.length;
        List<Double> newMaxLrs = r.doublesOr("max_lrs", null, groups);
        double newTotalSize = r.doubleOr("total_size", totalSize);
        double newStepRatio = r.doubleOr("step_ratio", stepRatio);
        String newMode = r.stringOr("mode", mode);
        double newGamma = r.doubleOr("gamma", gamma);
        String newScaleMode = r.stringOr("scale_mode", scaleMode);
        List<Double> newBaseMomentums = cycleMomentum ? r.doublesOr("base_momentums", null, groups) : null;
        List<Double> newMaxMomentums = cycleMomentum ? r.doublesOr("max_momentums", null, groups) : null;
        if (newMaxLrs != null) maxLrs = newMaxLrs.stream().mapToDouble(Double::doubleValue).toArray();
        totalSize = newTotalSize;
        stepRatio = newStepRatio;
        mode = newMode;
        gamma = newGamma;
        scaleMode = newScaleMode;
        if (newBaseMomentums != null) baseMomentums = newBaseMomentums.stream().mapToDouble(Double::doubleValue).toArray();
        if (newMaxMomentums != null) maxMomentums = newMaxMomentums.stream().mapToDouble(Double::doubleValue).toArray();
    }
}
