package org.jtorch.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.OptimizerKernels;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;

/**
 * The parameters of one group that take a fused step, collected per (device, variant) so that each
 * backend receives them as lists ({@link OptimizerKernels}: one multi-tensor launch on CUDA). The
 * variant separates parameters whose scalars differ (SGD's first momentum step, Adam's step count).
 * Each added row is (param, grad, states...); a state may be null (then its list holds null).
 */
final class FusedBatches {
    private record Key(Device device, Object variant) {}

    private final Map<Key, List<List<Tensor>>> batches = new LinkedHashMap<>();

    void add(Device device, Object variant, Tensor... row) {
        List<List<Tensor>> lists = batches.computeIfAbsent(new Key(device, variant), k -> {
            List<List<Tensor>> l = new ArrayList<>();
            for (int i = 0; i < row.length; i++) l.add(new ArrayList<>());
            return l;
        });
        for (int i = 0; i < row.length; i++) lists.get(i).add(row[i]);
    }

    interface Step {
        void run(OptimizerKernels kernels, Object variant, List<List<StridedView>> lists);
    }

    /** Runs {@code step} once per (device, variant), then bumps the version of every updated tensor but the gradients (list 1). */
    void run(Step step) {
        for (List<List<Tensor>> lists : batches.values()) {
            for (int l = 0; l < lists.size(); l++) {
                if (l == 1) continue;
                for (Tensor t : lists.get(l)) {
                    if (t != null) t.checkWritable("optimizer step");
                }
            }
        }
        for (Map.Entry<Key, List<List<Tensor>>> e : batches.entrySet()) {
            List<List<Tensor>> lists = e.getValue();
            List<List<StridedView>> views = new ArrayList<>(lists.size());
            for (List<Tensor> list : lists) views.add(Dispatcher.views(list));
            step.run(Backends.of(e.getKey().device()).optimizers(), e.getKey().variant(), views);
            for (int l = 0; l < lists.size(); l++) {
                if (l == 1) continue;
                for (Tensor t : lists.get(l)) {
                    if (t != null) t.bumpVersion();
                }
            }
        }
    }
}
