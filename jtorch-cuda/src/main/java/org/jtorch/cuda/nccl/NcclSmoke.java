package org.jtorch.cuda.nccl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.CudaLibraries;
import org.jtorch.cuda.CudaRuntime;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.Tanh;
import org.jtorch.nn.parallel.DistributedDataParallel;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The NCCL smoke check of {@code scripts/gpu-check} on a machine with one GPU (and of the simulator pass): the
 * {@code nccl} backend as a world of one on {@code cuda:0}, since NCCL refuses two ranks on one device. It loads
 * libnccl, makes the communicator, runs each collective on CUDA tensors produced on the caller's stream (a world of
 * one leaves them unchanged: the check is that NCCL is called correctly and ordered with the streams, not the
 * arithmetic, which the simulator's 2-rank tests cover), and a DDP step against plain training. Prints a table;
 * exits 1 on any failed check, 2 when CUDA or NCCL is unavailable.
 */
public final class NcclSmoke {
    private final List<String[]> rows = new ArrayList<>();
    private boolean failed;

    public static void main(String[] args) {
        System.exit(new NcclSmoke().run());
    }

    private void row(String check, boolean ok, String detail) {
        rows.add(new String[] {check, ok ? "ok" : "FAILED", detail});
        failed |= !ok;
    }

    int run() {
        CudaRuntime rt = CudaRuntime.system();
        CudaLibraries.Status nccl = rt.libraries().status(CudaLibraries.Kind.NCCL);
        System.out.println(nccl.describe());
        if (!rt.available() || !nccl.found()) {
            System.out.println("NCCL smoke not run: " + (rt.available() ? "NCCL " + nccl.problem() : "CUDA unavailable: " + rt.reason()));
            return 2;
        }
        try {
            checks();
        } catch (RuntimeException e) {
            row("exception", false, e.toString());
            e.printStackTrace(System.out);
        } finally {
            Distributed.destroyProcessGroup();
        }
        System.out.printf("%n%-28s %-7s %s%n", "check", "result", "detail");
        for (String[] r : rows) System.out.printf("%-28s %-7s %s%n", r[0], r[1], r[2]);
        return failed ? 1 : 0;
    }

    private void checks() {
        ProcessGroup pg = Distributed.initProcessGroup("nccl", Duration.ofSeconds(60));
        row("init", pg.size() == 1 && pg.rank() == 0, "rank " + pg.rank() + " of " + pg.size() + " on " + ((NcclProcessGroup) pg).device());
        Device cuda = Device.cuda();
        int n = 1 << 20;
        for (DType dtype : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.INT64}) {
            for (ReduceOp op : ReduceOp.values()) {
                if (op == ReduceOp.AVG && !dtype.isFloatingPoint()) continue;
                try (Tensor t = values(n, dtype, cuda); Tensor expected = values(n, dtype, Device.cpu())) {
                    pg.allReduce(t, op).waitFor();
                    row("allReduce " + op + " " + dtype.pyName(), same(t, expected), n + " elements");
                }
            }
        }
        try (Tensor base = values(12, DType.FLOAT32, cuda); Tensor m = base.view(3, 4); Tensor t = m.t();
                Tensor expected = values(12, DType.FLOAT32, Device.cpu())) {
            pg.allReduce(t).waitFor();
            row("allReduce transposed", same(base, expected), "through a contiguous copy");
        }
        try (Tensor t = values(n, DType.FLOAT64, cuda); Tensor expected = values(n, DType.FLOAT64, Device.cpu())) {
            pg.broadcast(t, 0).waitFor();
            row("broadcast", same(t, expected), "");
        }
        try (Tensor in = values(n, DType.FLOAT32, cuda); Tensor out = Torch.zeros(new long[] {n}, DType.FLOAT32, cuda);
                Tensor expected = values(n, DType.FLOAT32, Device.cpu())) {
            pg.allGatherIntoTensor(out, in).waitFor();
            row("allGatherIntoTensor", same(out, expected), "");
            out.zero_();
            pg.reduceScatterTensor(out, in, ReduceOp.SUM).waitFor();
            row("reduceScatterTensor", same(out, expected), "");
        }
        pg.barrier().waitFor();
        row("barrier", true, "");
        row("ddp step", ddpMatchesPlainTraining(pg, cuda), "MLP, 3 SGD steps, to 1e-6");
    }

    /** arange(n) mod 1000, so that every dtype holds it exactly. */
    private static Tensor values(int n, DType dtype, Device device) {
        try (Tensor a = Torch.arange(n); Tensor m = a.remainder(1000); Tensor typed = m.to(dtype)) {
            return typed.to(device);
        }
    }

    private static boolean same(Tensor got, Tensor expected) {
        return Arrays.equals(got.toDoubleArray(), expected.toDoubleArray());
    }

    private static boolean ddpMatchesPlainTraining(ProcessGroup pg, Device cuda) {
        Module plain = mlp(cuda);
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(cuda), pg);
        SGD a = new SGD(plain.parameters(), SGD.options().lr(0.1));
        SGD b = new SGD(ddp.parameters(), SGD.options().lr(0.1));
        Torch.manualSeed(1);
        for (int s = 0; s < 3; s++) {
            try (Tensor xh = Torch.randn(16, 8); Tensor yh = Torch.randn(16, 4); Tensor x = xh.to(cuda); Tensor y = yh.to(cuda)) {
                a.zeroGrad();
                F.mseLoss(plain.forward(x), y).backward();
                a.step();
                b.zeroGrad();
                F.mseLoss(ddp.forward(x), y).backward();
                b.step();
            }
        }
        double worst = 0;
        for (var e : plain.stateDict().entrySet()) {
            double[] x = e.getValue().toDoubleArray();
            double[] y = ddp.stateDict().get(e.getKey()).toDoubleArray();
            for (int i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
        }
        return worst <= 1e-6;
    }

    private static Module mlp(Device device) {
        Torch.manualSeed(0);
        return new Sequential(new Linear(8, 16), new Tanh(), new Linear(16, 4)).to(device);
    }
}
