package org.jtorch.backend;

import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.PointwiseKernel;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.op.ViewOps;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the views' backward ops ({@link ViewOps}) for one backend: the result filled with zeros, then the gradient
 * written by the backend's strided copy through the view's geometry of the result, the same function that made the view.
 * Where {@code unfold}'s windows overlap, the overlapping part is added by the backend's {@code add} kernel.
 *
 * <p>{@code as_strided_backward} adds by storage position into zeros: the dimensions along which a geometry's elements may
 * share a place are summed first where their stride is 0 (the backend's sum), and the rest are walked one index at a time
 * over the largest set of dimensions laid out without overlap, each step one {@code add} of disjoint places; a geometry
 * without overlap is one copy. {@code as_strided_scatter} is two copies.
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
        KernelRegistry.register(type, ViewOps.AS_STRIDED_BACKWARD.kernel(),
                (out, in, g) -> asStridedBackward(backend, out, in[0], ViewOps.AsStridedCall.of("as_strided_backward", g)));
        KernelRegistry.register(type, ViewOps.AS_STRIDED_SCATTER.kernel(), (out, in, g) -> {
            backend.copy(in[0], out);
            ViewOps.Geometry v = ViewOps.scatterGeometry("as_strided_scatter", g, out.shape());
            if (Shapes.numel(v.shape()) > 0) backend.copy(in[1], out.restrided(v.shape(), v.strides(), out.offset() + v.offset()));
        });
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

    /**
     * PyTorch's {@code as_strided_backward} (or its adjoint, {@link ViewOps.AsStridedCall#transposed}) into {@code out}: the
     * gradient added into zeros at the scattered geometry's places, read through the other geometry; where the input's
     * geometry may overlap, divided by the count of its elements at each place (after the read, or before the scatter for
     * the adjoint). Places count from the lower of the two storage offsets.
     */
    private static void asStridedBackward(Backend backend, StridedView out, StridedView grad, ViewOps.AsStridedCall c) {
        if (out.numel() == 0) return;
        if (grad.numel() == 0) {
            backend.fill(out, 0, 0);
            return;
        }
        ViewOps.Geometry input = c.input(), view = c.view();
        long base = Math.min(input.offset(), view.offset());
        long extent = Math.max(reach(input, base), reach(view, base));
        Device device = out.device();
        DType dtype = out.dtype();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView storage = scratch.allocate(device, new long[] {extent}, dtype);
            backend.fill(storage, 0, 0);
            StridedView count = null; // how many of the input's elements share each one's place, read through its geometry
            if (ViewOps.mayOverlap(input.shape(), input.strides())) {
                StridedView counts = scratch.allocate(device, new long[] {extent}, dtype);
                backend.fill(counts, 0, 0);
                StridedView one = scratch.allocate(device, new long[0], dtype);
                backend.fill(one, 1, 1);
                addAt(backend, scratch, one.restrided(input.shape(), new long[input.shape().length], one.offset()), counts, input, base);
                count = at(counts, input, base);
            }
            StridedView src = grad;
            if (count != null && c.transposed()) {
                src = scratch.allocate(device, grad.shape(), dtype);
                pointwise(PointwiseOps.DIV, src, grad, count);
            }
            addAt(backend, scratch, src, storage, c.scattered(), base);
            backend.copy(at(storage, c.read(), base), out);
            if (count != null && !c.transposed()) pointwise(PointwiseOps.DIV, out, out, count);
        }
    }

    /** One past the last place of a non-empty geometry, counted from {@code base}. */
    private static long reach(ViewOps.Geometry g, long base) {
        long last = g.offset() - base;
        for (int d = 0; d < g.shape().length; d++) last += (g.shape()[d] - 1) * g.strides()[d];
        return last + 1;
    }

    /** {@code storage} (1-d, its element 0 at place {@code base}) seen through geometry {@code g}. */
    private static StridedView at(StridedView storage, ViewOps.Geometry g, long base) {
        return storage.restrided(g.shape(), g.strides(), storage.offset() + g.offset() - base);
    }

    /**
     * {@code storage[place(i)] += src[i]} for every index {@code i} of geometry {@code g} (of {@code src}'s shape), elements
     * that share a place summed: dimensions of stride 0 first summed away, then one copy where no two elements share a place,
     * else one {@code add} per index of the dimensions that overlap, over the disjoint ones.
     */
    private static void addAt(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView src, StridedView storage,
                              ViewOps.Geometry g, long base) {
        long[] shape = g.shape().clone();
        long[] strides = g.strides();
        int n = shape.length;
        boolean broadcast = false;
        for (int d = 0; d < n; d++) broadcast |= strides[d] == 0 && shape[d] > 1;
        if (broadcast) {
            // summed over the stride-0 dimensions into [.., 1, ..] (a reduction output: stride 0 along those dimensions)
            long[] kept = shape.clone();
            for (int d = 0; d < n; d++) if (strides[d] == 0) kept[d] = 1;
            StridedView sum = scratch.allocate(storage.device(), kept, src.dtype());
            long[] sumStrides = Shapes.contiguousStrides(kept);
            for (int d = 0; d < n; d++) if (kept[d] != shape[d]) sumStrides[d] = 0;
            backend.reductions().reduce(ReduceOp.SUM, src, sum.restrided(shape, sumStrides, sum.offset()), 0);
            src = sum;
            shape = kept;
        }
        boolean[] disjoint = ViewOps.disjointDims(shape, strides);
        int[] loop = java.util.stream.IntStream.range(0, n).filter(d -> !disjoint[d]).toArray();
        long[] inner = shape.clone();
        for (int d : loop) inner[d] = 1;
        StridedView target = storage.restrided(inner, strides, storage.offset() + g.offset() - base);
        if (loop.length == 0) {
            backend.copy(src, target);
            return;
        }
        PointwiseKernel add = KernelRegistry.pointwise(PointwiseOps.ADD, storage.device().type());
        DType compute = PointwiseOps.ADD.computeType(storage.dtype(), storage.dtype());
        long[] index = new long[loop.length];
        long steps = 1;
        for (int d : loop) steps = Math.multiplyExact(steps, shape[d]);
        for (long step = 0; step < steps; step++) {
            long place = target.offset(), from = src.offset();
            for (int k = 0; k < loop.length; k++) {
                place += index[k] * strides[loop[k]];
                from += index[k] * src.stride(loop[k]);
            }
            StridedView t = target.restrided(inner, strides, place);
            add.run(storage.device().index(), compute, t, t, src.restrided(inner, src.strides(), from), 1, 0);
            for (int k = loop.length - 1; k >= 0 && ++index[k] == shape[loop[k]]; k--) index[k] = 0;
        }
    }

    /** {@code out = op(a, b)} by the backend's kernel of the pointwise {@code op}, in its compute dtype for {@code out}'s. */
    private static void pointwise(OpDef op, StridedView out, StridedView a, StridedView b) {
        KernelRegistry.pointwise(op, out.device().type()).run(out.device().index(), op.computeType(out.dtype(), DType.FLOAT32), out, a, b, 0, 0);
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
