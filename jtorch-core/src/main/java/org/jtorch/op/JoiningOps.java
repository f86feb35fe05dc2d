package org.jtorch.op;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@code cat} and {@code stack}, declared as variadic structured ops, and {@code constant_pad_nd} (a tensor placed into a
 * constant-filled larger one): their tensor parameter is a list
 * ({@code Tensor[]}: the call's inputs, as many as given), their meta function checks every input against the others
 * and their one derivative is evaluated once per input, splitting the gradient back ({@link Expr.Part}: a narrow of
 * each input's slice for {@code cat}, a select of its index for {@code stack}). The backends' kernels copy each input
 * into its slice of the result. The dtype promotes over all inputs; on the CPU autocast widens them to the widest (PyTorch
 * 1.13's {@code promote} list), on CUDA it leaves them to type promotion.
 */
public final class JoiningOps {
    private JoiningOps() {}

    private static final Param TENSORS = new Param("tensors", "Tensor[]", null);

    /**
     * {@code torch.cat(tensors, dim)}: sizes equal except along {@code dim}; as PyTorch's legacy rule, 1-d tensors with no
     * elements are skipped whatever the others' shape (a list of only those gives an empty 1-d result).
     */
    public static final OpDef CAT = OpDef.structured("cat").rule(DTypeRule.SAME).signature(TENSORS, new Param("dim", "int", "0"))
            .meta(JoiningOps::catMeta).autocast(Device.Type.CPU, CastPolicy.PROMOTE)
            .derivatives(() -> List.of(new Expr.Part(Expr.GRAD, 0, false)))
            .doc("each input copied into its slice of the result").build();

    /** {@code torch.stack(tensors, dim)}: equal shapes joined along a new dimension {@code dim}. */
    public static final OpDef STACK = OpDef.structured("stack").rule(DTypeRule.SAME).signature(TENSORS, new Param("dim", "int", "0"))
            .meta(JoiningOps::stackMeta).autocast(Device.Type.CPU, CastPolicy.PROMOTE)
            .derivatives(() -> List.of(new Expr.Part(Expr.GRAD, 0, true)))
            .doc("each input copied into its index of the new dimension").build();

    /**
     * {@code torch.constant_pad_nd(self, pad, value)} ({@code F.pad}'s constant mode): {@code self} placed into a result filled
     * with {@code value} (converted to self's dtype, as {@code fill_}), padded by the pairs {@code (left, right)} of {@code pad}
     * from the last dimension backwards; a negative pad crops. {@code pad} is the call's scalars after {@code value}: the list
     * comes last here so that its entries are the call's last scalars. The gradient is the constant padding of the gradient
     * with the pads negated (PyTorch's {@code constant_pad_nd} backward), itself again for a gradient of a gradient.
     */
    public static final OpDef CONSTANT_PAD_ND = OpDef.structured("constant_pad_nd").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("value", "Scalar", "0"), new Param("pad", "int[]", null))
            .meta(JoiningOps::constantPadMeta)
            .derivatives(() -> List.of(Expr.call(JoiningOps.CONSTANT_PAD_ND, Expr.GRAD, Expr.c(0), new Expr.ScalarRest(1, true, "pad"))))
            .doc("self placed into a value-filled result, padded (or cropped) per dimension").build();

    private static Meta.Output constantPadMeta(StridedView[] in, double[] scalars) {
        String op = "constant_pad_nd";
        StridedView self = in[0];
        int pads = scalars.length - 1;
        if (pads % 2 != 0) throw new IllegalArgumentException(op + ": length of pad must be even but instead it equals " + pads);
        if (pads / 2 > self.dim()) {
            throw new IllegalArgumentException(op + ": length of pad should be no more than twice the number of dimensions of the input "
                    + Shapes.format(self.shape()) + ", got " + pads);
        }
        long[] shape = self.shape().clone();
        for (int i = 0; i < pads / 2; i++) {
            int d = self.dim() - 1 - i;
            long l = (long) scalars[1 + 2 * i], r = (long) scalars[2 + 2 * i];
            try {
                shape[d] = Math.addExact(Math.addExact(self.size(d), l), r);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException(op + ": the input size " + self.size(d) + " plus padding " + l + " and " + r
                        + " of dimension " + d + " does not fit a 64-bit size (input of shape " + Shapes.format(self.shape()) + ")");
            }
            if (shape[d] < 0) {
                throw new IllegalArgumentException(op + ": the input size " + self.size(d) + ", plus negative padding " + l + " and " + r
                        + " resulted in a negative output size, which is invalid. Check dimension " + d + " of your input of shape "
                        + Shapes.format(self.shape()));
            }
        }
        Shapes.checkedNumel(op, shape);
        return new Meta.Output(shape, self.dtype());
    }

    /** Whether {@code cat} skips {@code t}: a 1-d tensor with no elements (PyTorch's legacy rule). */
    public static boolean skippedByCat(long[] shape) {
        return shape.length == 1 && shape[0] == 0;
    }

    private static Meta.Output catMeta(StridedView[] in, double[] scalars) {
        DType dtype = common("cat", in);
        StridedView ref = null;
        int refPos = -1;
        for (int i = 0; i < in.length && ref == null; i++) {
            if (!skippedByCat(in[i].shape())) {
                ref = in[i];
                refPos = i;
            }
        }
        if (ref == null) return new Meta.Output(new long[] {0}, dtype);
        int d = Shapes.wrapDim("cat", (int) scalars[0], ref.dim());
        long[] shape = ref.shape().clone();
        long total = 0;
        for (int i = 0; i < in.length; i++) {
            long[] s = in[i].shape();
            if (skippedByCat(s)) continue;
            if (s.length != shape.length) {
                throw new IllegalArgumentException("cat: tensors must have the same number of dimensions: got " + shape.length
                        + " (tensor " + refPos + ") and " + s.length + " (tensor " + i + "); shapes " + shapes(in) + ", dim " + (int) scalars[0]);
            }
            for (int k = 0; k < shape.length; k++) {
                if (k != d && s[k] != shape[k]) {
                    throw new IllegalArgumentException("cat: sizes of tensors must match except in dimension " + d + ": expected size "
                            + shape[k] + " but got size " + s[k] + " for tensor " + i + "; shapes " + shapes(in) + ", dim " + (int) scalars[0]);
                }
            }
            total += s[d];
        }
        shape[d] = total;
        return new Meta.Output(shape, dtype);
    }

    private static Meta.Output stackMeta(StridedView[] in, double[] scalars) {
        DType dtype = common("stack", in);
        long[] shape = in[0].shape();
        for (int i = 1; i < in.length; i++) {
            if (!java.util.Arrays.equals(shape, in[i].shape())) {
                throw new IllegalArgumentException("stack: expects each tensor to be equal size, but got " + Shapes.format(shape)
                        + " at entry 0 and " + Shapes.format(in[i].shape()) + " at entry " + i + "; shapes " + shapes(in) + ", dim "
                        + (int) scalars[0]);
            }
        }
        int d = Shapes.wrapDim("stack", (int) scalars[0], shape.length + 1);
        long[] out = new long[shape.length + 1];
        for (int k = 0, j = 0; k < out.length; k++) out[k] = k == d ? in.length : shape[j++];
        return new Meta.Output(out, dtype);
    }

    /** Checks the list (non-empty, no 0-dim tensor for {@code cat}, one device) and gives the promoted dtype. */
    private static DType common(String op, StridedView[] in) {
        if (in.length == 0) throw new IllegalArgumentException(op + ": expected a non-empty list of tensors");
        DType dtype = null;
        for (int i = 0; i < in.length; i++) {
            StridedView t = in[i];
            if (t == null) throw new IllegalArgumentException(op + ": tensor " + i + " of the list is null");
            if (op.equals("cat") && t.dim() == 0) {
                throw new IllegalArgumentException(op + ": zero-dimensional tensor (at position " + i + ") cannot be concatenated");
            }
            dtype = dtype == null ? t.dtype() : DType.promote(dtype, t.dtype());
        }
        return dtype;
    }

    /** Every input's shape, in order: what a shape error names. */
    private static String shapes(StridedView[] in) {
        List<String> s = new ArrayList<>(in.length);
        for (StridedView v : in) s.add(Shapes.format(v.shape()));
        return String.join(", ", s);
    }
}
