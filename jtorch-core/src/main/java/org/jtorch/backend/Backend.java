package org.jtorch.backend;

import org.jtorch.memory.Allocator;
import org.jtorch.memory.Storage;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * The kernels of one device type. The front end ({@code org.jtorch.ops}) validates arguments,
 * broadcasts, promotes dtypes and allocates outputs; a backend only computes. Every tensor passed in
 * is on this backend's device and already has the output's shape (inputs broadcast with zero
 * strides), so kernels need no shape logic beyond strides. Kernels see {@link StridedView}s, never a tensor.
 *
 * <p>Op families beyond elementwise live in their own interfaces so that each stays small; a backend
 * lacking a kernel throws {@link UnsupportedOperationException} naming the op and device.
 *
 * <p>Backends other than the CPU's are found with {@link java.util.ServiceLoader}; core never
 * imports them.
 */
public interface Backend {
    Device.Type deviceType();

    /** Whether the backend can run here (libraries found, devices present). */
    boolean isAvailable();

    /** Why the backend is unavailable, naming what was looked for and where; empty when available. */
    String unavailableReason();

    /**
     * For {@code jtorch info}: a first line naming the backend, then (optionally) one line per device or
     * library found or looked for, separated by {@code \n}.
     */
    default String describe() {
        return deviceType().name().toLowerCase();
    }

    /** How many devices of this type there are (ordinals 0 to count - 1); checked when an op first touches a device. */
    default int deviceCount() {
        return 1;
    }

    Allocator allocator(Device device);

    /** Graph capture and replay of device work (CUDA graphs), or null where the device has none. */
    default GraphCapture graphCapture() {
        return null;
    }

    /** A new uninitialised storage of {@code bytes} bytes on {@code device}. */
    Storage allocate(Device device, long bytes);

    /**
     * A new uninitialised CPU storage of {@code bytes} bytes in page-locked host memory from this accelerator's pinned
     * allocator ({@link Storage#isPinned()}: copies from it to this backend's devices may be asynchronous); null when
     * this backend has no pinned memory (the CPU's). Called only when {@link #isAvailable()}.
     */
    default Storage allocatePinnedHost(long bytes) {
        return null;
    }

    /** {@code dst.copy_(src)} for same-shaped tensors on this backend, converting dtypes. */
    void copy(StridedView src, StridedView dst);

    /**
     * {@code dst.copy_(src, nonBlocking)}: as {@link #copy(StridedView, StridedView)}, but a backend may return before
     * a copy between host and device has finished when {@code nonBlocking} is set and the host side is
     * pinned ({@link org.jtorch.memory.Storage#isPinned()}); the copy is then ordered on the device's
     * current stream like a kernel. By default the copy is synchronous.
     */
    default void copy(StridedView src, StridedView dst, boolean nonBlocking) {
        copy(src, dst);
    }

    /** Sets every element of {@code dst} to {@code value} (as a double; integral dtypes also get {@code longValue}). */
    void fill(StridedView dst, double value, long longValue);

    /** {@code out = cond ? a : b}, all broadcast to {@code out}'s shape; {@code cond} is bool. */
    void where(StridedView cond, StridedView a, StridedView b, StridedView out);

    ReductionKernels reductions();

    IndexKernels indexing();

    LinalgKernels linalg();

    RandomKernels random();

    ConvolutionKernels convolution();

    SpatialKernels spatial();

    NormalizationKernels normalization();

    /** Fused LSTM and GRU cell steps. */
    RecurrentKernels recurrent();

    /** Fused scaled-dot-product attention, or null where this backend has none (the front end composes it from ops). */
    default AttentionKernels attention() {
        return null;
    }
}
