package org.jtorch.optim.lr;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jtorch.io.StateReader;
import org.jtorch.optim.Optimizer;
import org.jtorch.types.Arguments;

/**
 * Multiplies the learning rate by {@code gamma} at each milestone epoch, as
 * {@code torch.optim.lr_scheduler.MultiStepLR}; a milestone listed k times multiplies by {@code gamma^k}.
 */
public final class MultiStepLR extends LRScheduler {
    private final TreeMap<Integer, Integer> milestones = new TreeMap<>();
    private double gamma;

    public MultiStepLR(Optimizer optimizer, int[] milestones, double gamma) {
        this(optimizer, milestones, gamma, -1);
    }

    public MultiStepLR(Optimizer optimizer, int[] milestones, double gamma, int lastEpoch) {
        Arguments.nonNull("MultiStepLR", "optimizer", optimizer);
        Arguments.nonNull("MultiStepLR", "milestones", milestones);
        super(optimizer, lastEpoch);
        for (int m : milestones) this.milestones.merge(m, 1, Integer::sum);
        this.gamma = gamma;
        initialStep();
    }

    @Override
    protected double[] computeLr() {
        Integer count = milestones.get(lastEpoch);
        if (count == null) return scaled(1);
        return scaled(Math.pow(gamma, count));
    }

    @Override
    protected double[] closedFormLr() {
        int passed = 0;
        for (Map.Entry<Integer, Integer> e : milestones.entrySet()) {
            if (e.getKey() <= lastEpoch) passed += e.getValue();
        }
        return scaledBase(Math.pow(gamma, passed));
    }

    @Override
    protected void saveSettings(Map<String, Object> sd) {
        List<Integer> list = new ArrayList<>();
        milestones.forEach((m, k) -> {
            for (int i = 0; i < k; i++) list.add(m);
        });
        sd.put("milestones", list);
        sd.put("gamma", gamma);
    }

    @Override
    protected void loadSettings(StateReader r) {
        List<Integer> list = r.intsOr("milestones", null);
        gamma = r.doubleOr("gamma", gamma);
        if (list != null) {
            milestones.clear();
            for (int m : list) milestones.merge(m, 1, Integer::sum);
        }
    }
}
