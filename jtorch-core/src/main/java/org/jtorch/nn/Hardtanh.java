package org.jtorch.nn;

import org.jtorch.Tensor;

/** {@code clamp(x, minVal, maxVal)}, as {@code torch.nn.Hardtanh} (defaults -1, 1). */
public class Hardtanh extends Module {
    private final double minVal;
    private final double maxVal;

    public Hardtanh() {
        this(-1, 1);
    }

    public Hardtanh(double minVal, double maxVal) {
        if (!(maxVal > minVal)) throw new IllegalArgumentException("Hardtanh: max_val (" + maxVal + ") must be greater than min_val (" + minVal + ")");
        this.minVal = minVal;
        this.maxVal = maxVal;
    }

    @Override
    public Tensor forward(Tensor input) {
        return input.hardtanh(minVal, maxVal);
    }

    @Override
    protected String extraRepr() {
        return "min_val=" + minVal + ", max_val=" + maxVal;
    }
}
