package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.io.StateReader;
import org.jtorch.types.Arguments;

/**
 * Steps several schedulers of one optimizer together, each applying its change to the learning rate
 * the previous one left, as {@code torch.optim.lr_scheduler.ChainedScheduler}:
 * {@code new ChainedScheduler(List.of(new ConstantLR(opt, 0.1, 2), new ExponentialLR(opt, 0.9)))}.
 * Its state dict holds {@code _last_lr} and the schedulers' states under {@code _schedulers}, as PyTorch's.
 */
public final class ChainedScheduler extends LRScheduler {
    private final List<LRScheduler> schedulers;

    public ChainedScheduler(List<LRScheduler> schedulers) {
        Arguments.nonNullElements("ChainedScheduler", "schedulers", schedulers);
        if (schedulers.isEmpty()) throw new IllegalArgumentException("ChainedScheduler: expects at least one scheduler");
        for (int i = 1; i < schedulers.size(); i++) {
            if (schedulers.get(i).optimizer() != schedulers.get(0).optimizer()) {
                throw new IllegalArgumentException("ChainedScheduler: ChainedScheduler expects all schedulers to belong to the same optimizer,"
                        + " but got schedulers at index 0 and " + i + " to be different");
            }
        }
        super(schedulers.get(0).optimizer(), schedulers.get(0).lastEpoch());
        this.schedulers = List.copyOf(schedulers);
        this.lastLr = currentLrs();
    }

    /** Steps every scheduler in order. */
    @Override
    public void step() {
        for (LRScheduler s : schedulers) s.step();
        lastLr = currentLrs();
    }

    /** Not supported: PyTorch's ChainedScheduler has no epoch argument. */
    @Override
    public void step(int epoch) {
        throw new UnsupportedOperationException("ChainedScheduler: step(epoch) is not supported; call step()");
    }

    /** The learning rates the chain set last. */
    @Override
    protected double[] computeLr() {
        return lastLr.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /** {@code _last_lr} and the schedulers' states under {@code _schedulers}. */
    @Override
    public Map<String, Object> stateDict() {
        Map<String, Object> sd = new LinkedHashMap<>();
        sd.put("_last_lr", lastLr);
        List<Map<String, Object>> states = new ArrayList<>();
        for (LRScheduler s : schedulers) states.add(s.stateDict());
        sd.put("_schedulers", states);
        return sd;
    }

    /** Loads the schedulers' states; if one fails, those loaded before it get their old states back. */
    @Override
    public void loadStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull("ChainedScheduler.loadStateDict", "stateDict", stateDict);
        StateReader r = new StateReader("ChainedScheduler.loadStateDict", stateDict);
        List<Double> newLastLr = r.doublesOr("_last_lr", lastLr, optimizer.paramGroups().size());
        SequentialLR.loadAll(r, schedulers);
        lastLr = newLastLr;
    }
}
