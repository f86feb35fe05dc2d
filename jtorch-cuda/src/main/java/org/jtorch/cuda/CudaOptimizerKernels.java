package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import org.jtorch.backend.cpu.CpuOptimizerKernels;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OptimizerOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * The CUDA kernels of {@link OptimizerOps}' ops: the multi-tensor steps of {@code optim.cu} (SGD, Adam, AdamW, Adadelta), one launch per
 * {@link org.jtorch.cuda.kernels.MultiTensorPlan} launch (up to 24 tensors and 320 chunks of 65,536 elements), in
 * {@code CpuOptimizerKernels}' float32 arithmetic, so that both devices give the same bits. The scale update, one
 * element, runs on the host between two copies.
 */
final class CudaOptimizerKernels {
    private CudaOptimizerKernels() {}

    static void register(Supplier<CudaKernels> kernels) {
        Device.Type cuda = Device.Type.CUDA;
        KernelRegistry.registerMutating(cuda, OptimizerOps.FUSED_SGD.kernel(), (l, t, s) -> {
            OptimizerOps.SgdScalars c = OptimizerOps.SgdScalars.of(s);
            kernels.get().sgd(list(l[0]), list(l[1]), list(l[2]), c.negLr(), c.weightDecay(), c.momentum(), c.oneMinusDampening(),
                    c.nesterov(), c.maximize(), c.firstStep());
        });
        KernelRegistry.registerMutating(cuda, OptimizerOps.FUSED_ADAM.kernel(), (l, t, s) -> adam(kernels.get(), l, OptimizerOps.AdamScalars.of(s, false)));
        KernelRegistry.registerMutating(cuda, OptimizerOps.FUSED_ADAMW.kernel(), (l, t, s) -> adam(kernels.get(), l, OptimizerOps.AdamScalars.of(s, true)));
        KernelRegistry.registerMutating(cuda, OptimizerOps.FUSED_ADADELTA.kernel(), (l, t, s) -> {
            OptimizerOps.AdadeltaScalars c = OptimizerOps.AdadeltaScalars.of(s);
            kernels.get().adadelta(list(l[0]), list(l[1]), list(l[2]), list(l[3]), c.negLr(), c.rho(), c.oneMinusRho(), c.eps(),
                    c.weightDecay(), c.maximize());
        });
        // One jt_amp_unscale_<dtype> multi-tensor kernel over all gradients (per dtype), writing a device flag.
        KernelRegistry.registerMutating(cuda, OptimizerOps.AMP_UNSCALE.kernel(), (l, t, s) ->
                kernels.get().ampUnscale(Arrays.asList(l[0]), t[0], (float) onHost(kernels.get(), t[1], v -> CpuOptimizerKernels.readHost(v[0]))));
        KernelRegistry.registerMutating(cuda, OptimizerOps.AMP_UPDATE_SCALE.kernel(), (l, t, s) ->
                onHost(kernels.get(), t, v -> {
                    CpuOptimizerKernels.updateScale(v[0], v[1], v[2], s);
                    return 0;
                }, 0, 1));
    }

    private static void adam(CudaKernels k, StridedView[][] l, OptimizerOps.AdamScalars c) {
        k.adam(list(l[0]), list(l[1]), list(l[2]), list(l[3]), list(l[4]), c.paramScale(), c.weightDecay(), c.beta1(),
                c.oneMinusBeta1(), c.beta2(), c.oneMinusBeta2(), c.bc2Sqrt(), c.eps(), c.negStepSize(), c.maximize(), c.amsgrad());
    }

    /** A list parameter as the multi-tensor launcher takes it: null when empty (no momentum, no AMSGrad). */
    private static List<StridedView> list(StridedView[] views) {
        return views.length == 0 ? null : Arrays.asList(views);
    }

    private interface HostStep {
        double run(StridedView[] host);
    }

    /** {@link #onHost(CudaKernels, StridedView[], HostStep, int...)} of one view, written back nowhere. */
    private static double onHost(CudaKernels k, StridedView v, HostStep step) {
        return onHost(k, new StridedView[] {v}, step);
    }

    /**
     * Runs {@code step} on host copies of the one-element views {@code views} (those already on the host as they are),
     * then copies the ones named in {@code writtenBack} back to the device.
     */
    private static double onHost(CudaKernels k, StridedView[] views, HostStep step, int... writtenBack) {
        try (Arena arena = Arena.ofConfined()) {
            StridedView[] host = new StridedView[views.length];
            for (int i = 0; i < views.length; i++) {
                StridedView v = views[i];
                if (v.device().isCpu()) {
                    host[i] = v;
                    continue;
                }
                host[i] = new StridedView(arena.allocate(v.dtype().byteSize(), 8), 0, new long[] {1}, new long[] {1}, v.dtype());
                k.copy(v.restrided(new long[] {1}, new long[] {1}, v.offset()), host[i]);
            }
            double r = step.run(host);
            for (int i : writtenBack) {
                if (host[i] != views[i]) k.copy(host[i], views[i].restrided(new long[] {1}, new long[] {1}, views[i].offset()));
            }
            return r;
        }
    }
}
