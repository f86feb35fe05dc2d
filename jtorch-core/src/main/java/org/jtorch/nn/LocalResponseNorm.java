package org.jtorch.nn;

import org.jtorch.Tensor;

/**
 * {@code torch.nn.LocalResponseNorm}: {@code x / (k + alpha / size * sum of x^2 over size neighbouring
 * channels)^beta}; defaults alpha 1e-4, beta 0.75, k 1.
 */
public class LocalResponseNorm extends Module {
    private final int size;
    private final double alpha;
    private final double beta;
    private final double k;

    public LocalResponseNorm(int size) {
        this(size, 1e-4, 0.75, 1.0);
    }

    public LocalResponseNorm(int size, double alpha, double beta, double k) {
        this.size = size;
        this.alpha = alpha;
        this.beta = beta;
        this.k = k;
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.localResponseNorm(input, size, alpha, beta, k);
    }

    @Override
    protected String extraRepr() {
        return size + ", alpha=" + alpha + ", beta=" + beta + ", k=" + k;
    }
}
