package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Spatial kernels over NCHW images: pooling and its gradients. The front end ({@code ops.Pooling})
 * validates, computes the output geometry, folds batch and channels into {@code planes} and hands
 * over contiguous float32 or float64 tensors of shape {@code [planes, H, W]} (1-D ops use {@code H = 1});
 * other dtypes and strided inputs are converted there, so kernels only compute.
 */
public interface SpatialKernels {
    /**
     * Window geometry of a 2-D pooling: input {@code inH x inW}, output {@code outH x outW}, kernel,
     * stride, padding and dilation per dimension (dilation 1 for average pooling).
     */
    record Pool2d(long planes, long inH, long inW, long outH, long outW, int kH, int kW, int sH, int sW, int pH, int pW,
                  int dH, int dW) {}

    /**
     * Max pooling: {@code out[p, oh, ow]} is the largest element of the window (NaN wins), {@code indices}
     * (int64, may be null) its flat position {@code ih * inW + iw} in the plane, as PyTorch's.
     */
    void maxPool2d(StridedView in, StridedView out, StridedView indices, Pool2d g);

    /**
     * {@code gradIn[p, indices[p, j]] += gradOut[p, j]} for planes {@code [planes, n]} of {@code gradOut} and
     * {@code indices} into {@code [planes, m]} of {@code gradIn}, which the kernel zeroes first: the gradient of
     * max pooling (fixed and adaptive).
     */
    void maxPoolBackward(StridedView gradOut, StridedView indices, StridedView gradIn);

    /**
     * Average pooling: the window's sum divided by {@code divisorOverride} when positive, else by the
     * window's size clipped to the padded input ({@code countIncludePad}) or to the input.
     */
    void avgPool2d(StridedView in, StridedView out, Pool2d g, boolean countIncludePad, long divisorOverride);

    /** The gradient of {@link #avgPool2d}: {@code gradIn} (not zeroed by the caller) gets each window's share. */
    void avgPool2dBackward(StridedView gradOut, StridedView gradIn, Pool2d g, boolean countIncludePad, long divisorOverride);

    /**
     * Adaptive average pooling: output cell {@code o} of a dimension of size {@code O} averages input
     * {@code [floor(o * I / O), ceil((o + 1) * I / O))}.
     */
    void adaptiveAvgPool2d(StridedView in, StridedView out);

    /** The gradient of {@link #adaptiveAvgPool2d} into {@code gradIn} (not zeroed by the caller). */
    void adaptiveAvgPool2dBackward(StridedView gradOut, StridedView gradIn);

    /** Adaptive max pooling over the windows of {@link #adaptiveAvgPool2d}, with flat indices as {@link #maxPool2d}. */
    void adaptiveMaxPool2d(StridedView in, StridedView out, StridedView indices);
}
