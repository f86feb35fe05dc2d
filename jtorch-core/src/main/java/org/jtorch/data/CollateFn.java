package org.jtorch.data;

import java.util.List;

/**
 * Merges a list of samples into a batch ({@code collate_fn}). Runs on the worker thread that loaded
 * the samples, inside the loader's memory scope: tensors it creates and does not put into the batch
 * are released afterwards, as are the samples' own tensors.
 *
 * @param <T> the sample type
 * @param <B> the batch type
 */
@FunctionalInterface
public interface CollateFn<T, B> {
    B collate(List<T> samples);
}
