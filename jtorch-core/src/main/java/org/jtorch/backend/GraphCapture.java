package org.jtorch.backend;

import org.jtorch.types.Device;

/**
 * A backend's way to record device work once and replay it with one launch (CUDA graphs), for
 * {@code Jit.compile(module, Options.cudaGraphs())}; {@link Backend#graphCapture()} is null where the
 * device has none.
 */
public interface GraphCapture {
    /**
     * Runs {@code region} {@code times} times on a side stream of {@code device}, after the work already
     * enqueued on the current stream and before what is enqueued there later: lazy initialisation
     * (kernels, optimizer state) happens there, outside a capture, as PyTorch recommends.
     */
    void warmUp(Device device, int times, Runnable region);

    /**
     * Begins capturing the calling thread's work on {@code device}: a side stream is current until
     * {@link Graph#end()}, and allocations come from the memory pool of {@code sharePoolWith} (captured
     * earlier; graphs sharing a pool must replay in capture order), or from a new private pool when null.
     */
    Graph begin(Device device, Graph sharePoolWith);

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

    /** A graph being captured, then captured. */
    interface Graph extends AutoCloseable {
        /**
         * Ends the capture and restores the stream; throws {@link IllegalStateException} naming the refused call
         * when the capture failed (nothing is then captured, and {@link #close()} has nothing to release).
         */
        void end();

        /** Enqueues the captured work on the device's current stream. */
        void replay();

        /** Destroys the graph and releases its use of its memory pool. */
        @Override
        void close();
    }
}
