package org.jtorch.cuda;

import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.types.Device;

/**
 * A CUDA event: a marker in a stream that completes when the work enqueued before it has. Used to
 * order streams ({@link Stream#waitEvent}), to wait on the host ({@link #synchronize}) and, when created
 * with timing, to measure GPU time ({@link #elapsedMillis}). Closed by {@link #close()}.
 */
public final class Event implements AutoCloseable {
    private final Device device;
    private final long handle;
    private final boolean timing;
    private volatile boolean closed;

    private Event(Device device, long handle, boolean timing) {
        this.device = device;
        this.handle = handle;
        this.timing = timing;
    }

    /** A new event on {@code device}; {@code timing} enables {@link #elapsedMillis} (and costs a little more). */
    public static Event create(Device device, boolean timing) {
        if (!device.isCuda()) throw new IllegalArgumentException("Event.create: " + device + " is not a CUDA device");
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        int flags = timing ? CuConstants.CU_EVENT_DEFAULT : CuConstants.CU_EVENT_DISABLE_TIMING;
        return new Event(device, rt.driver().eventCreate(flags), timing);
    }

    public long handle() {
        if (closed) throw new IllegalStateException("event used after close");
        return handle;
    }

    public Device device() {
        return device;
    }

    /** Records the event on {@code stream}: it completes when the stream's work so far has. */
    public void record(Stream stream) {
        if (!stream.device().equals(device)) {
            throw new IllegalArgumentException("Event.record: event of " + device + " recorded on a stream of " + stream.device());
        }
        CudaRuntime.system().driver().eventRecord(handle(), stream.handle());
    }

    /** Whether the work before the event has completed (non-blocking). */
    public boolean query() {
        return CudaRuntime.system().driver().eventQuery(handle());
    }

    /** Blocks the calling thread until the event has completed. */
    public void synchronize() {
        CudaGraph.refuseDuringCapture(device, "Event.synchronize()");
        CudaRuntime.system().driver().eventSynchronize(handle());
    }

    /** GPU milliseconds from this event to {@code end}; both recorded, completed and created with timing. */
    public float elapsedMillis(Event end) {
        if (!timing || !end.timing) throw new IllegalStateException("Event.elapsedMillis: both events must be created with timing");
        return CudaRuntime.system().driver().eventElapsedTime(handle(), end.handle());
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        CudaRuntime.system().driver().eventDestroy(handle);
    }
}
