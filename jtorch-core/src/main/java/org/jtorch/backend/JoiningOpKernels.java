package org.jtorch.backend;

import org.jtorch.op.JoiningOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * The kernels of {@code cat}, {@code stack} and {@code constant_pad_nd} ({@link JoiningOps}) for one backend: each input copied by the backend's
 * strided copy (which converts dtypes) into its slice of the result; contiguous inputs move as bulk row copies.
 */
public final class JoiningOpKernels {
    private JoiningOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, JoiningOps.CAT.kernel(), (out, in, g) -> {
            if (out.numel() == 0) return;
            int d = org.jtorch.op.Shapes.wrapDim("cat", (int) g[0], out.dim());
            long at = 0;
            for (StridedView t : in) {
                if (JoiningOps.skippedByCat(t.shape())) continue;
                long n = t.size(d);
                if (n > 0) backend.copy(t, slice(out, d, at, n));
                at += n;
            }
        });
        KernelRegistry.register(type, JoiningOps.CONSTANT_PAD_ND.kernel(), (out, in, g) -> constantPad(backend, out, in[0], g));
        KernelRegistry.register(type, JoiningOps.STACK.kernel(), (out, in, g) -> {
            if (out.numel() == 0) return;
            int d = org.jtorch.op.Shapes.wrapDim("stack", (int) g[0], out.dim());
            for (int i = 0; i < in.length; i++) {
                backend.copy(unsqueezed(in[i], d), slice(out, d, i, 1));
            }
        });
    }

    /**
     * constant_pad_nd: the result filled with the value, then the kept part of the input (after any crop) copied into its
     * place; nothing is copied when a dimension keeps no element.
     */
    private static void constantPad(Backend backend, StridedView out, StridedView x, double[] g) {
        if (out.numel() == 0) return;
        backend.fill(out, g[0], (long) g[0]);
        long[] shape = x.shape().clone();
        long from = x.offset(), to = out.offset();
        for (int i = 0; i < (g.length - 1) / 2; i++) {
            int d = x.dim() - 1 - i;
            long l = (long) g[1 + 2 * i], r = (long) g[2 + 2 * i];
            shape[d] = x.size(d) - Math.max(0, -l) - Math.max(0, -r);
            if (shape[d] <= 0) return;
            from += Math.max(0, -l) * x.stride(d);
            to += Math.max(0, l) * out.stride(d);
        }
        if (org.jtorch.op.Shapes.numel(shape) > 0) backend.copy(x.restrided(shape, x.strides(), from), out.restrided(shape, out.strides(), to));
    }

    /** {@code v.narrow(d, start, length)}. */
    private static StridedView slice(StridedView v, int d, long start, long length) {
        long[] shape = v.shape().clone();
        shape[d] = length;
        return v.restrided(shape, v.strides(), v.offset() + start * v.stride(d));
    }

    /** {@code v.unsqueeze(d)}: a size-1 dimension (any stride) inserted at {@code d}. */
    private static StridedView unsqueezed(StridedView v, int d) {
        long[] shape = new long[v.dim() + 1], strides = new long[v.dim() + 1];
        for (int k = 0, j = 0; k < shape.length; k++) {
            if (k == d) {
                shape[k] = 1;
                strides[k] = 1;
            } else {
                shape[k] = v.size(j);
                strides[k] = v.stride(j++);
            }
        }
        return v.restrided(shape, strides, v.offset());
    }
}
