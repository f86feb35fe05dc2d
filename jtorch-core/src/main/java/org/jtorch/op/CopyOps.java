package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;

import java.util.Arrays;
import org.jtorch.DType;

/**
 * The copies and fills of a tensor on its own device, as structured ops ({@link OpDef.Kind#STRUCTURED}), so that the
 * trace sees them as ops and the JIT replays them:
 * <ul>
 *   <li>{@code clone} and {@code _to_copy} (a dtype conversion) write a contiguous result through the backend's strided
 *   copy. Their derivative is the gradient itself: autograd brings each input's gradient to that input's dtype, which
 *   is {@code _to_copy}'s backward, and nothing is saved.</li>
 *   <li>{@code copy}, run in place ({@code copy_} within one device), whose src gets the gradient.</li>
 *   <li>{@code fill} and {@code zero}, run in place ({@code fill_}, {@code zero_}); the old values get a zero gradient.</li>
 * </ul>
 */
public final class CopyOps {
    private CopyOps() {}

    /** {@code self.clone()}: a contiguous copy of the same dtype. */
    public static final OpDef CLONE = OpDef.structured("clone").rule(DTypeRule.SAME).signature(Param.tensor("self"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(GRAD)).node("CloneBackward0")
            .doc("a contiguous copy").build();

    /**
     * {@code self.to(dtype)}: a contiguous copy converted to {@code dtype} (its ordinal in {@link DType}), as PyTorch's
     * casts. A result of an integer or boolean dtype gets no gradient.
     */
    public static final OpDef TO_COPY = OpDef.structured("_to_copy").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("dtype", "ScalarType?", "None"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), Double.isNaN(g[0]) ? in[0].dtype() : DType.values()[(int) g[0]]))
            .derivatives(() -> Arrays.asList(GRAD)).node("ToCopyBackward0")
            .doc("a contiguous copy converted to dtype").build();
    /**
     * {@code self.copy_(src)} on one device (in place): {@code src} broadcast to self's shape and converted to its dtype.
     * self's old values get a zero gradient; src's gradient is the gradient summed to src's shape in src's dtype.
     */
    public static final OpDef COPY = OpDef.structured("copy").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.tensor("src"))
            .meta((in, g) -> {
                long[] b = Shapes.broadcast("copy_", in[0].shape(), in[1].shape());
                if (!Arrays.equals(b, in[0].shape())) {
                    throw new IllegalArgumentException("copy_: source of shape " + Shapes.format(in[1].shape())
                            + " cannot be broadcast to the destination's shape " + Shapes.format(in[0].shape()));
                }
                return new Meta.Output(in[0].shape().clone(), in[0].dtype());
            })
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD), GRAD)).node("CopyBackwards")
            .doc("src broadcast to self's shape and converted to its dtype").build();

    /**
     * {@code self.fill_(value)} (in place; out of place, a filled copy of self's shape). Scalars: the value as a double,
     * then an int64 value's exact high and low 32-bit halves (a double holds integers exactly only up to 2^53).
     */
    public static final OpDef FILL = OpDef.structured("fill").rule(DTypeRule.SAME)
            .signature(Param.tensor("self"), Param.scalar("value", "Scalar", null))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("FillBackward0")
            .doc("every element set to value").build();

    /** {@code self.zero_()} (in place; out of place, zeros of self's shape). */
    public static final OpDef ZERO = OpDef.structured("zero").rule(DTypeRule.SAME).signature(Param.tensor("self"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), in[0].dtype()))
            .derivatives(() -> Arrays.asList(new Expr.ZerosLike(GRAD))).node("ZeroBackward0")
            .doc("every element set to zero").build();

    /** The scalars of {@link #FILL} for {@code value}, exact for any int64 {@code exact}. */
    public static double[] fillScalars(double value, long exact) {
        return new double[] {value, (double) (exact >> 32), (double) (exact & 0xFFFF_FFFFL)};
    }

    /** The exact int64 value of {@link #FILL}'s scalars. */
    public static long fillExact(double[] scalars) {
        return ((long) scalars[1] << 32) | (long) scalars[2];
    }
}
