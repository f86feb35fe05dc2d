package org.jtorch.cuda;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.types.Device;

/**
 * The {@code torch.cuda} of jtorch: availability, devices, synchronisation, the current stream and
 * memory statistics. Every method that needs a device throws {@link IllegalStateException} with the
 * reason CUDA is unavailable (which library was looked for where, or what the driver said).
 */
public final class Cuda {
    private static final ThreadLocal<Map<Integer, Stream>> CURRENT = ThreadLocal.withInitial(HashMap::new);

    private Cuda() {}

    public static boolean isAvailable() {
        return CudaRuntime.system().available();
    }

    /** Why CUDA is unavailable; empty when it is available. */
    public static String unavailableReason() {
        return CudaRuntime.system().reason();
    }

    /** The number of CUDA devices (0 when CUDA is unavailable, as PyTorch's). */
    public static int deviceCount() {
        return CudaRuntime.system().devices().size();
    }

    public static List<CudaRuntime.DeviceInfo> devices() {
        return CudaRuntime.system().devices();
    }

    /** Blocks until all work on every stream of the current device ({@code cuda:0}) has completed. */
    public static void synchronize() {
        synchronize(Device.cuda());
    }

    public static void synchronize(Device device) {
        CudaGraph.refuseDuringCapture(device, "Cuda.synchronize()");
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        rt.driver().ctxSynchronize();
        IndexCheckLog.deviceSynchronized(device);
    }

    /**
     * Whether CUDA index ops check their indices synchronously (the error at the op, its destination
     * unchanged, one round trip per op) instead of at the stream's next synchronisation (no round trip;
     * the default). Starts as {@code JTORCH_CUDA_SYNC_INDEX_CHECKS=1} says; returns the previous setting.
     * See {@link IndexCheckLog}.
     */
    public static boolean setSynchronousIndexChecks(boolean synchronous) {
        return IndexCheckLog.setSynchronous(synchronous);
    }

    /** The calling thread's current stream on {@code device} (its default stream unless {@link #withStream} set another). */
    public static Stream currentStream(Device device) {
        Stream s = CURRENT.get().get(device.index());
        return s != null ? s : Stream.defaultStream(device);
    }

    public static Stream currentStream() {
        return currentStream(Device.cuda());
    }

    /** Makes {@code stream} the current stream of its device on this thread until the scope closes. */
    public static StreamScope withStream(Stream stream) {
        Map<Integer, Stream> current = CURRENT.get();
        int index = stream.device().index();
        Stream previous = current.put(index, stream);
        return new StreamScope(current, index, previous);
    }

    /** Restores the previous current stream when closed; close on the thread that opened it. */
    public static final class StreamScope implements AutoCloseable {
        private final Map<Integer, Stream> current;
        private final int index;
        private final Stream previous;

        private StreamScope(Map<Integer, Stream> current, int index, Stream previous) {
            this.current = current;
            this.index = index;
            this.previous = previous;
        }

        @Override
        public void close() {
            if (previous == null) current.remove(index);
            else current.put(index, previous);
        }
    }

    /**
     * Marks CUDA tensor {@code t}'s memory as used by {@code stream} ({@code Tensor.record_stream}): when it is
     * freed, the allocator reuses it only after the work enqueued on {@code stream} until then has completed.
     * Needed when a tensor allocated on one stream is used on another.
     */
    public static void recordStream(org.jtorch.Tensor t, Stream stream) {
        if (!t.device().equals(stream.device())) {
            throw new IllegalArgumentException("recordStream: tensor on " + t.device() + ", stream on " + stream.device());
        }
        allocator(t.device()).recordStream(t.storage().address(), stream.handle());
    }

    /** The caching allocator of {@code device}. */
    public static CudaCachingAllocator allocator(Device device) {
        return CudaBackend.get().allocator(device);
    }

    public static String memorySummary(Device device) {
        return allocator(device).memorySummary();
    }

    /** Returns every wholly free cached segment of every device to the driver. */
    public static void emptyCache() {
        for (int i = 0; i < deviceCount(); i++) allocator(Device.cuda(i)).emptyCache();
    }

    /** The library search results, one line each, for {@code jtorch info}. */
    public static List<String> libraries() {
        return CudaRuntime.system().libraries().describe();
    }
}
