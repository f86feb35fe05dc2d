package org.jtorch.backend;

import org.jtorch.op.StridedView;

/**
 * Convolution kernels (conv1d/2d, transposed convolution, im2col/col2im): forward and the two backwards.
 *
 * <p>Every kernel works on contiguous NCHW tensors of one floating dtype (float32 or float64; the registered kernels of
 * {@link ConvolutionOpKernels} convert other dtypes first, except the bfloat16 operands a backend reads itself:
 * {@link #convReadsBf16Input}) described by one {@link Geometry}. The front end validates;
 * kernels only compute, and write every element of their output.
 */
public interface ConvolutionKernels {

    /**
     * The geometry of a 2-D convolution {@code out[N, cout, oh, ow] = conv(in[N, cin, h, w], weight[cout, cin/groups, kh, kw])}.
     * {@code ph}, {@code pw} are the top/left paddings; the bottom/right paddings are implied by
     * {@code oh}, {@code ow} (so asymmetric "same" padding needs no separate field). A transposed
     * convolution is described by the geometry of the convolution it transposes.
     */
    record Geometry(int n, int cin, int h, int w, int cout, int kh, int kw, int sh, int sw, int ph, int pw,
                    int dh, int dw, int groups, int oh, int ow) {
        /** Input channels per group. */
        public int cinG() {
            return cin / groups;
        }

        /** Output channels per group. */
        public int coutG() {
            return cout / groups;
        }

        /** Rows of one group's im2col matrix: {@code cinG * kh * kw}. */
        public int kg() {
            return cinG() * kh * kw;
        }

        /** Whether the convolution is a plain matrix product per image (1x1, stride 1, no padding). */
        public boolean isPointwise() {
            return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && oh == h && ow == w;
        }
    }

    /** {@code out = conv(input, weight) + bias}; {@code bias} may be null. */
    void conv2d(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g);

    /**
     * Pointwise work on a finished block of a convolution's output: images {@code [image0, image1)}, channels
     * {@code [channel0, channel1)} and, in each channel's {@code oh * ow} plane in row-major order, the pixels
     * {@code [pixel0, pixel1)}. The JIT's fused epilogue (activation, residual add). Blocks do not overlap, together
     * cover the output once, and may run on several threads at once.
     */
    @FunctionalInterface
    interface Epilogue {
        void block(long image0, long image1, int channel0, int channel1, long pixel0, long pixel1);
    }

    /**
     * {@link #conv2d}, then {@code epilogue} over the output. A backend may run the epilogue on each block of the output
     * as a thread finishes it, while the block is still in that core's cache (the CPU's float32 kernels do); by default
     * it runs once over the whole output after the convolution.
     */
    default void conv2dWithEpilogue(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g,
                                    Epilogue epilogue) {
        conv2d(input, weight, bias, out, g);
        epilogue.block(0, g.n(), 0, g.cout(), 0, (long) g.oh() * g.ow());
    }

    /**
     * Whether {@link #conv2d} of {@code g} takes a contiguous bfloat16 input (with float32 weight, bias and output) and
     * widens it while it packs, so that the caller need not convert it into a float32 copy first. The results are
     * those of the float32 kernel on the widened input, bit for bit (widening is exact).
     */
    default boolean convReadsBf16Input(Geometry g) {
        return false;
    }

    /** As {@link #convReadsBf16Input}, for gradOut of {@link #conv2dBackwardInput}. */
    default boolean inputGradReadsBf16GradOut(Geometry g) {
        return false;
    }

    /** As {@link #convReadsBf16Input}, for both gradOut and input of {@link #conv2dBackwardWeight}. */
    default boolean weightGradReadsBf16(Geometry g) {
        return false;
    }

    /** {@code gradInput = conv^T(gradOut, weight)}: the input gradient, which is also the transposed convolution's forward. */
    void conv2dBackwardInput(StridedView gradOut, StridedView weight, StridedView gradInput, Geometry g);

    /** {@code gradWeight = sum over images of gradOut (x) im2col(input)}. */
    void conv2dBackwardWeight(StridedView gradOut, StridedView input, StridedView gradWeight, Geometry g);

    /** {@code gradBias[c] = sum over n, y, x of gradOut[n, c, y, x]} for {@code gradOut [N, C, H, W]}. */
    void conv2dBackwardBias(StridedView gradOut, StridedView gradBias);

    /** {@code col[N, cin*kh*kw, oh*ow]} of {@code input[N, cin, h, w]} (groups ignored). */
    void im2col(StridedView input, StridedView col, Geometry g);

    /** {@code out[N, cin, h, w]} = the sum of the columns of {@code col[N, cin*kh*kw, oh*ow]} at their positions. */
    void col2im(StridedView col, StridedView out, Geometry g);
}
