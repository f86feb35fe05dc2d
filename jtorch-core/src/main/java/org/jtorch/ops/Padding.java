package org.jtorch.ops;

import org.jtorch.op.FrontEndOps;
import org.jtorch.op.JoiningOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;

/**
 * {@code torch.nn.functional.pad}. Pads are given as PyTorch's: pairs {@code (left, right)} from the last
 * dimension backwards. {@code constant} pads any number of dimensions with {@code value} (cast to the dtype) and
 * crops where a pad is negative; {@code reflect} (mirror without repeating the edge), {@code replicate} (repeat
 * the edge) and {@code circular} (wrap around, over the cropped extent when the other side crops) pad 1 to 3 dimensions of an input with one or two more (batch,
 * channel) dimensions, and also crop on negative pads.
 *
 * <p>The non-constant modes are gathers along each padded dimension ({@code indexSelect} with the mode's source
 * index), so their gradient is the index-add of the primitive; each mode and padded rank is a declared op as PyTorch's
 * ({@code reflection_pad1d} ... {@code replication_pad3d}, {@code _pad_circular}: {@link #declared}), autocast by its
 * policy and traced as one op. Constant padding is the declared op {@code constant_pad_nd}
 * ({@link JoiningOps#CONSTANT_PAD_ND}), whose gradient is the constant padding of the gradient with negated pads.
 */
public final class Padding {
    private Padding() {}

    /** The padding modes of {@code F.pad}. */
    public enum Mode {
        CONSTANT, REFLECT, REPLICATE, CIRCULAR;

        /** Parses PyTorch's spelling ({@code "constant"}, {@code "reflect"}, {@code "replicate"}, {@code "circular"}). */
        public static Mode parse(String name) {
            return switch (name) {
                case "constant" -> CONSTANT;
                case "reflect" -> REFLECT;
                case "replicate" -> REPLICATE;
                case "circular" -> CIRCULAR;
                default -> throw new IllegalArgumentException("pad: unrecognised padding mode " + name
                        + " (expected constant, reflect, replicate or circular)");
            };
        }

        String pyName() {
            return name().toLowerCase();
        }
    }

    public static Tensor pad(Tensor x, long[] pads, String mode, double value) {
        return pad(x, pads, Mode.parse(mode), value);
    }

    public static Tensor pad(Tensor x, long[] pads, Mode mode, double value) {
        x.checkOpen("pad");
        if (pads.length % 2 != 0) {
            throw new IllegalArgumentException("pad: padding length must be divisible by 2, got " + Arrays.toString(pads));
        }
        if (pads.length / 2 > x.dim()) {
            throw new IllegalArgumentException("pad: padding length too large: " + pads.length + " pads for an input of shape "
                    + Shapes.format(x.shape()));
        }
        if (mode == Mode.CONSTANT) return constantPad(x, pads, value);
        if (value != 0) {
            throw new IllegalArgumentException("pad: padding mode \"" + mode.pyName() + "\" doesn't take in value argument");
        }
        int k = pads.length / 2;
        if (k < 1 || k > 3 || x.dim() < k + 1 || x.dim() > k + 2) {
            throw new IllegalArgumentException("pad: " + mode.pyName() + " padding of " + k + " dimension(s) needs a " + (k + 1)
                    + "-D or " + (k + 2) + "-D input (only 1-3 padded dimensions are supported), got shape " + Shapes.format(x.shape()));
        }
        long[] shape = x.shape();
        for (int i = 0; i < k; i++) {
            int d = x.dim() - 1 - i;
            long n = shape[d];
            long l = pads[2 * i];
            long r = pads[2 * i + 1];
            if (mode == Mode.REFLECT && (l >= n || r >= n)) {
                throw new IllegalArgumentException("pad: reflect padding size should be less than the corresponding input dimension, but"
                        + " got padding (" + l + ", " + r + ") at dimension " + d + " of input " + Shapes.format(shape));
            }
            if (mode == Mode.CIRCULAR && (l > n || r > n)) {
                throw new IllegalArgumentException("pad: circular padding (" + l + ", " + r + ") at dimension " + d + " of input "
                        + Shapes.format(shape) + " causes wrapping around more than once");
            }
            if (n == 0 || n + l + r < 1 || n - Math.max(-l, 0) - Math.max(-r, 0) < 1) {
                throw new IllegalArgumentException("pad: " + mode.pyName() + " padding (" + l + ", " + r + ") at dimension " + d
                        + " of input " + Shapes.format(shape) + " needs a non-empty input, crop and output");
            }
        }
        long[] given = pads.clone();
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(declared(mode, k), new Tensor[] {x}, FrontEnds.args(given), t -> gathered(t[0], given, mode));
        }
        return gathered(x, given, mode);
    }

    /** The declared op of a non-constant mode padding {@code k} dimensions ({@code reflection_pad2d}, {@code _pad_circular}, ...). */
    static OpDef declared(Mode mode, int k) {
        return switch (mode) {
            case REFLECT -> k == 1 ? FrontEndOps.REFLECTION_PAD1D : k == 2 ? FrontEndOps.REFLECTION_PAD2D : FrontEndOps.REFLECTION_PAD3D;
            case REPLICATE -> k == 1 ? FrontEndOps.REPLICATION_PAD1D : k == 2 ? FrontEndOps.REPLICATION_PAD2D : FrontEndOps.REPLICATION_PAD3D;
            case CIRCULAR -> FrontEndOps.PAD_CIRCULAR;
            case CONSTANT -> JoiningOps.CONSTANT_PAD_ND;
        };
    }

    /**
     * {@code op}, a non-constant mode's declared op, called from its arguments ({@code Dispatcher.call}, the JIT's replay):
     * pads of the op's rank only ({@code _pad_circular}: 1 to 3 pairs).
     */
    static Tensor padAs(OpDef op, Tensor x, long[] pads) {
        Mode mode = modeOf(op);
        int pairs = pads.length / 2;
        if (pads.length % 2 != 0 || pairs < 1 || pairs > 3 || declared(mode, pairs) != op) {
            String expected = mode == Mode.CIRCULAR ? "2, 4 or 6" : String.valueOf(2 * rank(op, mode));
            throw new IllegalArgumentException(op.pyName() + ": expected " + expected + " padding values, got " + Arrays.toString(pads)
                    + " for input of shape " + Shapes.format(x.shape()) + " (" + x.dtype() + ", " + x.device() + ")");
        }
        return pad(x, pads, mode, 0);
    }

    private static int rank(OpDef op, Mode mode) {
        int k = 1;
        while (declared(mode, k) != op) k++;
        return k;
    }

    /** The non-constant mode whose op {@code op} is ({@link #declared}), or null for another op. */
    static Mode modeOf(OpDef op) {
        for (Mode mode : new Mode[] {Mode.REFLECT, Mode.REPLICATE, Mode.CIRCULAR}) {
            for (int k = 1; k <= 3; k++) if (declared(mode, k) == op) return mode;
        }
        return null;
    }

    /** The non-constant modes, checked: one gather along each padded dimension. */
    private static Tensor gathered(Tensor x, long[] pads, Mode mode) {
        long[] shape = x.shape();
        return MemoryScope.run(() -> {
            Tensor cur = x;
            for (int i = 0; i < pads.length / 2; i++) {
                int d = x.dim() - 1 - i;
                Tensor src = sourceIndex(mode, shape[d], pads[2 * i], pads[2 * i + 1]);
                cur = cur.indexSelect(d, src.to(x.device()));
            }
            return cur == x ? x.alias() : cur;
        });
    }

    /**
     * For each output position {@code j} of a dimension of size {@code n} padded by {@code (l, r)}: its input
     * position, as an int64 CPU tensor (built by tensor ops, so a padded length beyond a Java array's is no
     * special case: it fails, if at all, as an allocation of that size).
     */
    static Tensor sourceIndex(Mode mode, long n, long l, long r) {
        long length;
        try {
            length = Math.addExact(Math.addExact(n, l), r);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("pad: " + mode.pyName() + " padding (" + l + ", " + r + ") of a dimension of size "
                    + n + " overflows a 64-bit size");
        }
        Tensor j = Torch.arange(0, length, 1);
        return switch (mode) {
            case REFLECT -> {
                Tensor a = j.sub(l).abs();
                yield a.neg().add(2 * (n - 1)).where(a.ge((double) n), a);
            }
            case REPLICATE -> j.sub(l).clamp(0, n - 1);
            case CIRCULAR -> {
                // PyTorch crops first, then wraps around the cropped extent.
                long start = Math.max(-l, 0);
                long kept = n - start - Math.max(-r, 0);
                yield j.sub(Math.max(l, 0)).remainder(kept).add(start);
            }
            case CONSTANT -> throw new IllegalStateException();
        };
    }

    /** {@code constant_pad_nd} ({@link JoiningOps#CONSTANT_PAD_ND}): the value first among its scalars, then the pads. */
    private static Tensor constantPad(Tensor x, long[] pads, double value) {
        double[] scalars = new double[1 + pads.length];
        scalars[0] = value;
        for (int i = 0; i < pads.length; i++) scalars[1 + i] = pads[i];
        return Dispatcher.call(JoiningOps.CONSTANT_PAD_ND, new Tensor[] {x}, scalars);
    }
}
