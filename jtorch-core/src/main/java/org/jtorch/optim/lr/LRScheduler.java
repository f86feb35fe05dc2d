package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.io.Stateful;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * Base class of the epoch-based learning-rate schedulers, as PyTorch 1.13's {@code _LRScheduler}.
 *
 * <p>Construction (with {@code lastEpoch == -1}) records each group's {@code initial_lr} and takes an
 * initial step, which sets {@code lastEpoch} to 0 and the learning rates to their epoch-0 values.
 * Each {@link #step()} then advances one epoch using the scheduler's chainable form (computed from
 * the groups' current {@code lr}, so schedulers compose with outside changes); {@link #step(int)}
 * jumps to an epoch with the closed form where one exists, as PyTorch's deprecated
 * {@code step(epoch)}. Call {@code optimizer.step()} before {@code scheduler.step()}.
 *
 * <p>Not thread-safe.
 */
public abstract class LRScheduler implements Stateful {
    protected final Optimizer optimizer;
    protected List<Double> baseLrs;
    protected int lastEpoch;
    protected int stepCount;
    protected List<Double> lastLr = List.of();

    /** Records {@code initial_lr}; the concrete class's constructor sets its fields, then calls {@link #initialStep()}. */
    protected LRScheduler(Optimizer optimizer, int lastEpoch) {
        this.optimizer = optimizer;
        List<ParamGroup> groups = optimizer.paramGroups();
        if (lastEpoch == -1) {
            for (ParamGroup g : groups) {
                if (!g.has("initial_lr")) g.set("initial_lr", g.lr());
            }
        } else {
            for (int i = 0; i < groups.size(); i++) {
                if (!groups.get(i).has("initial_lr")) {
                    throw new IllegalArgumentException(getClass().getSimpleName() + ": param 'initial_lr' is not specified in param_groups["
                            + i + "] when resuming an optimizer");
                }
            }
        }
        List<Double> base = new ArrayList<>();
        for (ParamGroup g : groups) base.add(g.getDouble("initial_lr"));
        this.baseLrs = List.copyOf(base);
        this.lastEpoch = lastEpoch;
    }

    /** The first step, taken at construction. */
    protected void initialStep() {
        stepCount = 0;
        step();
    }

    /** The chainable form: the learning rates for {@code lastEpoch} (already advanced), per group. */
    protected abstract double[] computeLr();

    /** The closed form for {@code lastEpoch}, or null if the scheduler has none (then {@link #computeLr()} is used). */
    protected double[] closedFormLr() {
        return null;
    }

    /** Advances one epoch and sets the groups' learning rates. */
    public void step() {
        stepCount++;
        lastEpoch++;
        apply(computeLr());
    }

    /** Jumps to {@code epoch} (PyTorch's deprecated {@code step(epoch)}), using the closed form where one exists. */
    public void step(int epoch) {
        stepCount++;
        lastEpoch = epoch;
        double[] closed = closedFormLr();
        apply(closed != null ? closed : computeLr());
    }

    /** Sets the groups' learning rates and records them as the last ones. */
    protected void apply(double[] lrs) {
        List<ParamGroup> groups = optimizer.paramGroups();
        for (int i = 0; i < groups.size(); i++) groups.get(i).setLr(lrs[i]);
        lastLr = currentLrs();
    }

    /** The learning rate of each group after the last step, as {@code get_last_lr()}. */
    public List<Double> getLastLr() {
        return lastLr;
    }

    public int lastEpoch() {
        return lastEpoch;
    }

    public Optimizer optimizer() {
        return optimizer;
    }

    protected List<Double> currentLrs() {
        List<Double> lrs = new ArrayList<>();
        for (ParamGroup g : optimizer.paramGroups()) lrs.add(g.lr());
        return List.copyOf(lrs);
    }

    /** Each group's current learning rate multiplied by {@code factor}. */
    protected double[] scaled(double factor) {
        List<ParamGroup> groups = optimizer.paramGroups();
        double[] r = new double[groups.size()];
        for (int i = 0; i < r.length; i++) r[i] = groups.get(i).lr() * factor;
        return r;
    }

    /** One value per group: {@code values} itself, or its single value repeated (PyTorch's {@code _format_param}). */
    static double[] perGroup(String scheduler, String name, double[] values, int groups) {
        if (values.length == 1) {
            double[] r = new double[groups];
            java.util.Arrays.fill(r, values[0]);
            return r;
        }
        if (values.length != groups) {
            throw new IllegalArgumentException(scheduler + ": expected " + groups + " values for " + name + ", got " + values.length);
        }
        return values.clone();
    }

    /** Each base learning rate multiplied by {@code factor}. */
    protected double[] scaledBase(double factor) {
        double[] r = new double[baseLrs.size()];
        for (int i = 0; i < r.length; i++) r[i] = baseLrs.get(i) * factor;
        return r;
    }

    /**
     * The scheduler's state with PyTorch's keys ({@code base_lrs}, {@code last_epoch}, {@code _step_count},
     * {@code _last_lr} and the scheduler's own settings); the optimizer is not part of it.
     */
    @Override
    public Map<String, Object> stateDict() {
        Map<String, Object> sd = new LinkedHashMap<>();
        saveSettings(sd);
        sd.put("base_lrs", baseLrs);
        sd.put("last_epoch", lastEpoch);
        sd.put("_step_count", stepCount);
        sd.put("_last_lr", lastLr);
        return sd;
    }

    /**
     * Restores a state from {@link #stateDict()}. Entries it lacks keep their values; an entry of the
     * wrong kind (a string epoch, a list of learning rates of another length than the optimizer's
     * groups) throws {@link IllegalArgumentException} naming it, and leaves the scheduler as it was.
     */
    @Override
    public void loadStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull(getClass().getSimpleName() + ".loadStateDict", "stateDict", stateDict);
        StateReader r = new StateReader(getClass().getSimpleName() + ".loadStateDict", stateDict);
        int groups = optimizer.paramGroups().size();
        List<Double> newBaseLrs = r.doublesOr("base_lrs", baseLrs, groups);
        int newLastEpoch = r.intOr("last_epoch", lastEpoch);
        int newStepCount = r.intOr("_step_count", stepCount);
        List<Double> newLastLr = r.doublesOr("_last_lr", lastLr, groups);
        loadSettings(r);
        baseLrs = newBaseLrs;
        lastEpoch = newLastEpoch;
        stepCount = newStepCount;
        lastLr = newLastLr;
    }

    /** Adds the scheduler's own settings to a state dict. */
    protected void saveSettings(Map<String, Object> sd) {}

    /**
     * Reads the scheduler's own settings from a state dict through {@code r}, whose typed reads reject
     * entries of the wrong kind (absent ones keep their values): all of them before setting any, so that
     * a failed load changes nothing.
     */
    protected void loadSettings(StateReader r) {}
}
