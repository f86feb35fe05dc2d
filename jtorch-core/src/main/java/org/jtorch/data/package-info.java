/**
 * Data loading, as {@code torch.utils.data}: map-style {@link org.jtorch.data.Dataset}s and
 * {@link org.jtorch.data.IterableDataset}s, {@link org.jtorch.data.Sampler}s, collation
 * ({@link org.jtorch.data.Collate}, {@link org.jtorch.data.Sample}) and the
 * {@link org.jtorch.data.DataLoader}, whose worker threads load batches in parallel and deliver them
 * in order.
 *
 * <p>Ownership in one sentence: tensors made while loading a batch are released once it is
 * collated, and the batch itself belongs to the loader's iterator until the next batch is requested
 * (see {@link org.jtorch.data.DataLoader} for keeping one).
 */
package org.jtorch.data;
