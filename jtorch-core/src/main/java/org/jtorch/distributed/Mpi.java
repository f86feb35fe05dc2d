package org.jtorch.distributed;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * FFM bindings to Open MPI's C API ({@code libmpi.so.40}), one method per MPI function, each checking its
 * return code. Open MPI's predefined handles ({@code MPI_COMM_WORLD}, {@code MPI_FLOAT}, {@code MPI_SUM})
 * are the addresses of global objects ({@code ompi_mpi_comm_world}, ...), looked up by name.
 *
 * <p>Calls are made from one thread only (the process group's communication thread), so the library is
 * initialised at {@code MPI_THREAD_FUNNELED} from that thread.
 */
final class Mpi {
    static final int THREAD_FUNNELED = 1;
    private static final MemorySegment STATUS_IGNORE = MemorySegment.NULL;
    /** {@code MPI_IN_PLACE} is {@code (void *) 1} in Open MPI. */
    static final MemorySegment IN_PLACE = MemorySegment.ofAddress(1);

    private static final Linker LINKER = Linker.nativeLinker();
    private static final List<String> LIBRARY_PATHS = List.of(
            "/usr/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/aarch64-linux-gnu/libmpi.so.40",
            "/usr/lib64/openmpi/lib/libmpi.so.40", "/usr/lib/libmpi.so.40");

    private final SymbolLookup lookup;
    final MemorySegment commWorld;
    final MemorySegment opSum;
    final MemorySegment opMax;
    final MemorySegment opMin;
    private final MethodHandle initThread;
    private final MethodHandle initialized;
    private final MethodHandle finalizeCall;
    private final MethodHandle commRank;
    private final MethodHandle commSize;
    private final MethodHandle commSetErrhandler;
    private final MethodHandle errorString;
    private final MethodHandle allreduce;
    private final MethodHandle bcast;
    private final MethodHandle allgather;
    private final MethodHandle reduceScatterBlock;
    private final MethodHandle barrier;
    private final MethodHandle send;
    private final MethodHandle recv;
    private final MethodHandle abort;
    private final MethodHandle isend;
    private final MethodHandle irecv;
    private final MethodHandle waitall;

    private Mpi(SymbolLookup lookup) {
        this.lookup = lookup;
        commWorld = symbol("ompi_mpi_comm_world");
        opSum = symbol("ompi_mpi_op_sum");
        opMax = symbol("ompi_mpi_op_max");
        opMin = symbol("ompi_mpi_op_min");
        initThread = function("MPI_Init_thread", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS);
        initialized = function("MPI_Initialized", JAVA_INT, ADDRESS);
        finalizeCall = function("MPI_Finalize", JAVA_INT);
        commRank = function("MPI_Comm_rank", JAVA_INT, ADDRESS, ADDRESS);
        commSize = function("MPI_Comm_size", JAVA_INT, ADDRESS, ADDRESS);
        commSetErrhandler = function("MPI_Comm_set_errhandler", JAVA_INT, ADDRESS, ADDRESS);
        errorString = function("MPI_Error_string", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        allreduce = function("MPI_Allreduce", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        bcast = function("MPI_Bcast", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
        allgather = function("MPI_Allgather", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS);
        reduceScatterBlock = function("MPI_Reduce_scatter_block", JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        barrier = function("MPI_Barrier", JAVA_INT, ADDRESS);
        send = function("MPI_Send", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
        recv = function("MPI_Recv", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        abort = function("MPI_Abort", JAVA_INT, ADDRESS, JAVA_INT);
        isend = function("MPI_Isend", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        irecv = function("MPI_Irecv", JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
        waitall = function("MPI_Waitall", JAVA_INT, JAVA_INT, ADDRESS, ADDRESS);
    }

    /** Opens the system's Open MPI; throws {@link DistributedException} saying what to install when it is missing. */
    static Mpi load() {
        String override = System.getenv("JTORCH_MPI_LIBRARY");
        List<String> candidates = override != null ? List.of(override) : LIBRARY_PATHS;
        for (String p : candidates) {
            Path path = Path.of(p);
            if (!Files.exists(path)) continue;
            try {
                return new Mpi(SymbolLookup.libraryLookup(path, Arena.global()));
            } catch (IllegalArgumentException e) {
                throw new DistributedException("mpi backend: cannot load " + path + ": " + e.getMessage(), e);
            }
        }
        throw new DistributedException("mpi backend: Open MPI's libmpi.so.40 was not found in " + candidates
                + " (install Debian's libopenmpi3 and openmpi-bin, or set JTORCH_MPI_LIBRARY)");
    }

    /** The handle of a predefined datatype, e.g. {@code float} for {@code MPI_FLOAT} ({@code ompi_mpi_float}). */
    MemorySegment datatype(String name) {
        return symbol("ompi_mpi_" + name);
    }

    private MemorySegment symbol(String name) {
        return lookup.find(name).orElseThrow(() -> new DistributedException("mpi backend: libmpi lacks the symbol " + name));
    }

    private MethodHandle function(String name, java.lang.foreign.MemoryLayout result, java.lang.foreign.MemoryLayout... args) {
        return LINKER.downcallHandle(symbol(name), FunctionDescriptor.of(result, args));
    }

    // ------------------------------------------------------------------ calls

    /** {@code MPI_Init_thread} (unless already initialised); errors on {@code MPI_COMM_WORLD} then return codes. Returns the thread level provided. */
    int init(int required) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment flag = arena.allocate(JAVA_INT);
            call("MPI_Initialized", initialized, flag);
            int provided = required;
            if (flag.get(JAVA_INT, 0) == 0) {
                MemorySegment providedOut = arena.allocate(JAVA_INT);
                call("MPI_Init_thread", initThread, MemorySegment.NULL, MemorySegment.NULL, required, providedOut);
                provided = providedOut.get(JAVA_INT, 0);
            }
            call("MPI_Comm_set_errhandler", commSetErrhandler, commWorld, symbol("ompi_mpi_errors_return"));
            return provided;
        }
    }

    void finish() {
        call("MPI_Finalize", finalizeCall);
    }

    int rank() {
        return intQuery("MPI_Comm_rank", commRank);
    }

    int size() {
        return intQuery("MPI_Comm_size", commSize);
    }

    private int intQuery(String name, MethodHandle h) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            call(name, h, commWorld, out);
            return out.get(JAVA_INT, 0);
        }
    }

    void allreduce(MemorySegment send, MemorySegment recv, int count, MemorySegment type, MemorySegment op) {
        call("MPI_Allreduce", allreduce, send, recv, count, type, op, commWorld);
    }

    void bcast(MemorySegment buffer, int count, MemorySegment type, int root) {
        call("MPI_Bcast", bcast, buffer, count, type, root, commWorld);
    }

    void allgather(MemorySegment send, int count, MemorySegment recv, MemorySegment type) {
        call("MPI_Allgather", allgather, send, count, type, recv, count, type, commWorld);
    }

    void reduceScatterBlock(MemorySegment send, MemorySegment recv, int count, MemorySegment type, MemorySegment op) {
        call("MPI_Reduce_scatter_block", reduceScatterBlock, send, recv, count, type, op, commWorld);
    }

    void barrier() {
        call("MPI_Barrier", barrier, commWorld);
    }

    void send(MemorySegment buffer, int count, MemorySegment type, int dest, int tag) {
        call("MPI_Send", send, buffer, count, type, dest, tag, commWorld);
    }

    void recv(MemorySegment buffer, int count, MemorySegment type, int source, int tag) {
        call("MPI_Recv", recv, buffer, count, type, source, tag, commWorld, STATUS_IGNORE);
    }

    /** {@code MPI_Isend}: the request handle goes into {@code request} (an {@code MPI_Request}, pointer-sized in Open MPI). */
    void isend(MemorySegment buffer, int count, MemorySegment type, int dest, int tag, MemorySegment request) {
        call("MPI_Isend", isend, buffer, count, type, dest, tag, commWorld, request);
    }

    void irecv(MemorySegment buffer, int count, MemorySegment type, int source, int tag, MemorySegment request) {
        call("MPI_Irecv", irecv, buffer, count, type, source, tag, commWorld, request);
    }

    /** {@code MPI_Waitall} on {@code count} requests ({@code MPI_STATUSES_IGNORE}). */
    void waitAll(int count, MemorySegment requests) {
        call("MPI_Waitall", waitall, count, requests, STATUS_IGNORE);
    }

    /** Calls {@code handle} (every MPI function returns an int error code) and throws naming {@code name} on error. */
    private void call(String name, MethodHandle handle, Object... args) {
        int code;
        try {
            code = (int) handle.invokeWithArguments(args);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        check(name, code);
    }

    /** {@code MPI_Abort}: Open MPI's runtime then terminates every rank. */
    void abort(int code) {
        call("MPI_Abort", abort, commWorld, code);
    }

    private void check(String call, int code) {
        if (code == 0) return;
        String text = "error " + code;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256); // MPI_MAX_ERROR_STRING
            MemorySegment len = arena.allocate(JAVA_INT);
            if ((int) errorString.invokeExact(code, buf, len) == 0) text = buf.getString(0);
        } catch (Throwable ignored) {
            // keep the numeric code
        }
        throw new DistributedException(call + " failed: " + text);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new DistributedException("mpi backend: " + t, t);
    }
}
