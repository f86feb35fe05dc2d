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
 * <p>Max pooling (its backward reads the argmax indices, a second result) is still a hand-written front end.
 */
public final class PoolingOps {
    private PoolingOps() {}

    /** The scalars of an average pooling call, in order. */
    public static final List<String> AVG_GEOMETRY = List.of("spatial_dims", "in_h", "in_w", "out_h", "out_w", "kernel_h", "kernel_w",
            "stride_h", "stride_w", "padding_h", "padding_w", "count_include_pad", "divisor_override");
    /** The scalars of an adaptive average pooling call, in order. */
    public static final List<String> ADAPTIVE_GEOMETRY = List.of("spatial_dims", "in_h", "in_w", "out_h", "out_w");

    private static final int SPATIAL = 0, IN_H = 1, IN_W = 2, OUT_H = 3, OUT_W = 4;

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

    /**
     * A pooling op over tensor {@code tensor} of {@code [*, in_h, in_w]} ({@code [*, out_h, out_w]} for a backward, which
     * gives {@code [*, in_h, in_w]}) with scalars {@code geometry}.
     */
    private static OpDef pool(String name, String tensor, List<String> geometry, boolean backward, Supplier<List<Expr>> derivatives,
                              String doc) {
        Param[] params = new Param[geometry.size() + 1];
        params[0] = Param.tensor(tensor);
        for (int i = 0; i < geometry.size(); i++) params[i + 1] = Param.scalar(geometry.get(i), "int", null);
        // average pooling of int64 is PyTorch's (it truncates); adaptive pooling is floating only
        DTypeRule rule = geometry == ADAPTIVE_GEOMETRY ? DTypeRule.FLOATING_ONLY : DTypeRule.SAME_NO_BOOL;
        return OpDef.structured(name).rule(rule).signature(params)
                .meta((in, g) -> {
                    if (g.length != geometry.size()) {
                        throw new IllegalArgumentException(name + ": expected the " + geometry.size() + " values of its geometry, got "
                                + g.length);
                    }
                    StridedView x = in[0];
                    int spatial = (int) g[SPATIAL];
                    long h = (long) g[backward ? OUT_H : IN_H], w = (long) g[backward ? OUT_W : IN_W];
                    boolean fits = x.dim() >= spatial + 1 && x.size(-1) == w && (spatial == 1 ? h == 1 : x.size(-2) == h);
                    if (!fits || spatial < 1 || spatial > 2) {
                        throw new IllegalArgumentException(name + ": expected " + tensor + " of shape [*, " + (spatial == 2 ? h + ", " : "")
                                + w + "] for its geometry, got " + Shapes.format(x.shape()));
                    }
                    if (x.dtype() == org.jtorch.DType.BOOL) throw new IllegalArgumentException(name + ": not implemented for bool tensors");
                    long[] shape = x.shape().clone();
                    shape[shape.length - 1] = (long) g[backward ? IN_W : OUT_W];
                    if (spatial == 2) shape[shape.length - 2] = (long) g[backward ? IN_H : OUT_H];
                    return new Meta.Output(shape, x.dtype());
                })
                .derivatives(derivatives).doc(doc).build();
    }

    /** The gradient followed by the differentiated call's geometry, passed on unchanged. */
    private static Expr[] geometry(List<String> names) {
        List<Expr> args = new ArrayList<>(List.of(GRAD));
        for (int i = 0; i < names.size(); i++) args.add(new Expr.Scalar(i, names.get(i), Double.NaN));
        return args.toArray(Expr[]::new);
    }
}
