package org.jtorch.cuda;

import java.util.List;
import java.util.function.Supplier;
import org.jtorch.backend.OptimizerKernels;
import org.jtorch.op.StridedView;

/**
 * {@link OptimizerKernels} on a CUDA device: the multi-tensor steps of {@code optim.cu}, one launch per
 * {@link org.jtorch.cuda.kernels.MultiTensorPlan} launch (up to 24 tensors and 320 chunks of 65,536
 * elements), in {@code CpuOptimizerKernels}' float32 arithmetic.
 */
final class CudaOptimizerKernels implements OptimizerKernels {
    private final Supplier<CudaKernels> kernels;

    CudaOptimizerKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    @Override
    public void sgd(List<StridedView> params, List<StridedView> grads, List<StridedView> momentumBuffers, float negLr,
                    float weightDecay,
                    float momentum, float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep) {
        kernels.get().sgd(params, grads, momentumBuffers, negLr, weightDecay, momentum, oneMinusDampening, nesterov, maximize, firstStep);
    }

    @Override
    public void adam(List<StridedView> params, List<StridedView> grads, List<StridedView> expAvgs, List<StridedView> expAvgSqs,
                     List<StridedView> maxExpAvgSqs, float paramScale, float weightDecay, float beta1, float oneMinusBeta1,
                     float beta2, float oneMinusBeta2, float bc2Sqrt, float eps, float negStepSize, boolean maximize,
                     boolean amsgrad) {
        kernels.get().adam(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, paramScale, weightDecay, beta1, oneMinusBeta1,
                beta2, oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad);
    }

    /** One {@code jt_amp_unscale_<dtype>} multi-tensor kernel over all gradients (per dtype), writing a device flag. */
    @Override
    public void unscaleAndCheckFinite(List<StridedView> grads, StridedView foundInf, float invScale) {
        kernels.get().ampUnscale(grads, foundInf, invScale);
    }

    @Override
    public String toString() {
        return "CUDA OptimizerKernels (optim.cu)";
    }
}
