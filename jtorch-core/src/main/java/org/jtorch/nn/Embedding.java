package org.jtorch.nn;

import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Generator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.ops.Arguments;

/**
 * A lookup table of {@code numEmbeddings} vectors of size {@code embeddingDim}, as
 * {@code torch.nn.Embedding}: the input holds int64 indices, the output appends a dimension. The
 * weight is initialised N(0, 1); row {@code paddingIdx} (if given; negative counts from the end)
 * starts at zero and never receives a gradient.
 */
public class Embedding extends Module {
    private final long numEmbeddings;
    private final long embeddingDim;
    private final Long paddingIdx;

    public Embedding(long numEmbeddings, long embeddingDim) {
        this(numEmbeddings, embeddingDim, null);
    }

    public Embedding(long numEmbeddings, long embeddingDim, Long paddingIdx) {
        this(numEmbeddings, embeddingDim, paddingIdx, Torch.defaultDtype(), Device.cpu(), Generator.defaultGenerator());
    }

    public Embedding(long numEmbeddings, long embeddingDim, Long paddingIdx, DType dtype, Device device, Generator gen) {
        Arguments.nonNull("Embedding", "dtype", dtype);
        Arguments.nonNull("Embedding", "device", device);
        Arguments.nonNull("Embedding", "gen", gen);
        if (paddingIdx != null && (paddingIdx >= numEmbeddings || paddingIdx < -numEmbeddings)) {
            throw new IllegalArgumentException("Embedding: padding_idx must be within num_embeddings (" + numEmbeddings + "), got " + paddingIdx);
        }
        this.numEmbeddings = numEmbeddings;
        this.embeddingDim = embeddingDim;
        this.paddingIdx = paddingIdx == null ? null : paddingIdx < 0 ? paddingIdx + numEmbeddings : paddingIdx;
        registerParameter("weight", Tensor.empty(new long[] {numEmbeddings, embeddingDim}, dtype, device));
        resetParameters(gen);
    }

    public Tensor weight() {
        return parameter("weight");
    }

    public Long paddingIdx() {
        return paddingIdx;
    }

    public void resetParameters(Generator gen) {
        Init.normal_(weight(), 0, 1, gen);
        if (paddingIdx != null) {
            try (Grad.Mode g = Grad.noGrad(); Tensor row = weight().select(0, paddingIdx)) {
                row.fill_(0.0);
            }
        }
    }

    @Override
    public Tensor forward(Tensor indices) {
        return F.embedding(indices, weight(), paddingIdx);
    }

    @Override
    protected String extraRepr() {
        return numEmbeddings + ", " + embeddingDim + (paddingIdx != null ? ", padding_idx=" + paddingIdx : "");
    }
}
