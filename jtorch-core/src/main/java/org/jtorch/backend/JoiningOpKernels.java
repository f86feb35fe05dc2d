package org.jtorch.backend;

import org.jtorch.Device;
import org.jtorch.op.JoiningOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.StridedView;

/**
 * The kernels of {@code cat} and {@code stack} ({@link JoiningOps}) for one backend: each input copied by the backend's
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
        KernelRegistry.register(type, JoiningOps.STACK.kernel(), (out, in, g) -> {
            if (out.numel() == 0) return;
            int d = org.jtorch.op.Shapes.wrapDim("stack", (int) g[0], out.dim());
            for (int i = 0; i < in.length; i++) {
                backend.copy(unsqueezed(in[i], d), slice(out, d, i, 1));
            }
        });
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
