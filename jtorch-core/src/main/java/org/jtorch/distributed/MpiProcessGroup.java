package org.jtorch.distributed;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.distributed.CollectiveHeader.Call;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The {@code mpi} backend: collectives on CPU tensors through Open MPI's {@code MPI_COMM_WORLD}, for processes
 * started by {@code mpirun} or {@code jtorch launch} (a process started alone is a world of one).
 *
 * <p>All MPI calls run on one daemon thread, in the order operations were issued (MPI is initialised at
 * {@code MPI_THREAD_FUNNELED} from that thread), so the callers' threads never block in MPI and backward can
 * go on while a bucket is reduced. Each collective first all-gathers a small header (call, dtype, shape) so
 * that ranks that disagree fail with a message instead of corrupting memory or hanging.
 *
 * <p>Dtypes: every jtorch dtype. {@code float16} and {@code bfloat16} are reduced in float32 (then rounded
 * once); {@code bool} reductions are logical (see {@link ReduceOp}). Non-contiguous tensors go through a
 * contiguous copy.
 *
 * <p>MPI can be initialised once per process: {@link #init} returns the same group until {@link #close()}, which
 * calls {@code MPI_Finalize} (every rank must close, else {@code mpirun} reports the job as failed); after that
 * no new group can be made in this process. A process that fails should exit without closing: {@code mpirun}
 * (or {@code jtorch launch}) then stops the other ranks.
 */
public final class MpiProcessGroup extends ProcessGroup {
    /** Elements per MPI call: MPI counts are C ints. */
    private static final int MAX_COUNT = 1 << 30;
    private static final int HEADER_LONGS = CollectiveHeader.LONGS;

    private static MpiProcessGroup instance;
    private static boolean finalized;

    private final Mpi mpi;
    private final java.util.Map<DType, MemorySegment> datatypes = new java.util.concurrent.ConcurrentHashMap<>();
    private final ExecutorService thread;
    private final int rank;
    private final int size;
    private final Duration timeout;
    private long issued;
    private volatile String broken;
    private volatile boolean closed;

    private interface Body {
        void run() throws Exception;
    }

    private MpiProcessGroup(Mpi mpi, ExecutorService thread, int rank, int size, Duration timeout) {
        this.mpi = mpi;
        this.thread = thread;
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
    }

    /**
     * Initialises MPI (once per process) and returns the group of {@code MPI_COMM_WORLD}; {@code timeout} bounds
     * {@link Work#waitFor()}. Throws {@link DistributedException} when Open MPI is missing or was finalised.
     */
    public static synchronized MpiProcessGroup init(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("MpiProcessGroup.init: timeout must be positive, got " + timeout);
        }
        if (instance != null) return instance;
        if (finalized) {
            throw new DistributedException("mpi backend: MPI was finalised by an earlier close() and cannot be initialised again in this process");
        }
        Mpi mpi = Mpi.load();
        ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "jtorch-mpi");
            t.setDaemon(true); // a rank that fails must be able to exit while a collective is blocked
            return t;
        });
        try {
            int[] rankSize = thread.submit(() -> {
                int provided = mpi.init(Mpi.THREAD_FUNNELED);
                if (provided < Mpi.THREAD_FUNNELED) {
                    throw new DistributedException("mpi backend: MPI_Init_thread provided thread level " + provided
                            + ", below MPI_THREAD_FUNNELED");
                }
                return new int[] {mpi.rank(), mpi.size()};
            }).get();
            instance = new MpiProcessGroup(mpi, thread, rankSize[0], rankSize[1], timeout);
            return instance;
        } catch (ExecutionException e) {
            thread.shutdownNow();
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new DistributedException("mpi backend: initialisation failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
            throw new DistributedException("mpi backend: interrupted during initialisation", e);
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String backend() {
        return "mpi";
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    // ------------------------------------------------------------------ collectives

    @Override
    public Work allReduce(Tensor tensor, ReduceOp op) {
        return allReduce(tensor, op, true);
    }

    @Override
    public Work allReduceUnchecked(Tensor tensor, ReduceOp op) {
        return allReduce(tensor, op, false);
    }

    private Work allReduce(Tensor tensor, ReduceOp op, boolean checked) {
        String name = "allReduce(" + op + ")";
        checkTensor(name, "tensor", tensor);
        checkReduceOp(name, op, tensor.dtype());
        return submit(Call.ALL_REDUCE, name, checked ? header(Call.ALL_REDUCE, tensor, op.ordinal()) : null, () -> {
            boolean widen = isHalf(tensor.dtype());
            Tensor buffer = staged(tensor, widen);
            try {
                long n = buffer.numel();
                MemorySegment data = segment(buffer);
                long bytes = buffer.dtype().byteSize();
                for (long start = 0; start < n; start += MAX_COUNT) {
                    int count = (int) Math.min(MAX_COUNT, n - start);
                    MemorySegment chunk = data.asSlice(start * bytes, count * bytes);
                    mpi.allreduce(Mpi.IN_PLACE, chunk, count, datatype(buffer.dtype()), mpiOp(op, buffer.dtype()));
                }
                if (op == ReduceOp.AVG) divide(buffer, size);
                unstage(tensor, buffer);
            } finally {
                if (buffer != tensor) buffer.close();
            }
        });
    }

    @Override
    public Work broadcast(Tensor tensor, int src) {
        checkTensor("broadcast", "tensor", tensor);
        checkRank("broadcast", "src", src);
        return submit(Call.BROADCAST, "broadcast(src=" + src + ")", header(Call.BROADCAST, tensor, src), () -> {
            Tensor buffer = staged(tensor, false);
            try {
                long n = buffer.numel();
                MemorySegment data = segment(buffer);
                long bytes = buffer.dtype().byteSize();
                for (long start = 0; start < n; start += MAX_COUNT) {
                    int count = (int) Math.min(MAX_COUNT, n - start);
                    mpi.bcast(data.asSlice(start * bytes, count * bytes), count, datatype(buffer.dtype()), src);
                }
                if (rank != src) unstage(tensor, buffer);
            } finally {
                if (buffer != tensor) buffer.close();
            }
        });
    }

    @Override
    public Work allGatherIntoTensor(Tensor output, Tensor input) {
        checkTensor("allGatherIntoTensor", "input", input);
        checkTensor("allGatherIntoTensor", "output", output);
        checkGatheredSize("allGatherIntoTensor", output, input);
        checkCount("allGatherIntoTensor", input.numel());
        return submit(Call.ALL_GATHER, "allGatherIntoTensor", header(Call.ALL_GATHER, input, 0), () -> {
            Tensor in = staged(input, false);
            Tensor out = staged(output, false);
            try {
                mpi.allgather(segment(in), (int) in.numel(), segment(out), datatype(in.dtype()));
                unstage(output, out);
            } finally {
                if (in != input) in.close();
                if (out != output) out.close();
            }
        });
    }

    @Override
    public Work allGather(List<Tensor> outputs, Tensor input) {
        checkTensor("allGather", "input", input);
        checkGatherOutputs(outputs, input, this::checkTensor);
        checkCount("allGather", input.numel());
        List<Tensor> targets = List.copyOf(outputs);
        return submit(Call.ALL_GATHER, "allGather", header(Call.ALL_GATHER, input, 0), () -> {
            Tensor in = staged(input, false);
            long[] gatheredShape = new long[input.dim() + 1];
            gatheredShape[0] = size;
            System.arraycopy(input.shape(), 0, gatheredShape, 1, input.dim());
            try (Tensor gathered = Tensor.empty(gatheredShape, input.dtype(), Device.cpu())) {
                mpi.allgather(segment(in), (int) in.numel(), segment(gathered), datatype(in.dtype()));
                try (Grad.Mode g = Grad.noGrad()) {
                    for (int r = 0; r < size; r++) {
                        try (Tensor slice = gathered.select(0, r)) {
                            targets.get(r).copy_(slice);
                        }
                    }
                }
            } finally {
                if (in != input) in.close();
            }
        });
    }

    @Override
    public Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        String name = "reduceScatterTensor(" + op + ")";
        checkTensor(name, "input", input);
        checkTensor(name, "output", output);
        checkReduceOp(name, op, input.dtype());
        checkScatteredSize(name, output, input);
        checkCount(name, output.numel());
        return submit(Call.REDUCE_SCATTER, name, header(Call.REDUCE_SCATTER, input, op.ordinal()), () -> {
            boolean widen = isHalf(input.dtype());
            Tensor in = staged(input, widen);
            Tensor out = staged(output, widen);
            try {
                mpi.reduceScatterBlock(segment(in), segment(out), (int) out.numel(), datatype(in.dtype()), mpiOp(op, in.dtype()));
                if (op == ReduceOp.AVG) divide(out, size);
                unstage(output, out);
            } finally {
                if (in != input) in.close();
                if (out != output) out.close();
            }
        });
    }

    @Override
    public Work barrier() {
        return submit(Call.BARRIER, "barrier", header(Call.BARRIER, null, 0), mpi::barrier);
    }

    @Override
    public Work send(Tensor tensor, int dst, int tag) {
        checkTensor("send", "tensor", tensor);
        checkRank("send", "dst", dst);
        checkCount("send", tensor.numel());
        long[] header = header(Call.SEND, tensor, tag);
        return submit(Call.SEND, "send(dst=" + dst + ", tag=" + tag + ")", null, () -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment h = arena.allocateFrom(ValueLayout.JAVA_LONG, header);
                mpi.send(h, HEADER_LONGS, datatype(DType.INT64), dst, tag);
            }
            Tensor buffer = staged(tensor, false);
            try {
                mpi.send(segment(buffer), (int) buffer.numel(), datatype(buffer.dtype()), dst, tag);
            } finally {
                if (buffer != tensor) buffer.close();
            }
        });
    }

    @Override
    public Work recv(Tensor tensor, int src, int tag) {
        checkTensor("recv", "tensor", tensor);
        checkRank("recv", "src", src);
        checkCount("recv", tensor.numel());
        long[] expected = header(Call.SEND, tensor, tag);
        return submit(Call.RECV, "recv(src=" + src + ", tag=" + tag + ")", null, () -> {
            long[] got = new long[HEADER_LONGS];
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment h = arena.allocate(ValueLayout.JAVA_LONG, HEADER_LONGS);
                mpi.recv(h, HEADER_LONGS, datatype(DType.INT64), src, tag);
                MemorySegment.copy(h, ValueLayout.JAVA_LONG, 0, got, 0, HEADER_LONGS);
                if (!Arrays.equals(got, expected)) {
                    // Drain the data message so that the channel stays usable, then report both sides.
                    DType sentType = CollectiveHeader.dtype(got);
                    MemorySegment scratch = arena.allocate(Math.max(1, CollectiveHeader.numel(got) * sentType.byteSize()));
                    mpi.recv(scratch, (int) CollectiveHeader.numel(got), datatype(sentType), src, tag);
                    throw new Disagreement("recv on rank " + rank + ": rank " + src + " sent " + describe(got)
                            + " but this rank expects " + describe(expected));
                }
            }
            Tensor buffer = staged(tensor, false);
            try {
                mpi.recv(segment(buffer), (int) buffer.numel(), datatype(buffer.dtype()), src, tag);
                unstage(tensor, buffer);
            } finally {
                if (buffer != tensor) buffer.close();
            }
        });
    }

    /**
     * Each send's header goes ahead of the data, as for {@link #send}. All headers of the batch are posted before any
     * data, so that two ops to one peer with one tag still pair up in order; the receives wait for their headers only
     * (the sends never wait here, so two ranks sending to each other cannot deadlock), check them, then post the data
     * receives. A receive whose header disagrees drains the data into scratch, so the channel stays usable, and the
     * batch fails naming both sides.
     */
    @Override
    public Work batchIsendIrecv(List<P2POp> ops) {
        checkBatch(ops, this::checkTensor);
        for (P2POp op : ops) checkCount("batchIsendIrecv", op.tensor().numel());
        List<P2POp> batch = List.copyOf(ops);
        int n = batch.size();
        return submit(Call.BATCH_P2P, "batchIsendIrecv(" + n + " ops)", null, () -> {
            List<Tensor> buffers = new ArrayList<>();
            try (Arena arena = Arena.ofConfined()) {
                long addr = ValueLayout.ADDRESS.byteSize();
                MemorySegment headerRequests = arena.allocate(ValueLayout.ADDRESS, n);
                MemorySegment dataRequests = arena.allocate(ValueLayout.ADDRESS, n);
                MemorySegment[] headers = new MemorySegment[n];
                for (int i = 0; i < n; i++) {
                    P2POp op = batch.get(i);
                    long[] mine = header(Call.SEND, op.tensor(), op.tag());
                    headers[i] = op.isSend() ? arena.allocateFrom(ValueLayout.JAVA_LONG, mine) : arena.allocate(ValueLayout.JAVA_LONG, HEADER_LONGS);
                    MemorySegment request = headerRequests.asSlice(i * addr, addr);
                    if (op.isSend()) {
                        mpi.isend(headers[i], HEADER_LONGS, datatype(DType.INT64), op.peer(), op.tag(), request);
                    } else {
                        mpi.irecv(headers[i], HEADER_LONGS, datatype(DType.INT64), op.peer(), op.tag(), request);
                    }
                }
                for (int i = 0; i < n; i++) {
                    P2POp op = batch.get(i);
                    Tensor buffer = staged(op.tensor(), false);
                    buffers.add(buffer);
                    if (op.isSend()) {
                        mpi.isend(segment(buffer), (int) buffer.numel(), datatype(buffer.dtype()), op.peer(), op.tag(), dataRequests.asSlice(i * addr, addr));
                    }
                }
                mpi.waitAll(n, headerRequests); // the receives' headers have come; the sends' are on their way
                List<String> disagreements = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    P2POp op = batch.get(i);
                    if (op.isSend()) continue;
                    long[] got = headers[i].toArray(ValueLayout.JAVA_LONG);
                    long[] expected = header(Call.SEND, op.tensor(), op.tag());
                    MemorySegment request = dataRequests.asSlice(i * addr, addr);
                    if (Arrays.equals(got, expected)) {
                        Tensor buffer = buffers.get(i);
                        mpi.irecv(segment(buffer), (int) buffer.numel(), datatype(buffer.dtype()), op.peer(), op.tag(), request);
                    } else {
                        DType sentType = CollectiveHeader.dtype(got);
                        MemorySegment scratch = arena.allocate(Math.max(1, CollectiveHeader.numel(got) * sentType.byteSize()));
                        mpi.irecv(scratch, (int) CollectiveHeader.numel(got), datatype(sentType), op.peer(), op.tag(), request);
                        disagreements.add("ops[" + i + "] (" + op.describe() + "): rank " + op.peer() + " sent "
                                + describe(got) + " but this rank expects " + describe(expected));
                    }
                }
                mpi.waitAll(n, dataRequests);
                if (!disagreements.isEmpty()) {
                    throw new Disagreement("batchIsendIrecv on rank " + rank + ": " + String.join("; ", disagreements));
                }
                for (int i = 0; i < n; i++) if (!batch.get(i).isSend()) unstage(batch.get(i).tensor(), buffers.get(i));
            } finally {
                for (int i = 0; i < buffers.size(); i++) if (buffers.get(i) != batch.get(i).tensor()) buffers.get(i).close();
            }
        });
    }

    /**
     * Finalises MPI after the operations already issued; idempotent. A group broken by a failure or a timeout is
     * not finalised (its thread may be blocked in a collective that will never complete): the process should exit.
     */
    @Override
    public void close() {
        synchronized (MpiProcessGroup.class) {
            if (closed) return;
            closed = true;
            instance = null;
            finalized = true;
        }
        if (broken != null) {
            thread.shutdownNow();
            return;
        }
        try {
            thread.submit(() -> {
                if (broken == null) mpi.finish();
            }).get();
        } catch (ExecutionException e) {
            throw new DistributedException("mpi backend: MPI_Finalize failed on rank " + rank + ": " + e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            thread.shutdown();
        }
    }

    /**
     * Ends every rank of the job at once ({@code MPI_Abort}), for a rank that cannot go on: its peers may be
     * blocked in a collective that it will never join.
     */
    public void abort(int exitCode) {
        mpi.abort(exitCode);
    }

    // ------------------------------------------------------------------ machinery

    private synchronized Work submit(Call call, String name, long[] header, Body body) {
        if (closed) throw new DistributedException(name + ": the mpi process group was closed");
        long seq = issued++;
        String where = "call " + seq + " on rank " + rank + " of " + size;
        String description = name + " (" + where + ")";
        CompletableFuture<Void> future = new CompletableFuture<>();
        Work work = new Work(description, future, timeout, () -> broken = description + " timed out");
        if (broken != null) {
            // Fail at once: the communication thread may be blocked for good in the collective that broke the group.
            future.completeExceptionally(new DistributedException(description + ": the process group is unusable after an earlier failure: " + broken));
            return work;
        }
        thread.execute(() -> {
            try {
                if (broken != null) throw new DistributedException(description + ": the process group is unusable after an earlier failure: " + broken);
                if (header != null) agree(call, where, header);
                body.run();
                future.complete(null);
            } catch (Throwable t) {
                // A failure inside MPI leaves the communicator in an unknown state; a disagreement does not (every rank saw it).
                if (!(t instanceof Disagreement)) broken = t.getMessage();
                future.completeExceptionally(t instanceof Disagreement d ? new DistributedException(d.getMessage()) : t);
            }
        });
        return work;
    }

    /** Thrown when ranks' headers differ, before any data moved: the group stays usable. */
    private static final class Disagreement extends RuntimeException {
        Disagreement(String message) {
            super(message);
        }
    }

    /** How many header comparisons this group has run (for tests of who skips them). */
    long headerExchanges() {
        return headerExchanges.get();
    }

    private final java.util.concurrent.atomic.AtomicLong headerExchanges = new java.util.concurrent.atomic.AtomicLong();

    private void agree(Call call, String where, long[] header) {
        headerExchanges.incrementAndGet();
        long[] all = new long[HEADER_LONGS * size];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = arena.allocateFrom(ValueLayout.JAVA_LONG, header);
            MemorySegment gathered = arena.allocate(ValueLayout.JAVA_LONG, all.length);
            mpi.allgather(mine, HEADER_LONGS, gathered, datatype(DType.INT64));
            MemorySegment.copy(gathered, ValueLayout.JAVA_LONG, 0, all, 0, all.length);
        }
        String disagreement = CollectiveHeader.disagreement(call, where, all, size);
        if (disagreement != null) throw new Disagreement(disagreement);
    }

    private static long[] header(Call call, Tensor t, long param) {
        return CollectiveHeader.of(call, t, param);
    }

    private static String describe(long[] h) {
        return CollectiveHeader.describe(h);
    }

    private void checkTensor(String op, String what, Tensor t) {
        if (t == null) throw new NullPointerException(op + ": " + what + " is null");
        t.checkOpen(op);
        if (!t.device().isCpu()) {
            throw new IllegalArgumentException(op + ": the mpi backend takes CPU tensors, but " + what + " is on " + t.device()
                    + " (use the nccl backend for CUDA tensors, or move it with .cpu())");
        }
    }


    private static void checkCount(String op, long numel) {
        if (numel > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(op + ": at most 2^31-1 elements per rank with the mpi backend, got " + numel);
        }
    }


    private static boolean isHalf(DType d) {
        return d == DType.FLOAT16 || d == DType.BFLOAT16;
    }

    /** The tensor itself when MPI can work on its memory, else a contiguous (widened, for half reductions) copy. */
    private static Tensor staged(Tensor t, boolean widen) {
        if (widen) {
            try (Grad.Mode g = Grad.noGrad(); Tensor wide = t.to(DType.FLOAT32)) {
                return wide.contiguous();
            }
        }
        if (t.isContiguous()) return t;
        try (Grad.Mode g = Grad.noGrad()) {
            return t.contiguous();
        }
    }

    private static void unstage(Tensor target, Tensor buffer) {
        if (buffer == target) return;
        try (Grad.Mode g = Grad.noGrad()) {
            target.copy_(buffer);
        }
    }

    private static void divide(Tensor t, int n) {
        try (Grad.Mode g = Grad.noGrad()) {
            t.div_(n);
        }
    }

    private static MemorySegment segment(Tensor t) {
        long bytes = t.dtype().byteSize();
        return t.storage().segment().asSlice(t.storageOffset() * bytes, t.numel() * bytes);
    }

    private MemorySegment datatype(DType d) {
        return datatypes.computeIfAbsent(d, this::lookUpDatatype);
    }

    private MemorySegment lookUpDatatype(DType d) {
        return mpi.datatype(switch (d) {
            case BOOL, UINT8 -> "uint8_t";
            case INT8 -> "int8_t";
            case INT16 -> "int16_t";
            case INT32 -> "int32_t";
            case INT64 -> "int64_t";
            case FLOAT16, BFLOAT16 -> "uint16_t"; // moved as bits; reductions widen to float32 first
            case FLOAT32 -> "float";
            case FLOAT64 -> "double";
        });
    }

    private MemorySegment mpiOp(ReduceOp op, DType d) {
        return switch (op) {
            case SUM -> d.isBool() ? mpi.opMax : mpi.opSum; // bool: 0/1 bytes, so or is max
            case AVG -> mpi.opSum;
            case MAX -> mpi.opMax;
            case MIN -> mpi.opMin;
        };
    }
}
