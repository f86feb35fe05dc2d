package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.op.FrontEndOps;
import org.jtorch.op.Callback;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * The matmul family: {@code mm}, {@code bmm}, {@code mv}, {@code dot}, {@code matmul} (NumPy rules with
 * broadcast batch dimensions), {@code addmm}, {@code baddbmm}, {@code linear} and {@code outer}. All
 * reduce to the backend's batched GEMM over strided views, so transposed operands are never copied.
 */
public final class Linalg {
    private Linalg() {}

    private static final double[] NO_SCALARS = {};

    public static Tensor mm(Tensor a, Tensor b) {
        return Dispatcher.structured(LinalgOps.MM, new Tensor[] {a, b}, NO_SCALARS);
    }

    public static Tensor bmm(Tensor a, Tensor b) {
        return Dispatcher.structured(LinalgOps.BMM, new Tensor[] {a, b}, NO_SCALARS);
    }

    /**
     * {@link FrontEndOps#BILINEAR}: {@code y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o]} with {@code weight} of
     * shape {@code [out, in1, in2]}; {@code bias} may be null.
     */
    public static Tensor bilinear(Tensor x1, Tensor x2, Tensor weight, Tensor bias) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.BILINEAR, new Tensor[] {x1, x2, weight, bias}, NO_SCALARS,
                    t -> bilinearOf(t[0], t[1], t[2], t[3]));
        }
        return bilinearOf(x1, x2, weight, bias);
    }

    private static Tensor bilinearOf(Tensor x1, Tensor x2, Tensor weight, Tensor bias) {
        if (weight.dim() != 3) {
            throw new IllegalArgumentException("bilinear: expected a 3-D weight [out, in1, in2], got shape " + Shapes.format(weight.shape()));
        }
        long out = weight.size(0);
        long in1 = weight.size(1);
        long in2 = weight.size(2);
        if (x1.dim() == 0 || x1.size(-1) != in1 || x2.dim() == 0 || x2.size(-1) != in2) {
            throw new IllegalArgumentException("bilinear: input shapes " + Shapes.format(x1.shape()) + " and " + Shapes.format(x2.shape())
                    + " do not match the weight " + Shapes.format(weight.shape()) + " (expected [*, " + in1 + "] and [*, " + in2 + "])");
        }
        long[] lead1 = Arrays.copyOf(x1.shape(), x1.dim() - 1);
        long[] lead2 = Arrays.copyOf(x2.shape(), x2.dim() - 1);
        if (!Arrays.equals(lead1, lead2)) {
            throw new IllegalArgumentException("bilinear: input batch dimensions " + Shapes.format(lead1) + " and " + Shapes.format(lead2)
                    + " must be equal");
        }
        long[] outShape = Arrays.copyOf(lead1, lead1.length + 1);
        outShape[lead1.length] = out;
        return MemoryScope.run(() -> {
            // t[n, o, j] = sum_i x1[n, i] w[o, i, j], then y[n, o] = sum_j t[n, o, j] x2[n, j].
            // Row counts spelled out: -1 cannot be inferred next to an empty dimension.
            long rows = Shapes.numel(lead1);
            Tensor a = x1.reshape(rows, in1);
            Tensor b = x2.reshape(rows, in2);
            Tensor w = weight.permute(1, 0, 2).reshape(in1, out * in2);
            Tensor t = a.matmul(w).view(rows, out, in2);
            Tensor y = t.mul(b.unsqueeze(1)).sum(-1);
            if (bias != null) y = y.add(bias);
            return y.reshape(outShape);
        });
    }

    /** {@code self @ vec}: the declared op {@link LinalgOps#MV} (a GEMM against {@code vec} as one column). */
    public static Tensor mv(Tensor m, Tensor v) {
        return Dispatcher.structured(LinalgOps.MV, new Tensor[] {m, v}, NO_SCALARS);
    }

    /** The inner product of two vectors: the declared op {@link LinalgOps#DOT}, a 0-d tensor. */
    public static Tensor dot(Tensor a, Tensor b) {
        return Dispatcher.structured(LinalgOps.DOT, new Tensor[] {a, b}, NO_SCALARS);
    }

    /** {@code torch.matmul}: dot, mv, mm or batched matmul with broadcast batch dimensions, by rank. */
    public static Tensor matmul(Tensor a, Tensor b) {
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(FrontEndOps.MATMUL, new Tensor[] {a, b}, NO_SCALARS, t -> matmulOf(t[0], t[1]));
        }
        return matmulOf(a, b);
    }

    private static Tensor matmulOf(Tensor a, Tensor b) {
        a.checkOpen("matmul");
        b.checkOpen("matmul");
        // the dispatcher's device layer, written out for two operands (no argument array on this path)
        if (a.device() != b.device() && !a.device().equals(b.device())) {
            throw Dispatcher.devicesDisagree(FrontEndOps.MATMUL, "matmul", new Tensor[] {a, b}, false);
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
        LinalgOps.sameType("matmul", a.dtype(), b.dtype());
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
        return Dispatcher.structured(LinalgOps.ADDMM, new Tensor[] {input, m1, m2}, new double[] {beta, alpha});
    }

    /** {@code beta * input + alpha * bmm(b1, b2)}, input broadcast to {@code [B, M, N]}. */
    public static Tensor baddbmm(Tensor input, Tensor b1, Tensor b2, double beta, double alpha) {
        return Dispatcher.structured(LinalgOps.BADDBMM, new Tensor[] {input, b1, b2}, new double[] {beta, alpha});
    }

    /** {@code x @ weight.T + bias} over the last dimension of {@code x}; {@code bias} may be null. */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        return Dispatcher.structured(LinalgOps.LINEAR, new Tensor[] {x, weight, bias}, NO_SCALARS);
    }

    /**
     * {@link #linear(Tensor, Tensor, Tensor)} with a fused epilogue, the declared op {@link LinalgOps#LINEAR_EPILOGUE}
     * (not traced, no autocast: {@link Callback}): {@code epilogue} is given the product's output as a {@code [rows,
     * out_features]} matrix and returns the work the backend runs on each block of it as the GEMM finishes it
     * ({@link LinalgKernels#mmWithEpilogue}); the JIT's entry point for a pointwise chain fed by a linear layer. The
     * returned tensor (and its autograd) is the linear layer's output before the epilogue, or whatever the epilogue wrote
     * into it. A null {@code epilogue} is the plain layer without trace or autocast.
     */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias, Callback<LinalgKernels.Epilogue> epilogue) {
        return Dispatcher.call(LinalgOps.LINEAR_EPILOGUE, new Tensor[] {x, weight, bias}, epilogue);
    }

    /**
     * {@code activation(x @ weight.T + bias)}, the declared op {@link LinalgOps#LINEAR_ACTIVATION} (not autocast): one
     * kernel where the backend's GEMM applies bias and activation itself ({@link LinalgKernels#mmBiasActivation}:
     * cuBLASLt's epilogues; {@link #fusesLinearActivation} tells), else the product and the activation's kernel. Returns
     * {@code {out, pre}}: {@code out} carries the layer's and the activation's autograd ({@code LinearActivationBackward0});
     * {@code pre}, the activation's input, is kept for tanh-GELU with {@code keepInput} (its gradient reads it; without,
     * the backward recomputes the product) and is empty otherwise (ReLU's gradient reads the sign of {@code out}).
     */
    public static Tensor[] linearActivation(Tensor x, Tensor weight, Tensor bias, LinalgKernels.Activation activation,
                                            boolean keepInput) {
        return Dispatcher.callAll(LinalgOps.LINEAR_ACTIVATION, new Tensor[] {x, weight, bias}, activation.ordinal(), keepInput ? 1 : 0);
    }

    /**
     * Whether {@link #linearActivation} runs as one kernel of {@code x}'s backend for these operands (its registered test,
     * answered without running or allocating): the JIT's choice between it and its own GEMM epilogue.
     */
    public static boolean fusesLinearActivation(Tensor x, Tensor weight, Tensor bias, LinalgKernels.Activation activation,
                                                boolean keepInput) {
        return Dispatcher.kernelTakes(LinalgOps.LINEAR_ACTIVATION, new Tensor[] {x, weight, bias}, activation.ordinal(),
                keepInput ? 1 : 0);
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




    private static void checkInner(String op, Tensor a, Tensor b, long ka, long kb) {
        LinalgOps.checkInner(op, view(a), view(b), ka, kb);
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
