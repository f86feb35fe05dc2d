package org.jtorch.nn;

import static org.jtorch.ops.Dispatcher.view;

import java.util.Arrays;
import java.util.Objects;
import java.util.stream.Stream;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Generator;
import org.jtorch.Tensor;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.AttentionKernels;
import org.jtorch.backend.Backends;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;

/**
 * {@link F#scaledDotProductAttention}'s fused path, as PyTorch's {@code _scaled_dot_product_flash_attention} on the
 * CPU: one backend kernel forward ({@link AttentionKernels}) that saves each query row's log-sum-exp instead of the
 * {@code L x S} weights, and one backward that recomputes them. It serves float32 query, key and value with the same
 * batch dimensions, with or without dropout (its mask drawn as the composition draws it, so a generator gives both
 * paths the same mask), with no mask, the causal one or a float or bool mask that needs no gradient, on a
 * backend that has the kernels; {@link F#attention} composes every other call from ops, and so does a trace (the JIT
 * sees the ops). A backward that records a graph ({@code createGraph}) runs as ops over the recomputed weights.
 *
 * <p>Why not a structured op of the registry: its ops have one result and a derivative per input written as one
 * expression, where this op has two results (the output and the log-sum-exp the backward needs) and one backward
 * kernel that produces the three gradients together.
 */
final class FusedAttention {
    private FusedAttention() {}

    /** The attention output by the fused kernels, or null where they do not serve this call. */
    static Tensor forward(Tensor q, Tensor k, Tensor v, Tensor attnMask, boolean isCausal, double scale, double dropoutP,
                          Generator gen) {
        AttentionKernels kernels = kernels(q, k, v, attnMask);
        if (kernels == null) return null;
        int nb = q.dim() - 2;
        long l = q.size(-2), s = k.size(-2);
        Device device = q.device();
        long[] batch = Arrays.copyOf(q.shape(), nb);
        long[] scoreShape = withRows(batch, l, s);
        Tensor qc = unitLastStride(q), kc = unitLastStride(k), vc = unitLastStride(v);
        Tensor mask = attnMask == null ? null : additive(attnMask, q);
        Tensor drop = dropoutP > 0 ? F.dropoutScale(scoreShape, DType.FLOAT32, device, dropoutP, gen) : null;
        Tensor out = emptyInLayoutOf(q, withRows(batch, l, v.size(-1)));
        Tensor lse = Tensor.empty(Arrays.copyOf(scoreShape, nb + 1), DType.FLOAT32, device);
        kernels.forward(view(qc), view(kc), view(vc), maskView(mask, scoreShape), isCausal, scale,
                drop == null ? null : view(drop), view(out), view(lse));
        if (Autograd.needsGrad(q, k, v)) {
            SavedTensor sq = Autograd.save(qc), sk = Autograd.save(kc), sv = Autograd.save(vc), so = Autograd.save(out),
                    sl = Autograd.save(lse);
            SavedTensor sm = mask == null ? null : Autograd.save(mask), sd = drop == null ? null : Autograd.save(drop);
            SavedTensor[] saved = Stream.of(sq, sk, sv, so, sl, sm, sd).filter(Objects::nonNull).toArray(SavedTensor[]::new);
            Autograd.record("ScaledDotProductFlashAttentionForCpuBackward0", out, grads -> {
                Tensor m = sm == null ? null : sm.get(), d = sd == null ? null : sd.get();
                if (Grad.isEnabled()) return backwardComposed(grads[0], sq.get(), sk.get(), sv.get(), m, isCausal, scale, d);
                Tensor gq = emptyInLayoutOf(q, q.shape()), gk = emptyInLayoutOf(k, k.shape()), gv = emptyInLayoutOf(v, v.shape());
                Tensor go = unitLastStride(grads[0]);
                try {
                    kernels.backward(view(go), view(sq.get()), view(sk.get()), view(sv.get()), maskView(m, scoreShape), isCausal,
                            scale, d == null ? null : view(d), view(so.get()), view(sl.get()), view(gq), view(gk), view(gv));
                } finally {
                    if (go != grads[0]) go.close();
                }
                return new Tensor[] {gq, gk, gv};
            }, new Tensor[] {q, k, v}, saved);
        }
        for (Tensor[] pair : new Tensor[][] {{q, qc}, {k, kc}, {v, vc}, {attnMask, mask}}) {
            if (pair[1] != null && pair[1] != pair[0]) pair[1].close();
        }
        lse.close();
        if (drop != null) drop.close();
        return out;
    }

    /** The kernels that serve this call, or null. */
    private static AttentionKernels kernels(Tensor q, Tensor k, Tensor v, Tensor mask) {
        if (Dispatcher.tracing()) return null;
        if (q.dtype() != DType.FLOAT32 || k.dtype() != DType.FLOAT32 || v.dtype() != DType.FLOAT32) return null;
        Device device = q.device();
        if (!k.device().equals(device) || !v.device().equals(device)) return null;
        int dims = q.dim();
        if (k.dim() != dims || v.dim() != dims) return null;
        int nb = dims - 2;
        for (int d = 0; d < nb; d++) if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return null;
        long l = q.size(-2), s = k.size(-2), e = q.size(-1), ev = v.size(-1);
        if (l == 0 || s == 0 || e == 0 || ev == 0) return null;
        // The kernels index Java arrays: one batch entry's operands must fit in an int.
        if (Math.max(l, s) * (Math.max(e, ev) + 16) >= Integer.MAX_VALUE || q.numel() / (l * e) >= Integer.MAX_VALUE) return null;
        if (mask != null) {
            if (mask.requiresGrad() || !mask.device().equals(device)) return null;
            if (mask.dtype() != DType.FLOAT32 && mask.dtype() != DType.BOOL) return null;
            if (!broadcastsTo(mask.shape(), withRows(Arrays.copyOf(q.shape(), nb), l, s))) return null;
        }
        return Backends.of(device).attention();
    }

    private static boolean broadcastsTo(long[] shape, long[] target) {
        if (shape.length > target.length) return false;
        for (int i = 1; i <= shape.length; i++) {
            long n = shape[shape.length - i];
            if (n != 1 && n != target[target.length - i]) return false;
        }
        return true;
    }

    private static long[] withRows(long[] batch, long rows, long cols) {
        long[] shape = Arrays.copyOf(batch, batch.length + 2);
        shape[batch.length] = rows;
        shape[batch.length + 1] = cols;
        return shape;
    }

    /**
     * A new float32 tensor of {@code shape} (which differs from {@code t}'s at most in the last dimension) whose
     * dimensions lie in memory in the order of {@code t}'s strides, the last innermost, as ATen's flash attention
     * allocates its output and gradients: heads split from one projection ({@code [b, l, h, e]} seen as
     * {@code [b, h, l, e]}) get an output and gradients in that same order, so that merging the heads back is a view,
     * not a copy.
     */
    private static Tensor emptyInLayoutOf(Tensor t, long[] shape) {
        int n = shape.length;
        Integer[] order = new Integer[n - 1];
        for (int d = 0; d < n - 1; d++) order[d] = d;
        Arrays.sort(order, (a, b) -> Long.compare(t.stride(b), t.stride(a)));
        long[] permuted = new long[n];
        int[] back = new int[n];
        for (int i = 0; i < n - 1; i++) {
            permuted[i] = shape[order[i]];
            back[order[i]] = i;
        }
        permuted[n - 1] = shape[n - 1];
        back[n - 1] = n - 1;
        try (Tensor dense = Tensor.empty(permuted, DType.FLOAT32, t.device())) {
            return dense.permute(back);
        }
    }

    /** {@code t} itself when its last dimension has unit stride (what the kernels read), else a contiguous copy. */
    private static Tensor unitLastStride(Tensor t) {
        return t.size(-1) == 1 || t.stride(-1) == 1 ? t : t.contiguous();
    }

    /** A float mask as given; a bool one as 0 where true and -inf where false (the composition's additive form). */
    private static Tensor additive(Tensor mask, Tensor like) {
        return mask.dtype() == DType.BOOL ? F.additiveMask(mask, like) : mask;
    }

    private static StridedView maskView(Tensor mask, long[] scoreShape) {
        return mask == null ? null : view(mask).expand("scaledDotProductAttention", scoreShape);
    }

    /**
     * The backward as ops, differentiable again: with {@code P} the weights recomputed by the composition and
     * {@code D} the dropout scale (1 without), {@code dV = (P D)^T dO}, {@code G = (dO V^T) D},
     * {@code dS = P (G - rowsum(G P))}, {@code dQ = dS K scale}, {@code dK = dS^T Q scale}.
     */
    private static Tensor[] backwardComposed(Tensor gradOut, Tensor q, Tensor k, Tensor v, Tensor mask, boolean isCausal, double scale,
                                             Tensor dropoutScale) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor p = F.attentionWeights(q, k, mask, isCausal, scale);
            Tensor gv = (dropoutScale == null ? p : p.mul(dropoutScale)).transpose(-2, -1).matmul(gradOut);
            Tensor gp = gradOut.matmul(v.transpose(-2, -1));
            if (dropoutScale != null) gp = gp.mul(dropoutScale);
            Tensor gs = p.mul(gp.sub(gp.mul(p).sum(new int[] {-1}, true))).mul(scale);
            Tensor gq = gs.matmul(k), gk = gs.transpose(-2, -1).matmul(q);
            return new Tensor[] {scope.keep(gq), scope.keep(gk), scope.keep(gv)};
        }
    }
}
