package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;
import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The convolution primitives ({@link OpDef.Kind#STRUCTURED}) that {@code conv1d}, {@code conv2d},
 * {@code conv_transpose2d}, {@code unfold} and {@code fold} reduce to: the convolution, its input gradient (the
 * transposed convolution), its weight and bias gradients, im2col and col2im, each on 4-D NCHW operands described by
 * one geometry (the call's 16 scalars, in the order of {@code ConvolutionKernels.Geometry}: n, cin, h, w, cout, kh, kw,
 * sh, sw, ph, pw, dh, dw, groups, oh, ow). Each derivative is written with the others, so gradients of gradients work:
 * <pre>
 *   y  = conv(x, w) + b        dx = convT(dy, w)      dw = wgrad(dy, x)    db = bgrad(dy)
 *   x  = convT(y, w) + b       dy = conv(dx, w)       dw = wgrad(y, dx)    db = bgrad(dx)
 *   w' = wgrad(dy, x)          d(dy) = conv(x, dw')   dx = convT(dy, dw')
 * </pre>
 * The front ends ({@code ops.Convolution}) validate their arguments and build the geometry. float32 and float64
 * compute natively, float16 and bfloat16 in float32 and integers in float64, each rounded once to the result.
 */
public final class ConvolutionOps {
    private ConvolutionOps() {}

    /** The geometry's scalars, in order. */
    private static final String[] GEOMETRY = {"n", "cin", "h", "w", "cout", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw",
            "groups", "oh", "ow"};
    private static final int N = 0, CIN = 1, H = 2, W = 3, COUT = 4, KH = 5, KW = 6, GROUPS = 13, OH = 14, OW = 15;

    public static final OpDef CONVOLUTION = primitive("convolution", List.of("input", "weight", "bias"),
            g -> new long[][] {shape(g, N, CIN, H, W), weight(g), shape(g, COUT)}, g -> shape(g, N, COUT, OH, OW),
            "`conv2d` of the geometry, plus the bias",
            () -> List.of(call(ConvolutionOps.CONVOLUTION_TRANSPOSE, geometry(GRAD, in(1, "weight")).toArray(Expr[]::new)),
                    call(ConvolutionOps.CONVOLUTION_WEIGHT_GRAD, geometry(GRAD, in(0, "input")).toArray(Expr[]::new)),
                    call(ConvolutionOps.CONVOLUTION_BIAS_GRAD, GRAD)));

    /**
     * {@link #CONVOLUTION} of float32 operands with a callback ({@link Callback}) whose work the kernel runs on each
     * block of the output as it finishes it ({@code ConvolutionKernels.conv2dWithEpilogue}): the JIT's convolution with a
     * fused pointwise epilogue or a batch norm's statistics gathered as it goes. JIT-internal ({@link OpDef#takesCallback}):
     * not traced, not autocast. Its derivatives and autograd node are {@link #CONVOLUTION}'s (they read the inputs only).
     */
    public static final OpDef CONVOLUTION_EPILOGUE = withCallback(primitive("convolution_epilogue",
            List.of("input", "weight", "bias"), g -> new long[][] {shape(g, N, CIN, H, W), weight(g), shape(g, COUT)},
            g -> shape(g, N, COUT, OH, OW), "`conv2dWithEpilogue` of the geometry, plus the bias: the callback's work on each"
                    + " finished block (the JIT's epilogue)", () -> CONVOLUTION.derivatives()));

    /** The input gradient of {@link #CONVOLUTION} (conv-output space to conv-input space), plus the bias per channel. */
    public static final OpDef CONVOLUTION_TRANSPOSE = primitive("convolution_transpose", List.of("grad_output", "weight", "bias"),
            g -> new long[][] {shape(g, N, COUT, OH, OW), weight(g), shape(g, CIN)}, g -> shape(g, N, CIN, H, W),
            "`conv2dBackwardInput` of the geometry, plus the bias",
            () -> List.of(call(ConvolutionOps.CONVOLUTION, geometry(GRAD, in(1, "weight")).toArray(Expr[]::new)),
                    call(ConvolutionOps.CONVOLUTION_WEIGHT_GRAD, geometry(in(0, "input"), GRAD).toArray(Expr[]::new)),
                    call(ConvolutionOps.CONVOLUTION_BIAS_GRAD, GRAD)));

    /** The weight gradient of {@link #CONVOLUTION}: {@code (grad_output, input) -> [cout, cin / groups, kh, kw]}. */
    public static final OpDef CONVOLUTION_WEIGHT_GRAD = primitive("convolution_weight_grad", List.of("grad_output", "input"),
            g -> new long[][] {shape(g, N, COUT, OH, OW), shape(g, N, CIN, H, W)}, ConvolutionOps::weight,
            "`conv2dBackwardWeight` of the geometry",
            () -> List.of(call(ConvolutionOps.CONVOLUTION, geometry(in(1, "input"), GRAD).toArray(Expr[]::new)),
                    call(ConvolutionOps.CONVOLUTION_TRANSPOSE, geometry(in(0, "grad_output"), GRAD).toArray(Expr[]::new))));

    /** The bias gradient: {@code [N, C, H, W] -> [C]}, summed over all but the channels. */
    public static final OpDef CONVOLUTION_BIAS_GRAD = OpDef.structured("convolution_bias_grad").rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_output"))
            .meta((in, s) -> {
                if (in[0].dim() != 4) {
                    throw new IllegalArgumentException("convolution_bias_grad: expected a 4-D gradient, got shape "
                            + Shapes.format(in[0].shape()));
                }
                return new Meta.Output(new long[] {in[0].size(1)}, in[0].dtype());
            })
            // Each channel's gradient spread over its positions.
            .derivatives(() -> List.of(call(PointwiseOps.ADD, new Expr.ZerosLike(in(0, "grad_output")),
                    call(ViewOps.VIEW, GRAD, Expr.c(1), Expr.c(-1), Expr.c(1), Expr.c(1)))))
            .doc("`conv2dBackwardBias`").build();

    public static final OpDef IM2COL = primitive("im2col", List.of("self"), g -> new long[][] {shape(g, N, CIN, H, W)},
            ConvolutionOps::columns, "`im2col` of the geometry (groups ignored)",
            () -> List.of(call(ConvolutionOps.COL2IM, geometry(GRAD).toArray(Expr[]::new))));

    public static final OpDef COL2IM = primitive("col2im", List.of("self"), g -> new long[][] {columns(g)}, g -> shape(g, N, CIN, H, W),
            "`col2im` of the geometry: overlapping blocks summed",
            () -> List.of(call(ConvolutionOps.IM2COL, geometry(GRAD).toArray(Expr[]::new))));

    /** A primitive over tensors named {@code tensors} (a third is the optional bias) of the shapes {@code inputs} gives, and the geometry. */
    private static OpDef primitive(String name, List<String> tensors, Function<double[], long[][]> inputs, Function<double[], long[]> result,
                                   String doc, Supplier<List<Expr>> derivatives) {
        Param[] params = new Param[tensors.size() + 1];
        for (int i = 0; i < tensors.size(); i++) {
            params[i] = i == 2 ? new Param(tensors.get(i), "Tensor?", "None") : Param.tensor(tensors.get(i));
        }
        params[tensors.size()] = new Param("geometry", "int[16]", null);
        return OpDef.structured(name).rule(DTypeRule.SAME_NO_BOOL).signature(params)
                .meta((in, g) -> {
                    if (g.length != GEOMETRY.length) {
                        throw new IllegalArgumentException(name + ": expected the " + GEOMETRY.length + " values of a geometry, got "
                                + g.length);
                    }
                    long[][] expected = inputs.apply(g);
                    for (int i = 0; i < in.length; i++) {
                        if (in[i] == null) continue;
                        if (!in[i].device().equals(in[0].device()) || in[i].dtype() != in[0].dtype()) {
                            throw new IllegalArgumentException(name + ": expected operands of one device and dtype, got " + in[0].dtype()
                                    + " on " + in[0].device() + " and " + in[i].dtype() + " on " + in[i].device());
                        }
                        if (!Arrays.equals(in[i].shape(), expected[i])) {
                            throw new IllegalArgumentException(name + ": expected " + tensors.get(i) + " of shape "
                                    + Shapes.format(expected[i]) + " for its geometry, got " + Shapes.format(in[i].shape()));
                        }
                    }
                    return new Meta.Output(result.apply(g), in[0].dtype());
                })
                .derivatives(derivatives).doc(doc).build();
    }

    /**
     * {@code op} (a primitive) as a JIT-internal op taking a callback after its geometry: float32 operands only (the
     * backends' epilogue kernels), read dense, differentiated as {@link #CONVOLUTION}.
     */
    private static OpDef withCallback(OpDef op) {
        List<Param> params = new ArrayList<>(op.signature().params());
        params.add(Param.callback("epilogue"));
        Meta meta = op.meta();
        return OpDef.structured(op.name()).py("_" + op.name()).rule(DTypeRule.FLOAT32_ONLY).signature(params.toArray(Param[]::new))
                .meta((in, g) -> {
                    for (int i = 0; i < in.length; i++) {
                        if (in[i] != null && in[i].dtype() != org.jtorch.types.DType.FLOAT32) {
                            throw new IllegalArgumentException("_" + op.name() + ": expected float32 operands, got "
                                    + params.get(i).name() + " of " + in[i].dtype() + " (shape " + Shapes.format(in[i].shape()) + " on " + in[i].device() + ")");
                        }
                    }
                    return meta.infer(in, g);
                })
                .denseInputs(0, 1, 2).derivatives(() -> CONVOLUTION.derivatives()).node("ConvolutionBackward0").doc(op.doc()).build();
    }

    private static long[] weight(double[] g) {
        return new long[] {(long) g[COUT], (long) (g[CIN] / g[GROUPS]), (long) g[KH], (long) g[KW]};
    }

    private static long[] columns(double[] g) {
        return new long[] {(long) g[N], (long) (g[CIN] * g[KH] * g[KW]), (long) (g[OH] * g[OW])};
    }

    private static long[] shape(double[] g, int... fields) {
        long[] s = new long[fields.length];
        for (int i = 0; i < s.length; i++) s[i] = (long) g[fields[i]];
        return s;
    }

    /** {@code tensors} followed by the differentiated call's geometry, passed on unchanged. */
    private static List<Expr> geometry(Expr... tensors) {
        List<Expr> args = new ArrayList<>(List.of(tensors));
        for (int i = 0; i < GEOMETRY.length; i++) args.add(new Expr.Scalar(i, GEOMETRY[i], Double.NaN));
        return args;
    }

    /** The geometry's number of scalars. */
    public static int geometryLength() {
        return GEOMETRY.length;
    }
}
