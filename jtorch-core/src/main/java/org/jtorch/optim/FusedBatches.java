package org.jtorch.optim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.op.OpDef;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Device;

/**
 * The parameters of one group that take a fused step, collected per (device, variant) so that each
 * fused op ({@link org.jtorch.op.OptimizerOps}) receives them as lists (one multi-tensor launch on CUDA). The
 * variant separates parameters whose scalars differ (SGD's first momentum step, Adam's step count).
 * Each added row is (param, grad, states...); a state may be null for every row of a batch (no momentum, no
 * AMSGrad): its list is then passed empty, as PyTorch passes it.
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
        for (int i = 0; i < row.length; i++) {
            if (row[i] != null) lists.get(i).add(row[i]);
        }
    }

    /**
     * Runs {@code op} once per (device, variant) with the scalars {@code scalars} gives for the variant. Every updated
     * tensor (all but the gradients, list 1) is checked writable first, so that a refused step changes nothing.
     */
    void run(OpDef op, Function<Object, double[]> scalars) {
        for (List<List<Tensor>> lists : batches.values()) {
            for (int l = 0; l < lists.size(); l++) {
                if (l == 1) continue;
                for (Tensor t : lists.get(l)) t.checkWritable("optimizer step");
            }
        }
        for (Map.Entry<Key, List<List<Tensor>>> e : batches.entrySet()) {
            Dispatcher.callMutating(op, e.getValue(), new Tensor[0], scalars.apply(e.getKey().variant()));
        }
    }
}
