package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * The partial inverse of {@link MaxPool3d}, as {@code torch.nn.MaxUnpool3d}: {@link #forward(Tensor, Tensor)} places
 * each value at its index from {@link MaxPool3d#forwardWithIndices} in a zero volume, the rest stays zero.
 */
public class MaxUnpool3d extends Module {
    private final int[] kernelSize;
    private final int[] stride;
    private final int[] padding;

    public MaxUnpool3d(int kernelSize) {
        this(new int[] {kernelSize}, null, new int[] {0});
    }

    /** Sizes as one int or three; a null stride means the kernel size. */
    public MaxUnpool3d(int[] kernelSize, int[] stride, int[] padding) {
        Arguments.nonNull("MaxUnpool3d", "kernelSize", kernelSize);
        Arguments.nonNull("MaxUnpool3d", "padding", padding);
        this.kernelSize = ConvNd.expand("MaxUnpool3d", "kernel_size", kernelSize, 3);
        this.stride = stride == null ? this.kernelSize.clone() : ConvNd.expand("MaxUnpool3d", "stride", stride, 3);
        this.padding = ConvNd.expand("MaxUnpool3d", "padding", padding, 3);
    }

    /** Needs the indices: use {@link #forward(Tensor, Tensor)}. */
    @Override
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException("MaxUnpool3d: forward needs the indices of the max pooling: call forward(input, indices)");
    }

    public Tensor forward(Tensor input, Tensor indices) {
        return forward(input, indices, null);
    }

    /** {@code outputSize}: the 3 trailing sizes (or the whole shape) of the result, or null for the default. */
    public Tensor forward(Tensor input, Tensor indices, long[] outputSize) {
        return F.maxUnpool3d(input, indices, kernelSize, stride, padding, outputSize);
    }

    @Override
    protected String extraRepr() {
        return "kernel_size=" + ConvNd.tuple(kernelSize) + ", stride=" + ConvNd.tuple(stride) + ", padding=" + ConvNd.tuple(padding);
    }
}
