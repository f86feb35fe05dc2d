package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Batch normalisation over dimension 1, as PyTorch's {@code _BatchNorm}; {@link BatchNorm1d},
 * {@link BatchNorm2d} and {@link BatchNorm3d} differ only in the input ranks they accept.
 *
 * <p>Training with {@code trackRunningStats} normalises with the batch statistics, increments
 * {@code num_batches_tracked} and updates the running statistics (factor {@code momentum}, or {@code
 * 1 / num_batches_tracked} when momentum is null). Evaluation uses the running statistics, or the
 * batch's when the layer does not track them.
 *
 * <p>Synchronised statistics: after {@link SyncBatchNorm#convertSyncBatchnorm} (or in a {@link SyncBatchNorm}) training
 * normalises with the statistics of the whole batch across a process group's ranks; see {@link SyncBatchNorm}.
 *
 * <p>Constructors: {@code (numFeatures)} with PyTorch's defaults (eps 1e-5, momentum 0.1, affine,
 * tracking), or every option positionally: {@code (numFeatures, eps, momentum, affine,
 * trackRunningStats[, dtype, device])}.
 */
public abstract class BatchNorm extends NormBase {
    /** Whether training statistics are synchronised across {@link #syncGroup} (null: the default group). */
    private boolean synced;
    private ProcessGroup syncGroup;

    protected BatchNorm(long numFeatures, double eps, Double momentum, boolean affine, boolean trackRunningStats, DType dtype,
                        Device device) {
        super(numFeatures, eps, momentum, affine, trackRunningStats, dtype, device);
    }

    @Override
    public Tensor forward(Tensor input) {
        checkInputDim(input);
        double factor = momentum == null ? 0.0 : momentum;
        if (isTraining() && trackRunningStats) {
            Tensor count = numBatchesTracked();
            try (Grad.Mode g = Grad.noGrad()) {
                count.add_(1L);
            }
            if (momentum == null) factor = 1.0 / count.itemLong();
        }
        boolean useBatchStats = isTraining() || (runningMean() == null && runningVar() == null);
        boolean update = !isTraining() || trackRunningStats;
        ProcessGroup group = synced && isTraining() ? syncGroup() : null;
        if (group != null && group.size() > 1) {
            return SyncBatchNorm.syncBatchNorm(input, update ? runningMean() : null, update ? runningVar() : null, weight(), bias(), factor,
                    eps, group);
        }
        return F.batchNorm(input, update ? runningMean() : null, update ? runningVar() : null, weight(), bias(), useBatchStats,
                factor, eps);
    }

    /** From now on, training statistics are synchronised across {@code group} (null: the default group at each forward). */
    void synchronizeAcross(ProcessGroup group) {
        synced = true;
        syncGroup = group;
    }

    /** Whether training statistics are synchronised across a process group. */
    public boolean isSynchronized() {
        return synced;
    }

    private ProcessGroup syncGroup() {
        if (syncGroup != null) return syncGroup;
        if (!Distributed.isInitialized()) {
            throw new IllegalStateException(getClass().getSimpleName() + ": synchronised batch norm in training needs a process group: "
                    + "call Distributed.initProcessGroup first, or pass a group to SyncBatchNorm");
        }
        return Distributed.defaultGroup();
    }
}
