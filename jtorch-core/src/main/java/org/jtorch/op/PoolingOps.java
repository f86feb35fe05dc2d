package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Average pooling and adaptive average pooling, each with its backward, as structured pairs ({@link OpDef.Kind#STRUCTURED}):
 * both are linear, so each one's derivative is the other, and gradients of any order are these two kernels again. The
 * pooled dimensions are the last {@code spatial_dims} (1 or 2) of a {@code [*, H, W]} input (1-d pooling has
 * {@code H = 1}), described by one geometry (the call's scalars, see {@link #AVG_GEOMETRY} and
 * {@link #ADAPTIVE_GEOMETRY}) that the front ends ({@code ops.Pooling}) check and build. float16 and bfloat16
 * compute in float32, integers in float64 (average pooling of int64 truncates), each rounded once.
 *
 * <p>Max pooling and adaptive max pooling are multi-output ops ({@link OpDef#outputCount}): the pooled values and each
 * one's flat index {@code h * W + w} in its input plane (int64), which their derivative reads. Their backward
 * ({@link #MAX_POOL2D_WITH_INDICES_BACKWARD}, the gradient scattered to the indices) and its derivative
 * ({@link #MAX_POOL_DOUBLE_BACKWARD}, a gather at the indices) are linear in the gradient and each other's derivative.
 */
public final class PoolingOps {
    private PoolingOps() {}

    /** The scalars of an average pooling call, in order. */
    public static final List<String> AVG_GEOMETRY = List.of("spatial_dims", "in_h", "in_w", "out_h", "out_w", "kernel_h", "kernel_w",
            "stride_h", "stride_w", "padding_h", "padding_w", "count_include_pad", "divisor_override");
    /** The scalars of an adaptive average pooling call, in order. */
    public static final List<String> ADAPTIVE_GEOMETRY = List.of("spatial_dims", "in_h", "in_w", "out_h", "out_w");

    /** The scalars of a max pooling call, in order. */
    public static final List<String> MAX_GEOMETRY = List.of("spatial_dims", "in_h", "in_w", "out_h", "out_w", "kernel_h", "kernel_w",
            "stride_h", "stride_w", "padding_h", "padding_w", "dilation_h", "dilation_w");

    private static final int SPATIAL = 0, IN_H = 1, IN_W = 2, OUT_H = 3, OUT_W = 4;
    private static final Expr INDICES_OUTPUT = Expr.output(1, "indices");
    private static final Expr INDICES_INPUT = Expr.in(1, "indices");

    public static final OpDef AVG_POOL2D = pool("avg_pool2d", "self", AVG_GEOMETRY, false,
            () -> List.of(call(PoolingOps.AVG_POOL2D_BACKWARD, geometry(AVG_GEOMETRY))),
            "the window's mean (count_include_pad, divisor_override as PyTorch's)");

    /** The gradient of {@link #AVG_POOL2D}: each output's gradient shared among its window. */
    public static final OpDef AVG_POOL2D_BACKWARD = pool("avg_pool2d_backward", "grad_output", AVG_GEOMETRY, true,
            () -> List.of(call(PoolingOps.AVG_POOL2D, geometry(AVG_GEOMETRY))), "each window's share of its output's gradient");

    public static final OpDef ADAPTIVE_AVG_POOL2D = pool("adaptive_avg_pool2d", "self", ADAPTIVE_GEOMETRY, false,
            () -> List.of(call(PoolingOps.ADAPTIVE_AVG_POOL2D_BACKWARD, geometry(ADAPTIVE_GEOMETRY))),
            "output cell o averages input [floor(o * I / O), ceil((o + 1) * I / O))");

    public static final OpDef ADAPTIVE_AVG_POOL2D_BACKWARD = pool("adaptive_avg_pool2d_backward", "grad_output", ADAPTIVE_GEOMETRY,
            true, () -> List.of(call(PoolingOps.ADAPTIVE_AVG_POOL2D, geometry(ADAPTIVE_GEOMETRY))),
            "each window's share of its output's gradient");

    /** Its kernel writes no indices where nobody reads them (inference through {@code Dispatcher.call}). */
    public static final OpDef MAX_POOL2D_WITH_INDICES = withIndices("max_pool2d_with_indices", MAX_GEOMETRY, true,
            "the window's largest element (NaN wins) and its flat index h * W + w in the input plane");

    public static final OpDef ADAPTIVE_MAX_POOL2D = withIndices("adaptive_max_pool2d", ADAPTIVE_GEOMETRY, false,
            "the largest element of input [floor(o * I / O), ceil((o + 1) * I / O)) and its flat index");

    /** The gradient of the max poolings: {@code grad_output} scattered (added) to {@code indices} in zeroed input planes. */
    public static final OpDef MAX_POOL2D_WITH_INDICES_BACKWARD = indexed("max_pool2d_with_indices_backward", true,
            () -> java.util.Arrays.asList(call(PoolingOps.MAX_POOL_DOUBLE_BACKWARD, indexedArgs(INDICES_INPUT)), null),
            "grad_output added at indices into zeroed input planes");

    /** The gradient of {@link #MAX_POOL2D_WITH_INDICES_BACKWARD} with respect to its gradient: {@code self} gathered at {@code indices}. */
    public static final OpDef MAX_POOL_DOUBLE_BACKWARD = indexed("max_pool_double_backward", false,
            () -> java.util.Arrays.asList(call(PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, indexedArgs(INDICES_INPUT)), null),
            "self's elements at indices, per plane");

    /** A max pooling over {@code self}'s last 1 or 2 dimensions with scalars {@code geometry}: (output, indices). */
    private static OpDef withIndices(String name, List<String> geometry, boolean skipsIndices, String doc) {
        OpDef.Builder b = OpDef.structured(name);
        if (skipsIndices) b.skipsUnreadOutputs();
        return b.rule(DTypeRule.FLOATING_ONLY)
                .outputs((in, g) -> {
                    long[] shape = pooledShape(name, "self", geometry, in[0], g, false);
                    return new Meta.Output[] {new Meta.Output(shape, in[0].dtype()), new Meta.Output(shape, org.jtorch.types.DType.INT64)};
                }, "output", "indices")
                .signature(params("self", null, geometry))
                .derivatives(() -> List.of(call(PoolingOps.MAX_POOL2D_WITH_INDICES_BACKWARD, indexedArgs(INDICES_OUTPUT))))
                .doc(doc).build();
    }

    /**
     * The pair that moves values between output-sized ({@code [*, out_h, out_w]}) and input-sized ({@code [*, in_h, in_w]})
     * planes through int64 {@code indices} of the output's shape: to input-sized planes for a {@code scatter}, else back.
     */
    private static OpDef indexed(String name, boolean scatter, Supplier<List<Expr>> derivatives, String doc) {
        String tensor = scatter ? "grad_output" : "self";
        return OpDef.structured(name).rule(DTypeRule.FLOATING_ONLY).signature(params(tensor, "indices", ADAPTIVE_GEOMETRY))
                .meta((in, g) -> {
                    long[] shape = pooledShape(name, tensor, ADAPTIVE_GEOMETRY, in[0], g, scatter);
                    StridedView idx = in[1];
                    long[] expected = scatter ? in[0].shape() : shape;
                    if (idx == null || idx.dtype() != org.jtorch.types.DType.INT64 || !java.util.Arrays.equals(idx.shape(), expected)) {
                        throw new IllegalArgumentException(name + ": expected int64 indices of shape " + Shapes.format(expected) + ", got "
                                + (idx == null ? "none" : idx.dtype() + " of shape " + Shapes.format(idx.shape())));
                    }
                    if (!in[0].dtype().isFloatingPoint()) {
                        throw new IllegalArgumentException(name + ": expected a floating-point " + tensor + ", got " + in[0].dtype());
                    }
                    return new Meta.Output(shape, in[0].dtype());
                })
                .derivatives(derivatives).doc(doc).build();
    }

    /** The gradient, then {@code indices}, then the first five scalars (the planes' geometry) of the call being differentiated. */
    private static Expr[] indexedArgs(Expr indices) {
        List<Expr> args = new ArrayList<>(List.of(GRAD, indices));
        for (int i = 0; i < ADAPTIVE_GEOMETRY.size(); i++) args.add(new Expr.Scalar(i, ADAPTIVE_GEOMETRY.get(i), Double.NaN));
        return args.toArray(Expr[]::new);
    }

    private static Param[] params(String tensor, String second, List<String> geometry) {
        int t = second == null ? 1 : 2;
        Param[] params = new Param[geometry.size() + t];
        params[0] = Param.tensor(tensor);
        if (second != null) params[1] = Param.tensor(second);
        for (int i = 0; i < geometry.size(); i++) params[i + t] = Param.scalar(geometry.get(i), "int", null);
        return params;
    }

    /**
     * The shape of a pooling op's result: {@code x} of {@code [*, in_h, in_w]} ({@code [*, out_h, out_w]} when
     * {@code backward}) to {@code [*, out_h, out_w]} (or the reverse), an error naming the op when it does not fit.
     */
    private static long[] pooledShape(String name, String tensor, List<String> geometry, StridedView x, double[] g, boolean backward) {
        if (g.length != geometry.size()) {
            throw new IllegalArgumentException(name + ": expected the " + geometry.size() + " values of its geometry, got " + g.length);
        }
        int spatial = (int) g[SPATIAL];
        long h = (long) g[backward ? OUT_H : IN_H], w = (long) g[backward ? OUT_W : IN_W];
        boolean fits = x.dim() >= spatial + 1 && x.size(-1) == w && (spatial == 1 ? h == 1 : x.size(-2) == h);
        if (!fits || spatial < 1 || spatial > 2) {
            throw new IllegalArgumentException(name + ": expected " + tensor + " of shape [*, " + (spatial == 2 ? h + ", " : "")
                    + w + "] for its geometry, got " + Shapes.format(x.shape()));
        }
        if (x.dtype() == org.jtorch.types.DType.BOOL) throw new IllegalArgumentException(name + ": not implemented for bool tensors");
        long[] shape = x.shape().clone();
        shape[shape.length - 1] = (long) g[backward ? IN_W : OUT_W];
        if (spatial == 2) shape[shape.length - 2] = (long) g[backward ? IN_H : OUT_H];
        return shape;
    }

    /**
     * A pooling op over tensor {@code tensor} of {@code [*, in_h, in_w]} ({@code [*, out_h, out_w]} for a backward, which
     * gives {@code [*, in_h, in_w]}) with scalars {@code geometry}.
     */
    private static OpDef pool(String name, String tensor, List<String> geometry, boolean backward, Supplier<List<Expr>> derivatives,
                              String doc) {
        // average pooling of int64 is PyTorch's (it truncates); adaptive pooling is floating only
        DTypeRule rule = geometry == ADAPTIVE_GEOMETRY ? DTypeRule.FLOATING_ONLY : DTypeRule.SAME_NO_BOOL;
        return OpDef.structured(name).rule(rule).signature(params(tensor, null, geometry))
                .meta((in, g) -> new Meta.Output(pooledShape(name, tensor, geometry, in[0], g, backward), in[0].dtype()))
                .derivatives(derivatives).doc(doc).build();
    }

    /** The gradient followed by the differentiated call's geometry, passed on unchanged. */
    private static Expr[] geometry(List<String> names) {
        List<Expr> args = new ArrayList<>(List.of(GRAD));
        for (int i = 0; i < names.size(); i++) args.add(new Expr.Scalar(i, names.get(i), Double.NaN));
        return args.toArray(Expr[]::new);
    }
}
