package org.jtorch.op;

import static org.jtorch.op.Expr.call;
import static org.jtorch.op.Expr.in;
import static org.jtorch.op.Expr.scalar;

import java.util.Arrays;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Scaled dot-product attention, declared as PyTorch 2 splits it: the front end {@link #SCALED_DOT_PRODUCT_ATTENTION}
 * ({@code nn.F.scaledDotProductAttention}: checks, the bool mask made additive, dropout's mask drawn, autocast), the
 * fused CPU op {@link #FLASH_ATTENTION} ({@code _scaled_dot_product_flash_attention_for_cpu}: output and per-row
 * log-sum-exp) with its fused backward {@link #FLASH_ATTENTION_BACKWARD}, and the composition {@link #ATTENTION_MATH}
 * ({@code _scaled_dot_product_attention_math}) that the dispatcher runs where no kernel takes the call. A trace sees the
 * fused op as one node, its backward as another.
 *
 * <p>Dropout: PyTorch's fused op draws its mask inside from {@code dropout_p}; here the front end draws it (a
 * {@code [batch..., L, S]} tensor of 0 and {@code 1 / (1 - p)}, from the caller's generator) and passes it as
 * {@code dropout_mask}, as PyTorch's math op takes one: both paths then apply the same mask, and a JIT replay sees
 * the draw as the ops that made it.
 */
public final class AttentionOps {
    private AttentionOps() {}

    private static final int CAUSAL = 0, SCALE = 1;

    private static final Expr Q = in(0, "query"), K = in(1, "key"), V = in(2, "value"), MASK = in(3, "attn_mask"),
            DROPOUT = in(4, "dropout_mask");

    /**
     * {@code softmax(query @ key^T * scale + mask) @ value} as PyTorch 2's {@code torch.nn.functional.scaled_dot_product_attention}:
     * the declared front end ({@code nn.F.scaledDotProductAttention}), which carries autocast's policy (lower precision on
     * CUDA and on the CPU, as PyTorch 2.x's lists) and calls {@link #FLASH_ATTENTION}.
     */
    public static final OpDef SCALED_DOT_PRODUCT_ATTENTION = OpDef.frontEnd("scaled_dot_product_attention", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("query"), Param.tensor("key"), Param.tensor("value"), new Param("attn_mask", "Tensor?", "None"),
                    Param.scalar("dropout_p", "float", "0.0"), Param.scalar("is_causal", "bool", "False"),
                    Param.scalar("scale", "float?", "None"))
            .autocast(Device.Type.CUDA, CastPolicy.LOWER_PRECISION).autocast(Device.Type.CPU, CastPolicy.LOWER_PRECISION)
            .doc("`nn.F.scaledDotProductAttention`: masks and dropout prepared, then the fused op").build();

    /**
     * The attention composed from ops ({@code ops.Attention.math}: matmul, scale, masks, softmax, dropout's mask, matmul), for
     * every dtype, shape and device: {@link #FLASH_ATTENTION}'s decomposition, differentiable through its parts.
     */
    public static final OpDef ATTENTION_MATH = OpDef.frontEnd("_scaled_dot_product_attention_math", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("query"), Param.tensor("key"), Param.tensor("value"), new Param("attn_mask", "Tensor?", "None"),
                    new Param("dropout_mask", "Tensor?", "None"), Param.scalar("is_causal", "bool", "False"),
                    Param.scalar("scale", "float", null))
            .doc("`ops.Attention.math`: the attention as ops").build();

    /**
     * Fused attention, as ATen's {@code _scaled_dot_product_flash_attention_for_cpu}: one kernel call computes a block of
     * queries against a block of keys at a time with an online softmax and writes the output ({@code [batch..., L, Ev]},
     * its dimensions in memory in the query's order: heads split from one projection merge back as a view) and each query
     * row's {@code logsumexp} ({@code [batch..., L]}, float32) of the scaled, masked scores, which the backward reads instead
     * of the {@code L x S} weights. {@code attn_mask} is additive (float; the front end turns a bool mask into 0 and
     * -inf), {@code dropout_mask} multiplies the weights (see the class comment). Scalars: {@code is_causal, scale}. The
     * kernels take float32 query, key and value of one batch shape and float32 masks that broadcast to the scores
     * ({@link #flashForm}); other calls, a mask that needs a gradient and backends without the kernels (CUDA today) run
     * {@link #ATTENTION_MATH}. Its derivatives select the three gradients of one fused backward call
     * ({@link #FLASH_ATTENTION_BACKWARD}), or, when the backward records a graph, the backward as differentiable ops
     * ({@link #FLASH_ATTENTION_BACKWARD_COMPOSITE}).
     */
    public static final OpDef FLASH_ATTENTION = OpDef.structured("_scaled_dot_product_flash_attention_for_cpu")
            .rule(DTypeRule.FLOATING_ONLY)
            .outputs(AttentionOps::flashMeta, "output", "logsumexp")
            .signature(Param.tensor("query"), Param.tensor("key"), Param.tensor("value"), new Param("attn_mask", "Tensor?", "None"),
                    new Param("dropout_mask", "Tensor?", "None"), Param.scalar("is_causal", "bool", "False"),
                    Param.scalar("scale", "float", null))
            .derivatives(AttentionOps::flashDerivatives)
            .decomposition(call(ATTENTION_MATH, Q, K, V, MASK, DROPOUT, scalar(CAUSAL, "is_causal"), scalar(SCALE, "scale")))
            .doc("blocked attention with an online softmax; saves the rows' log-sum-exp").build();

    /**
     * The gradients of {@link #FLASH_ATTENTION}'s output with respect to query, key and value from one fused kernel call
     * that recomputes the weights from {@code logsumexp}: with {@code P} the weights and {@code D} the dropout mask,
     * {@code dV = (P D)^T dO}, {@code dS = P ((dO V^T) D - rowsum(dO * O))}, {@code dQ = dS K scale},
     * {@code dK = dS^T Q scale}. No derivative of its own: a backward that records a graph runs
     * {@link #FLASH_ATTENTION_BACKWARD_COMPOSITE}.
     */
    public static final OpDef FLASH_ATTENTION_BACKWARD = OpDef.structured("_scaled_dot_product_flash_attention_for_cpu_backward")
            .rule(DTypeRule.FLOATING_ONLY)
            .outputs(AttentionOps::flashBackwardMeta, "grad_query", "grad_key", "grad_value")
            .signature(Param.tensor("grad_out"), Param.tensor("query"), Param.tensor("key"), Param.tensor("value"),
                    Param.tensor("out"), Param.tensor("logsumexp"), new Param("attn_mask", "Tensor?", null),
                    new Param("dropout_mask", "Tensor?", null), Param.scalar("is_causal", "bool", null),
                    Param.scalar("scale", "float", null))
            .doc("the three gradients in one pass over the key blocks").build();

    /**
     * Gradient {@code output} (0: query, 1: key, 2: value) of {@link #FLASH_ATTENTION} as differentiable tensor ops over the
     * weights recomputed by the composition ({@code ops.Attention.backwardComposite}), for gradients of gradients.
     */
    public static final OpDef FLASH_ATTENTION_BACKWARD_COMPOSITE = OpDef.frontEnd("_scaled_dot_product_attention_backward_composite", true)
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(Param.tensor("grad_out"), Param.tensor("query"), Param.tensor("key"), Param.tensor("value"),
                    new Param("attn_mask", "Tensor?", null), new Param("dropout_mask", "Tensor?", null),
                    Param.scalar("is_causal", "bool", null), Param.scalar("scale", "float", null), Param.scalar("output", "int", null))
            .doc("`ops.Attention.backwardComposite`: the backward as ops, differentiable").build();

    private static java.util.List<Expr> flashDerivatives() {
        Expr causal = scalar(CAUSAL, "is_causal"), scale = scalar(SCALE, "scale");
        Expr.Op fused = (Expr.Op) call(FLASH_ATTENTION_BACKWARD, Expr.GRAD, Q, K, V, Expr.RESULT, Expr.output(1, "logsumexp"), MASK,
                DROPOUT, causal, scale);
        Expr[] d = new Expr[5];
        for (int j = 0; j < 3; j++) {
            d[j] = new Expr.IfGrad(call(FLASH_ATTENTION_BACKWARD_COMPOSITE, Expr.GRAD, Q, K, V, MASK, DROPOUT, causal, scale, Expr.c(j)),
                    new Expr.Select(fused, j));
        }
        return Arrays.asList(d);
    }

    /**
     * The argument forms of {@link #FLASH_ATTENTION}'s kernels: float32 query {@code [batch..., L, E]}, key
     * {@code [batch..., S, E]} and value {@code [batch..., S, Ev]} with the same batch dimensions on one device, no dimension
     * empty, one batch entry's operands within an int's reach (the kernels index Java arrays); an additive float32 mask
     * that broadcasts to the scores {@code [batch..., L, S]}, or none; a float32 dropout mask of the scores' shape, or none.
     */
    public static boolean flashForm(StridedView[] in, double[] scalars) {
        StridedView q = in[0], k = in[1], v = in[2];
        if (q.dtype() != DType.FLOAT32 || k.dtype() != DType.FLOAT32 || v.dtype() != DType.FLOAT32) return false;
        Device device = q.device();
        if (!k.device().equals(device) || !v.device().equals(device)) return false;
        int dims = q.dim();
        if (dims < 2 || k.dim() != dims || v.dim() != dims) return false;
        int nb = dims - 2;
        for (int d = 0; d < nb; d++) if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return false;
        long l = q.size(-2), s = k.size(-2), e = q.size(-1), ev = v.size(-1);
        if (l == 0 || s == 0 || e == 0 || ev == 0 || k.size(-1) != e || v.size(-2) != s) return false;
        if (Math.max(l, s) * (Math.max(e, ev) + 16) >= Integer.MAX_VALUE || q.numel() / (l * e) >= Integer.MAX_VALUE) return false;
        long[] scores = scoreShape(q, s);
        StridedView mask = in[3], drop = in[4];
        if (mask != null && (mask.dtype() != DType.FLOAT32 || !mask.device().equals(device) || !broadcastsTo(mask.shape(), scores))) {
            return false;
        }
        return drop == null || (drop.dtype() == DType.FLOAT32 && drop.device().equals(device) && Arrays.equals(drop.shape(), scores));
    }

    /** The scores' shape {@code [batch..., L, S]} for query {@code q} and {@code s} keys. */
    public static long[] scoreShape(StridedView q, long s) {
        long[] shape = q.shape().clone();
        shape[shape.length - 1] = s;
        return shape;
    }

    private static boolean broadcastsTo(long[] shape, long[] target) {
        if (shape.length > target.length) return false;
        for (int i = 1; i <= shape.length; i++) {
            long n = shape[shape.length - i];
            if (n != 1 && n != target[target.length - i]) return false;
        }
        return true;
    }

    /**
     * The order in which {@code t}'s dimensions lie in memory, outermost first, the last innermost (as ATen's flash attention
     * allocates its output and gradients: heads split from one projection, {@code [b, l, h, e]} seen as {@code [b, h, l, e]},
     * get an output in that same order).
     */
    private static int[] memoryOrder(StridedView t) {
        int n = t.dim();
        Integer[] order = new Integer[n - 1];
        for (int d = 0; d < n - 1; d++) order[d] = d;
        Arrays.sort(order, (a, b) -> Long.compare(t.stride(b), t.stride(a)));
        int[] o = new int[n];
        for (int i = 0; i < n - 1; i++) o[i] = order[i];
        o[n - 1] = n - 1;
        return o;
    }

    private static void checkForm(String op, StridedView[] in, double[] scalars) {
        if (!flashForm(in, scalars)) {
            StringBuilder b = new StringBuilder(op).append(": expected float32 query [batch..., L, E], key [batch..., S, E] and value ")
                    .append("[batch..., S, Ev] on one device with one batch shape, no empty dimension, and float32 masks that broadcast to ")
                    .append("the scores, got");
            String[] names = {"query", "key", "value", "attn_mask", "dropout_mask"};
            for (int i = 0; i < names.length; i++) {
                if (in[i] != null) {
                    b.append(' ').append(names[i]).append(' ').append(Shapes.format(in[i].shape())).append(" of ").append(in[i].dtype())
                            .append(" on ").append(in[i].device());
                }
            }
            throw new IllegalArgumentException(b.toString());
        }
    }

    private static Meta.Output[] flashMeta(StridedView[] in, double[] scalars) {
        checkForm("_scaled_dot_product_flash_attention_for_cpu", in, scalars);
        StridedView q = in[0];
        long[] out = q.shape().clone();
        out[out.length - 1] = in[2].size(-1);
        return new Meta.Output[] {new Meta.Output(out, DType.FLOAT32, memoryOrder(q)),
                new Meta.Output(Arrays.copyOf(q.shape(), q.dim() - 1), DType.FLOAT32)};
    }

    private static Meta.Output[] flashBackwardMeta(StridedView[] in, double[] scalars) {
        String op = "_scaled_dot_product_flash_attention_for_cpu_backward";
        StridedView[] forward = {in[1], in[2], in[3], in[6], in[7]};
        checkForm(op, forward, scalars);
        StridedView g = in[0], o = in[4], lse = in[5], q = in[1];
        long[] outShape = q.shape().clone();
        outShape[outShape.length - 1] = in[3].size(-1);
        long[] lseShape = Arrays.copyOf(q.shape(), q.dim() - 1);
        if (!Arrays.equals(g.shape(), outShape) || g.dtype() != DType.FLOAT32 || !Arrays.equals(o.shape(), outShape)
                || o.dtype() != DType.FLOAT32 || !Arrays.equals(lse.shape(), lseShape) || lse.dtype() != DType.FLOAT32
                || !lse.isContiguous()) {
            throw new IllegalArgumentException(op + ": expected float32 grad_out and out of shape " + Shapes.format(outShape)
                    + " and a contiguous float32 logsumexp of shape " + Shapes.format(lseShape) + ", got " + Shapes.format(g.shape())
                    + " of " + g.dtype() + ", " + Shapes.format(o.shape()) + " of " + o.dtype() + " and " + Shapes.format(lse.shape())
                    + " of " + lse.dtype());
        }
        Meta.Output[] r = new Meta.Output[3];
        for (int j = 0; j < 3; j++) r[j] = new Meta.Output(in[1 + j].shape(), DType.FLOAT32, memoryOrder(in[1 + j]));
        return r;
    }
}
