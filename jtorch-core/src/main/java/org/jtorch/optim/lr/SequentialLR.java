package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * Runs schedulers one after another, switching at the milestone epochs, as
 * {@code torch.optim.lr_scheduler.SequentialLR}: at a milestone the next scheduler restarts from its
 * epoch 0 (closed form where it has one); between milestones the active scheduler steps normally.
 */
public final class SequentialLR extends LRScheduler {
    private final List<LRScheduler> schedulers;
    private final int[] milestones;

    public SequentialLR(Optimizer optimizer, List<LRScheduler> schedulers, int[] milestones) {
        this(optimizer, schedulers, milestones, -1);
    }

    public SequentialLR(Optimizer optimizer, List<LRScheduler> schedulers, int[] milestones, int lastEpoch) {
        Arguments.nonNull("SequentialLR", "optimizer", optimizer);
        Arguments.nonNull("SequentialLR", "schedulers", schedulers);
        Arguments.nonNull("SequentialLR", "milestones", milestones);
        super(optimizer, lastEpoch);
        for (int i = 0; i < schedulers.size(); i++) {
            if (schedulers.get(i).optimizer() != optimizer) {
                throw new IllegalArgumentException("SequentialLR: Sequential Schedulers expects all schedulers to belong to the same optimizer,"
                        + " but got schedulers at index " + i + " to be different than the optimizer passed in.");
            }
        }
        if (milestones.length != schedulers.size() - 1) {
            throw new IllegalArgumentException("SequentialLR: Sequential Schedulers expects number of schedulers provided to be one more than"
                    + " the number of milestone points, but got number of schedulers " + schedulers.size()
                    + " and the number of milestones to be equal to " + milestones.length);
        }
        this.schedulers = List.copyOf(schedulers);
        this.milestones = milestones.clone();
        this.lastEpoch = lastEpoch + 1;
        for (ParamGroup g : optimizer.paramGroups()) g.setLr(g.getDouble("initial_lr"));
        for (LRScheduler s : this.schedulers) s.lastEpoch -= 1;
        this.schedulers.get(0).initialStep();
        this.lastLr = this.schedulers.get(0).getLastLr();
    }

    @Override
    public void step() {
        lastEpoch++;
        int idx = upperBound(milestones, lastEpoch);
        LRScheduler s = schedulers.get(idx);
        if (idx > 0 && milestones[idx - 1] == lastEpoch) s.step(0);
        else s.step();
        lastLr = s.getLastLr();
    }

    /** Not supported: PyTorch's SequentialLR has no closed form either. */
    @Override
    public void step(int epoch) {
        throw new UnsupportedOperationException("SequentialLR: step(epoch) is not supported; call step()");
    }

    /** The learning rates the active scheduler set last. */
    @Override
    protected double[] computeLr() {
        return lastLr.stream().mapToDouble(Double::doubleValue).toArray();
    }

    private static int upperBound(int[] sorted, int value) {
        int i = 0;
        while (i < sorted.length && sorted[i] <= value) i++;
        return i;
    }

    /** Also holds the wrapped schedulers' states under {@code _schedulers}. */
    @Override
    protected void saveSettings(Map<String, Object> sd) {
        sd.put("_milestones", Arrays.stream(milestones).boxed().toList());
        List<Map<String, Object>> states = new ArrayList<>();
        for (LRScheduler s : schedulers) states.add(s.stateDict());
        sd.put("_schedulers", states);
    }

    /** Loads the wrapped schedulers' states; if one fails, those loaded before it get their old states back. */
    @Override
    protected void loadSettings(StateReader r) {
        loadAll(r, schedulers);
    }

    /** Loads {@code _schedulers} (if present) into {@code schedulers}, all or none (shared with {@link ChainedScheduler}). */
    @SuppressWarnings("unchecked")
    static void loadAll(StateReader r, List<LRScheduler> schedulers) {
        if (!r.has("_schedulers")) return;
        List<?> states = r.requireList("_schedulers");
        if (states.size() != schedulers.size()) {
            throw new IllegalArgumentException(r.op() + ": " + states.size() + " scheduler states for " + schedulers.size() + " schedulers");
        }
        List<Map<String, Object>> loaded = new ArrayList<>();
        for (int i = 0; i < states.size(); i++) {
            r.map("_schedulers[" + i + "]", states.get(i));
            loaded.add((Map<String, Object>) states.get(i));
        }
        List<Map<String, Object>> before = new ArrayList<>();
        for (LRScheduler s : schedulers) before.add(s.stateDict());
        for (int i = 0; i < schedulers.size(); i++) {
            try {
                schedulers.get(i).loadStateDict(loaded.get(i));
            } catch (IllegalArgumentException ex) {
                for (int j = 0; j < i; j++) schedulers.get(j).loadStateDict(before.get(j));
                throw new IllegalArgumentException(r.op() + ": in _schedulers[" + i + "]: " + ex.getMessage(), ex);
            }
        }
    }
}
