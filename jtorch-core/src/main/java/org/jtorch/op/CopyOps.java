package org.jtorch.op;

import static org.jtorch.op.Expr.GRAD;

import java.util.Arrays;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The copies and fills of a tensor, within its device or across two, as structured ops ({@link OpDef.Kind#STRUCTURED}), so that the
 * trace sees them as ops and the JIT replays them:
 * <ul>
 *   <li>{@code clone} and {@code _to_copy} (a dtype conversion, a move to another device, or both) write a contiguous
 *   result through the backend's strided copy. Their derivative is the gradient itself: autograd brings each input's
 *   gradient to that input's dtype and device, which is {@code _to_copy}'s backward, and nothing is saved.</li>
 *   <li>{@code copy}, run in place ({@code copy_}, within a device or across two), whose src gets the gradient.</li>
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
     * {@code self.to(dtype, device, non_blocking)}: a contiguous copy converted to {@code dtype} (its ordinal in {@link
     * DType}; NaN: self's) on {@code device} ({@link #deviceScalar}; NaN: self's), as PyTorch's casts and moves. A
     * result of an integer or boolean dtype gets no gradient; autograd brings the gradient back to self's dtype and
     * device ({@link OpDef#acrossDevices}). {@code non_blocking}: a copy from pinned host memory to a device may return
     * before the data has arrived, ordered on the device's current stream.
     */
    public static final OpDef TO_COPY = OpDef.structured("_to_copy").rule(DTypeRule.SAME).acrossDevices()
            .signature(Param.tensor("self"), Param.scalar("dtype", "ScalarType?", "None"), Param.scalar("device", "Device?", "None"),
                    Param.scalar("non_blocking", "bool", "False"))
            .meta((in, g) -> new Meta.Output(in[0].shape().clone(), Double.isNaN(g[0]) ? in[0].dtype() : DType.values()[(int) g[0]],
                    null, Double.isNaN(g[1]) ? null : device(g[1])))
            .derivatives(() -> Arrays.asList(GRAD)).node("ToCopyBackward0")
            .doc("a contiguous copy converted to dtype, on device").build();

    /**
     * {@code self.copy_(src, non_blocking)} (in place): {@code src} broadcast to self's shape and converted to its dtype,
     * within a device or across two ({@link OpDef#acrossDevices}: the accelerator's backend copies either way;
     * {@code non_blocking} as {@link #TO_COPY}'s). self's old values get a zero gradient; src's gradient is the gradient
     * summed to src's shape, in src's dtype, on src's device.
     */
    public static final OpDef COPY = OpDef.structured("copy").rule(DTypeRule.SAME).acrossDevices()
            .signature(Param.tensor("self"), Param.tensor("src"), Param.scalar("non_blocking", "bool", "False"))
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

    /** {@code device} as a scalar argument of {@link #TO_COPY}: -1 for the CPU, else a CUDA device's index. */
    public static double deviceScalar(Device device) {
        return device.isCpu() ? -1 : device.index();
    }

    /** The device a {@link #deviceScalar} names. */
    public static Device device(double scalar) {
        return scalar < 0 ? Device.cpu() : Device.cuda((int) scalar);
    }

    /** The scalars of {@link #FILL} for {@code value}, exact for any int64 {@code exact}. */
    public static double[] fillScalars(double value, long exact) {
        return new double[] {value, (double) (exact >> 32), (double) (exact & 0xFFFF_FFFFL)};
    }

    /** The exact int64 value of {@link #FILL}'s scalars. */
    public static long fillExact(double[] scalars) {
        return ((long) scalars[1] << 32) | (long) scalars[2];
    }
}
