package org.jtorch.backend;

import java.util.function.Supplier;
import org.jtorch.Device;
import org.jtorch.Tensor;

/**
 * A backend's way to record a region of device work once and replay it with one launch (CUDA graphs), for
 * {@code Jit.compile(module, Options.cudaGraphs())}; {@link Backend#graphCapture()} is null where the
 * device has none.
 */
public interface GraphCapture {
    /**
     * Runs {@code region} eagerly {@code warmups} times on a side stream (lazy initialisation happens there,
     * outside the capture), then captures one more call of it. The captured region must read its inputs from
     * tensors that outlive the graph (static inputs) and must not synchronise with the host: if it does, the
     * capture is discarded and this throws {@link IllegalStateException} naming the refused call.
     */
    Recorded capture(Device device, int warmups, Supplier<Tensor> region);

    /**
     * When a capture is under way on a device of the backend: marks it failed (its end discards it) and throws
     * {@link IllegalStateException} "{@code what} during CUDA graph capture on <device>: {@code why}".
     */
    void refuseDuringCapture(String what, String why);

    /** {@link #refuseDuringCapture} on every backend: for work that cannot be captured correctly whatever its device. */
    static void refuseDuringAnyCapture(String what, String why) {
        for (Backend b : Backends.all().values()) {
            GraphCapture g = b.graphCapture();
            if (g != null) g.refuseDuringCapture(what, why);
        }
    }

    /** A captured region: {@link #replay()} recomputes {@link #output()} in place. */
    interface Recorded extends AutoCloseable {
        /** The tensor the captured call returned; each replay overwrites it. */
        Tensor output();

        /** Enqueues the captured work on the device's current stream. */
        void replay();

        /** Destroys the graph and releases its memory pool (the output with it). */
        @Override
        void close();
    }
}
