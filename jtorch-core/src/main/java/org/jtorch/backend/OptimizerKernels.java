package org.jtorch.backend;

import java.util.List;
import org.jtorch.op.StridedView;

/**
 * Fused optimizer steps over lists of contiguous float32 tensors on this backend's device: entry
 * {@code i} of every list belongs to one parameter, and a backend may update all of them at once (the
 * CUDA backend in one multi-tensor launch per few dozen tensors). Parameters and states are updated in
 * place; the caller bumps their versions.
 *
 * <p>Every backend evaluates the same float32 operations in the same order as
 * {@code CpuOptimizerKernels} (PyTorch 1.13's single-tensor rules), so the results are the same bits on
 * every device. Scalars arrive already rounded to float, as ATen's kernels receive them.
 */
public interface OptimizerKernels {
    /**
     * SGD: {@code d = ±g (+ p*weightDecay)}; with momentum {@code buf = firstStep ? d : buf*momentum +
     * d*oneMinusDampening} and {@code d = nesterov ? d + buf*momentum : buf}; then {@code p += d*negLr}.
     * {@code momentumBuffers} is null when {@code momentum == 0}.
     */
    void sgd(List<StridedView> params, List<StridedView> grads, List<StridedView> momentumBuffers, float negLr, float weightDecay,
             float momentum, float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep);

    /**
     * Adam and AdamW: {@code p *= paramScale} (AdamW's decoupled decay; 1 for Adam), {@code d = ±g (+ p*weightDecay)}
     * (Adam's L2 decay; 0 for AdamW), {@code m = m*beta1 + d*oneMinusBeta1}, {@code v = v*beta2 + (d*oneMinusBeta2)*d},
     * with AMSGrad {@code vmax = max(vmax, v)}, then {@code p += (m*negStepSize) / (sqrt(v or vmax)/bc2Sqrt + eps)}.
     * {@code maxExpAvgSqs} is null without AMSGrad.
     */
    void adam(List<StridedView> params, List<StridedView> grads, List<StridedView> expAvgs, List<StridedView> expAvgSqs,
              List<StridedView> maxExpAvgSqs,
              float paramScale, float weightDecay, float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2,
              float bc2Sqrt, float eps, float negStepSize, boolean maximize, boolean amsgrad);

    /**
     * GradScaler's unscale, as ATen's {@code _amp_foreach_non_finite_check_and_unscale_}: multiplies every
     * gradient by {@code invScale} in place and sets {@code foundInf} (a one-element float32 tensor on this
     * device) to 1 when any element of any gradient was infinite or NaN before; otherwise leaves it as it was.
     * Arithmetic as {@code CpuOptimizerKernels.unscaleAndCheckFinite}: float32 gradients take one float
     * product, float64 multiply by {@code invScale} widened, 16-bit floats multiply in float32 and round once.
     * Gradients may have any dtype GradScaler accepts; a backend refuses layouts it has no kernel for with an
     * exception naming the op, dtype, layout and device. The caller bumps the gradients' versions.
     */
    void unscaleAndCheckFinite(List<StridedView> grads, StridedView foundInf, float invScale);
}
