package org.jtorch.distributed;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;

/**
 * A group of processes (ranks {@code 0 .. size()-1}) that run collectives together, as PyTorch's
 * {@code ProcessGroup}. Every operation is asynchronous: it returns a {@link Work} at once, and the tensors it
 * reads or writes must stay open until that work completes. Every rank must issue the same collectives in the
 * same order; before moving data the ranks compare the call, dtype and shape, and when they disagree every rank
 * throws a {@link DistributedException} naming the collective and each rank's shape.
 *
 * <p>Backends: {@link MpiProcessGroup} (CPU tensors, Open MPI), and jtorch-cuda's {@code NcclProcessGroup} (CUDA
 * tensors, NCCL), which share the argument checks below. Thread safety: operations may be issued from any
 * thread, and run in the order they were issued.
 */
public abstract class ProcessGroup implements AutoCloseable {
    /** This process's rank in the group. */
    public abstract int rank();

    /** The number of ranks. */
    public abstract int size();

    /** The backend's name, e.g. {@code mpi}. */
    public abstract String backend();

    /** How long {@link Work#waitFor()} waits before it fails. */
    public abstract Duration timeout();

    /** Reduces {@code tensor} across ranks in place: every rank ends with the combined values. */
    public abstract Work allReduce(Tensor tensor, ReduceOp op);

    /**
     * {@link #allReduce(Tensor, ReduceOp)} without the per-call comparison of the ranks' dtype and shape, for a caller
     * that has established once that every rank issues the same sequence of such calls ({@link org.jtorch.nn.parallel.DistributedDataParallel}
     * compares its bucket layout when it builds it, then reduces each bucket this way). The comparison costs a small
     * all-gather and a host round trip per call, which on a device backend sits between consecutive buckets. A
     * disagreement is then not detected, as in PyTorch. Backends without a cheaper path check anyway.
     */
    public Work allReduceUnchecked(Tensor tensor, ReduceOp op) {
        return allReduce(tensor, op);
    }

    /** {@link #allReduce(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    public Work allReduce(Tensor tensor) {
        return allReduce(tensor, ReduceOp.SUM);
    }

    /** Copies rank {@code src}'s {@code tensor} into every other rank's {@code tensor}. */
    public abstract Work broadcast(Tensor tensor, int src);

    /**
     * Gathers every rank's {@code input} into {@code output}, whose first dimension holds the ranks in order
     * ({@code all_gather_into_tensor}): {@code output} has {@code size()} times {@code input}'s elements.
     */
    public abstract Work allGatherIntoTensor(Tensor output, Tensor input);

    /** Gathers every rank's {@code input} into {@code outputs.get(rank)} ({@code all_gather}). */
    public abstract Work allGather(List<Tensor> outputs, Tensor input);

    /**
     * Reduces {@code input} across ranks and leaves rank r the r-th of {@code size()} equal slices of the result
     * in {@code output} ({@code reduce_scatter_tensor}).
     */
    public abstract Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op);

    /** Completes once every rank has called it. */
    public abstract Work barrier();

    /**
     * Sends {@code tensor} to rank {@code dst}; the matching {@link #recv} must use the same tag, dtype and shape.
     * Operations run one at a time in the order issued, so two ranks exchanging tensors order their sends and
     * receives (one sends first, the other receives first).
     */
    public abstract Work send(Tensor tensor, int dst, int tag);

    /** Receives into {@code tensor} what rank {@code src} sent with {@code tag}. */
    public abstract Work recv(Tensor tensor, int src, int tag);

    /**
     * Issues the sends and receives of {@code ops} together, as one operation, as PyTorch's {@code batch_isend_irecv}:
     * they progress at once, so each rank may list its own in any order (two ranks may both send first, which single
     * {@link #send}s would deadlock on once the tensors are larger than the transport's buffers). Every peer must
     * issue the matching batch. Returns one {@link Work} for the whole batch. The nccl backend brackets the calls in
     * {@code ncclGroupStart}/{@code ncclGroupEnd}; the mpi backend posts {@code MPI_Isend}/{@code MPI_Irecv} and
     * waits for all. As with {@link #send}/{@link #recv}, a header precedes each send's data: a receive whose dtype,
     * shape or tag disagrees with its send fails naming both sides (the data is drained first, so the group stays
     * usable). Headers cost a round trip before the data; the nccl backend skips them with
     * {@code JTORCH_NCCL_CHECK_HEADERS=0}, and then a disagreement goes undetected, as in PyTorch.
     */
    public abstract Work batchIsendIrecv(List<P2POp> ops);

    /** The batch must be non-empty and name valid peers other than this rank. */
    protected final void checkBatch(List<P2POp> ops, TensorCheck checkTensor) {
        if (ops == null || ops.isEmpty()) throw new IllegalArgumentException("batchIsendIrecv: expected at least one P2POp, got " + ops);
        for (int i = 0; i < ops.size(); i++) {
            P2POp op = ops.get(i);
            String what = "ops[" + i + "] (" + op.describe() + ")";
            checkTensor.check("batchIsendIrecv", what, op.tensor());
            checkRank("batchIsendIrecv", what + " peer", op.peer());
            if (op.peer() == rank()) throw new IllegalArgumentException("batchIsendIrecv: " + what + " names this rank (" + rank() + ") as its peer");
        }
    }

    /** Releases the group; collectives issued afterwards fail. */
    @Override
    public abstract void close();

    // ------------------------------------------------------------------ argument checks shared by the backends

    /** A rank argument ({@code src}, {@code dst}) must name a rank of the group. */
    protected final void checkRank(String op, String what, int r) {
        if (r < 0 || r >= size()) throw new IllegalArgumentException(op + ": " + what + " must be a rank in [0, " + size() + "), got " + r);
    }

    /** AVG of integers is refused: the integer quotient is ambiguous. */
    protected static void checkReduceOp(String op, ReduceOp reduceOp, DType dtype) {
        if (reduceOp == null) throw new NullPointerException(op + ": op is null");
        if (reduceOp == ReduceOp.AVG && !dtype.isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": AVG needs a floating-point tensor, got " + dtype
                    + " (use SUM and divide, as the integer quotient is ambiguous)");
        }
    }

    /** {@code output} must have {@code input}'s dtype and {@code size()} times its elements. */
    protected final void checkGatheredSize(String op, Tensor output, Tensor input) {
        if (output.dtype() != input.dtype() || output.numel() != input.numel() * size()) {
            throw new IllegalArgumentException(op + ": output must have the input's dtype and " + size()
                    + " times its elements; got input " + input.dtype() + " " + Shapes.format(input.shape()) + ", output "
                    + output.dtype() + " " + Shapes.format(output.shape()));
        }
    }

    /** {@code input} must have {@code output}'s dtype and {@code size()} times its elements. */
    protected final void checkScatteredSize(String op, Tensor output, Tensor input) {
        if (output.dtype() != input.dtype() || input.numel() != output.numel() * size()) {
            throw new IllegalArgumentException(op + ": input must have the output's dtype and " + size()
                    + " times its elements; got input " + input.dtype() + " " + Shapes.format(input.shape()) + ", output "
                    + output.dtype() + " " + Shapes.format(output.shape()));
        }
    }

    /**
     * {@code outputs} of {@link #allGather} must be {@code size()} tensors of {@code input}'s dtype and shape, each
     * also passing {@code checkTensor} (the backend's device check).
     */
    protected final void checkGatherOutputs(List<Tensor> outputs, Tensor input, TensorCheck checkTensor) {
        if (outputs == null || outputs.size() != size()) {
            throw new IllegalArgumentException("allGather: expected a list of " + size() + " output tensors, got "
                    + (outputs == null ? "null" : outputs.size()));
        }
        for (int r = 0; r < size(); r++) {
            Tensor o = outputs.get(r);
            checkTensor.check("allGather", "outputs[" + r + "]", o);
            if (o.dtype() != input.dtype() || !Arrays.equals(o.shape(), input.shape())) {
                throw new IllegalArgumentException("allGather: outputs[" + r + "] is " + o.dtype() + " " + Shapes.format(o.shape())
                        + " but the input is " + input.dtype() + " " + Shapes.format(input.shape()));
            }
        }
    }

    /** A backend's check of one tensor argument: {@code what} names it in {@code op}'s error. */
    @FunctionalInterface
    protected interface TensorCheck {
        void check(String op, String what, Tensor t);
    }
}
