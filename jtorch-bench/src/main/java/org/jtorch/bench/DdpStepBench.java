package org.jtorch.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.distributed.ReduceOp;
import org.jtorch.distributed.Work;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Flatten;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.parallel.DistributedDataParallel;
import org.jtorch.optim.SGD;
import org.jtorch.vision.models.CifarResNet;

/**
 * One rank of the DDP step benchmark ({@code scripts/bench-ddp}, under {@code mpirun}): the median training-step
 * time of an MLP (784-2048-2048-10, 6.2 M parameters, batch 64 per rank) or ResNet-20 (CIFAR, 0.27 M parameters,
 * batch 32 of 3x32x32 per rank) three ways: alone (no communication), with {@link DistributedDataParallel}
 * (buckets all-reduced during backward), and with every gradient all-reduced after backward returns (the design
 * without overlap). Rank 0 prints one line per way. {@code jtorch-bench/python/bench_ddp.py} runs the same steps
 * on PyTorch's DDP over gloo ({@code scripts/bench-ddp-vs-torch}).
 *
 * <p>Arguments: {@code [rounds [mlp|resnet20]]}.
 */
public final class DdpStepBench {
    private DdpStepBench() {}

    private static Module model(String name) {
        Torch.manualSeed(0);
        return switch (name) {
            case "mlp" -> new Sequential(new Flatten(), new Linear(784, 2048), new ReLU(), new Linear(2048, 2048), new ReLU(), new Linear(2048, 10));
            case "resnet20" -> CifarResNet.resnet20(10);
            default -> throw new IllegalArgumentException("DdpStepBench: model must be mlp or resnet20, got " + name);
        };
    }

    public static void main(String[] args) {
        ProcessGroup pg = Distributed.initProcessGroup("mpi", Duration.ofMinutes(5));
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        String name = args.length > 1 ? args[1] : "mlp";
        boolean mlp = name.equals("mlp");
        Tensor x = mlp ? Torch.randn(64, 784) : Torch.randn(32, 3, 32, 32);
        Tensor y = Torch.randint(0, 10, mlp ? 64 : 32);
        Function<Module, Tensor> loss = m -> F.crossEntropy(m.forward(x), y);
        Module alone = model(name);
        Module after = model(name);
        DistributedDataParallel ddp = new DistributedDataParallel(model(name), pg);
        Module[] models = {alone, ddp, after};
        SGD[] opts = {sgd(alone), sgd(ddp), sgd(after)};
        String[] names = {"alone (no communication)", "DDP (buckets reduced during backward)", "all-reduce after backward"};
        for (int k = 0; k < 3; k++) steps(10, models[k], opts[k], loss, k == 2, pg); // warm-up
        // The three alternate, round after round, so that they see the same machine conditions.
        double[][] t = new double[3][];
        for (int k = 0; k < 3; k++) t[k] = new double[0];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 3; k++) {
                double[] more = steps(10, models[k], opts[k], loss, k == 2, pg);
                double[] grown = Arrays.copyOf(t[k], t[k].length + more.length);
                System.arraycopy(more, 0, grown, t[k].length, more.length);
                t[k] = grown;
            }
        }
        if (pg.rank() == 0) {
            for (int k = 0; k < 3; k++) {
                Arrays.sort(t[k]);
                System.out.printf(Locale.ROOT, "%-9s %-40s median %.1f ms%n", name, names[k], t[k][t[k].length / 2] * 1e3);
            }
        }
        Distributed.destroyProcessGroup();
    }

    private static SGD sgd(Module m) {
        return new SGD(m.parameters(), SGD.options().lr(0.01));
    }

    /** Step seconds; with {@code reduceAfter}, gradients are averaged after backward (one all-reduce each, all in flight at once). */
    private static double[] steps(int n, Module m, SGD opt, Function<Module, Tensor> loss, boolean reduceAfter, ProcessGroup pg) {
        double[] t = new double[n];
        for (int s = 0; s < n; s++) {
            pg.barrier().waitFor();
            long start = System.nanoTime();
            try (MemoryScope scope = new MemoryScope()) {
                opt.zeroGrad();
                loss.apply(m).backward();
                if (reduceAfter) {
                    List<Work> works = m.parameters().stream().map(p -> pg.allReduce(p.grad(), ReduceOp.AVG)).toList();
                    for (Work w : works) w.waitFor();
                }
                opt.step();
            }
            t[s] = (System.nanoTime() - start) / 1e9;
        }
        return t;
    }
}
