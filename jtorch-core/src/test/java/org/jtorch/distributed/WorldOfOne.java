package org.jtorch.distributed;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;

/**
 * A process group of one rank in the test JVM, with no MPI: every collective is the identity (what it is for one
 * rank), and it counts the all-reduces it was asked for. For the single-process behaviour of
 * {@link org.jtorch.nn.parallel.DistributedDataParallel} and SyncBatchNorm, and a plausible group for NullArgumentsTest; the multi-rank
 * behaviour is tested under mpirun and on the CUDA simulator's NCCL.
 */
public final class WorldOfOne extends ProcessGroup {
    int allReduces;

    private static Work done(String what) {
        return new Work(what, CompletableFuture.completedFuture(null), Duration.ofSeconds(1), () -> { });
    }

    @Override public int rank() { return 0; }
    @Override public int size() { return 1; }
    @Override public String backend() { return "test"; }
    @Override public Duration timeout() { return Duration.ofSeconds(1); }

    @Override
    public Work allReduce(Tensor tensor, ReduceOp op) {
        allReduces++;
        return done("allReduce");
    }

    @Override public Work broadcast(Tensor tensor, int src) { return done("broadcast"); }

    @Override
    public Work allGatherIntoTensor(Tensor output, Tensor input) {
        try (Grad.Mode g = Grad.noGrad(); Tensor flat = output.view(input.shape())) {
            flat.copy_(input);
        }
        return done("allGatherIntoTensor");
    }

    @Override
    public Work allGather(List<Tensor> outputs, Tensor input) {
        try (Grad.Mode g = Grad.noGrad()) {
            outputs.get(0).copy_(input);
        }
        return done("allGather");
    }

    @Override
    public Work reduceScatterTensor(Tensor output, Tensor input, ReduceOp op) {
        try (Grad.Mode g = Grad.noGrad()) {
            output.copy_(input);
        }
        return done("reduceScatterTensor");
    }

    @Override public Work barrier() { return done("barrier"); }
    @Override public Work send(Tensor tensor, int dst, int tag) { throw new UnsupportedOperationException("send: a world of one has no peer"); }
    @Override public Work recv(Tensor tensor, int src, int tag) { throw new UnsupportedOperationException("recv: a world of one has no peer"); }
    @Override public Work batchIsendIrecv(List<P2POp> ops) { throw new UnsupportedOperationException("batchIsendIrecv: a world of one has no peer"); }
    @Override public void close() { }
}
