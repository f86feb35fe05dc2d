package org.jtorch.data;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import org.jtorch.Tensor;
import org.jtorch.types.Device;

/**
 * The hook through which an accelerator backend pins batches for {@code DataLoader.pinMemory(true)} and
 * {@link Tensor#pinMemory()} (page-locked host memory for asynchronous host-to-device copies). Found with
 * {@link java.util.ServiceLoader}; without an available implementation {@code pinMemory} is accepted by the
 * loader, does nothing and logs one warning, as PyTorch on a machine without CUDA.
 *
 * <p>{@link #pin} runs on the worker thread after collation, inside the loader's memory scope: the
 * tensors it creates and puts into the returned batch belong to the loader like any batch tensor, and
 * the unpinned originals it replaces are released with the scope.
 */
public interface MemoryPinner {
    /** Whether pinned memory can be used now (an accelerator and its driver are present). */
    boolean isAvailable();

    /** Why pinned memory cannot be used; empty when {@link #isAvailable()}. */
    default String unavailableReason() {
        return isAvailable() ? "" : getClass().getSimpleName() + " is unavailable";
    }

    /** The batch with its CPU tensors copied to pinned memory (same structure and types; pinned tensors kept as they are). */
    Object pin(Object batch);

    /**
     * Starts copying the batch's tensors to {@code device} and returns the batch with the new device
     * tensors (same structure; the caller owns them). The copies may still be running when this returns,
     * but work that the calling thread enqueues on {@code device}'s current stream afterwards runs after
     * them. The default copies synchronously ({@code to(device)}); a backend copies pinned tensors on a
     * side stream and makes the current stream wait for an event recorded after them.
     */
    default Object toDevice(Object batch, Device device) {
        return Collate.mapTensors(batch, t -> t.to(device));
    }

    /** The first available pinner on the class path. */
    static Optional<MemoryPinner> find() {
        for (MemoryPinner p : ServiceLoader.load(MemoryPinner.class)) {
            if (p.isAvailable()) return Optional.of(p);
        }
        return Optional.empty();
    }

    /** Why no pinner is available, one reason per pinner found, for messages. */
    static String unavailableReasons() {
        List<String> reasons = new ArrayList<>();
        for (MemoryPinner p : ServiceLoader.load(MemoryPinner.class)) {
            if (!p.isAvailable()) reasons.add(p.unavailableReason());
        }
        return reasons.isEmpty() ? "no MemoryPinner on the class path" : String.join("; ", reasons);
    }
}
