package org.jtorch.cuda;

import java.util.List;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.backend.OptimizerKernels;

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
    public void sgd(List<Tensor> params, List<Tensor> grads, List<Tensor> momentumBuffers, float negLr, float weightDecay,
                    float momentum, float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep) {
        kernels.get().sgd(params, grads, momentumBuffers, negLr, weightDecay, momentum, oneMinusDampening, nesterov, maximize, firstStep);
    }

    @Override
    public void adam(List<Tensor> params, List<Tensor> grads, List<Tensor> expAvgs, List<Tensor> expAvgSqs,
                     List<Tensor> maxExpAvgSqs, float paramScale, float weightDecay, float beta1, float oneMinusBeta1,
                     float beta2, float oneMinusBeta2, float bc2Sqrt, float eps, float negStepSize, boolean maximize,
                     boolean amsgrad) {
        kernels.get().adam(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, paramScale, weightDecay, beta1, oneMinusBeta1,
                beta2, oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad);
    }

    /** One {@code jt_amp_unscale_<dtype>} multi-tensor kernel over all gradients (per dtype), writing a device flag. */
    @Override
    public void unscaleAndCheckFinite(List<Tensor> grads, Tensor foundInf, float invScale) {
        kernels.get().ampUnscale(grads, foundInf, invScale);
    }

    @Override
    public String toString() {
        return "CUDA OptimizerKernels (optim.cu)";
    }
}
