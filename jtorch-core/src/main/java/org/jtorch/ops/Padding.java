package org.jtorch.ops;

import org.jtorch.op.JoiningOps;
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
 * index), so their gradient is the index-add of the primitive. Constant padding is the declared op {@code constant_pad_nd}
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
        return MemoryScope.run(() -> {
            Tensor cur = x;
            for (int i = 0; i < k; i++) {
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
