package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.op.FrontEndOps;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import java.util.function.Function;
import org.jtorch.amp.Autocast;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.memory.MemoryScope;

/**
 * The matmul family: {@code mm}, {@code bmm}, {@code mv}, {@code dot}, {@code matmul} (NumPy rules with
 * broadcast batch dimensions), {@code addmm}, {@code baddbmm}, {@code linear} and {@code outer}. All
 * reduce to the backend's batched GEMM over strided views, so transposed operands are never copied.
 */
public final class Linalg {
    private Linalg() {}

    public static Tensor mm(Tensor a, Tensor b) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("mm", t -> mm(t[0], t[1]), a, b);
            if (r != null) return r;
        }
        check2d("mm", a, b);
        checkInner("mm", a, b, a.size(1), b.size(0));
        Device device = sameDeviceAndType("mm", a, b);
        Tensor out = Tensor.empty(new long[] {a.size(0), b.size(1)}, a.dtype(), device);
        boolean record = Autograd.needsGrad(a, b);
        try (Grad.Mode m = record ? Grad.noGrad() : null) {
            gemm(a, b, out, 1, 0);
        }
        if (record) {
            SavedTensor sa = b.requiresGrad() ? Autograd.save(a) : null;
            SavedTensor sb = a.requiresGrad() ? Autograd.save(b) : null;
            Autograd.record("MmBackward0", out, g -> new Tensor[] {
                    sb == null ? null : g[0].mm(sb.get().t()),
                    sa == null ? null : sa.get().t().mm(g[0])}, new Tensor[] {a, b}, nonNull(sa, sb));
        }
        return out;
    }

    public static Tensor bmm(Tensor a, Tensor b) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("bmm", t -> bmm(t[0], t[1]), a, b);
            if (r != null) return r;
        }
        if (a.dim() != 3 || b.dim() != 3) {
            throw new IllegalArgumentException("bmm: expected 3-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
        if (a.size(0) != b.size(0)) {
            throw new IllegalArgumentException("bmm: batch sizes differ: shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()) + " (" + a.size(0) + " != " + b.size(0) + ")");
        }
        checkInner("bmm", a, b, a.size(2), b.size(1));
        Device device = sameDeviceAndType("bmm", a, b);
        Tensor out = Tensor.empty(new long[] {a.size(0), a.size(1), b.size(2)}, a.dtype(), device);
        Backends.of(device).linalg().bmm(view(a), view(b), view(out), 1, 0);
        if (Autograd.needsGrad(a, b)) {
            SavedTensor sa = b.requiresGrad() ? Autograd.save(a) : null;
            SavedTensor sb = a.requiresGrad() ? Autograd.save(b) : null;
            Autograd.record("BmmBackward0", out, g -> new Tensor[] {
                    sb == null ? null : g[0].bmm(sb.get().transpose(1, 2)),
                    sa == null ? null : sa.get().transpose(1, 2).bmm(g[0])}, new Tensor[] {a, b}, nonNull(sa, sb));
        }
        return out;
    }

    public static Tensor mv(Tensor m, Tensor v) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("mv", t -> mv(t[0], t[1]), m, v);
            if (r != null) return r;
        }
        if (m.dim() != 2 || v.dim() != 1) {
            throw new IllegalArgumentException("mv: expected a 2-D matrix and a 1-D vector, got shapes " + Shapes.format(m.shape())
                    + " and " + Shapes.format(v.shape()));
        }
        checkInner("mv", m, v, m.size(1), v.size(0));
        sameDeviceAndType("mv", m, v);
        try (Tensor col = v.unsqueeze(1); Tensor r = mm(m, col)) {
            return r.squeeze(1);
        }
    }

    public static Tensor dot(Tensor a, Tensor b) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("dot", t -> dot(t[0], t[1]), a, b);
            if (r != null) return r;
        }
        if (a.dim() != 1 || b.dim() != 1) {
            throw new IllegalArgumentException("dot: expected 1-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
        if (a.size(0) != b.size(0)) {
            throw new IllegalArgumentException("dot: inconsistent tensor size, expected tensor [" + a.size(0)
                    + "] and src [" + b.size(0) + "] to have the same number of elements");
        }
        sameDeviceAndType("dot", a, b);
        try (Tensor row = a.unsqueeze(0); Tensor col = b.unsqueeze(1); Tensor r = mm(row, col)) {
            return r.reshape();
        }
    }

    /** {@code torch.matmul}: dot, mv, mm or batched matmul with broadcast batch dimensions, by rank. */
    public static Tensor matmul(Tensor a, Tensor b) {
        if (Dispatcher.tracing()) return Dispatcher.traceFrontEnd(FrontEndOps.MATMUL, new Tensor[] {a, b}, new double[0], () -> matmul(a, b));
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("matmul", t -> matmul(t[0], t[1]), a, b);
            if (r != null) return r;
        }
        int da = a.dim();
        int db = b.dim();
        if (da == 0 || db == 0) {
            throw new IllegalArgumentException("matmul: both arguments need at least 1 dimension, got shapes "
                    + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape()));
        }
        if (da == 1 && db == 1) return dot(a, b);
        if (da == 2 && db == 1) return mv(a, b);
        if (da == 1 && db == 2) {
            checkInner("matmul", a, b, a.size(0), b.size(0));
            try (Tensor row = a.unsqueeze(0); Tensor r = mm(row, b)) {
                return r.squeeze(0);
            }
        }
        if (da == 2 && db == 2) {
            checkInner("matmul", a, b, a.size(1), b.size(0));
            return mm(a, b);
        }
        Device device = sameDeviceAndType("matmul", a, b);
        // Promote vectors to matrices, broadcast the batch dims, run one batched GEMM, drop the added dims.
        try (Tensor am = da == 1 ? a.unsqueeze(0) : a.alias(); Tensor bm = db == 1 ? b.unsqueeze(1) : b.alias()) {
            long m = am.size(-2);
            long k = am.size(-1);
            long k2 = bm.size(-2);
            long n = bm.size(-1);
            if (k != k2) {
                throw new IllegalArgumentException("matmul: shapes " + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape())
                        + " cannot be multiplied (" + k + " != " + k2 + ")");
            }
            long[] batchA = Arrays.copyOf(am.shape(), am.dim() - 2);
            long[] batchB = Arrays.copyOf(bm.shape(), bm.dim() - 2);
            long[] batch = Shapes.broadcast("matmul", batchA, batchB);
            long nb = Shapes.numel(batch);
            // [..., M, K] @ [K, N]: fold the batch into M when A's batch dims are contiguous rows.
            if (bm.dim() == 2) {
                try (Tensor flat = rowsOf(am); Tensor r = mm(flat, bm)) {
                    return r.reshape(resultShape(batch, da == 1 ? -1 : m, db == 1 ? -1 : n));
                }
            }
            try (Tensor ae = am.expand(concat(batch, m, k)); Tensor be = bm.expand(concat(batch, k, n));
                 Tensor a3 = ae.reshape(nb, m, k); Tensor b3 = be.reshape(nb, k, n)) {
                try (Tensor out = bmm(a3, b3)) {
                    return out.reshape(resultShape(batch, da == 1 ? -1 : m, db == 1 ? -1 : n));
                }
            }
        }
    }

    /** {@code beta * input + alpha * (m1 @ m2)}, input broadcast to {@code [M, N]}. */
    public static Tensor addmm(Tensor input, Tensor m1, Tensor m2, double beta, double alpha) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("addmm", t -> addmm(t[0], t[1], t[2], beta, alpha), input, m1, m2);
            if (r != null) return r;
        }
        check2d("addmm", m1, m2);
        checkInner("addmm", m1, m2, m1.size(1), m2.size(0));
        Device device = sameDeviceAndType("addmm", m1, m2);
        sameDeviceAndType("addmm", input, m1);
        long[] shape = {m1.size(0), m2.size(1)};
        checkBroadcastsTo("addmm", input, shape);
        Tensor out = Tensor.empty(shape, m1.dtype(), device);
        boolean record = Autograd.needsGrad(input, m1, m2);
        try (Grad.Mode m = record ? Grad.noGrad() : null) {
            if (beta != 0) out.copy_(input);
            gemm(m1, m2, out, alpha, beta);
        }
        if (record) {
            SavedTensor s1 = m2.requiresGrad() ? Autograd.save(m1) : null;
            SavedTensor s2 = m1.requiresGrad() ? Autograd.save(m2) : null;
            long[] inShape = input.shape();
            DType inType = input.dtype();
            boolean inGrad = input.requiresGrad();
            Autograd.record("AddmmBackward0", out, g -> new Tensor[] {
                    inGrad ? Gradients.sumTo(g[0].mul(beta), inShape, inType) : null,
                    s2 == null ? null : g[0].mm(s2.get().t()).mul(alpha),
                    s1 == null ? null : s1.get().t().mm(g[0]).mul(alpha)}, new Tensor[] {input, m1, m2}, nonNull(s1, s2));
        }
        return out;
    }

    /** {@code beta * input + alpha * bmm(b1, b2)}, input broadcast to {@code [B, M, N]}. */
    public static Tensor baddbmm(Tensor input, Tensor b1, Tensor b2, double beta, double alpha) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("baddbmm", t -> baddbmm(t[0], t[1], t[2], beta, alpha), input, b1, b2);
            if (r != null) return r;
        }
        if (b1.dim() != 3 || b2.dim() != 3) {
            throw new IllegalArgumentException("baddbmm: expected 3-D batch tensors, got shapes " + Shapes.format(b1.shape())
                    + " and " + Shapes.format(b2.shape()));
        }
        if (b1.size(0) != b2.size(0)) {
            throw new IllegalArgumentException("baddbmm: batch sizes differ (" + b1.size(0) + " != " + b2.size(0) + ")");
        }
        checkInner("baddbmm", b1, b2, b1.size(2), b2.size(1));
        Device device = sameDeviceAndType("baddbmm", b1, b2);
        sameDeviceAndType("baddbmm", input, b1);
        long[] shape = {b1.size(0), b1.size(1), b2.size(2)};
        checkBroadcastsTo("baddbmm", input, shape);
        Tensor out = Tensor.empty(shape, b1.dtype(), device);
        boolean record = Autograd.needsGrad(input, b1, b2);
        try (Grad.Mode m = record ? Grad.noGrad() : null) {
            if (beta != 0) out.copy_(input);
            Backends.of(device).linalg().bmm(view(b1), view(b2), view(out), alpha, beta);
        }
        if (record) {
            SavedTensor s1 = b2.requiresGrad() ? Autograd.save(b1) : null;
            SavedTensor s2 = b1.requiresGrad() ? Autograd.save(b2) : null;
            long[] inShape = input.shape();
            DType inType = input.dtype();
            boolean inGrad = input.requiresGrad();
            Autograd.record("BaddbmmBackward0", out, g -> new Tensor[] {
                    inGrad ? Gradients.sumTo(g[0].mul(beta), inShape, inType) : null,
                    s2 == null ? null : g[0].bmm(s2.get().transpose(1, 2)).mul(alpha),
                    s1 == null ? null : s1.get().transpose(1, 2).bmm(g[0]).mul(alpha)}, new Tensor[] {input, b1, b2}, nonNull(s1, s2));
        }
        return out;
    }

    /** {@code x @ weight.T + bias} over the last dimension of {@code x}; {@code bias} may be null. */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        if (Dispatcher.tracing()) {
            return Dispatcher.traceFrontEnd(FrontEndOps.LINEAR, new Tensor[] {x, weight, bias}, new double[0], () -> linear(x, weight, bias));
        }
        if (Autocast.isActive()) {
            Tensor r = Autocast.run("linear", t -> linear(t[0], t[1], t[2]), x, weight, bias);
            if (r != null) return r;
        }
        return linear(x, weight, bias, null);
    }

    /**
     * {@link #linear(Tensor, Tensor, Tensor)} (not traced, no autocast) with a fused epilogue: {@code epilogue} is given
     * the product's output as a {@code [rows, out_features]} matrix and returns the work the backend runs on each block
     * of it as the GEMM finishes it ({@link LinalgKernels#mmWithEpilogue}); the JIT's entry point for a pointwise chain
     * fed by a linear layer. The returned tensor (and its autograd) is the linear layer's output before the epilogue, or
     * whatever the epilogue wrote into it.
     */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias, Function<Tensor, LinalgKernels.Epilogue> epilogue) {
        if (weight.dim() != 2) {
            throw new IllegalArgumentException("linear: expected a 2-D weight [out_features, in_features], got shape "
                    + Shapes.format(weight.shape()));
        }
        if (x.dim() == 0) throw new IllegalArgumentException("linear: input must have at least 1 dimension");
        long in = weight.size(1);
        long outFeatures = weight.size(0);
        if (x.size(-1) != in) {
            throw new IllegalArgumentException("linear: input shape " + Shapes.format(x.shape()) + " and weight shape "
                    + Shapes.format(weight.shape()) + " cannot be multiplied (" + x.size(-1) + " != " + in + ")");
        }
        Device device = sameDeviceAndType("linear", x, weight);
        if (bias != null) {
            sameDeviceAndType("linear", x, bias);
            checkBroadcastsTo("linear", bias, new long[] {outFeatures});
        }
        long[] outShape = x.shape();
        outShape[outShape.length - 1] = outFeatures;
        boolean record = Autograd.needsGrad(x, weight, bias);
        Tensor result;
        try (Grad.Mode m = record ? Grad.noGrad() : null; Tensor x2 = rowsOf(x); Tensor wt = weight.t()) {
            Tensor out = Tensor.empty(new long[] {x2.size(0), outFeatures}, x.dtype(), device);
            try (out) {
                if (bias != null) out.copy_(bias);
                if (epilogue == null) gemm(x2, wt, out, 1, bias != null ? 1 : 0);
                else gemm(x2, wt, out, 1, bias != null ? 1 : 0, epilogue.apply(out));
                result = out.view(outShape);
            }
        }
        if (record) {
            SavedTensor sx = weight.requiresGrad() ? Autograd.save(x) : null;
            SavedTensor sw = x.requiresGrad() ? Autograd.save(weight) : null;
            long[] xShape = x.shape();
            boolean biasGrad = bias != null && bias.requiresGrad();
            long[] biasShape = bias == null ? null : bias.shape();
            DType biasType = bias == null ? null : bias.dtype();
            Autograd.record("LinearBackward0", result, g -> {
                Tensor g2 = rowsOf(g[0]);
                return new Tensor[] {
                        sw == null ? null : g2.mm(sw.get()).reshape(xShape),
                        sx == null ? null : g2.t().mm(rowsOf(sx.get())),
                        biasGrad ? Gradients.sumTo(g2.sum(new int[] {0}, false), biasShape, biasType) : null};
            }, new Tensor[] {x, weight, bias}, nonNull(sx, sw));
        }
        return result;
    }

    /** Outer product of two vectors, with type promotion. */
    public static Tensor outer(Tensor a, Tensor b) {
        if (a.dim() != 1 || b.dim() != 1) {
            throw new IllegalArgumentException("outer: expected 1-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
        try (Tensor col = a.unsqueeze(1); Tensor row = b.unsqueeze(0)) {
            return col.mul(row);
        }
    }

    /**
     * {@code torch.cross(a, b, dim)}: the 3-vector cross product along {@code dim} (size 3 in both), broadcasting
     * the other dims. A null {@code dim} is PyTorch 1.13's default: the first dim of size 3.
     */
    public static Tensor cross(Tensor a, Tensor b, Integer dim) {
        Arguments.nonNull("cross", "other", b);
        a.checkOpen("cross");
        b.checkOpen("cross");
        if (a.dim() != b.dim()) {
            throw new IllegalArgumentException("cross: inputs must have the same number of dimensions, got shapes "
                    + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape()));
        }
        long[] shape = Shapes.broadcast("cross", a.shape(), b.shape());
        int d;
        if (dim != null) {
            d = Shapes.wrapDim("cross", dim, shape.length);
        } else {
            d = -1;
            for (int i = 0; i < shape.length && d < 0; i++) if (a.size(i) == 3 && b.size(i) == 3) d = i;
            if (d < 0) {
                throw new IllegalArgumentException("cross: no dimension of size 3 in shapes " + Shapes.format(a.shape()) + " and "
                        + Shapes.format(b.shape()));
            }
        }
        if (a.size(d) != 3 || b.size(d) != 3) {
            throw new IllegalArgumentException("cross: inputs dimension " + d + " must have length 3, got shapes "
                    + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape()));
        }
        int axis = d;
        return MemoryScope.run(() -> {
            Tensor[] x = {a.select(axis, 0), a.select(axis, 1), a.select(axis, 2)};
            Tensor[] y = {b.select(axis, 0), b.select(axis, 1), b.select(axis, 2)};
            Tensor c0 = x[1].mul(y[2]).sub(x[2].mul(y[1]));
            Tensor c1 = x[2].mul(y[0]).sub(x[0].mul(y[2]));
            Tensor c2 = x[0].mul(y[1]).sub(x[1].mul(y[0]));
            return org.jtorch.Torch.stack(new Tensor[] {c0, c1, c2}, axis);
        });
    }

    /**
     * {@code torch.cdist(x1, x2, p)}: the p-norm distance between each row of {@code x1} ({@code [B..., P, M]}) and
     * each row of {@code x2} ({@code [B..., R, M]}), as {@code [B..., P, R]}; p >= 0, inf allowed. Computed from the
     * differences (no {@code |x|^2 + |y|^2 - 2xy} shortcut, which loses accuracy for close points), so it holds a
     * {@code [B..., P, R, M]} intermediate.
     */
    public static Tensor cdist(Tensor x1, Tensor x2, double p) {
        Arguments.nonNull("cdist", "x1", x1);
        Arguments.nonNull("cdist", "x2", x2);
        if (x1.dim() < 2 || x2.dim() < 2) {
            throw new IllegalArgumentException("cdist: expected at least 2-D inputs, got shapes " + Shapes.format(x1.shape()) + " and "
                    + Shapes.format(x2.shape()));
        }
        if (x1.size(-1) != x2.size(-1)) {
            throw new IllegalArgumentException("cdist: X1 and X2 must have the same number of columns. X1: " + x1.size(-1)
                    + " X2: " + x2.size(-1));
        }
        if (!(p >= 0)) throw new IllegalArgumentException("cdist: only supports non-negative p values, got " + p);
        if (!x1.dtype().isFloatingPoint() || !x2.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("cdist: only supports floating-point dtypes, X1 got: " + x1.dtype() + ", X2 got: "
                    + x2.dtype());
        }
        return MemoryScope.run(() -> x1.unsqueeze(-2).sub(x2.unsqueeze(-3)).norm(p, new int[] {-1}, false));
    }

    private static SavedTensor[] nonNull(SavedTensor... s) {
        return java.util.Arrays.stream(s).filter(java.util.Objects::nonNull).toArray(SavedTensor[]::new);
    }

    /**
     * {@code t.reshape(-1, t.size(-1))} with the row count spelled out: {@code -1} cannot be inferred when the
     * last dimension is empty (a product over an empty inner dimension is still a valid matmul).
     */
    static Tensor rowsOf(Tensor t) {
        long[] shape = t.shape();
        long rows = 1;
        for (int i = 0; i < shape.length - 1; i++) rows *= shape[i];
        return t.reshape(rows, shape.length == 0 ? 1 : shape[shape.length - 1]);
    }

    /** One 2-D GEMM as a batch of one. */
    private static void gemm(Tensor a, Tensor b, Tensor out, double alpha, double beta) {
        try (Tensor a3 = a.unsqueeze(0); Tensor b3 = b.unsqueeze(0); Tensor o3 = out.unsqueeze(0)) {
            Backends.of(out.device()).linalg().bmm(view(a3), view(b3), view(o3), alpha, beta);
        }
    }

    /** One 2-D GEMM with an epilogue on its output's blocks. */
    private static void gemm(Tensor a, Tensor b, Tensor out, double alpha, double beta, LinalgKernels.Epilogue epilogue) {
        try (Tensor a3 = a.unsqueeze(0); Tensor b3 = b.unsqueeze(0); Tensor o3 = out.unsqueeze(0)) {
            Backends.of(out.device()).linalg().mmWithEpilogue(view(a3), view(b3), view(o3), alpha, beta, epilogue);
        }
    }

    private static void check2d(String op, Tensor a, Tensor b) {
        if (a.dim() != 2 || b.dim() != 2) {
            throw new IllegalArgumentException(op + ": expected 2-D tensors, got shapes " + Shapes.format(a.shape()) + " and "
                    + Shapes.format(b.shape()));
        }
    }

    private static void checkInner(String op, Tensor a, Tensor b, long ka, long kb) {
        if (ka != kb) {
            throw new IllegalArgumentException(op + ": shapes " + Shapes.format(a.shape()) + " and " + Shapes.format(b.shape())
                    + " cannot be multiplied (" + ka + " != " + kb + ")");
        }
    }

    private static Device sameDeviceAndType(String op, Tensor a, Tensor b) {
        a.checkOpen(op);
        b.checkOpen(op);
        if (!a.device().equals(b.device())) {
            throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + a.device()
                    + " and " + b.device());
        }
        if (a.dtype() != b.dtype()) {
            throw new IllegalArgumentException(op + ": expected both operands to have the same dtype, but got " + a.dtype()
                    + " and " + b.dtype());
        }
        if (a.dtype() == DType.BOOL) throw new IllegalArgumentException(op + ": not implemented for bool tensors");
        return a.device();
    }

    private static void checkBroadcastsTo(String op, Tensor t, long[] shape) {
        long[] b = Shapes.broadcast(op, t.shape(), shape);
        if (!Arrays.equals(b, shape)) {
            throw new IllegalArgumentException(op + ": input of shape " + Shapes.format(t.shape())
                    + " cannot be broadcast to the result shape " + Shapes.format(shape));
        }
    }

    private static long[] concat(long[] batch, long x, long y) {
        long[] r = Arrays.copyOf(batch, batch.length + 2);
        r[batch.length] = x;
        r[batch.length + 1] = y;
        return r;
    }

    /** Batch dims then M and N, where -1 marks a dimension dropped because that operand was a vector. */
    private static long[] resultShape(long[] batch, long m, long n) {
        int extra = (m >= 0 ? 1 : 0) + (n >= 0 ? 1 : 0);
        long[] r = Arrays.copyOf(batch, batch.length + extra);
        int i = batch.length;
        if (m >= 0) r[i++] = m;
        if (n >= 0) r[i] = n;
        return r;
    }
}
