package org.jtorch.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.backend.GraphCapture;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.driver.CudaDriver;
import org.jtorch.types.Device;

/**
 * A CUDA graph ({@code torch.cuda.CUDAGraph}): the work a region enqueues on a stream, captured once and
 * replayed with one launch. The tensors the region allocated keep their addresses: a replay recomputes
 * them in place, so inputs are copied into static tensors before {@link #replay()} and outputs are read
 * from the static tensors the capture returned.
 *
 * <p>As in PyTorch:
 * <ul>
 *   <li>Capture runs on a non-default stream ({@link #graph(CudaGraph)} supplies one) in the driver's global
 *       mode; nothing runs at capture. Warm the region up eagerly first (on the capture stream), so that
 *       lazy initialisation (kernel compilation, optimizer state) happens outside the capture.</li>
 *   <li>Memory: while capturing, the caching allocator serves the stream from the graph's private pool
 *       ({@link #pool()}), which lives until every graph using it is {@link #reset()}. Graphs captured into
 *       one pool ({@link #graphPoolHandle}, or another graph's {@link #pool()}) share its memory, so they
 *       must be replayed in the order they were captured.</li>
 *   <li>What a capture cannot record is refused with an {@link IllegalStateException} naming it: a
 *       synchronisation, {@code item()} and every other copy between host and device, a pinned allocation,
 *       {@code emptyCache}; and what a replay would freeze: random sampling (its seed and offset are launch
 *       arguments) and optimizers that count steps on the host (Adam and the like; SGD captures). The capture
 *       is then invalidated: {@link #captureEnd()} ends it, releases its pool and throws, and the device stays
 *       usable.</li>
 * </ul>
 * Index ops captured in a graph keep their device-side bounds checks: each replay's bad index is reported
 * at the next synchronisation with the replay stream, as for eager ops ({@link IndexCheckLog}).
 *
 * <p>Not thread-safe: one thread captures, replays and resets a graph. One capture at a time per device.
 */
public final class CudaGraph implements AutoCloseable {
    /** A graph memory pool ({@code torch.cuda.graph_pool_handle()}): pass it to several captures to share memory. */
    public record PoolHandle(Device device, long id) {}

    private enum State { EMPTY, CAPTURING, CAPTURED }

    /** The capture under way per device ordinal (global mode: it refuses synchronisations from every thread). */
    private static final ConcurrentHashMap<Integer, CudaGraph> CAPTURING = new ConcurrentHashMap<>();
    /** The side stream {@link #graph(CudaGraph)} captures on, per device (PyTorch's default capture stream). */
    private static final ConcurrentHashMap<Integer, Stream> CAPTURE_STREAMS = new ConcurrentHashMap<>();

    private final Device device;
    private State state = State.EMPTY;
    private Stream stream;
    private PoolHandle pool;
    private long graph, exec;
    /** The first call refused during the capture (the capture's failure), or null. */
    private volatile String refused;
    /** {@link IndexCheckLog} records the captured index checks write at each replay. */
    private final List<Integer> indexRecords = new ArrayList<>();

    /** A graph on the default CUDA device, {@code cuda:0}. */
    public CudaGraph() {
        this(Device.cuda());
    }

    public CudaGraph(Device device) {
        if (!device.isCuda()) throw new IllegalArgumentException("CudaGraph: " + device + " is not a CUDA device");
        this.device = device;
    }

    public Device device() {
        return device;
    }

    /** A new memory pool of {@code device} that captures may share ({@code torch.cuda.graph_pool_handle()}). */
    public static PoolHandle graphPoolHandle(Device device) {
        return new PoolHandle(device, Cuda.allocator(device).newPool());
    }

    public static PoolHandle graphPoolHandle() {
        return graphPoolHandle(Device.cuda());
    }

    /** Begins capturing the current stream of the device into a private pool ({@code capture_begin()}). */
    public void captureBegin() {
        captureBegin(null);
    }

    /**
     * Begins capturing the calling thread's current stream of the device; its allocations come from
     * {@code sharedPool} (null: a new private pool).
     */
    public void captureBegin(PoolHandle sharedPool) {
        if (state != State.EMPTY) throw new IllegalStateException("captureBegin: the graph is " + describe(state) + "; reset() it first");
        if (sharedPool != null && !sharedPool.device().equals(device)) {
            throw new IllegalArgumentException("captureBegin: pool of " + sharedPool.device() + " for a graph on " + device);
        }
        Stream s = Cuda.currentStream(device);
        if (s.isDefault()) {
            throw new IllegalStateException("captureBegin: CUDA graphs must be captured on a non-default stream (the default"
                    + " stream cannot be captured): use CudaGraph.graph(g) or Cuda.withStream(Stream.create(" + device + "))");
        }
        CudaCachingAllocator allocator = Cuda.allocator(device);
        IndexCheckLog.of(device); // its pinned records cannot be allocated during the capture
        PoolHandle p = sharedPool != null ? sharedPool : new PoolHandle(device, allocator.newPool());
        if (CAPTURING.putIfAbsent(device.index(), this) != null) {
            throw new IllegalStateException("captureBegin: another CUDA graph capture is under way on " + device);
        }
        allocator.beginAllocateToPool(p.id(), s.handle());
        refused = null;
        try {
            CudaRuntime rt = CudaRuntime.system();
            rt.makeCurrent(device.index());
            rt.driver().streamBeginCapture(s.handle(), CuConstants.CU_STREAM_CAPTURE_MODE_GLOBAL);
        } catch (RuntimeException e) {
            allocator.endAllocateToPool(s.handle());
            allocator.releasePool(p.id());
            CAPTURING.remove(device.index(), this);
            throw e;
        }
        stream = s;
        pool = p;
        state = State.CAPTURING;
    }

    /**
     * Ends the capture and instantiates the graph ({@code capture_end()}). When a call was refused during
     * the capture (or the driver invalidated it), the capture is discarded, its pool released and this
     * throws {@link IllegalStateException} naming the call; the graph is then empty and may capture again.
     */
    public void captureEnd() {
        if (state != State.CAPTURING) throw new IllegalStateException("captureEnd: the graph is " + describe(state) + ", not capturing");
        CudaRuntime rt = CudaRuntime.system();
        CudaDriver driver = rt.driver();
        CudaCachingAllocator allocator = Cuda.allocator(device);
        long captured = 0;
        RuntimeException driverError = null;
        try {
            rt.makeCurrent(device.index());
            captured = driver.streamEndCapture(stream.handle());
        } catch (RuntimeException e) {
            driverError = e;
        } finally {
            allocator.endAllocateToPool(stream.handle());
            CAPTURING.remove(device.index(), this);
        }
        if (driverError == null && refused == null) {
            try {
                exec = driver.graphInstantiate(captured, 0);
                graph = captured;
                state = State.CAPTURED;
                return;
            } catch (RuntimeException e) {
                driverError = e;
            }
        }
        if (captured != 0) driver.graphDestroy(captured);
        String why = refused != null ? refused : "the driver refused it: " + driverError.getMessage();
        discard();
        throw new IllegalStateException("CUDA graph capture on " + device + " failed, nothing was captured: " + why, driverError);
    }

    /** Launches the captured work on the calling thread's current stream of the device ({@code replay()}). */
    public void replay() {
        if (state != State.CAPTURED) throw new IllegalStateException("replay: the graph is " + describe(state) + ", not captured");
        CudaRuntime rt = CudaRuntime.system();
        rt.makeCurrent(device.index());
        long s = Cuda.currentStream(device).handle();
        rt.driver().graphLaunch(exec, s);
        if (!indexRecords.isEmpty()) IndexCheckLog.of(device).replayed(indexRecords, s);
    }

    /**
     * Destroys the graph and releases this graph's use of its pool ({@code reset()}); tensors the capture
     * allocated stay valid while referenced, their memory returns to the device once freed. A graph still
     * capturing has its capture ended and discarded. Idempotent.
     */
    public void reset() {
        if (state == State.CAPTURING) {
            refused = refused != null ? refused : "reset during capture";
            try {
                captureEnd();
            } catch (IllegalStateException discarded) {
                // the capture is what reset discards
            }
            return;
        }
        if (state != State.CAPTURED) return;
        CudaDriver driver = CudaRuntime.system().driver();
        driver.graphExecDestroy(exec);
        driver.graphDestroy(graph);
        exec = graph = 0;
        discard();
    }

    private void discard() {
        Cuda.allocator(device).releasePool(pool.id());
        if (!indexRecords.isEmpty()) IndexCheckLog.of(device).release(indexRecords);
        indexRecords.clear();
        state = State.EMPTY;
        stream = null;
    }

    /** The pool the capture allocated from: pass it to another capture to share memory ({@code pool()}). */
    public PoolHandle pool() {
        if (pool == null || state == State.EMPTY) throw new IllegalStateException("pool: the graph has not been captured");
        return pool;
    }

    public boolean isCaptured() {
        return state == State.CAPTURED;
    }

    /** {@link #reset()}. */
    @Override
    public void close() {
        reset();
    }

    private static String describe(State s) {
        return switch (s) {
            case EMPTY -> "empty";
            case CAPTURING -> "capturing";
            case CAPTURED -> "captured";
        };
    }

    // ------------------------------------------------------------------ torch.cuda.graph

    /**
     * {@code with torch.cuda.graph(g):} as try-with-resources: synchronises the device, makes a side stream
     * current and begins capturing into a private pool; {@link Capture#close()} ends the capture (throwing
     * if it failed) and restores the stream.
     */
    public static Capture graph(CudaGraph g) {
        return graph(g, null, null);
    }

    /** {@link #graph(CudaGraph)} into {@code pool} (null: private), on {@code stream} (null: the device's capture stream). */
    public static Capture graph(CudaGraph g, PoolHandle pool, Stream stream) {
        Stream s = stream != null ? stream : captureStream(g.device);
        Cuda.synchronize(g.device);
        Cuda.StreamScope scope = Cuda.withStream(s);
        try {
            g.captureBegin(pool);
        } catch (RuntimeException e) {
            scope.close();
            throw e;
        }
        return new Capture(g, scope);
    }

    /** An open {@link #graph} region; close on the thread that opened it. */
    public static final class Capture implements AutoCloseable {
        private final CudaGraph graph;
        private final Cuda.StreamScope scope;

        private Capture(CudaGraph graph, Cuda.StreamScope scope) {
            this.graph = graph;
            this.scope = scope;
        }

        /** The stream being captured (work for the graph may also be enqueued on it directly). */
        public Stream stream() {
            return graph.stream;
        }

        @Override
        public void close() {
            try {
                graph.captureEnd();
            } finally {
                scope.close();
            }
        }
    }

    // ------------------------------------------------------------------ for the JIT

    /** {@link GraphCapture} on CUDA graphs (the backend's {@code graphCapture()}). */
    static final GraphCapture CAPTURE = new GraphCapture() {
        /** PyTorch's recipe: a side stream that waits for the current stream, which then waits for it. */
        @Override
        public void warmUp(Device device, int times, Runnable region) {
            Stream current = Cuda.currentStream(device);
            Stream side = captureStream(device);
            try (Event ready = current.recordEvent()) {
                side.waitEvent(ready);
            }
            try (Cuda.StreamScope s = Cuda.withStream(side)) {
                for (int i = 0; i < times; i++) region.run();
            }
            try (Event warmedUp = side.recordEvent()) {
                current.waitEvent(warmedUp);
            }
        }

        @Override
        public GraphCapture.Graph begin(Device device, GraphCapture.Graph sharePoolWith) {
            CudaGraph g = new CudaGraph(device);
            PoolHandle pool = sharePoolWith instanceof Handle h ? h.graph.pool() : null;
            return new Handle(g, graph(g, pool, null));
        }

        @Override
        public void refuseDuringCapture(String what, String why) {
            refuseDuringAnyCapture(what, why);
        }
    };

    private record Handle(CudaGraph graph, Capture capture) implements GraphCapture.Graph {
        @Override
        public void end() {
            capture.close();
        }

        @Override
        public void replay() {
            graph.replay();
        }

        @Override
        public void close() {
            graph.reset();
        }
    }

    private static Stream captureStream(Device device) {
        return CAPTURE_STREAMS.computeIfAbsent(device.index(), i -> Stream.create(device));
    }

    // ------------------------------------------------------------------ what a capture refuses

    /**
     * Throws naming {@code what} when a capture is under way on {@code device} (the driver's global mode
     * refuses synchronising calls from any thread), and marks the capture failed, so that its end discards it.
     */
    static void refuseDuringCapture(Device device, String what) {
        refuseDuringCapture(device, what, SYNCHRONISES);
    }

    static void refuseDuringCapture(Device device, String what, String why) {
        CudaGraph g = CAPTURING.get(device.index());
        if (g != null) throw g.refuse(what, why);
    }

    private static final String SYNCHRONISES = "a capture cannot record it (it would synchronise with the device or read data"
            + " on the host); move it out of the captured region";

    /** As {@link #refuseDuringCapture} for a capture on any device (pinned host memory belongs to every device). */
    static void refuseDuringAnyCapture(String what) {
        refuseDuringAnyCapture(what, SYNCHRONISES);
    }

    /** Every capture under way is marked failed; throws naming the first with {@code why}. */
    static void refuseDuringAnyCapture(String what, String why) {
        IllegalStateException first = null;
        for (CudaGraph g : CAPTURING.values()) {
            IllegalStateException e = g.refuse(what, why);
            if (first == null) first = e;
        }
        if (first != null) throw first;
    }

    /** The graph capturing {@code stream} of {@code device}, or null. */
    static CudaGraph capturing(Device device, long stream) {
        CudaGraph g = CAPTURING.get(device.index());
        return g != null && g.stream != null && g.stream.handle() == stream ? g : null;
    }

    /** Whether a capture is under way on {@code device}. */
    public static boolean isCapturing(Device device) {
        return CAPTURING.containsKey(device.index());
    }

    void addIndexRecord(int record) {
        indexRecords.add(record);
    }

    private IllegalStateException refuse(String what, String why) {
        String message = what + " during CUDA graph capture on " + device + ": " + why;
        if (refused == null) refused = message;
        return new IllegalStateException(message);
    }
}
