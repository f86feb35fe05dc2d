package org.jtorch.ops;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.ViewOps;
import org.jtorch.types.Arguments;

/**
 * The view ops' front end, behind {@link Tensor}'s view methods. Each runs one chain: traced, the call is reported as one op
 * ({@link #traced}) and replayed through the same method; otherwise the tensor is checked open, the view's geometry is
 * computed and checked by the op's meta function in {@link ViewOps}, {@link Tensor#trackedView} makes the view with its base
 * remembered for in-place ops on it, and the call is recorded for autograd ({@link Dispatcher#recordView}) when {@link
 * #recorded}. The scalars autograd keeps are built only then, so each op spells its record out: deferring them with a
 * lambda through one shared helper cost a view call up to half more (docs/BENCHMARKS.md, issue 15, branch handle24).
 *
 * <p>The view state itself (a view's base, the base's history it was derived from, the no-grad and multi-output marks)
 * stays on {@link Tensor}, which reads it for every in-place op and {@code gradFn()}: this class reaches it only through
 * {@link Tensor#trackedView} and {@link Tensor#sameTensorView}.
 */
public final class Views {
    private Views() {}

    /** {@code self.view(size)}: a new shape (one size may be -1); fails where the strides cannot express it, as PyTorch's. */
    public static Tensor view(Tensor self, long[] size) {
        if (Dispatcher.tracing()) return traced(ViewOps.VIEW, self, FrontEnds.args(size), () -> view(self, size));
        Arguments.nonNull("view", "newShape", size);
        self.checkOpen("view");
        ViewOps.Geometry v = ViewOps.view(self.shapeArray(), self.stridesArray(), self.storageOffset(), size);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.VIEW, self, r, FrontEnds.args(size));
        return r;
    }

    /** {@code self.reshape(size)}: a view where the strides allow it, otherwise a contiguous copy of the new shape. */
    public static Tensor reshape(Tensor self, long[] size) {
        if (Dispatcher.tracing()) return traced(ViewOps.RESHAPE, self, FrontEnds.args(size), () -> reshape(self, size));
        Arguments.nonNull("reshape", "newShape", size);
        self.checkOpen("reshape");
        long[] s = Shapes.inferSize("reshape", size, self.numel(), self.shapeArray());
        ViewOps.Geometry v = ViewOps.reshapeView(self.shapeArray(), self.stridesArray(), self.storageOffset(), s);
        if (v != null) {
            Tensor r = self.trackedView(v);
            if (recorded(self, r)) Dispatcher.recordView(ViewOps.VIEW, self, r, FrontEnds.args(s));
            return r;
        }
        try (Tensor c = self.contiguous()) {
            return c.view(s);
        }
    }

    /** {@code self.permute(dims)}: the dimensions reordered ({@code dims} a permutation, negative allowed). */
    public static Tensor permute(Tensor self, int[] dims) {
        if (Dispatcher.tracing()) return traced(ViewOps.PERMUTE, self, FrontEnds.args(dims), () -> permute(self, dims));
        Arguments.nonNull("permute", "dims", dims);
        self.checkOpen("permute");
        ViewOps.Geometry v = ViewOps.permute(self.shapeArray(), self.stridesArray(), self.storageOffset(), dims);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.PERMUTE, self, r, FrontEnds.args(dims));
        return r;
    }

    /** {@code self.transpose(dim0, dim1)}; dims 0 and -1 of a 0-d tensor name the tensor itself (an alias), as PyTorch. */
    public static Tensor transpose(Tensor self, int dim0, int dim1) {
        if (Dispatcher.tracing()) return traced(ViewOps.TRANSPOSE, self, FrontEnds.args(dim0, dim1), () -> transpose(self, dim0, dim1));
        self.checkOpen("transpose");
        ViewOps.Geometry v = ViewOps.transpose(self.shapeArray(), self.stridesArray(), self.storageOffset(), dim0, dim1);
        if (v == null) return self.alias();
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.TRANSPOSE, self, r, dim0, dim1);
        return r;
    }

    /** {@code self.t()}: a matrix transposed; 0-d and 1-d tensors come back as aliases. */
    public static Tensor t(Tensor self) {
        self.checkOpen("t");
        int dims = self.dim();
        if (dims > 2) {
            throw new IllegalArgumentException("t: expects a tensor with <= 2 dimensions, but got " + dims + " (shape "
                    + Shapes.format(self.shapeArray()) + ")");
        }
        return dims < 2 ? self.alias() : self.transpose(0, 1);
    }

    /** {@code self.mT}: the last two dimensions transposed. */
    public static Tensor mT(Tensor self) {
        self.checkOpen("mT");
        if (self.dim() < 2) {
            throw new IllegalArgumentException("mT: expected a tensor with >= 2 dimensions, got shape " + Shapes.format(self.shapeArray()));
        }
        return self.transpose(-2, -1);
    }

    /** {@code self.squeeze()}: every dimension of size 1 removed. */
    public static Tensor squeeze(Tensor self) {
        if (Dispatcher.tracing()) return traced(ViewOps.SQUEEZE, self, new double[0], () -> squeeze(self));
        self.checkOpen("squeeze");
        ViewOps.Geometry v = ViewOps.squeeze(self.shapeArray(), self.stridesArray(), self.storageOffset());
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.SQUEEZE, self, r);
        return r;
    }

    /** {@code self.squeeze(dim)}: dimension {@code dim} removed if its size is 1, else an alias. */
    public static Tensor squeeze(Tensor self, int dim) {
        if (Dispatcher.tracing()) return traced(ViewOps.SQUEEZE_DIM, self, FrontEnds.args(dim), () -> squeeze(self, dim));
        self.checkOpen("squeeze");
        ViewOps.Geometry v = ViewOps.squeezeDim(self.shapeArray(), self.stridesArray(), self.storageOffset(), dim);
        if (v == null) return self.alias();
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.SQUEEZE_DIM, self, r, dim);
        return r;
    }

    /** {@code self.unsqueeze(dim)}: a dimension of size 1 inserted at {@code dim} (in {@code [-dim()-1, dim()]}). */
    public static Tensor unsqueeze(Tensor self, int dim) {
        if (Dispatcher.tracing()) return traced(ViewOps.UNSQUEEZE, self, FrontEnds.args(dim), () -> unsqueeze(self, dim));
        self.checkOpen("unsqueeze");
        ViewOps.Geometry v = ViewOps.unsqueeze(self.shapeArray(), self.stridesArray(), self.storageOffset(), dim);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.UNSQUEEZE, self, r, dim);
        return r;
    }

    /** {@code self.expand(sizes)}: size-1 dimensions broadcast to larger sizes without copying (-1 keeps a size). */
    public static Tensor expand(Tensor self, long[] sizes) {
        if (Dispatcher.tracing()) return traced(ViewOps.EXPAND, self, FrontEnds.args(sizes), () -> expand(self, sizes));
        Arguments.nonNull("expand", "sizes", sizes);
        self.checkOpen("expand");
        ViewOps.Geometry v = ViewOps.expand(self.shapeArray(), self.stridesArray(), self.storageOffset(), sizes);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.EXPAND, self, r, FrontEnds.args(sizes));
        return r;
    }

    /** {@code self.narrow(dim, start, length)}: elements {@code [start, start+length)} of {@code dim}. */
    public static Tensor narrow(Tensor self, int dim, long start, long length) {
        if (Dispatcher.tracing()) {
            return traced(ViewOps.NARROW, self, new double[] {dim, start, length}, () -> narrow(self, dim, start, length));
        }
        self.checkOpen("narrow");
        long[] shape = self.shapeArray();
        ViewOps.Geometry v = ViewOps.narrow(shape, self.stridesArray(), self.storageOffset(), dim, start, length);
        Tensor r = self.trackedView(v);
        // the node keeps the start counted from the front: its backward reads start + length as the slice's end
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.NARROW, self, r, dim, start < 0 ? start + shape[Shapes.wrapDim("narrow", dim, shape.length)] : start, length);
        return r;
    }

    /** {@code self[..., start:end:step, ...]} along {@code dim}: bounds clamped, negative ones counted from the end. */
    public static Tensor slice(Tensor self, int dim, long start, long end, long step) {
        if (Dispatcher.tracing()) {
            return traced(ViewOps.SLICE, self, new double[] {dim, start, end, step}, () -> slice(self, dim, start, end, step));
        }
        self.checkOpen("slice");
        long[] shape = self.shapeArray();
        ViewOps.Geometry v = ViewOps.slice(shape, self.stridesArray(), self.storageOffset(), dim, start, end, step);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) {
            long[] bounds = ViewOps.sliceBounds(shape[Shapes.wrapDim("slice", dim, shape.length)], start, end);
            Dispatcher.recordView(ViewOps.SLICE, self, r, dim, bounds[0], bounds[1], step);
        }
        return r;
    }

    /** {@code self.select(dim, index)}: dimension {@code dim} removed by taking {@code index} (negative from the end). */
    public static Tensor select(Tensor self, int dim, long index) {
        if (Dispatcher.tracing()) return traced(ViewOps.SELECT, self, new double[] {dim, index}, () -> select(self, dim, index));
        self.checkOpen("select");
        ViewOps.Geometry v = ViewOps.select(self.shapeArray(), self.stridesArray(), self.storageOffset(), dim, index);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.SELECT, self, r, dim, index);
        return r;
    }

    /** {@code self.flatten(startDim, endDim)}: those dimensions merged into one (a view where the strides allow it). */
    public static Tensor flatten(Tensor self, int startDim, int endDim) {
        self.checkOpen("flatten");
        long[] shape = self.shapeArray();
        if (shape.length == 0) {
            Shapes.wrapDim("flatten", startDim, 0);
            Shapes.wrapDim("flatten", endDim, 0);
            return self.reshape(1);
        }
        int a = Shapes.wrapDim("flatten", startDim, shape.length);
        int b = Shapes.wrapDim("flatten", endDim, shape.length);
        if (a > b) throw new IllegalArgumentException("flatten: start_dim (" + startDim + ") cannot come after end_dim (" + endDim + ")");
        long[] s = new long[shape.length - (b - a)];
        int j = 0;
        for (int i = 0; i < a; i++) s[j++] = shape[i];
        long m = 1;
        for (int i = a; i <= b; i++) m *= shape[i];
        s[j++] = m;
        for (int i = b + 1; i < shape.length; i++) s[j++] = shape[i];
        return self.reshape(s);
    }

    /** {@code self.unflatten(dim, sizes)}: dimension {@code dim} split into {@code sizes} (one may be -1). */
    public static Tensor unflatten(Tensor self, int dim, long[] sizes) {
        Arguments.nonNull("unflatten", "sizes", sizes);
        self.checkOpen("unflatten");
        long[] shape = self.shapeArray();
        int d = Shapes.existingDim("unflatten", dim, shape.length);
        long[] inner = Shapes.inferSize("unflatten", sizes, shape[d], new long[] {shape[d]});
        long[] s = new long[shape.length - 1 + inner.length];
        int j = 0;
        for (int i = 0; i < d; i++) s[j++] = shape[i];
        for (long v : inner) s[j++] = v;
        for (int i = d + 1; i < shape.length; i++) s[j++] = shape[i];
        return self.view(s);
    }

    /** {@code self.unfold(dim, size, step)}: every window of {@code size} taken each {@code step}, as a new last dimension. */
    public static Tensor unfold(Tensor self, int dim, long size, long step) {
        if (Dispatcher.tracing()) return traced(ViewOps.UNFOLD, self, new double[] {dim, size, step}, () -> unfold(self, dim, size, step));
        self.checkOpen("unfold");
        ViewOps.Geometry v = ViewOps.unfold(self.shapeArray(), self.stridesArray(), self.storageOffset(), dim, size, step);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.UNFOLD, self, r, dim, size, step);
        return r;
    }

    /** {@code self.diagonal(offset, dim1, dim2)}: the {@code offset}-th diagonal of the planes of dim1 and dim2, as the last dim. */
    public static Tensor diagonal(Tensor self, long offset, int dim1, int dim2) {
        if (Dispatcher.tracing()) {
            return traced(ViewOps.DIAGONAL, self, new double[] {offset, dim1, dim2}, () -> diagonal(self, offset, dim1, dim2));
        }
        self.checkOpen("diagonal");
        ViewOps.Geometry v = ViewOps.diagonal(self.shapeArray(), self.stridesArray(), self.storageOffset(), offset, dim1, dim2);
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.DIAGONAL, self, r, offset, dim1, dim2);
        return r;
    }

    /** {@code torch.as_strided}: explicit sizes, strides and storage offset, in elements (never traced: see {@link ViewOps#AS_STRIDED}). */
    public static Tensor asStrided(Tensor self, long[] size, long[] stride, long storageOffset) {
        Arguments.nonNull("asStrided", "size", size);
        Arguments.nonNull("asStrided", "stride", stride);
        self.checkOpen("asStrided");
        ViewOps.Geometry v = ViewOps.asStrided(size, stride, storageOffset, self.storage().byteSize() / self.dtype().byteSize());
        Tensor r = self.trackedView(v);
        if (recorded(self, r)) Dispatcher.recordView(ViewOps.AS_STRIDED, self, r, ViewOps.asStridedScalars(self.shapeArray(), self.stridesArray(), self.storageOffset(), v));
        return r;
    }

    /** {@code self.contiguous()}: an alias when it is contiguous, else a contiguous copy. */
    public static Tensor contiguous(Tensor self) {
        if (Dispatcher.tracing()) return traced(FrontEndOps.CONTIGUOUS, self, new double[0], () -> contiguous(self));
        self.checkOpen("contiguous");
        return self.isContiguous() ? self.alias() : self.clone();
    }

    /** {@code self.alias()}: another handle to the same tensor, with a storage reference of its own and its place in the graph. */
    public static Tensor alias(Tensor self) {
        if (Dispatcher.tracing()) return traced(FrontEndOps.ALIAS, self, new double[0], () -> alias(self));
        self.checkOpen("alias");
        return self.sameTensorView();
    }

    /**
     * The consecutive views of {@code self} of {@code sizes} elements along {@code dim} (wrapped), or with {@code select} its
     * slices along {@code dim} (each without it; {@code sizes} empty), returned by one call of {@code op} ({@code split},
     * {@code chunk}, {@code unbind}): marked as such (in-place ops on them are refused under autograd, as PyTorch's) and
     * recorded for autograd as one node for all of them, whose backward joins their gradients once.
     */
    public static List<Tensor> splitViews(OpDef op, Tensor self, int dim, long[] sizes, boolean select) {
        Arguments.nonNull("splitViews", "sizes", sizes);
        Arguments.nonNull("splitViews", "op", op);
        self.checkOpen(op.pyName());
        long[] shape = self.shapeArray();
        long[] strides = self.stridesArray();
        long offset = self.storageOffset();
        if (select && shape[dim] > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(op.pyName() + ": cannot return " + shape[dim] + " views of a tensor of shape "
                    + Shapes.format(shape) + " (more than a Java list can hold)");
        }
        Tensor[] views = new Tensor[select ? (int) shape[dim] : sizes.length];
        long start = 0;
        for (int i = 0; i < views.length; i++) {
            ViewOps.Geometry v = select ? ViewOps.select(shape, strides, offset, dim, i) : ViewOps.narrow(shape, strides, offset, dim, start, sizes[i]);
            if (!select) start += sizes[i];
            views[i] = self.trackedView(v);
        }
        if (views.length > 0 && recorded(self, views[0])) {
            double[] scalars = new double[select ? 1 : sizes.length + 1];
            scalars[0] = dim;
            for (int i = 1; i < scalars.length; i++) scalars[i] = sizes[i - 1];
            Dispatcher.recordView(op, self, views, scalars);
        }
        for (int i = 0; i < views.length; i++) views[i].markMultiOutputView(op.node(), i);
        return new ArrayList<>(Arrays.asList(views));
    }

    /** Reports {@code call}, a view op's front end on {@code self} with {@code args}, to this thread's trace as one op. */
    private static Tensor traced(OpDef op, Tensor self, double[] args, Supplier<Tensor> call) {
        return Dispatcher.traceFrontEnd(op, new Tensor[] {self}, args, call);
    }

    /**
     * Whether the call that made {@code view} of {@code self} ({@link Tensor#trackedView}) must be recorded for autograd: a
     * view made for autograd has a base (one made with grad off from a graph tensor has none), and it needs a node when
     * {@code self} requires grad.
     */
    private static boolean recorded(Tensor self, Tensor view) {
        return view.viewBase() != null && self.requiresGrad();
    }
}
