package org.jtorch.data;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.jtorch.types.Arguments;

/** Datasets one after another, as {@code torch.utils.data.ConcatDataset}. */
public final class ConcatDataset<T> implements Dataset<T> {
    private final List<Dataset<? extends T>> datasets;
    /** cumulative[i] = total size of datasets 0..i. */
    private final int[] cumulative;

    public ConcatDataset(List<? extends Dataset<? extends T>> datasets) {
        Arguments.nonNull("ConcatDataset", "datasets", datasets);
        if (datasets.isEmpty()) throw new IllegalArgumentException("ConcatDataset: datasets should not be an empty list");
        this.datasets = List.copyOf(datasets);
        this.cumulative = new int[datasets.size()];
        int total = 0;
        for (int i = 0; i < datasets.size(); i++) {
            total = Math.addExact(total, datasets.get(i).size());
            cumulative[i] = total;
        }
    }

    @SafeVarargs
    public ConcatDataset(Dataset<? extends T>... datasets) {
        Arguments.nonNull("ConcatDataset", "datasets", datasets);
        this(Arrays.asList(datasets));
    }

    @Override
    public T get(int index) {
        Objects.checkIndex(index, size());
        // First dataset whose cumulative size exceeds index (skips empty datasets).
        int lo = 0;
        int hi = cumulative.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cumulative[mid] > index) hi = mid;
            else lo = mid + 1;
        }
        int start = lo == 0 ? 0 : cumulative[lo - 1];
        return datasets.get(lo).get(index - start);
    }

    @Override
    public int size() {
        return cumulative[cumulative.length - 1];
    }

    /** Cumulative sizes, as PyTorch's {@code cumulative_sizes}. */
    public int[] cumulativeSizes() {
        return cumulative.clone();
    }
}
