package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.backend.IndexErrorContext;
import org.jtorch.cuda.driver.CuConstants;
import org.jtorch.cuda.kernels.IndexPlan;
import org.jtorch.cuda.kernels.IndexPlan.Check;
import org.jtorch.types.Device;

/**
 * Where the index checks of one device's index ops (and other device-side checks: multinomial's rows) report, so that
 * checking costs no synchronisation.
 *
 * <p>Each check claims a record of mapped pinned memory (two words: for an index check the first bad row-major
 * position, ~0 for none, and the index found there; another check's {@link Reporter} reads its own words, word 0 ~0
 * meaning none), which its check kernels write on the op's stream. The host reads
 * the records of a stream after it has synchronised with that stream anyway: a device-to-host copy
 * ({@code item()}, {@code toArray()}, {@code to(cpu)}), {@link Stream#synchronize} or {@link Cuda#synchronize};
 * a bad index then surfaces there as an {@link IndexOutOfBoundsException} naming the op, the value and the
 * dimension. This is how CUDA reports every kernel error, and how PyTorch reports its index asserts,
 * without PyTorch's price: the context stays usable, because the data kernels skip an index they cannot
 * trust instead of faulting. Until then, the ops after the bad one run on unchecked values.
 *
 * <p>In synchronous mode ({@code JTORCH_CUDA_SYNC_INDEX_CHECKS=1}, or {@link Cuda#setSynchronousIndexChecks})
 * each op reads its record at once, which synchronises its stream: the error surfaces at the op, with
 * the CPU backend's message, and the destination unchanged. That mode is for debugging, as PyTorch's
 * {@code CUDA_LAUNCH_BLOCKING=1}.
 *
 * <p>A check captured in a {@link CudaGraph} claims a record the graph owns until it is reset: each replay
 * puts it back in flight on the replay stream ({@link #replayed}), and a report clears it for the next one.
 */
final class IndexCheckLog {
    /** Records in flight per device before a claim waits for the device (a training step has a few). */
    static final int RECORDS = 256;
    private static final long RECORD_BYTES = 16;
    private static final long NONE = -1L;
    private static final List<IndexCheckLog> LOGS = new ArrayList<>();
    private static volatile boolean synchronous = "1".equals(System.getenv("JTORCH_CUDA_SYNC_INDEX_CHECKS"));

    private final CudaRuntime runtime;
    private final int ordinal;
    private final MemorySegment records;
    private final long deviceAddress;
    /** What each record reports when its word 0 is set. */
    private final Reporter[] reporters = new Reporter[RECORDS];
    private final long[] streams = new long[RECORDS];
    /** Records owned by a captured graph: reported like the others, but not freed by a report. */
    private final boolean[] graphOwned = new boolean[RECORDS];
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    /** Claimed records, in claim order, so that the first bad op is the one reported. */
    private final List<Integer> pending = new ArrayList<>();
    /** {@code pending.size()}, readable without the lock: a synchronisation with nothing pending costs one read. */
    private volatile int pendingCount;

    private IndexCheckLog(CudaRuntime runtime, int ordinal) {
        this.runtime = runtime;
        this.ordinal = ordinal;
        runtime.makeCurrent(ordinal);
        this.records = runtime.driver().memHostAlloc(RECORDS * RECORD_BYTES,
                CuConstants.CU_MEMHOSTALLOC_PORTABLE | CuConstants.CU_MEMHOSTALLOC_DEVICEMAP);
        this.deviceAddress = runtime.driver().memHostGetDevicePointer(records);
        for (int r = 0; r < RECORDS; r++) free.add(r);
    }

    static boolean synchronous() {
        return synchronous;
    }

    static boolean setSynchronous(boolean on) {
        boolean previous = synchronous;
        synchronous = on;
        return previous;
    }

    /** The log of {@code device}, created on first use (the process keeps it, as a device's handles). */
    static IndexCheckLog of(Device device) {
        synchronized (LOGS) {
            int ordinal = device.index();
            while (LOGS.size() <= ordinal) LOGS.add(null);
            IndexCheckLog log = LOGS.get(ordinal);
            if (log == null) {
                log = new IndexCheckLog(CudaRuntime.system(), ordinal);
                LOGS.set(ordinal, log);
            }
            return log;
        }
    }

    /** The log of {@code device} if it has records in flight, else null; for the synchronisation points. */
    private static IndexCheckLog pendingOf(Device device) {
        synchronized (LOGS) {
            IndexCheckLog log = device.index() < LOGS.size() ? LOGS.get(device.index()) : null;
            return log != null && log.pendingCount > 0 ? log : null;
        }
    }

    /** The error a record's two words report (word 0 is not ~0), raised at the synchronisation that reads it. */
    @FunctionalInterface
    interface Reporter {
        RuntimeException error(long word0, long word1);
    }

    /**
     * A cleared record for {@code check} on {@code stream}; returns its device address (word 0: first bad
     * position, word 1: its value). When every record is in flight, waits for the device and reports them first.
     */
    long claim(Check check, long stream) {
        String prefix = IndexErrorContext.prefix();
        return claim((position, value) -> exception(check, prefix, value), stream);
    }

    /**
     * A cleared record (word 0 ~0, word 1 0) for a device-side check on {@code stream} whose error {@code reporter}
     * makes; returns its device address. When every record is in flight, waits for the device and reports them first.
     */
    synchronized long claim(Reporter reporter, long stream) {
        CudaGraph graph = CudaGraph.capturing(Device.cuda(ordinal), stream);
        if (graph != null && free.isEmpty()) {
            throw new IllegalStateException("a CUDA graph capture on cuda:" + ordinal + " has more index checks in flight than the "
                    + RECORDS + " records of its index-check log");
        }
        if (free.isEmpty()) {
            runtime.makeCurrent(ordinal);
            runtime.driver().ctxSynchronize();
            report(0, true);
        }
        int r = free.pop();
        records.set(JAVA_LONG, r * RECORD_BYTES, NONE);
        records.set(JAVA_LONG, r * RECORD_BYTES + 8, 0);
        reporters[r] = reporter;
        streams[r] = stream;
        if (graph != null) {
            graphOwned[r] = true; // in flight from the first replay on
            graph.addIndexRecord(r);
        } else {
            pending.add(r);
            pendingCount = pending.size();
        }
        return deviceAddress + r * RECORD_BYTES;
    }

    /** After the host has synchronised with {@code stream} of {@code device}: reports its records (throws for the first bad one). */
    static void streamSynchronized(Device device, long stream) {
        IndexCheckLog log = pendingOf(device);
        if (log != null) log.report(stream, false);
    }

    /** After the host has synchronised with the whole of {@code device}. */
    static void deviceSynchronized(Device device) {
        IndexCheckLog log = pendingOf(device);
        if (log != null) log.report(0, true);
    }

    /**
     * Frees the completed records (of {@code stream}, or all) and throws the first error among them (a bad index,
     * a bad multinomial row), in the order the ops ran, with any later ones suppressed.
     */
    synchronized void report(long stream, boolean all) {
        RuntimeException first = null;
        for (int i = 0; i < pending.size(); ) {
            int r = pending.get(i);
            if (!all && streams[r] != stream) {
                i++;
                continue;
            }
            pending.remove(i);
            long position = records.get(JAVA_LONG, r * RECORD_BYTES);
            if (graphOwned[r]) records.set(JAVA_LONG, r * RECORD_BYTES, NONE); // ready for the graph's next replay
            else free.push(r);
            if (position == NONE) continue;
            RuntimeException e = reporters[r].error(position, records.get(JAVA_LONG, r * RECORD_BYTES + 8));
            if (first == null) first = e;
            else first.addSuppressed(e);
        }
        pendingCount = pending.size();
        if (first != null) throw first;
    }

    /** A replay of a graph owning {@code graphRecords} was launched on {@code stream}: its checks are in flight there. */
    synchronized void replayed(List<Integer> graphRecords, long stream) {
        for (int r : graphRecords) {
            streams[r] = stream;
            if (!pending.contains(r)) pending.add(r);
        }
        pendingCount = pending.size();
    }

    /** The graph owning {@code graphRecords} was reset: they return to the log. */
    synchronized void release(List<Integer> graphRecords) {
        for (int r : graphRecords) {
            graphOwned[r] = false;
            pending.remove(Integer.valueOf(r));
            free.push(r);
        }
        pendingCount = pending.size();
    }

    /** Synchronously, the CPU backend's error (its caller adds its context); else the error with the context and how it was found. */
    private static IndexOutOfBoundsException exception(Check check, String prefix, long value) {
        IndexOutOfBoundsException e = IndexPlan.outOfBounds(check, value);
        if (synchronous) return e;
        return new IndexOutOfBoundsException(prefix + e.getMessage() + " (found by the op's CUDA index check and reported at the next"
                + " synchronisation with its stream, so the ops after it ran on unchecked indices; set"
                + " JTORCH_CUDA_SYNC_INDEX_CHECKS=1 or call Cuda.setSynchronousIndexChecks(true) to have it raised by the op itself)");
    }
}
