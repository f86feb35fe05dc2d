package org.jtorch.cuda;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.types.Device;

/**
 * A CUDA stream: work enqueued on one stream runs in order; different streams may overlap. Each device
 * has a default stream (the legacy stream 0, which synchronises with the others); {@link #create}
 * makes a non-blocking one. Order work across streams with {@link Event}s ({@link #waitEvent}).
 *
 * <p>Ownership: {@link #close()} ends this handle's use of a created stream (its pending work still
 * runs); the default stream cannot be closed. As in PyTorch, the driver's stream is never destroyed but
 * pooled for the next {@link #create} on its device: the caching allocator keys freed memory by the
 * stream that used it, so a tensor allocated on a stream must stay freeable after the stream's close,
 * and a destroyed handle could be reissued to a new stream. Any thread may enqueue work.
 */
public final class Stream implements AutoCloseable {
    /** Closed streams' driver handles per device ordinal, reused by {@link #create}. */
    private static final ConcurrentHashMap<Integer, ConcurrentLinkedDeque<Long>> POOL = new ConcurrentHashMap<>();
    private final Device device;
    private final long handle;
    private final boolean owned;
    private volatile boolean closed;

    private Stream(Device device, long handle, boolean owned) {
        this.device = device;
        this.handle = handle;
        this.owned = owned;
    }

    /** The default (legacy, handle 0) stream of {@code device}. Needs no driver until work is enqueued. */
    public static Stream defaultStream(Device device) {
        if (!device.isCuda()) throw new IllegalArgumentException("Stream.defaultStream: " + device + " is not a CUDA device");
        return new Stream(device, 0, false);
    }

    /** A non-blocking stream on {@code device} (a pooled one when a closed stream left it); throws with the reason when CUDA is unavailable. */
    public static Stream create(Device device) {
        if (!device.isCuda()) throw new IllegalArgumentException("Stream.create: " + device + " is not a CUDA device");
        Long pooled = pool(device).poll();
        if (pooled != null) return new Stream(device, pooled, true);
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        return new Stream(device, rt.driver().streamCreate(CuConstants.CU_STREAM_NON_BLOCKING), true);
    }

    private static ConcurrentLinkedDeque<Long> pool(Device device) {
        return POOL.computeIfAbsent(device.index(), i -> new ConcurrentLinkedDeque<>());
    }

    public Device device() {
        return device;
    }

    /** The {@code CUstream} handle (0 for the default stream). */
    public long handle() {
        if (closed) throw new IllegalStateException("stream used after close");
        return handle;
    }

    public boolean isDefault() {
        return handle == 0;
    }

    /** Blocks until all work enqueued on this stream has completed. */
    public void synchronize() {
        CudaGraph.refuseDuringCapture(device, "Stream.synchronize()");
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        rt.driver().streamSynchronize(handle());
        IndexCheckLog.streamSynchronized(device, handle);
    }

    /** Makes later work on this stream wait until {@code event} has completed (without blocking the host). */
    public void waitEvent(Event event) {
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        rt.driver().streamWaitEvent(handle(), event.handle(), CuConstants.CU_EVENT_WAIT_DEFAULT);
    }

    /** Records a new event on this stream and returns it. */
    public Event recordEvent() {
        Event e = Event.create(device, false);
        e.record(this);
        return e;
    }

    @Override
    public synchronized void close() {
        if (!owned || closed) return;
        closed = true;
        pool(device).push(handle);
    }

    @Override
    public String toString() {
        return "Stream(" + device + ", " + (handle == 0 ? "default" : "0x" + Long.toHexString(handle)) + ")";
    }
}
