package org.jtorch.backend;

import org.jtorch.op.AttentionOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * The kernels of the declared fused attention ({@link AttentionOps#FLASH_ATTENTION} and its backward) for one backend,
 * from its {@link AttentionKernels}: operands whose last dimension is strided are copied to contiguous scratch (the
 * kernels read rows of unit stride; heads split from one projection need no copy), the additive mask is expanded to the
 * scores' shape. A backend without attention kernels registers none: the dispatcher runs the op's composition
 * ({@link AttentionOps#ATTENTION_MATH}) there.
 */
final class AttentionOpKernels {
    private AttentionOpKernels() {}

    private static final int CAUSAL = 0, SCALE = 1;

    static void register(Backend backend) {
        AttentionKernels kernels = backend.attention();
        if (kernels == null) return;
        Device.Type type = backend.deviceType();
        KernelRegistry.registerMulti(type, AttentionOps.FLASH_ATTENTION.kernel(), (outs, in, g) -> {
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView q = unitLastStride(scratch, in[0]), k = unitLastStride(scratch, in[1]), v = unitLastStride(scratch, in[2]);
                kernels.forward(q, k, v, mask(in[3], in[0], in[1]), g[CAUSAL] != 0, g[SCALE], in[4], outs[0], outs[1]);
            }
        }, AttentionOps::flashForm);
        KernelRegistry.registerMulti(type, AttentionOps.FLASH_ATTENTION_BACKWARD.kernel(), (outs, in, g) -> {
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView go = unitLastStride(scratch, in[0]);
                StridedView q = unitLastStride(scratch, in[1]), k = unitLastStride(scratch, in[2]), v = unitLastStride(scratch, in[3]);
                StridedView o = unitLastStride(scratch, in[4]);
                kernels.backward(go, q, k, v, mask(in[6], in[1], in[2]), g[CAUSAL] != 0, g[SCALE], in[7], o, in[5], outs[0], outs[1],
                        outs[2]);
            }
        });
    }

    /** {@code t} itself when its last dimension has unit stride (what the kernels read), else a contiguous copy in scratch. */
    private static StridedView unitLastStride(ConvolutionOpKernels.Scratch scratch, StridedView t) {
        return t.size(-1) == 1 || t.stride(-1) == 1 ? t : scratch.operand(t, t.dtype(), t.shape());
    }

    /** The additive mask seen with the scores' shape {@code [batch..., L, S]} (stride 0 where it broadcasts), or null. */
    private static StridedView mask(StridedView mask, StridedView q, StridedView k) {
        return mask == null ? null : mask.expand(AttentionOps.FLASH_ATTENTION.pyName(), AttentionOps.scoreShape(q, k.size(-2)));
    }
}
