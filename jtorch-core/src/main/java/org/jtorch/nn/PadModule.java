package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.ops.Padding;

/** The padding layers: {@link F#pad} with fixed pads, mode and value; repr as PyTorch's. */
abstract class PadModule extends Module {
    private final Padding.Mode mode;
    private final long[] padding;
    private final double value;
    private final boolean showValue;

    PadModule(Padding.Mode mode, long[] padding, double value, boolean showValue) {
        this.mode = mode;
        this.padding = padding;
        this.value = value;
        this.showValue = showValue;
    }

    static long[] expand(long padding, int n) {
        long[] r = new long[n];
        java.util.Arrays.fill(r, padding);
        return r;
    }

    static long[] checked(String name, long[] padding, int n) {
        if (padding.length != n) {
            throw new IllegalArgumentException(name + ": expected " + n + " padding values, got " + padding.length);
        }
        return padding.clone();
    }

    /** The pads, {@code (left, right[, top, bottom])}. */
    public long[] padding() {
        return padding.clone();
    }

    @Override
    public Tensor forward(Tensor input) {
        return Padding.pad(input, padding, mode, value);
    }

    @Override
    protected String extraRepr() {
        String pads = "(" + String.join(", ", java.util.Arrays.stream(padding).mapToObj(Long::toString).toList()) + ")";
        return showValue ? "padding=" + pads + ", value=" + value : pads;
    }
}
