package org.jtorch.data;

import java.util.Objects;
import org.jtorch.types.Arguments;

/** The samples of a dataset at the given indices, in that order, as {@code torch.utils.data.Subset}. */
public final class Subset<T> implements Dataset<T> {
    private final Dataset<T> dataset;
    private final int[] indices;

    public Subset(Dataset<T> dataset, int[] indices) {
        Arguments.nonNull("Subset", "indices", indices);
        this.dataset = Arguments.nonNull("Subset", "dataset", dataset);
        for (int i : indices) {
            if (i < 0 || i >= dataset.size()) {
                throw new IndexOutOfBoundsException("Subset: index " + i + " out of range for a dataset of size " + dataset.size());
            }
        }
        this.indices = indices.clone();
    }

    @Override
    public T get(int index) {
        return dataset.get(indices[Objects.checkIndex(index, indices.length)]);
    }

    @Override
    public int size() {
        return indices.length;
    }

    public Dataset<T> dataset() {
        return dataset;
    }

    /** The indices into {@link #dataset()} (a copy). */
    public int[] indices() {
        return indices.clone();
    }
}
