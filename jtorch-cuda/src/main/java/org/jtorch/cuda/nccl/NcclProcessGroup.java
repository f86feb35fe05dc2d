package org.jtorch.cuda.nccl;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.cuda.Cuda;
import org.jtorch.cuda.CudaLibraries;
import org.jtorch.cuda.CudaRuntime;
import org.jtorch.cuda.Event;
import org.jtorch.cuda.Stream;
import org.jtorch.distributed.CollectiveHeader;
import org.jtorch.distributed.CollectiveHeader.Call;
import org.jtorch.distributed.DistributedException;
import org.jtorch.distributed.LaunchEnvironment;
import org.jtorch.distributed.P2POp;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.distributed.TcpStore;
import org.jtorch.distributed.Work;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The {@code nccl} backend: collectives on CUDA tensors through NCCL, one communicator per process on one device
 * ({@code cuda:LOCAL_RANK}, modulo the devices this process sees), its unique id made by rank 0 and handed to the
 * others through a {@link TcpStore}.
 *
 * <p>Streams, as PyTorch's {@code ProcessGroupNCCL}: each operation records an event on the caller's current
 * stream when it is issued, and runs on the group's communication stream after that event, so it sees everything
 * the caller enqueued before it without the host waiting. The tensors are marked as used by the communication
 * stream ({@link Cuda#recordStream}), so closing them early is safe. {@link Work#waitFor()} makes the waiter's
 * current stream wait for the operation's end event; it does not block the host (a {@link #barrier()} does).
 *
 * <p>Disagreements: before each collective the ranks all-gather a small header (call, dtype, shape; see
 * {@link CollectiveHeader}) and compare it on the host, so that ranks that disagree fail, every one, with a
 * message naming the collective, the rank and each rank's shape, and no data moves (the group stays usable). A
 * send is preceded by its header, which the receiver checks before taking the data. This costs one small
 * all-gather and a host round trip per operation, paid on the group's thread, not the caller's; with
 * {@code JTORCH_NCCL_CHECK_HEADERS=0} it is skipped (as PyTorch, which only checks under
 * {@code TORCH_DISTRIBUTED_DEBUG=DETAIL}).
 *
 * <p>Threads and timeouts: every NCCL call runs on one daemon thread, in issue order. A wait that times out (a peer
 * never reached the collective) aborts the communicator ({@code ncclCommAbort}, which releases the peers' waits
 * too) and leaves the group unusable; so does an asynchronous NCCL error. Work already enqueued on the device, which
 * {@link Work#waitFor()} does not block on, is watched by a watchdog thread: an operation not complete within the
 * timeout of being enqueued aborts the communicator and breaks the group, naming the collective, its tensors and the
 * rank (see {@link #watch()}).
 *
 * <p>Dtypes: every jtorch dtype but {@code int16} (NCCL has no 16-bit integer); {@code bool} goes as
 * {@code uint8} with SUM and MAX a logical or, MIN a logical and. AVG needs a floating-point tensor and is NCCL's
 * {@code ncclAvg}. Non-contiguous tensors go through a contiguous copy.
 */
public final class NcclProcessGroup extends ProcessGroup {
    private static final Cleaner EVENTS = Cleaner.create();
    private static final int H = CollectiveHeader.LONGS;

    private final Nccl nccl;
    private final long comm;
    private final Device device;
    private final Stream stream;
    private final int rank;
    private final int size;
    private final Duration timeout;
    private final TcpStore store;
    private final boolean checkHeaders;
    private final ExecutorService thread;
    private final Tensor headerMine;
    private final Tensor headerAll;
    private final java.util.concurrent.ConcurrentLinkedQueue<InFlight> inFlight = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final Thread watchdog;
    private long issued;
    private volatile String broken;
    private volatile boolean closed;
    private volatile boolean aborted;

    private interface Body {
        /** Enqueues the operation's device work on the communication stream. */
        void run() throws Exception;
    }

    private NcclProcessGroup(Nccl nccl, long comm, Device device, Stream stream, int rank, int size, Duration timeout, TcpStore store,
            ExecutorService thread) {
        this.nccl = nccl;
        this.comm = comm;
        this.device = device;
        this.stream = stream;
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
        this.store = store;
        this.thread = thread;
        this.checkHeaders = !"0".equals(System.getenv("JTORCH_NCCL_CHECK_HEADERS"));
        this.headerMine = Tensor.empty(new long[] {H}, DType.INT64, device);
        this.headerAll = Tensor.empty(new long[] {(long) H * size}, DType.INT64, device);
        this.watchdog = Thread.ofPlatform().daemon().name("jtorch-nccl-watchdog").start(this::watch);
    }

    /** An operation enqueued on the device and not yet seen complete; holding its completion keeps its end event open. */
    private record InFlight(String description, Work.DeviceCompletion completion, long enqueuedNanos) {}

    /**
     * The watchdog, as PyTorch's {@code ProcessGroupNCCL}: an operation enqueued on the device that has not completed
     * within the group's timeout (a peer rank stopped taking part, so its kernel waits for ever) aborts the
     * communicator, which ends that kernel, and breaks the group with a message naming the collective, its tensors
     * and this rank: printed on stderr at once, and thrown by every later operation.
     */
    private void watch() {
        long period = Math.clamp(timeout.toMillis() / 4, 50, 1_000);
        try {
            CudaRuntime.system().makeCurrent(device.index());
            while (!closed && !aborted) {
                Thread.sleep(period);
                for (InFlight op : inFlight) {
                    if (op.completion().isDone()) {
                        inFlight.remove(op);
                    } else if (System.nanoTime() - op.enqueuedNanos() > timeout.toNanos()) {
                        String why = "nccl watchdog: " + op.description() + " did not complete within " + seconds(timeout)
                                + " of being enqueued on the device (a peer rank stopped taking part?); the communicator was aborted";
                        breakWith(why);
                        System.err.println("jtorch: " + why);
                        abort();
                        inFlight.clear();
                        return;
                    }
                }
            }
        } catch (InterruptedException e) {
            // closed
        } catch (RuntimeException e) {
            // The device failed under it: the operations report that themselves.
        }
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /**
     * The group of the launch environment {@code env} (torchrun's contract): rank 0 publishes the NCCL unique id in the
     * {@link TcpStore} at {@code MASTER_ADDR:MASTER_PORT}, which it serves unless the launcher does. A process started alone is a world
     * of one and needs no store. Throws {@link DistributedException} when NCCL or CUDA is missing, or the
     * rendezvous or {@code ncclCommInitRank} fails within {@code timeout}.
     */
    public static NcclProcessGroup init(LaunchEnvironment env, Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("NcclProcessGroup.init: timeout must be positive, got " + timeout);
        }
        CudaRuntime rt = CudaRuntime.system();
        if (!rt.available()) throw new DistributedException("nccl backend: CUDA is not available: " + rt.reason());
        Device device = Device.cuda(env.localRank() % rt.devices().size());
        if (env.worldSize() == 1) return create(null, 0, 1, device, timeout);
        if (env.masterAddr() == null || env.masterPort() == 0) {
            throw new DistributedException("nccl backend: rank " + env.rank() + " of " + env.worldSize()
                    + " needs MASTER_ADDR and MASTER_PORT (the store where rank 0 publishes the NCCL unique id)");
        }
        TcpStore store = env.connectStore(timeout);
        try {
            return create(store, env.rank(), env.worldSize(), device, timeout);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /**
     * A group of {@code size} ranks on {@code device}, meeting through {@code store} (which the group closes with
     * itself; null for a world of one): rank 0 sets the unique id under {@code nccl/uniqueId}, the others wait for it.
     */
    public static NcclProcessGroup create(TcpStore store, int rank, int size, Device device, Duration timeout) {
        if (rank < 0 || rank >= size) throw new IllegalArgumentException("NcclProcessGroup: rank must be in [0, " + size + "), got " + rank);
        if (!device.isCuda()) throw new IllegalArgumentException("NcclProcessGroup: " + device + " is not a CUDA device");
        if (store == null && size > 1) throw new IllegalArgumentException("NcclProcessGroup: " + size + " ranks need a store to meet in");
        Nccl nccl = library();
        byte[] id;
        if (rank == 0) {
            id = nccl.getUniqueId();
            if (store != null) store.set("nccl/uniqueId", id);
        } else {
            id = store.get("nccl/uniqueId");
        }
        ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "jtorch-nccl");
            t.setDaemon(true); // a rank that fails must be able to exit while a collective is blocked
            return t;
        });
        try {
            return thread.submit(() -> {
                CudaRuntime.system().makeCurrent(device.index());
                long comm = nccl.commInitRank(size, id, rank);
                Stream stream = Stream.create(device);
                return new NcclProcessGroup(nccl, comm, device, stream, rank, size, timeout, store, thread);
            }).get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            thread.shutdownNow();
            throw new DistributedException("nccl backend: ncclCommInitRank on rank " + rank + " of " + size + " did not complete within "
                    + timeout.toSeconds() + " s: a peer rank may not have started");
        } catch (java.util.concurrent.ExecutionException e) {
            thread.shutdownNow();
            throw new DistributedException("nccl backend: initialisation failed on rank " + rank + " of " + size + ": " + e.getCause().getMessage(),
                    e.getCause());
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
            throw new DistributedException("nccl backend: interrupted during initialisation", e);
        }
    }

    private static Nccl library() {
        CudaLibraries libs = CudaRuntime.system().libraries();
        CudaLibraries.Status s = libs.status(CudaLibraries.Kind.NCCL);
        if (!s.found()) throw new DistributedException("nccl backend: NCCL " + s.problem());
        return new Nccl(libs.load(CudaLibraries.Kind.NCCL));
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
        return "nccl";
    }

    @Override
    public Duration timeout() {
        return timeout;
    }

    /** The device this rank's communicator runs on. */
    public Device device() {
        return device;
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
        Staged t = stage(tensor);
        long[] header = checked ? CollectiveHeader.of(Call.ALL_REDUCE, tensor, op.ordinal()) : null;
        return submit(Call.ALL_REDUCE, name, header, List.of(t), () -> {
            nccl.allReduce(t.pointer(), t.pointer(), t.numel(), type(tensor.dtype()), ncclOp(op, tensor.dtype()), comm, stream.handle());
            t.unstage();
        });
    }

    @Override
    public Work broadcast(Tensor tensor, int src) {
        checkTensor("broadcast", "tensor", tensor);
        checkRank("broadcast", "src", src);
        Staged t = stage(tensor);
        return submit(Call.BROADCAST, "broadcast(src=" + src + ")", CollectiveHeader.of(Call.BROADCAST, tensor, src), List.of(t), () -> {
            nccl.broadcast(t.pointer(), t.pointer(), t.numel(), type(tensor.dtype()), src, comm, stream.handle());
            if (rank != src) t.unstage();
        });
    }

    @Override
    public Work allGatherIntoTensor(Tensor output, Tensor input) {
        checkTensor("allGatherIntoTensor", "input", input);
        checkTensor("allGatherIntoTensor", "output", output);
        checkGatheredSize("allGatherIntoTensor", output, input);
        Staged in = stage(input);
        Staged out = stage(output);
        return submit(Call.ALL_GATHER, "allGatherIntoTensor", CollectiveHeader.of(Call.ALL_GATHER, input, 0), List.of(in, out), () -> {
            nccl.allGather(in.pointer(), out.pointer(), in.numel(), type(input.dtype()), comm, stream.handle());
            out.unstage();
        });
    }

    @Override
    public Work allGather(List<Tensor> outputs, Tensor input) {
        checkTensor("allGather", "input", input);
        checkGatherOutputs(outputs, input, this::checkTensor);
        List<Tensor> targets = List.copyOf(outputs);
        long[] gatheredShape = new long[input.dim() + 1];
        gatheredShape[0] = size;
        System.arraycopy(input.shape(), 0, gatheredShape, 1, input.dim());
        Staged in = stage(input);
        Staged gathered = new Staged(Tensor.empty(gatheredShape, input.dtype(), device), null, true);
        return submit(Call.ALL_GATHER, "allGather", CollectiveHeader.of(Call.ALL_GATHER, input, 0), List.of(in, gathered), () -> {
            nccl.allGather(in.pointer(), gathered.pointer(), in.numel(), type(input.dtype()), comm, stream.handle());
            try (Grad.Mode g = Grad.noGrad(); Cuda.StreamScope s = Cuda.withStream(stream)) {
                for (int r = 0; r < size; r++) {
                    try (Tensor slice = gathered.buffer.select(0, r)) {
                        targets.get(r).copy_(slice);
                    }
                }
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
        Staged in = stage(input);
        Staged out = stage(output);
        return submit(Call.REDUCE_SCATTER, name, CollectiveHeader.of(Call.REDUCE_SCATTER, input, op.ordinal()), List.of(in, out), () -> {
            nccl.reduceScatter(in.pointer(), out.pointer(), out.numel(), type(input.dtype()), ncclOp(op, input.dtype()), comm, stream.handle());
            out.unstage();
        });
    }

    /** Completes, on the host, once every rank has called it and the operations issued before it have run. */
    @Override
    public Work barrier() {
        Staged one = new Staged(Torch.zeros(new long[] {1}, DType.FLOAT32, device), null, true);
        return submit(Call.BARRIER, "barrier", CollectiveHeader.of(Call.BARRIER, null, 0), List.of(one), () -> {
            nccl.allReduce(one.pointer(), one.pointer(), 1, Nccl.FLOAT32, Nccl.SUM, comm, stream.handle());
            stream.synchronize();
        });
    }

    @Override
    public Work send(Tensor tensor, int dst, int tag) {
        checkTensor("send", "tensor", tensor);
        checkRank("send", "dst", dst);
        long[] header = CollectiveHeader.of(Call.SEND, tensor, tag);
        Staged t = stage(tensor);
        return submit(Call.SEND, "send(dst=" + dst + ", tag=" + tag + ")", null, List.of(t), () -> {
            if (checkHeaders) {
                upload(headerMine, header);
                nccl.send(address(headerMine), H, Nccl.INT64, dst, comm, stream.handle());
            }
            nccl.send(t.pointer(), t.numel(), type(tensor.dtype()), dst, comm, stream.handle());
        });
    }

    @Override
    public Work recv(Tensor tensor, int src, int tag) {
        checkTensor("recv", "tensor", tensor);
        checkRank("recv", "src", src);
        long[] expected = CollectiveHeader.of(Call.SEND, tensor, tag);
        Staged t = stage(tensor);
        return submit(Call.RECV, "recv(src=" + src + ", tag=" + tag + ")", null, List.of(t), () -> {
            if (checkHeaders) {
                nccl.recv(address(headerMine), H, Nccl.INT64, src, comm, stream.handle());
                long[] got = download(headerMine, H);
                if (!Arrays.equals(got, expected)) {
                    // Take the data message into scratch so that the channel stays usable, then report both sides.
                    DType sent = CollectiveHeader.dtype(got);
                    try (Tensor scratch = Tensor.empty(new long[] {Math.max(1, CollectiveHeader.numel(got))}, sent, device)) {
                        nccl.recv(address(scratch), CollectiveHeader.numel(got), type(sent), src, comm, stream.handle());
                        stream.synchronize();
                    }
                    throw new Disagreement("recv on rank " + rank + ": rank " + src + " sent " + CollectiveHeader.describe(got)
                            + " but this rank expects " + CollectiveHeader.describe(expected));
                }
            }
            nccl.recv(t.pointer(), t.numel(), type(tensor.dtype()), src, comm, stream.handle());
            t.unstage();
        });
    }

    /**
     * The calls bracketed by {@code ncclGroupStart}/{@code ncclGroupEnd}, so that they progress together. With header
     * checks on (the default), a first group exchanges each send's header with its receive (NCCL pairs a peer's
     * operations in order, and ignores tags: the header carries the tag), the receiving rank checks them, and a
     * second group moves the data; a receive whose header disagrees takes the data into scratch, so the channel stays
     * usable, and the batch fails naming both sides.
     */
    @Override
    public Work batchIsendIrecv(List<P2POp> ops) {
        checkBatch(ops, this::checkTensor);
        List<P2POp> batch = List.copyOf(ops);
        int n = batch.size();
        List<Staged> staged = new java.util.ArrayList<>();
        for (P2POp op : batch) staged.add(stage(op.tensor()));
        return submit(Call.BATCH_P2P, "batchIsendIrecv(" + n + " ops)", null, staged, () -> {
            long[][] expected = new long[n][];
            for (int i = 0; i < n; i++) expected[i] = CollectiveHeader.of(Call.SEND, batch.get(i).tensor(), batch.get(i).tag());
            List<String> disagreements = new java.util.ArrayList<>();
            List<Tensor> scratch = new java.util.ArrayList<>();
            try (Tensor headers = checkHeaders ? Tensor.empty(new long[] {(long) n * H}, DType.INT64, device) : null) {
                long[][] got = new long[n][];
                if (headers != null) {
                    long[] mine = new long[n * H];
                    for (int i = 0; i < n; i++) if (batch.get(i).isSend()) System.arraycopy(expected[i], 0, mine, i * H, H);
                    upload(headers, mine);
                    nccl.groupStart();
                    try {
                        for (int i = 0; i < n; i++) {
                            long at = address(headers) + (long) i * H * Long.BYTES;
                            if (batch.get(i).isSend()) nccl.send(at, H, Nccl.INT64, batch.get(i).peer(), comm, stream.handle());
                            else nccl.recv(at, H, Nccl.INT64, batch.get(i).peer(), comm, stream.handle());
                        }
                    } finally {
                        nccl.groupEnd();
                    }
                    long[] all = download(headers, n * H);
                    for (int i = 0; i < n; i++) got[i] = Arrays.copyOfRange(all, i * H, (i + 1) * H);
                }
                nccl.groupStart();
                try {
                    for (int i = 0; i < n; i++) {
                        P2POp op = batch.get(i);
                        Staged t = staged.get(i);
                        if (op.isSend()) {
                            nccl.send(t.pointer(), t.numel(), type(op.tensor().dtype()), op.peer(), comm, stream.handle());
                        } else if (got[i] == null || Arrays.equals(got[i], expected[i])) {
                            nccl.recv(t.pointer(), t.numel(), type(op.tensor().dtype()), op.peer(), comm, stream.handle());
                        } else {
                            DType sent = CollectiveHeader.dtype(got[i]);
                            Tensor drain = Tensor.empty(new long[] {Math.max(1, CollectiveHeader.numel(got[i]))}, sent, device);
                            scratch.add(drain);
                            nccl.recv(address(drain), CollectiveHeader.numel(got[i]), type(sent), op.peer(), comm, stream.handle());
                            disagreements.add("ops[" + i + "] (" + op.describe() + "): rank " + op.peer() + " sent "
                                    + CollectiveHeader.describe(got[i]) + " but this rank expects " + CollectiveHeader.describe(expected[i]));
                        }
                    }
                } finally {
                    nccl.groupEnd();
                }
                if (!disagreements.isEmpty()) {
                    stream.synchronize();
                    throw new Disagreement("batchIsendIrecv on rank " + rank + ": " + String.join("; ", disagreements));
                }
            } finally {
                for (Tensor t : scratch) t.close();
            }
            for (int i = 0; i < n; i++) if (!batch.get(i).isSend()) staged.get(i).unstage();
        });
    }

    /**
     * Destroys the communicator after the operations already issued (every rank should close), or aborts it when the
     * group is broken; closes the store. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        watchdog.interrupt();
        try {
            if (broken != null) {
                abort();
                thread.shutdownNow();
                return;
            }
            thread.submit(() -> {
                CudaRuntime.system().makeCurrent(device.index());
                if (broken == null) nccl.commDestroy(comm);
                else abort();
                headerMine.close();
                headerAll.close();
                stream.close();
            }).get();
            thread.shutdown();
        } catch (java.util.concurrent.ExecutionException e) {
            throw new DistributedException("nccl backend: ncclCommDestroy failed on rank " + rank + ": " + e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (store != null) store.close();
        }
    }

    /** Aborts the communicator at once (the peers' waits on this rank then fail instead of timing out). */
    private void abort() {
        synchronized (this) {
            if (aborted) return;
            aborted = true;
        }
        try {
            nccl.commAbort(comm);
        } catch (RuntimeException ignored) {
            // Already failing: the abort is a courtesy to the peers.
        }
    }

    // ------------------------------------------------------------------ machinery

    /** Thrown when ranks' headers differ, before any data moved: the group stays usable. */
    private static final class Disagreement extends RuntimeException {
        Disagreement(String message) {
            super(message);
        }
    }

    /**
     * A tensor as NCCL sees it: the caller's own, or a buffer of this group's ({@code owned}): a contiguous copy
     * written back to {@code target} by {@link #unstage()}, or a scratch tensor.
     */
    private final class Staged {
        final Tensor buffer;
        final Tensor target;
        final boolean owned;

        Staged(Tensor buffer, Tensor target, boolean owned) {
            this.buffer = buffer;
            this.target = target;
            this.owned = owned;
        }

        long pointer() {
            return address(buffer);
        }

        long numel() {
            return buffer.numel();
        }

        /** On the communication stream, after the collective. */
        void unstage() {
            if (target == null) return;
            try (Grad.Mode g = Grad.noGrad(); Cuda.StreamScope s = Cuda.withStream(stream)) {
                target.copy_(buffer);
            }
        }

        /** An owned buffer's memory is reused only after the communication stream's work so far (see recordStream). */
        void release() {
            if (owned) buffer.close();
        }
    }

    /** On the caller's thread and current stream, so that the copy is ordered before the operation's start event. */
    private Staged stage(Tensor t) {
        if (t.isContiguous()) return new Staged(t, null, false);
        try (Grad.Mode g = Grad.noGrad()) {
            return new Staged(t.contiguous(), t, true);
        }
    }

    private synchronized Work submit(Call call, String name, long[] header, List<Staged> tensors, Body body) {
        if (closed) throw new DistributedException(name + ": the nccl process group was closed");
        long seq = issued++;
        String where = "call " + seq + " on rank " + rank + " of " + size;
        String description = name + " (" + where + ")";
        StringBuilder operandList = new StringBuilder();
        for (Staged s : tensors) {
            Tensor t = s.target != null ? s.target : s.buffer;
            operandList.append(operandList.isEmpty() ? "" : ", ").append(t.dtype().pyName()).append(' ').append(Shapes.format(t.shape()));
        }
        String operands = operandList.toString();
        CompletableFuture<Work.DeviceCompletion> future = new CompletableFuture<>();
        Work work = new Work(description, future, timeout, () -> {
            breakWith(description + " timed out");
            abort();
        });
        if (broken != null) {
            for (Staged s : tensors) s.release();
            future.completeExceptionally(new DistributedException(description + ": the process group is unusable after an earlier failure: " + broken));
            return work;
        }
        Event start = Cuda.currentStream(device).recordEvent();
        for (Staged s : tensors) {
            Cuda.recordStream(s.buffer, stream);
            if (s.target != null) Cuda.recordStream(s.target, stream);
        }
        thread.execute(() -> {
            try {
                CudaRuntime.system().makeCurrent(device.index());
                if (broken != null) throw new DistributedException(description + ": the process group is unusable after an earlier failure: " + broken);
                checkAsyncError();
                // Headers first: their host round trip need not wait for the caller's pending work.
                if (header != null && checkHeaders) agree(call, where, header);
                stream.waitEvent(start);
                body.run();
                Work.DeviceCompletion done = completion(stream.recordEvent());
                inFlight.add(new InFlight(name + " of " + operands + " (" + where + ")", done, System.nanoTime()));
                future.complete(done);
            } catch (Disagreement d) {
                future.completeExceptionally(new DistributedException(d.getMessage())); // every rank saw it: the group stays usable
            } catch (Throwable t) {
                // A failure inside NCCL or CUDA leaves the communicator in an unknown state.
                String why = t.getMessage() + ncclFailure();
                breakWith(description + ": " + why);
                future.completeExceptionally(new DistributedException(description + " failed on rank " + rank + ": " + why, t));
            } finally {
                start.close();
                for (Staged s : tensors) s.release();
            }
        });
        return work;
    }

    private void checkAsyncError() {
        int error = nccl.commGetAsyncError(comm);
        if (error != Nccl.SUCCESS && error != Nccl.IN_PROGRESS) {
            String detail = nccl.lastError();
            throw new DistributedException("nccl backend: the communicator of rank " + rank + " failed: " + nccl.errorString(error)
                    + (detail.isEmpty() ? "" : " (" + detail + ")"));
        }
    }

    /** Marks the group unusable; the first cause is the one reported (an abort makes later operations fail too). */
    private synchronized void breakWith(String cause) {
        if (broken == null) broken = cause;
    }

    /** NCCL's account of a failure (its asynchronous error and last message), or "" when it has none. */
    private String ncclFailure() {
        try {
            int error = nccl.commGetAsyncError(comm);
            if (error == Nccl.SUCCESS || error == Nccl.IN_PROGRESS) return "";
            String detail = nccl.lastError();
            return " (NCCL: " + nccl.errorString(error) + (detail.isEmpty() ? "" : "; " + detail) + ")";
        } catch (RuntimeException e) {
            return "";
        }
    }

    /** The end event of an operation, destroyed once no waiter can reach it. */
    private static Work.DeviceCompletion completion(Event end) {
        Work.DeviceCompletion c = new Work.DeviceCompletion() {
            @Override
            public boolean isDone() {
                return end.query();
            }

            @Override
            public void makeCurrentStreamWait() {
                Cuda.currentStream(end.device()).waitEvent(end);
            }
        };
        EVENTS.register(c, end::close);
        return c;
    }

    /** All-gathers the headers on the communication stream and compares them on this thread. */
    private void agree(Call call, String where, long[] header) {
        upload(headerMine, header);
        nccl.allGather(address(headerMine), address(headerAll), H, Nccl.INT64, comm, stream.handle());
        String disagreement = CollectiveHeader.disagreement(call, where, download(headerAll, H * size), size);
        if (disagreement != null) throw new Disagreement(disagreement);
    }

    private void upload(Tensor target, long[] values) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocateFrom(JAVA_LONG, values);
            CudaRuntime.system().driver().memcpyHtoDAsync(address(target), host, host.byteSize(), stream.handle());
            stream.synchronize(); // the host buffer goes with the arena
        }
    }

    private long[] download(Tensor source, int count) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(JAVA_LONG, count);
            CudaRuntime.system().driver().memcpyDtoHAsync(host, address(source), host.byteSize(), stream.handle());
            stream.synchronize();
            return host.toArray(JAVA_LONG);
        }
    }

    private static long address(Tensor t) {
        return t.storage().address() + t.storageOffset() * t.dtype().byteSize();
    }

    private void checkTensor(String op, String what, Tensor t) {
        if (t == null) throw new NullPointerException(op + ": " + what + " is null");
        t.checkOpen(op);
        if (!t.device().equals(device)) {
            throw new IllegalArgumentException(op + ": the nccl backend of rank " + rank + " takes tensors on " + device + ", but " + what
                    + " is on " + t.device() + (t.device().isCpu() ? " (use the mpi backend for CPU tensors, or move it with .to(device))" : ""));
        }
        if (t.dtype() == DType.INT16) {
            throw new IllegalArgumentException(op + ": the nccl backend has no int16 (NCCL has no 16-bit integer type); " + what
                    + " is int16 " + Shapes.format(t.shape()) + ": convert it to int32");
        }
    }



    private static int type(DType d) {
        return switch (d) {
            case BOOL, UINT8 -> Nccl.UINT8;
            case INT8 -> Nccl.INT8;
            case INT32 -> Nccl.INT32;
            case INT64 -> Nccl.INT64;
            case FLOAT16 -> Nccl.FLOAT16;
            case BFLOAT16 -> Nccl.BFLOAT16;
            case FLOAT32 -> Nccl.FLOAT32;
            case FLOAT64 -> Nccl.FLOAT64;
            case INT16 -> throw new IllegalArgumentException("nccl backend: NCCL has no int16");
        };
    }

    private static int ncclOp(ReduceOp op, DType d) {
        return switch (op) {
            case SUM -> d.isBool() ? Nccl.MAX : Nccl.SUM; // bool: 0/1 bytes, so or is max
            case AVG -> Nccl.AVG;
            case MAX -> Nccl.MAX;
            case MIN -> Nccl.MIN;
        };
    }
}
