package org.jtorch.backend;

import org.jtorch.Device;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.PointwiseKernel;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.op.ViewOps;

/**
 * The kernels of the views' backward ops ({@link ViewOps}) for one backend: the result filled with zeros, then the gradient
 * written by the backend's strided copy through the view's geometry of the result, the same function that made the view.
 * Where {@code unfold}'s windows overlap, the overlapping part is added by the backend's {@code add} kernel.
 */
public final class ViewBackwardOpKernels {
    private ViewBackwardOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, ViewOps.SLICE_BACKWARD.kernel(), (out, in, g) -> {
            backend.fill(out, 0, 0);
            copyInto(backend, in[0], out, ViewOps.slice(out.shape(), out.strides(), out.offset(), (int) g[0], (long) g[1], (long) g[2], (long) g[3]));
        });
        KernelRegistry.register(type, ViewOps.SELECT_BACKWARD.kernel(), (out, in, g) -> {
            backend.fill(out, 0, 0);
            copyInto(backend, in[0], out, ViewOps.select(out.shape(), out.strides(), out.offset(), (int) g[0], (long) g[1]));
        });
        KernelRegistry.register(type, ViewOps.DIAGONAL_BACKWARD.kernel(), (out, in, g) -> {
            backend.fill(out, 0, 0);
            copyInto(backend, in[0], out, ViewOps.diagonal(out.shape(), out.strides(), out.offset(), (long) g[0], (int) g[1], (int) g[2]));
        });
        KernelRegistry.register(type, ViewOps.UNFOLD_BACKWARD.kernel(), (out, in, g) -> unfoldBackward(backend, out, in[0], g));
        KernelRegistry.register(type, ViewOps.SPLIT_WITH_SIZES_BACKWARD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("split_with_sizes_backward", (int) g[0], out.dim());
            if (anyMissing(in)) backend.fill(out, 0, 0);
            long at = 0;
            for (int i = 0; i < in.length; i++) {
                long n = (long) g[1 + i];
                if (in[i] != null && n > 0) copyInto(backend, in[i], out, ViewOps.narrow(out.shape(), out.strides(), out.offset(), d, at, n));
                at += n;
            }
        });
        KernelRegistry.register(type, ViewOps.UNBIND_BACKWARD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("unbind_backward", (int) g[0], out.dim());
            if (anyMissing(in)) backend.fill(out, 0, 0);
            for (int i = 0; i < in.length; i++) {
                if (in[i] != null) copyInto(backend, in[i], out, ViewOps.select(out.shape(), out.strides(), out.offset(), d, i));
            }
        });
    }

    private static boolean anyMissing(StridedView[] in) {
        for (StridedView v : in) if (v == null) return true;
        return false;
    }

    /** {@code grad} copied into the part of {@code out} that {@code view} (a geometry over out's memory) names. */
    private static void copyInto(Backend backend, StridedView grad, StridedView out, ViewOps.Geometry view) {
        if (Shapes.numel(view.shape()) == 0) return;
        backend.copy(grad, out.restrided(view.shape(), view.strides(), view.offset()));
    }

    /**
     * Element {@code k} of every window lands at {@code w * step + k}: for {@code k < step} those places are distinct across
     * windows and elements, so that part is one copy; each later {@code k} (windows overlap) is added on top.
     */
    private static void unfoldBackward(Backend backend, StridedView out, StridedView grad, double[] g) {
        backend.fill(out, 0, 0);
        long size = (long) g[1], step = (long) g[2];
        ViewOps.Geometry windows = ViewOps.unfold(out.shape(), out.strides(), out.offset(), (int) g[0], size, step);
        if (Shapes.numel(windows.shape()) == 0) return;
        int last = windows.shape().length - 1;
        long disjoint = Math.min(step, size);
        copyInto(backend, narrowLast(grad, 0, disjoint), out, narrowLast(windows, disjoint));
        if (disjoint == size) return;
        PointwiseKernel add = KernelRegistry.pointwise(PointwiseOps.ADD, out.device().type());
        long[] shape = java.util.Arrays.copyOf(windows.shape(), last);
        long[] strides = java.util.Arrays.copyOf(windows.strides(), last);
        long[] gradStrides = java.util.Arrays.copyOf(grad.strides(), last);
        for (long k = disjoint; k < size; k++) {
            StridedView target = out.restrided(shape, strides, windows.offset() + k * windows.strides()[last]);
            StridedView part = grad.restrided(shape, gradStrides, grad.offset() + k * grad.stride(last));
            add.run(out.device().index(), PointwiseOps.ADD.computeType(out.dtype(), out.dtype()), target, target, part, 1, 0);
        }
    }

    /** The first {@code n} elements of the last dimension of {@code v}. */
    private static StridedView narrowLast(StridedView v, long from, long n) {
        long[] shape = v.shape().clone();
        shape[shape.length - 1] = n;
        return v.restrided(shape, v.strides(), v.offset() + from * v.stride(shape.length - 1));
    }

    private static ViewOps.Geometry narrowLast(ViewOps.Geometry v, long n) {
        long[] shape = v.shape().clone();
        shape[shape.length - 1] = n;
        return new ViewOps.Geometry(shape, v.strides(), v.offset());
    }
}
