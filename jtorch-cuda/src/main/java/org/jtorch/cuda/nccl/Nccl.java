package org.jtorch.cuda.nccl;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.NativeLibrary;

/**
 * FFM bindings to NCCL ({@code libnccl.so.2}), one method per C function of {@code nccl.h}, each checking the
 * {@code ncclResult_t} and throwing {@link CudaException} with {@code ncclGetErrorString} and
 * {@code ncclGetLastError}'s detail.
 *
 * <p>Communicators ({@code ncclComm_t}), streams ({@code cudaStream_t}, the driver's {@code CUstream}) and device
 * pointers are passed as {@code long}. {@code ncclUniqueId} is a 128-byte struct passed by value to
 * {@code ncclCommInitRank}; here it is a {@code byte[]}. Thread-safe as NCCL is: calls on one communicator must
 * come from one thread at a time.
 */
public final class Nccl {
    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    public static final int UNIQUE_ID_BYTES = 128;

    // ncclResult_t
    public static final int SUCCESS = 0;
    public static final int IN_PROGRESS = 7;

    // ncclDataType_t
    public static final int INT8 = 0, UINT8 = 1, INT32 = 2, UINT32 = 3, INT64 = 4, UINT64 = 5, FLOAT16 = 6, FLOAT32 = 7,
            FLOAT64 = 8, BFLOAT16 = 9;

    // ncclRedOp_t
    public static final int SUM = 0, PROD = 1, MAX = 2, MIN = 3, AVG = 4;

    private static final MemoryLayout UNIQUE_ID = MemoryLayout.structLayout(MemoryLayout.sequenceLayout(UNIQUE_ID_BYTES, JAVA_BYTE));
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
    private static final FunctionDescriptor I_V = FunctionDescriptor.of(JAVA_INT);

    private final NativeLibrary library;
    private final MethodHandle ncclGetVersion, ncclGetErrorString, ncclGetLastError, ncclGetUniqueId, ncclCommInitRank;
    private final MethodHandle ncclCommDestroy, ncclCommAbort, ncclCommGetAsyncError;
    private final MethodHandle ncclAllReduce, ncclBroadcast, ncclAllGather, ncclReduceScatter, ncclSend, ncclRecv;
    private final MethodHandle ncclGroupStart, ncclGroupEnd;

    /** Binds every function of {@code library}; throws {@link CudaException} naming a missing symbol. */
    public Nccl(NativeLibrary library) {
        this.library = library;
        ncclGetVersion = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS), "ncclGetVersion");
        ncclGetErrorString = library.downcall(FunctionDescriptor.of(ADDRESS, JAVA_INT), "ncclGetErrorString");
        ncclGetLastError = library.downcall(FunctionDescriptor.of(ADDRESS, JAVA_LONG), "ncclGetLastError");
        ncclGetUniqueId = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS), "ncclGetUniqueId");
        ncclCommInitRank = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, UNIQUE_ID, JAVA_INT), "ncclCommInitRank");
        ncclCommDestroy = library.downcall(I_L, "ncclCommDestroy");
        ncclCommAbort = library.downcall(I_L, "ncclCommAbort");
        ncclCommGetAsyncError = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "ncclCommGetAsyncError");
        // (sendbuff, recvbuff, count, datatype, op, comm, stream)
        FunctionDescriptor reduce = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG);
        ncclAllReduce = library.downcall(reduce, "ncclAllReduce");
        ncclReduceScatter = library.downcall(reduce, "ncclReduceScatter");
        // (sendbuff, recvbuff, count, datatype, root, comm, stream)
        ncclBroadcast = library.downcall(reduce, "ncclBroadcast");
        ncclAllGather = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG),
                "ncclAllGather");
        // (buff, count, datatype, peer, comm, stream)
        FunctionDescriptor p2p = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG);
        ncclSend = library.downcall(p2p, "ncclSend");
        ncclRecv = library.downcall(p2p, "ncclRecv");
        ncclGroupStart = library.downcall(I_V, "ncclGroupStart");
        ncclGroupEnd = library.downcall(I_V, "ncclGroupEnd");
    }

    public NativeLibrary library() {
        return library;
    }

    /** {@code ncclGetVersion}: X * 10000 + Y * 100 + Z for NCCL X.Y.Z (from 2.9 on). */
    public int version() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("ncclGetVersion", (int) ncclGetVersion.invokeExact(v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ncclGetErrorString}. */
    public String errorString(int result) {
        try {
            MemorySegment s = (MemorySegment) ncclGetErrorString.invokeExact(result);
            return s.address() == 0 ? "ncclResult_t " + result : s.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ncclGetLastError}: the detail of the latest failed call in this process, or "". */
    public String lastError() {
        try {
            MemorySegment s = (MemorySegment) ncclGetLastError.invokeExact(0L);
            return s.address() == 0 ? "" : s.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The exception for a failed {@code call}. */
    public CudaException error(String call, int result) {
        String detail = lastError();
        return new CudaException(call, result, "ncclResult_t " + result, errorString(result) + (detail.isEmpty() ? "" : "; " + detail));
    }

    private void check(String call, int rc) {
        if (rc != SUCCESS) throw error(call, rc);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    /** {@code ncclGetUniqueId}: the 128 bytes every rank passes to {@link #commInitRank}. */
    public byte[] getUniqueId() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(UNIQUE_ID);
            check("ncclGetUniqueId", (int) ncclGetUniqueId.invokeExact(id));
            return id.toArray(JAVA_BYTE);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ncclCommInitRank} on the current CUDA context's device; blocks until all {@code nranks} have joined. */
    public long commInitRank(int nranks, byte[] uniqueId, int rank) {
        if (uniqueId.length != UNIQUE_ID_BYTES) {
            throw new IllegalArgumentException("ncclCommInitRank: a unique id has " + UNIQUE_ID_BYTES + " bytes, got " + uniqueId.length);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment comm = arena.allocate(ADDRESS);
            MemorySegment id = arena.allocate(UNIQUE_ID);
            id.copyFrom(MemorySegment.ofArray(uniqueId));
            check("ncclCommInitRank", (int) ncclCommInitRank.invokeExact(comm, nranks, id, rank));
            return comm.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void commDestroy(long comm) {
        try {
            check("ncclCommDestroy", (int) ncclCommDestroy.invokeExact(comm));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void commAbort(long comm) {
        try {
            check("ncclCommAbort", (int) ncclCommAbort.invokeExact(comm));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ncclCommGetAsyncError}: {@link #SUCCESS}, {@link #IN_PROGRESS} or the error that broke the communicator. */
    public int commGetAsyncError(long comm) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("ncclCommGetAsyncError", (int) ncclCommGetAsyncError.invokeExact(comm, v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void allReduce(long send, long recv, long count, int datatype, int op, long comm, long stream) {
        try {
            check("ncclAllReduce", (int) ncclAllReduce.invokeExact(send, recv, count, datatype, op, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void broadcast(long send, long recv, long count, int datatype, int root, long comm, long stream) {
        try {
            check("ncclBroadcast", (int) ncclBroadcast.invokeExact(send, recv, count, datatype, root, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code recv} holds {@code nranks * sendCount} elements, rank r's at {@code r * sendCount}. */
    public void allGather(long send, long recv, long sendCount, int datatype, long comm, long stream) {
        try {
            check("ncclAllGather", (int) ncclAllGather.invokeExact(send, recv, sendCount, datatype, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code send} holds {@code nranks * recvCount} elements; rank r receives the reduction of block r. */
    public void reduceScatter(long send, long recv, long recvCount, int datatype, int op, long comm, long stream) {
        try {
            check("ncclReduceScatter", (int) ncclReduceScatter.invokeExact(send, recv, recvCount, datatype, op, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void send(long send, long count, int datatype, int peer, long comm, long stream) {
        try {
            check("ncclSend", (int) ncclSend.invokeExact(send, count, datatype, peer, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void recv(long recv, long count, int datatype, int peer, long comm, long stream) {
        try {
            check("ncclRecv", (int) ncclRecv.invokeExact(recv, count, datatype, peer, comm, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Calls until {@link #groupEnd()} are issued together (sends and receives between a pair must be). */
    public void groupStart() {
        try {
            check("ncclGroupStart", (int) ncclGroupStart.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void groupEnd() {
        try {
            check("ncclGroupEnd", (int) ncclGroupEnd.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
