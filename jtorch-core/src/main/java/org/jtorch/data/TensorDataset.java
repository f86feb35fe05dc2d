package org.jtorch.data;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Tensors that share their first dimension, as {@code torch.utils.data.TensorDataset}: sample
 * {@code i} holds row {@code i} of each tensor.
 *
 * <p>Samples are views (no copy). A view holds its own reference to the tensor's storage, so it stays
 * valid even if the dataset's tensors are closed first; whoever receives a sample closes it (the
 * {@link DataLoader} does so after collation). Writing into a sample writes into the dataset, as in
 * PyTorch. The dataset does not own the tensors it was given: their creator closes them.
 */
public final class TensorDataset implements Dataset<Tensor[]> {
    private final Tensor[] tensors;
    private final int size;

    public TensorDataset(Tensor... tensors) {
        Arguments.nonNullElements("TensorDataset", "tensors", tensors);
        if (tensors.length == 0) throw new IllegalArgumentException("TensorDataset: at least one tensor is required");
        for (Tensor t : tensors) {
            if (t.dim() == 0) throw new IllegalArgumentException("TensorDataset: tensors need a first dimension, got a 0-d tensor");
        }
        long n = tensors[0].size(0);
        for (int i = 1; i < tensors.length; i++) {
            if (tensors[i].size(0) != n) {
                throw new IllegalArgumentException("TensorDataset: size mismatch between tensors: tensor 0 has " + n
                        + " rows, tensor " + i + " has " + tensors[i].size(0) + " (shape " + Arrays.toString(tensors[i].shape()) + ")");
            }
        }
        this.tensors = tensors.clone();
        this.size = Math.toIntExact(n);
    }

    /** Row {@code index} of every tensor, as views. */
    @Override
    public Tensor[] get(int index) {
        java.util.Objects.checkIndex(index, size);
        Tensor[] row = new Tensor[tensors.length];
        for (int i = 0; i < tensors.length; i++) row[i] = tensors[i].select(0, index);
        return row;
    }

    @Override
    public int size() {
        return size;
    }

    /** The tensors (not copies). */
    public Tensor[] tensors() {
        return tensors.clone();
    }

    /** This dataset of exactly two tensors seen as {@link Sample}s (input row, target row), both views. */
    public Dataset<Sample> asSamples() {
        if (tensors.length != 2) {
            throw new IllegalStateException("TensorDataset.asSamples: needs exactly 2 tensors (input, target), has " + tensors.length);
        }
        Tensor inputs = tensors[0];
        Tensor targets = tensors[1];
        return new Dataset<>() {
            @Override
            public Sample get(int index) {
                java.util.Objects.checkIndex(index, size);
                return new Sample(inputs.select(0, index), targets.select(0, index));
            }

            @Override
            public int size() {
                return size;
            }
        };
    }
}
