package org.jtorch.op;

import static org.jtorch.op.DTypeRule.SAME;
import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.scalar;

import java.util.Arrays;
import java.util.List;

/**
 * The view ops: each returns a tensor that shares its input's memory, with a new geometry (sizes, strides and storage
 * offset, in elements). Each is declared once here with PyTorch's signature, and its meta function is the geometry:
 * computed and checked from the input's geometry and the arguments, without data. Errors name the op, the shape and
 * the offending argument, as PyTorch's do. The view front end ({@code ops.Views}, behind {@code Tensor}'s view methods)
 * is these functions plus autograd; the trace records each call as one op, replayed through the same method.
 *
 * <p>Each view's derivative is declared with ops, as PyTorch's derivatives.yaml: a view of the gradient back ({@code
 * permute}, {@code transpose}, {@code squeeze}), a reshape to the input's sizes, a sum back to them ({@code expand}), or
 * the gradient placed into zeros of the input's sizes by a backward op declared here ({@code slice_backward}, {@code
 * select_backward}, {@code unfold_backward}, {@code diagonal_backward}, {@code split_with_sizes_backward}, {@code
 * unbind_backward}), whose kernels are a fill and the backends' strided copy. The derivatives read the input's sizes
 * ({@link Expr.InputSizes}), never its values: a view's autograd node holds no buffer. The scalars autograd keeps for a
 * call are resolved where the call's own may count from the end ({@code narrow}'s and {@code slice}'s bounds, {@code
 * split}'s sizes).
 */
public final class ViewOps {
    private ViewOps() {}

    /** A view's sizes and strides (in elements) and its storage offset (in elements). */
    public record Geometry(long[] shape, long[] strides, long offset) {}

    private static final Param SELF = Param.tensor("self");

    private static final Expr SIZES = new Expr.InputSizes(0, "self");

    public static final OpDef VIEW = view("view", reshapeBack(), new Param("size", "SymInt[]", null));
    public static final OpDef RESHAPE = OpDef.frontEnd("reshape", true).rule(SAME).signature(SELF, new Param("shape", "SymInt[]", null))
            .derivatives(reshapeBack()).doc("a view, or a copy where strides cannot express it").build();
    public static final OpDef PERMUTE = view("permute", () -> List.of(call(ViewOps.PERMUTE, GRAD, new Expr.InversePermutation(0, "dims"))),
            new Param("dims", "int[]", null));
    public static final OpDef TRANSPOSE = view("transpose", () -> List.of(call(ViewOps.TRANSPOSE, GRAD, scalar(0, "dim0"), scalar(1, "dim1"))),
            new Param("dim0", "int", null), new Param("dim1", "int", null));
    public static final OpDef SQUEEZE = view("squeeze", reshapeBack());
    public static final OpDef SQUEEZE_DIM = OpDef.frontEnd("squeeze_dim", true).py("squeeze").rule(SAME).node("SqueezeBackward1")
            .signature(SELF, new Param("dim", "int", null)).derivatives(reshapeBack()).doc("a view").build();
    public static final OpDef UNSQUEEZE = view("unsqueeze", () -> List.of(call(ViewOps.SQUEEZE_DIM, GRAD, scalar(0, "dim"))),
            new Param("dim", "int", null));
    public static final OpDef EXPAND = view("expand", () -> List.of(call(ViewOps.SUM_TO_SIZE, GRAD, SIZES)),
            new Param("size", "SymInt[]", null));
    public static final OpDef SLICE = view("slice", () -> List.of(call(ViewOps.SLICE_BACKWARD, GRAD, scalar(0, "dim"), scalar(1, "start"),
            scalar(2, "end"), scalar(3, "step"), SIZES)), new Param("dim", "int", "0"), new Param("start", "SymInt?", "None"),
            new Param("end", "SymInt?", "None"), new Param("step", "SymInt", "1"));
    public static final OpDef NARROW = view("narrow", () -> List.of(call(ViewOps.SLICE_BACKWARD, GRAD, scalar(0, "dim"), scalar(1, "start"),
            Expr.math(Fn.ADD, scalar(1, "start"), scalar(2, "length")), Expr.c(1), SIZES)), new Param("dim", "int", null),
            new Param("start", "SymInt", null), new Param("length", "SymInt", null));
    public static final OpDef SELECT = view("select", () -> List.of(call(ViewOps.SELECT_BACKWARD, GRAD, scalar(0, "dim"), scalar(1, "index"), SIZES)),
            new Param("dim", "int", null), new Param("index", "SymInt", null));
    public static final OpDef UNFOLD = view("unfold", () -> List.of(call(ViewOps.UNFOLD_BACKWARD, GRAD, scalar(0, "dimension"), scalar(1, "size"),
            scalar(2, "step"), SIZES)), new Param("dimension", "int", null), new Param("size", "int", null), new Param("step", "int", null));
    public static final OpDef DIAGONAL = view("diagonal", () -> List.of(call(ViewOps.DIAGONAL_BACKWARD, GRAD, scalar(0, "offset"),
            scalar(1, "dim1"), scalar(2, "dim2"), SIZES)), new Param("offset", "int", "0"), new Param("dim1", "int", "0"),
            new Param("dim2", "int", "1"));

    /**
     * {@code as_strided(size, stride, storage_offset)}: a view with explicit geometry, its offset absolute in the storage (not
     * traced: a replay on an input at another storage offset would read other memory). Autograd keeps the resolved
     * {@code [TensorGeometry(self), size, stride, storage_offset]} ({@link #geometryScalars} of both), so its backward is
     * {@code as_strided_backward}'s call as derivatives.yaml writes it.
     */
    public static final OpDef AS_STRIDED = view("as_strided", () -> List.of(call(ViewOps.AS_STRIDED_BACKWARD, GRAD, Expr.c(0),
            new Expr.ScalarRest(0, false, "TensorGeometry(self), size, stride, storage_offset"))), new Param("size", "SymInt[]", null),
            new Param("stride", "SymInt[]", null), new Param("storage_offset", "SymInt?", "None"));

    // ------------------------------------------------------------------ views returning several tensors: one node for all

    /**
     * {@code split(split_size, dim)}: consecutive views of {@code split_size} elements (the last may be smaller). Autograd keeps
     * the resolved {@code [dim, sizes...]} of the call, so its backward is {@code split_with_sizes}'.
     */
    public static final OpDef SPLIT = views("split", "SplitBackward0", new Param("split_size", "SymInt", null), new Param("dim", "int", "0"));
    /** {@code split_with_sizes(split_sizes, dim)}; the list comes last here ({@code [dim, sizes...]}), as the call's last scalars. */
    public static final OpDef SPLIT_WITH_SIZES = views("split_with_sizes", "SplitWithSizesBackward0", new Param("dim", "int", "0"),
            new Param("split_sizes", "SymInt[]", null));
    /** {@code chunk(chunks, dim)}: {@code split} with {@code ceil(size / chunks)} elements, PyTorch's {@code SplitBackward0}. */
    public static final OpDef CHUNK = views("chunk", "SplitBackward0", new Param("chunks", "int", null), new Param("dim", "int", "0"));
    public static final OpDef UNBIND = OpDef.frontEnd("unbind", true).rule(SAME).node("UnbindBackward0").signature(SELF, new Param("dim", "int", "0")).returns("Tensor[]")
            .derivatives(() -> List.of(call(ViewOps.UNBIND_BACKWARD, new Expr.OutputGrads(), scalar(0, "dim"), SIZES)))
            .doc("views, one per index of dim, the dimension removed").build();

    private static OpDef views(String name, String node, Param... params) {
        Param[] all = new Param[params.length + 1];
        all[0] = SELF;
        System.arraycopy(params, 0, all, 1, params.length);
        return OpDef.frontEnd(name, true).rule(SAME).node(node).signature(all).returns("Tensor[]").derivatives(() -> List.of(call(ViewOps.SPLIT_WITH_SIZES_BACKWARD,
                new Expr.OutputGrads(), scalar(0, "dim"), new Expr.ScalarRest(1, false, "split_sizes"))))
                .doc("consecutive views along dim").build();
    }

    // ------------------------------------------------------------------ the views' backward ops

    /** {@code sum_to_size(size)}: the sum over the dimensions {@code self} was broadcast along ({@code expand}'s backward). */
    public static final OpDef SUM_TO_SIZE = OpDef.frontEnd("sum_to_size", true).rule(SAME).signature(SELF, new Param("size", "SymInt[]", null))
            .doc("self summed back to a shape it broadcasts from").build();

    private static final Param GRAD_OUTPUT = Param.tensor("grad_output");
    private static final Param INPUT_SIZES = new Param("input_sizes", "SymInt[]", null);

    /**
     * {@code slice_backward(grad_output, dim, start, end, step, input_sizes)}: zeros of {@code input_sizes} with the gradient
     * in the slice ({@code input_sizes} comes last here, so that it is the call's last scalars).
     */
    public static final OpDef SLICE_BACKWARD = OpDef.structured("slice_backward").rule(SAME)
            .signature(GRAD_OUTPUT, new Param("dim", "int", null), new Param("start", "SymInt", null), new Param("end", "SymInt", null),
                    new Param("step", "SymInt", null), INPUT_SIZES)
            .meta((in, g) -> backwardMeta("slice_backward", in[0], sizes(g, 4),
                    slice(sizes(g, 4), Shapes.contiguousStrides(sizes(g, 4)), 0, (int) g[0], (long) g[1], (long) g[2], (long) g[3])))
            .derivatives(() -> List.of(call(ViewOps.SLICE, GRAD, scalar(0, "dim"), scalar(1, "start"), scalar(2, "end"), scalar(3, "step"))))
            .doc("zeros of input_sizes, the gradient in the slice").build();

    /** {@code select_backward(grad_output, dim, index, input_sizes)}: zeros of {@code input_sizes}, the gradient at the index. */
    public static final OpDef SELECT_BACKWARD = OpDef.structured("select_backward").rule(SAME)
            .signature(GRAD_OUTPUT, new Param("dim", "int", null), new Param("index", "SymInt", null), INPUT_SIZES)
            .meta((in, g) -> backwardMeta("select_backward", in[0], sizes(g, 2),
                    select(sizes(g, 2), Shapes.contiguousStrides(sizes(g, 2)), 0, (int) g[0], (long) g[1])))
            .derivatives(() -> List.of(call(ViewOps.SELECT, GRAD, scalar(0, "dim"), scalar(1, "index"))))
            .doc("zeros of input_sizes, the gradient at the index").build();

    /**
     * {@code unfold_backward(grad_in, dim, size, step, input_sizes)}: zeros of {@code input_sizes} with each window's gradient
     * added at its place (windows overlap where {@code step < size}).
     */
    public static final OpDef UNFOLD_BACKWARD = OpDef.structured("unfold_backward").rule(SAME)
            .signature(Param.tensor("grad_in"), new Param("dim", "int", null), new Param("size", "int", null), new Param("step", "int", null),
                    INPUT_SIZES)
            .meta((in, g) -> backwardMeta("unfold_backward", in[0], sizes(g, 3),
                    unfold(sizes(g, 3), Shapes.contiguousStrides(sizes(g, 3)), 0, (int) g[0], (long) g[1], (long) g[2])))
            .derivatives(() -> List.of(call(ViewOps.UNFOLD, GRAD, scalar(0, "dim"), scalar(1, "size"), scalar(2, "step"))))
            .doc("zeros of input_sizes, each window's gradient added at its place").build();

    /** {@code diagonal_backward(grad_output, offset, dim1, dim2, input_sizes)}: zeros of {@code input_sizes}, the gradient on the diagonal. */
    public static final OpDef DIAGONAL_BACKWARD = OpDef.structured("diagonal_backward").rule(SAME)
            .signature(GRAD_OUTPUT, new Param("offset", "int", null), new Param("dim1", "int", null), new Param("dim2", "int", null),
                    INPUT_SIZES)
            .meta((in, g) -> backwardMeta("diagonal_backward", in[0], sizes(g, 3),
                    diagonal(sizes(g, 3), Shapes.contiguousStrides(sizes(g, 3)), 0, (long) g[0], (int) g[1], (int) g[2])))
            .derivatives(() -> List.of(call(ViewOps.DIAGONAL, GRAD, scalar(0, "offset"), scalar(1, "dim1"), scalar(2, "dim2"))))
            .doc("zeros of input_sizes, the gradient on the diagonal").build();

    /**
     * {@code split_with_sizes_backward(grads, dim, split_sizes)}: the pieces' gradients joined along {@code dim}, zeros where a
     * piece got none (null in {@code grads}); at least one is given. Its derivative gives each piece its slice.
     */
    public static final OpDef SPLIT_WITH_SIZES_BACKWARD = OpDef.structured("split_with_sizes_backward").rule(SAME)
            .signature(new Param("grads", "Tensor[]", null), new Param("dim", "int", null), new Param("split_sizes", "SymInt[]", null))
            .meta(ViewOps::splitBackwardMeta)
            .derivatives(() -> List.of(new Expr.Part(GRAD, 0, false, 1)))
            .doc("the pieces' gradients joined along dim, zeros for a missing one").build();

    /** {@code unbind_backward(grads, dim, input_sizes)}: the slices' gradients stacked along {@code dim}, zeros where one got none. */
    public static final OpDef UNBIND_BACKWARD = OpDef.structured("unbind_backward").rule(SAME)
            .signature(new Param("grads", "Tensor[]", null), new Param("dim", "int", null), INPUT_SIZES)
            .meta(ViewOps::unbindBackwardMeta)
            .derivatives(() -> List.of(new Expr.Part(GRAD, 0, true)))
            .doc("the slices' gradients stacked along dim, zeros for a missing one").build();

    private static final Expr GEOMETRIES = new Expr.ScalarRest(1, false, "input_geometry, size, stride, storage_offset");

    private static final Expr SCATTER_GEOMETRY = new Expr.ScalarRest(0, false, "size, stride, storage_offset");

    /**
     * {@code as_strided_backward(grad, transposed, input_geometry, size, stride, storage_offset)}, PyTorch's function of that
     * name as an op: {@code grad} (of the view's {@code size}) added by storage position into zeros (where the view's elements
     * overlap, their gradients sum), then read through the input's geometry; where the input's own elements may overlap, each
     * is divided by how many of them share its place. Positions count from the lower of the two storage offsets, so the
     * result depends on their difference only. With {@code transposed} (a jtorch flag, 0 for PyTorch's function) the op is
     * its own adjoint: {@code grad} of the input's sizes, divided by that count, added at the input's positions and read
     * through the view's geometry; each form's derivative is the other. The scalars are the flag, then {@link
     * #geometryScalars} of the input and the view.
     */
    public static final OpDef AS_STRIDED_BACKWARD = OpDef.structured("as_strided_backward").rule(SAME)
            .signature(Param.tensor("grad"), new Param("transposed", "bool", null), new Param("input_geometry", "SymInt[]", null),
                    new Param("size", "SymInt[]", null), new Param("stride", "SymInt[]", null), new Param("storage_offset", "SymInt", null))
            .meta((in, g) -> {
                AsStridedCall c = AsStridedCall.of("as_strided_backward", g);
                Geometry from = c.scattered(), to = c.read();
                if (!Arrays.equals(in[0].shape(), from.shape())) {
                    throw new IllegalArgumentException("as_strided_backward: the gradient has shape " + Shapes.format(in[0].shape())
                            + ", expected " + Shapes.format(from.shape()) + (c.transposed() ? " (the input's sizes)" : " (the view's size)"));
                }
                return new Meta.Output(to.shape().clone(), in[0].dtype());
            })
            .derivatives(() -> List.of(new Expr.IfScalar(0, 0, call(ViewOps.AS_STRIDED_BACKWARD, GRAD, Expr.c(1), GEOMETRIES),
                    call(ViewOps.AS_STRIDED_BACKWARD, GRAD, Expr.c(0), GEOMETRIES))))
            .doc("the gradient added by storage position, read through the input's geometry").build();

    /**
     * {@code as_strided_scatter(self, src, size, stride, storage_offset)}: a copy of {@code self}, laid out contiguously, with
     * {@code src} written through the geometry {@code (size, stride, storage_offset)} over it (positions count from its first
     * element). PyTorch's copy keeps the strides of a dense non-contiguous {@code self}, so there the positions differ; for a
     * contiguous or overlapping {@code self} they agree. The in-place write through a view ({@code CopySlices}) places the
     * view's gradient back with it.
     */
    public static final OpDef AS_STRIDED_SCATTER = OpDef.structured("as_strided_scatter").rule(SAME)
            .signature(SELF, Param.tensor("src"), new Param("size", "SymInt[]", null), new Param("stride", "SymInt[]", null),
                    new Param("storage_offset", "SymInt", "0"))
            .meta((in, g) -> {
                String op = "as_strided_scatter";
                if (in[0].dtype() != in[1].dtype() || !in[0].device().equals(in[1].device())) {
                    throw new IllegalArgumentException(op + ": expected src of self's dtype and device, got " + in[1].dtype() + " on "
                            + in[1].device() + " for self " + in[0].dtype() + " on " + in[0].device());
                }
                Geometry v = scatterGeometry(op, g, in[0].shape());
                if (!Arrays.equals(in[1].shape(), v.shape())) {
                    throw new IllegalArgumentException(op + ": expected src to have a size equal to the slice of self. src size = "
                            + Shapes.format(in[1].shape()) + ", slice size = " + Shapes.format(v.shape()));
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .derivatives(() -> List.of(call(ViewOps.AS_STRIDED_SCATTER, GRAD, new Expr.ZerosLike(Expr.in(1, "src")), SCATTER_GEOMETRY),
                    call(ViewOps.AS_STRIDED_BACKWARD, GRAD, Expr.c(1), new Expr.ContiguousGeometry(0, "self"), SCATTER_GEOMETRY)))
            .doc("a contiguous copy of self with src written through the geometry").build();

    /** {@code as_strided_scatter}'s geometry from its scalars ({@code [size..., stride..., storage_offset]}), checked against self's elements. */
    public static Geometry scatterGeometry(String op, double[] g, long[] selfShape) {
        if (g.length % 2 != 1) throw new IllegalArgumentException(op + ": mismatch in length of strides and shape");
        int n = (g.length - 1) / 2;
        try {
            return asStrided(sizes(Arrays.copyOfRange(g, 0, n), 0), sizes(Arrays.copyOfRange(g, n, 2 * n), 0), (long) g[2 * n],
                    Shapes.numel(selfShape));
        } catch (IndexOutOfBoundsException e) {
            throw new IndexOutOfBoundsException(op + e.getMessage().substring("asStrided".length()) + " (self of shape "
                    + Shapes.format(selfShape) + ")");
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(op + e.getMessage().substring("asStrided".length()), e);
        }
    }

    /** A geometry as scalars of {@code as_strided_backward}: its rank, sizes, strides and storage offset. */
    public static double[] geometryScalars(long[] shape, long[] strides, long offset) {
        double[] s = new double[2 * shape.length + 2];
        s[0] = shape.length;
        for (int i = 0; i < shape.length; i++) {
            s[1 + i] = shape[i];
            s[1 + shape.length + i] = strides[i];
        }
        s[s.length - 1] = offset;
        return s;
    }

    /**
     * What autograd keeps of an {@code as_strided} call ({@link #AS_STRIDED}): the input's geometry, then the view's size,
     * stride and storage offset.
     */
    public static double[] asStridedScalars(long[] shape, long[] strides, long offset, Geometry view) {
        double[] in = geometryScalars(shape, strides, offset);
        int n = view.shape().length;
        double[] s = Arrays.copyOf(in, in.length + 2 * n + 1);
        for (int i = 0; i < n; i++) {
            s[in.length + i] = view.shape()[i];
            s[in.length + n + i] = view.strides()[i];
        }
        s[s.length - 1] = view.offset();
        return s;
    }

    /**
     * An {@code as_strided_backward} call's geometries, checked: the input's and the view's (sizes and strides non-negative,
     * offsets too), and which one the gradient is scattered by ({@link #scattered}) and the result read through ({@link #read}).
     */
    public record AsStridedCall(boolean transposed, Geometry input, Geometry view) {
        public static AsStridedCall of(String op, double[] g) {
            if (g.length < 4) throw new IllegalArgumentException(op + ": expected the flag, the input's geometry and the view's, got " + g.length + " scalars");
            int n = (int) g[1];
            int m = (g.length - 4 - 2 * n) / 2;
            if (n < 0 || m < 0 || 2 * n + 2 * m + 4 != g.length) {
                throw new IllegalArgumentException(op + ": " + g.length + " scalars do not hold an input geometry of rank " + n + " and a view's");
            }
            Geometry input = geometry(op, "input", g, 2, n);
            Geometry view = geometry(op, "view", g, 3 + 2 * n, m);
            return new AsStridedCall(g[0] != 0, input, view);
        }

        private static Geometry geometry(String op, String what, double[] g, int at, int n) {
            long[] size = new long[n], stride = new long[n];
            for (int i = 0; i < n; i++) {
                size[i] = (long) g[at + i];
                stride[i] = (long) g[at + n + i];
                if (size[i] < 0 || stride[i] < 0) {
                    throw new IllegalArgumentException(op + ": negative size or stride in the " + what + "'s geometry: size "
                            + Shapes.format(sizes(Arrays.copyOfRange(g, at, at + n), 0)) + ", stride "
                            + Shapes.format(sizes(Arrays.copyOfRange(g, at + n, at + 2 * n), 0)));
                }
            }
            long offset = (long) g[at + 2 * n];
            if (offset < 0) throw new IllegalArgumentException(op + ": negative storage offset " + offset + " in the " + what + "'s geometry");
            Shapes.checkedNumel(op, size);
            return new Geometry(size, stride, offset);
        }

        /** The geometry the gradient is added by: the view's, or the input's when {@code transposed}. */
        public Geometry scattered() { return transposed ? input : view; }

        /** The geometry the result is read through: the input's, or the view's when {@code transposed}. */
        public Geometry read() { return transposed ? view : input; }
    }

    /**
     * Which dimensions of a geometry are laid out without overlap, as PyTorch's {@code _maybe_overlapping_memory} sees it: by
     * increasing stride, each beyond the reach of those before it; the others (false) may revisit a place. Size-1 dimensions
     * never overlap.
     */
    public static boolean[] disjointDims(long[] shape, long[] strides) {
        Integer[] order = new Integer[shape.length];
        for (int i = 0; i < order.length; i++) order[i] = i;
        Arrays.sort(order, (a, b) -> Long.compare(strides[a], strides[b]));
        boolean[] disjoint = new boolean[shape.length];
        long reach = 0;
        for (int d : order) {
            if (shape[d] <= 1) {
                disjoint[d] = true;
            } else if (strides[d] > reach) {
                disjoint[d] = true;
                reach += strides[d] * (shape[d] - 1);
            }
        }
        return disjoint;
    }

    /** Whether two elements of a geometry may share a place ({@link #disjointDims}: PyTorch's test, conservative). */
    public static boolean mayOverlap(long[] shape, long[] strides) {
        for (boolean d : disjointDims(shape, strides)) if (!d) return true;
        return false;
    }

    private static java.util.function.Supplier<List<Expr>> reshapeBack() {
        return () -> List.of(call(ViewOps.RESHAPE, GRAD, SIZES));
    }

    private static OpDef view(String name, java.util.function.Supplier<List<Expr>> derivatives, Param... params) {
        Param[] all = new Param[params.length + 1];
        all[0] = SELF;
        System.arraycopy(params, 0, all, 1, params.length);
        return OpDef.frontEnd(name, true).rule(SAME).signature(all).derivatives(derivatives).doc("a view").build();
    }

    // ------------------------------------------------------------------ meta functions of the backward ops

    /** The scalars from {@code from} on, as sizes. */
    public static long[] sizes(double[] scalars, int from) {
        long[] s = new long[scalars.length - from];
        for (int i = 0; i < s.length; i++) s[i] = (long) scalars[from + i];
        return s;
    }

    /** A backward op's result: zeros of {@code sizes}, the gradient written through {@code view}, which must have its shape. */
    private static Meta.Output backwardMeta(String op, StridedView grad, long[] sizes, Geometry view) {
        for (long s : sizes) if (s < 0) throw new IllegalArgumentException(op + ": negative size in input_sizes " + Shapes.format(sizes));
        Shapes.checkedNumel(op, sizes);
        if (!Arrays.equals(grad.shape(), view.shape())) {
            throw new IllegalArgumentException(op + ": the gradient has shape " + Shapes.format(grad.shape()) + ", but the view of "
                    + "input_sizes " + Shapes.format(sizes) + " it comes from has shape " + Shapes.format(view.shape()));
        }
        return new Meta.Output(sizes, grad.dtype());
    }

    /** The one gradient given of several pieces, or an exception naming the op; all given ones on one device and dtype. */
    private static StridedView anyGrad(String op, StridedView[] grads) {
        StridedView first = null;
        for (StridedView g : grads) {
            if (g == null) continue;
            if (first == null) first = g;
            else if (g.dtype() != first.dtype() || !g.device().equals(first.device())) {
                throw new IllegalArgumentException(op + ": expected the gradients in one dtype on one device, got " + first.dtype() + " on "
                        + first.device() + " and " + g.dtype() + " on " + g.device());
            }
        }
        if (first == null) throw new IllegalArgumentException(op + ": expected at least one defined gradient of " + grads.length);
        return first;
    }

    private static Meta.Output splitBackwardMeta(StridedView[] in, double[] g) {
        String op = "split_with_sizes_backward";
        StridedView any = anyGrad(op, in);
        long[] sizes = sizes(g, 1);
        if (sizes.length != in.length) {
            throw new IllegalArgumentException(op + ": " + in.length + " gradients for " + sizes.length + " split sizes " + Shapes.format(sizes));
        }
        int d = Shapes.wrapDim(op, (int) g[0], any.dim());
        long[] shape = any.shape().clone();
        shape[d] = 0;
        for (int i = 0; i < in.length; i++) {
            if (sizes[i] < 0) throw new IllegalArgumentException(op + ": negative split size in " + Shapes.format(sizes));
            shape[d] = Math.addExact(shape[d], sizes[i]);
            long[] piece = any.shape().clone();
            piece[d] = sizes[i];
            if (in[i] != null && !Arrays.equals(in[i].shape(), piece)) {
                throw new IllegalArgumentException(op + ": gradient " + i + " has shape " + Shapes.format(in[i].shape()) + ", expected "
                        + Shapes.format(piece) + " (split sizes " + Shapes.format(sizes) + " along dim " + d + ")");
            }
        }
        return new Meta.Output(shape, any.dtype());
    }

    private static Meta.Output unbindBackwardMeta(StridedView[] in, double[] g) {
        String op = "unbind_backward";
        StridedView any = anyGrad(op, in);
        long[] sizes = sizes(g, 1);
        int d = Shapes.wrapDim(op, (int) g[0], sizes.length);
        if (sizes.length == 0 || sizes[d] != in.length) {
            throw new IllegalArgumentException(op + ": " + in.length + " gradients for input_sizes " + Shapes.format(sizes) + " along dim " + g[0]);
        }
        long[] piece = remove(sizes, d);
        for (int i = 0; i < in.length; i++) {
            if (in[i] != null && !Arrays.equals(in[i].shape(), piece)) {
                throw new IllegalArgumentException(op + ": gradient " + i + " has shape " + Shapes.format(in[i].shape()) + ", expected "
                        + Shapes.format(piece) + " (input_sizes " + Shapes.format(sizes) + ", dim " + d + ")");
            }
        }
        return new Meta.Output(sizes, any.dtype());
    }

    // ------------------------------------------------------------------ meta functions: the views' geometry

    /** {@code view(size)}: one size may be -1; fails where the strides cannot express the new shape. */
    public static Geometry view(long[] shape, long[] strides, long offset, long[] size) {
        long[] s = Shapes.inferSize("view", size, Shapes.numel(shape), shape);
        long[] st = Shapes.viewStrides(shape, strides, s);
        if (st == null) {
            throw new IllegalArgumentException("view: size " + Shapes.format(s) + " is not compatible with the input's size "
                    + Shapes.format(shape) + " and strides " + Shapes.format(strides)
                    + " (at least one dimension spans two contiguous subspaces); use reshape() instead");
        }
        return new Geometry(s, st, offset);
    }

    /** {@code reshape(shape)} as a view, or null where it needs a copy; {@code size} is the inferred shape. */
    public static Geometry reshapeView(long[] shape, long[] strides, long offset, long[] size) {
        long[] st = Shapes.viewStrides(shape, strides, size);
        return st == null ? null : new Geometry(size, st, offset);
    }

    public static Geometry permute(long[] shape, long[] strides, long offset, int[] dims) {
        if (dims.length != shape.length) {
            throw new IllegalArgumentException("permute: number of dims " + dims.length + " doesn't match the tensor's "
                    + shape.length + " (shape " + Shapes.format(shape) + ")");
        }
        long[] s = new long[dims.length];
        long[] st = new long[dims.length];
        boolean[] seen = new boolean[dims.length];
        for (int i = 0; i < dims.length; i++) {
            int d = Shapes.wrapDim("permute", dims[i], shape.length);
            if (seen[d]) throw new IllegalArgumentException("permute: repeated dim " + dims[i] + " in " + Arrays.toString(dims));
            seen[d] = true;
            s[i] = shape[d];
            st[i] = strides[d];
        }
        return new Geometry(s, st, offset);
    }

    /** {@code permute}'s inverse permutation (its backward), for dims already checked by {@link #permute}. */
    public static int[] inversePermutation(int[] dims) {
        int[] inverse = new int[dims.length];
        for (int i = 0; i < dims.length; i++) inverse[Shapes.wrapDim("permute", dims[i], dims.length)] = i;
        return inverse;
    }

    /** {@code transpose(dim0, dim1)}; null for a 0-d tensor, whose dims 0 and -1 name the tensor itself (an alias). */
    public static Geometry transpose(long[] shape, long[] strides, long offset, int dim0, int dim1) {
        int a = Shapes.wrapDim("transpose", dim0, shape.length);
        int b = Shapes.wrapDim("transpose", dim1, shape.length);
        if (shape.length == 0) return null;
        long[] s = shape.clone();
        long[] st = strides.clone();
        s[a] = shape[b];
        s[b] = shape[a];
        st[a] = strides[b];
        st[b] = strides[a];
        return new Geometry(s, st, offset);
    }

    /** {@code squeeze()}: every dimension of size 1 removed. */
    public static Geometry squeeze(long[] shape, long[] strides, long offset) {
        int n = 0;
        for (long s : shape) if (s != 1) n++;
        long[] s = new long[n];
        long[] st = new long[n];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (shape[i] != 1) {
                s[j] = shape[i];
                st[j++] = strides[i];
            }
        }
        return new Geometry(s, st, offset);
    }

    /** {@code squeeze(dim)}; null where nothing is removed (a 0-d tensor, or a size other than 1: an alias). */
    public static Geometry squeezeDim(long[] shape, long[] strides, long offset, int dim) {
        if (shape.length == 0) {
            Shapes.wrapDim("squeeze", dim, 0);
            return null;
        }
        int d = Shapes.wrapDim("squeeze", dim, shape.length);
        if (shape[d] != 1) return null;
        return new Geometry(remove(shape, d), remove(strides, d), offset);
    }

    /** {@code unsqueeze(dim)}, {@code dim} in {@code [-dim()-1, dim()]}. */
    public static Geometry unsqueeze(long[] shape, long[] strides, long offset, int dim) {
        int d = Shapes.wrapDim("unsqueeze", dim, shape.length + 1);
        long newStride = d < shape.length ? shape[d] * strides[d] : 1;
        return new Geometry(insert(shape, d, 1), insert(strides, d, newStride), offset);
    }

    /** {@code expand(sizes)}: size-1 dimensions broadcast to larger sizes with stride 0; -1 keeps a size. */
    public static Geometry expand(long[] shape, long[] strides, long offset, long[] sizes) {
        if (sizes.length < shape.length) {
            throw new IllegalArgumentException("expand: the number of sizes provided (" + sizes.length
                    + ") must be greater or equal to the number of dimensions in the tensor (" + shape.length + ")");
        }
        long[] s = new long[sizes.length];
        long[] st = new long[sizes.length];
        int lead = sizes.length - shape.length;
        for (int i = sizes.length - 1; i >= 0; i--) {
            int j = i - lead;
            long want = sizes[i];
            if (want < -1) {
                throw new IllegalArgumentException("expand: the expanded size of the tensor (" + want + ") at dimension " + i
                        + " must be non-negative, or -1 to keep the existing size. Target sizes: " + Shapes.format(sizes)
                        + ". Tensor sizes: " + Shapes.format(shape));
            }
            if (j < 0) {
                if (want < 0) throw new IllegalArgumentException("expand: -1 is not allowed in a leading, non-existing dimension "
                        + i + " (sizes " + Shapes.format(sizes) + ")");
                s[i] = want;
                st[i] = 0;
            } else if (want == -1 || want == shape[j]) {
                s[i] = shape[j];
                st[i] = strides[j];
            } else if (shape[j] == 1) {
                s[i] = want;
                st[i] = 0;
            } else {
                throw new IllegalArgumentException("expand: the expanded size of the tensor (" + want
                        + ") must match the existing size (" + shape[j] + ") at non-singleton dimension " + i
                        + ". Target sizes: " + Shapes.format(sizes) + ". Tensor sizes: " + Shapes.format(shape));
            }
        }
        Shapes.checkedNumel("expand", s);
        return new Geometry(s, st, offset);
    }

    /** {@code narrow(dim, start, length)}: elements {@code [start, start + length)} of {@code dim} (start may count from the end). */
    public static Geometry narrow(long[] shape, long[] strides, long offset, int dim, long start, long length) {
        if (shape.length == 0) throw new IllegalArgumentException("narrow: cannot be applied to a 0-dim tensor");
        int d = Shapes.wrapDim("narrow", dim, shape.length);
        long size = shape[d];
        if (start < -size || start > size) {
            throw new IndexOutOfBoundsException("narrow: start " + start + " out of range for dimension " + dim + " of size "
                    + size + " (expected to be in [" + (-size) + ", " + size + "]; shape " + Shapes.format(shape) + ")");
        }
        long from = start < 0 ? start + size : start;
        // length > size - from rather than from + length > size: the sum overflows for a huge length.
        if (length < 0 || length > size - from) {
            throw new IndexOutOfBoundsException("narrow: start (" + from + ") + length (" + length
                    + ") exceeds dimension size (" + size + ") of dimension " + dim + " (shape " + Shapes.format(shape) + ")");
        }
        long[] s = shape.clone();
        s[d] = length;
        return new Geometry(s, strides.clone(), offset + from * strides[d]);
    }

    /** {@code slice(dim, start, end, step)} as Python's {@code [start:end:step]}: bounds clamped, negative ones from the end. */
    public static Geometry slice(long[] shape, long[] strides, long offset, int dim, long start, long end, long step) {
        if (shape.length == 0) throw new IllegalArgumentException("slice: cannot be applied to a 0-dim tensor");
        if (step <= 0) throw new IllegalArgumentException("slice: step must be positive, got " + step);
        int d = Shapes.wrapDim("slice", dim, shape.length);
        long[] bounds = sliceBounds(shape[d], start, end);
        long from = bounds[0];
        long to = bounds[1];
        long[] s = shape.clone();
        long[] st = strides.clone();
        s[d] = to > from ? (to - from - 1) / step + 1 : 0; // (to - from + step - 1) / step overflows for a huge step
        st[d] = steppedStride(strides[d], step, s[d]);
        return new Geometry(s, st, offset + from * strides[d]);
    }

    /** A slice's {@code start} and {@code end} clamped into {@code [0, size]}, negative ones counted from the end. */
    public static long[] sliceBounds(long size, long start, long end) {
        if (start < 0) start += size;
        if (end < 0) end += size;
        start = Math.min(Math.max(start, 0), size);
        end = Math.min(Math.max(end, start), size);
        return new long[] {start, end};
    }

    /** {@code select(dim, index)}: dimension {@code dim} removed by taking one index (negative counts from the end). */
    public static Geometry select(long[] shape, long[] strides, long offset, int dim, long index) {
        if (shape.length == 0) throw new IllegalArgumentException("select: cannot be applied to a 0-dim tensor");
        int d = Shapes.wrapDim("select", dim, shape.length);
        long size = shape[d];
        if (index < -size || index >= size) {
            throw new IndexOutOfBoundsException("select: index " + index + " out of range for tensor of size "
                    + Shapes.format(shape) + " at dimension " + dim);
        }
        if (index < 0) index += size;
        return new Geometry(remove(shape, d), remove(strides, d), offset + index * strides[d]);
    }

    /** {@code unfold(dim, size, step)}: every window of {@code size} elements taken each {@code step}, as a new last dimension. */
    public static Geometry unfold(long[] shape, long[] strides, long offset, int dim, long size, long step) {
        int d = Shapes.wrapDim("unfold", dim, shape.length);
        long dimSize = shape.length == 0 ? 1 : shape[d];
        if (size < 0 || size > dimSize) {
            throw new IllegalArgumentException("unfold: maximum size for tensor at dimension " + d + " is " + dimSize
                    + " but size is " + size);
        }
        if (step <= 0) throw new IllegalArgumentException("unfold: step is " + step + " but must be > 0");
        long[] s = new long[shape.length + 1];
        long[] st = new long[shape.length + 1];
        for (int i = 0; i < shape.length; i++) {
            s[i] = shape[i];
            st[i] = strides[i];
        }
        if (shape.length > 0) {
            s[d] = (dimSize - size) / step + 1;
            st[d] = steppedStride(strides[d], step, s[d]);
            st[shape.length] = strides[d];
        } else {
            st[0] = 1;
        }
        s[shape.length] = size;
        Shapes.checkedNumel("unfold", s); // windows of an expanded tensor can outnumber int64
        return new Geometry(s, st, offset);
    }

    /**
     * {@code diagonal(offset, dim1, dim2)}: the diagonal of dims {@code dim1} and {@code dim2} as a new last dimension,
     * {@code diagonalOffset} above (positive) or below (negative) the main one.
     */
    public static Geometry diagonal(long[] shape, long[] strides, long offset, long diagonalOffset, int dim1, int dim2) {
        int d1 = Shapes.wrapDim("diagonal", dim1, shape.length);
        int d2 = Shapes.wrapDim("diagonal", dim2, shape.length);
        if (d1 == d2) throw new IllegalArgumentException("diagonal: dimensions cannot be identical " + dim1 + ", " + dim2);
        long length = diagonalOffset >= 0 ? Math.max(0, Math.min(shape[d1], shape[d2] - diagonalOffset))
                : Math.max(0, Math.min(shape[d1] + diagonalOffset, shape[d2]));
        long start = offset;
        if (length > 0) start += diagonalOffset >= 0 ? diagonalOffset * strides[d2] : -diagonalOffset * strides[d1];
        long[] size = new long[shape.length - 1];
        long[] stride = new long[shape.length - 1];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (i == d1 || i == d2) continue;
            size[j] = shape[i];
            stride[j++] = strides[i];
        }
        size[size.length - 1] = length;
        stride[stride.length - 1] = strides[d1] + strides[d2];
        return new Geometry(size, stride, start);
    }

    /**
     * {@code as_strided(size, stride, storage_offset)} over a storage of {@code elements} elements: every element the view
     * reaches must lie inside it.
     */
    public static Geometry asStrided(long[] size, long[] stride, long storageOffset, long elements) {
        if (size.length != stride.length) {
            throw new IllegalArgumentException("asStrided: mismatch in length of strides and shape (" + size.length
                    + " vs " + stride.length + ")");
        }
        if (storageOffset < 0) throw new IllegalArgumentException("asStrided: invalid storage offset " + storageOffset);
        for (int i = 0; i < size.length; i++) {
            if (size[i] < 0) throw new IllegalArgumentException("asStrided: negative size in " + Shapes.format(size));
            if (stride[i] < 0) {
                throw new IllegalArgumentException("asStrided: negative strides are not supported, got strides " + Shapes.format(stride));
            }
        }
        boolean empty = Shapes.checkedNumel("asStrided", size) == 0;
        // The last element's index, offset + sum (size - 1) * stride, in arithmetic that cannot wrap around.
        long maxIndex = storageOffset;
        boolean overflow = false;
        for (int i = 0; i < size.length && !empty; i++) {
            long extent = (size[i] - 1) * stride[i];
            overflow |= Math.multiplyHigh(size[i] - 1, stride[i]) != 0 || extent < 0;
            maxIndex += extent;
            overflow |= maxIndex < 0;
        }
        if (!empty && (overflow || maxIndex >= elements)) {
            throw new IndexOutOfBoundsException("asStrided: size " + Shapes.format(size) + " with stride " + Shapes.format(stride)
                    + " and offset " + storageOffset + " is out of bounds for a storage of " + elements + " elements");
        }
        return new Geometry(size.clone(), stride.clone(), storageOffset);
    }

    /** {@code stride * step}, or {@code stride} where the dimension has at most one element and the product would overflow. */
    private static long steppedStride(long stride, long step, long size) {
        long r = stride * step;
        return size <= 1 && (Math.multiplyHigh(stride, step) != 0 || r < 0) ? stride : r;
    }

    private static long[] remove(long[] a, int i) {
        long[] r = new long[a.length - 1];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }

    private static long[] insert(long[] a, int i, long v) {
        long[] r = new long[a.length + 1];
        System.arraycopy(a, 0, r, 0, i);
        r[i] = v;
        System.arraycopy(a, i, r, i + 1, a.length - i);
        return r;
    }
}
