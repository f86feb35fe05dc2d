package org.jtorch.cuda;

/**
 * The device operations {@link CudaCachingAllocator} needs, so that its algorithm runs against the
 * real driver ({@link DriverDeviceMemory}) or an in-process simulation in tests. Streams and events
 * are opaque handles ({@code CUstream}, {@code CUevent}); stream 0 is the legacy default stream.
 */
public interface DeviceMemory {
    /** Device memory of {@code bytes} bytes, or 0 when the device is out of memory (other errors throw). */
    long malloc(long bytes);

    /**
     * {@link #malloc} while a stream capture is under way: the driver refuses {@code cuMemAlloc} then unless
     * the thread's capture mode is relaxed (PyTorch's allocator grows graph pools so).
     */
    default long mallocDuringCapture(long bytes) {
        return malloc(bytes);
    }

    void free(long address);

    /** Records an event on {@code stream}: it completes once all work enqueued on the stream so far has. */
    long recordEvent(long stream);

    /** Whether {@code event} has completed (non-blocking). */
    boolean eventCompleted(long event);

    /** Blocks until {@code event} has completed. */
    void synchronizeEvent(long event);

    /** Returns an event obtained from {@link #recordEvent} (implementations may pool it). */
    void releaseEvent(long event);

    /** Device name for messages, e.g. {@code cuda:0}. */
    String name();
}
