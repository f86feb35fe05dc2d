package org.jtorch.data;

/**
 * The hook through which an accelerator backend pins batches for {@code DataLoader.pinMemory(true)}
 * (page-locked host memory for asynchronous host-to-device copies). Found with
 * {@link java.util.ServiceLoader}; without an available implementation {@code pinMemory} is accepted,
 * does nothing and logs one warning, as PyTorch on a machine without CUDA.
 *
 * <p>{@link #pin} runs on the worker thread after collation, inside the loader's memory scope: the
 * tensors it creates and puts into the returned batch belong to the loader like any batch tensor, and
 * the unpinned originals it replaces are released with the scope.
 */
public interface MemoryPinner {
    /** Whether pinned memory can be used now (an accelerator and its driver are present). */
    boolean isAvailable();

    /** The batch with its CPU tensors copied to pinned memory (same structure and types). */
    Object pin(Object batch);
}
