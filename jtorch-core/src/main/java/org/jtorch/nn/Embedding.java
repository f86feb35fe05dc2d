package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * A lookup table of {@code numEmbeddings} vectors of size {@code embeddingDim}, as
 * {@code torch.nn.Embedding}: the input holds int64 indices, the output appends a dimension. The
 * weight is initialised N(0, 1); row {@code paddingIdx} (if given; negative counts from the end)
 * starts at zero and never receives a gradient. The other keywords are {@link F.Embedding}'s:
 * {@code maxNorm} renormalises the rows looked up, in place, at each forward; {@code scaleGradByFreq} divides each
 * row's gradient by its index's count in the batch; {@code sparse=true} is refused (jtorch has no sparse tensors).
 */
public class Embedding extends Module {
    private final long numEmbeddings;
    private final long embeddingDim;
    private final F.Embedding options; // paddingIdx normalised to a non-negative index

    public Embedding(long numEmbeddings, long embeddingDim) {
        this(numEmbeddings, embeddingDim, (Long) null);
    }

    public Embedding(long numEmbeddings, long embeddingDim, Long paddingIdx) {
        this(numEmbeddings, embeddingDim, paddingIdx, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public Embedding(long numEmbeddings, long embeddingDim, Long paddingIdx, DType dtype, Device device, Generator gen) {
        this(numEmbeddings, embeddingDim, new F.Embedding(paddingIdx), dtype, device, gen);
    }

    /** {@code nn.Embedding(num, dim, **options)}: {@code new Embedding(1000, 64, F.Embedding.options().maxNorm(1.0))}. */
    public Embedding(long numEmbeddings, long embeddingDim, F.Embedding options) {
        this(numEmbeddings, embeddingDim, options, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public Embedding(long numEmbeddings, long embeddingDim, F.Embedding options, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("Embedding", "options", options);
        Arguments.nonNull("Embedding", "dtype", dtype);
        Arguments.nonNull("Embedding", "device", device);
        Arguments.nonNull("Embedding", "gen", gen);
        Long paddingIdx = options.paddingIdx();
        if (paddingIdx != null && (paddingIdx >= numEmbeddings || paddingIdx < -numEmbeddings)) {
            throw new IllegalArgumentException("Embedding: padding_idx must be within num_embeddings (" + numEmbeddings + "), got " + paddingIdx);
        }
        if (options.sparse()) throw F.Embedding.sparseRefused("Embedding");
        this.numEmbeddings = numEmbeddings;
        this.embeddingDim = embeddingDim;
        this.options = options.paddingIdx(paddingIdx == null ? null : paddingIdx < 0 ? paddingIdx + numEmbeddings : paddingIdx);
        registerParameter("weight", Tensor.empty(new long[] {numEmbeddings, embeddingDim}, dtype, device));
        resetParameters(gen);
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Long paddingIdx() {
        return options.paddingIdx();
    }

    /** The keywords this module looks up with (its padding index non-negative). */
    public F.Embedding options() {
        return options;
    }

    public void resetParameters(Generator gen) {
        Init.normal_(weight(), 0, 1, gen);
        if (paddingIdx() != null) {
            try (Grad.Mode g = Grad.noGrad(); Tensor row = weight().select(0, paddingIdx())) {
                row.fill_(0.0);
            }
        }
    }

    @Override
    public Tensor forward(Tensor indices) {
        return F.embedding(indices, weight(), options);
    }

    @Override
    protected String extraRepr() {
        StringBuilder s = new StringBuilder().append(numEmbeddings).append(", ").append(embeddingDim);
        if (options.paddingIdx() != null) s.append(", padding_idx=").append(options.paddingIdx());
        if (options.maxNorm() != null) s.append(", max_norm=").append(options.maxNorm());
        if (options.normType() != 2) s.append(", norm_type=").append(options.normType());
        if (options.scaleGradByFreq()) s.append(", scale_grad_by_freq=True");
        return s.toString();
    }
}
