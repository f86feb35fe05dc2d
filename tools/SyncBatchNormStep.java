import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.ProcessGroup;
import org.jtorch.nn.SyncBatchNorm;

/**
 * One rank of a synchronised batch norm's training step (forward, then backward of a fixed gradient) over MPI (issue
 * 15's SyncBatchNorm through declared ops): a single-file program over a build's classes, so that two trees run the same
 * code, e.g. {@code mpirun -np 2 --oversubscribe --bind-to none java --add-modules jdk.incubator.vector
 * --enable-native-access=ALL-UNNAMED -cp TREE/jtorch-core/target/classes tools/SyncBatchNormStep.java} with
 * {@code JTORCH_NUM_THREADS=1}. Arguments: rounds (default 5), steps per round (default 50), then the input's shape
 * (default 32 64 16 16, float32). Rank 0 prints the median over rounds of the wall and thread CPU milliseconds per step.
 * With the arguments {@code accuracy OFFSET}, each rank normalises its rows of a float32 batch around {@code OFFSET} with
 * deviation ~1.5 and rank 0 prints the largest differences from batch norm on the whole batch in float64 (same values).
 */
public final class SyncBatchNormStep {
    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("accuracy")) {
            accuracy(Double.parseDouble(args[1]));
            return;
        }
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5, steps = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        long[] shape = args.length > 2 ? Arrays.stream(args, 2, args.length).mapToLong(Long::parseLong).toArray() : new long[] {32, 64, 16, 16};
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        ProcessGroup pg = Distributed.initProcessGroup("mpi", Duration.ofSeconds(60));
        Torch.manualSeed(pg.rank());
        SyncBatchNorm bn = new SyncBatchNorm(shape[1]);
        Tensor x = Torch.randn(shape).requiresGrad_(true);
        Tensor g = Torch.randn(shape);
        double[] wall = new double[rounds], cpu = new double[rounds];
        for (int r = -1; r < rounds; r++) {
            pg.barrier().waitFor();
            long w0 = System.nanoTime(), c0 = mx.getCurrentThreadCpuTime();
            for (int s = 0; s < steps; s++) {
                try (Tensor y = bn.forward(x)) {
                    y.backward(g);
                }
                x.grad().close();
                x.setGrad(null);
                bn.zeroGrad();
            }
            if (r >= 0) {
                wall[r] = (System.nanoTime() - w0) / 1e6 / steps;
                cpu[r] = (mx.getCurrentThreadCpuTime() - c0) / 1e6 / steps;
            }
        }
        Arrays.sort(wall);
        Arrays.sort(cpu);
        if (pg.rank() == 0) {
            System.out.printf("sync_batch_norm_step %s ranks=%d wall_ms=%.3f cpu_ms=%.3f%n", Arrays.toString(shape), pg.size(), wall[rounds / 2],
                    cpu[rounds / 2]);
        }
        Distributed.destroyProcessGroup();
    }

    private static void accuracy(double offset) {
        ProcessGroup pg = Distributed.initProcessGroup("mpi", Duration.ofSeconds(60));
        int rows = 37, from = pg.rank() == 0 ? 0 : 11, n = pg.rank() == 0 ? 11 : rows - 11;
        Torch.manualSeed(5);
        Tensor global = Torch.randn(rows, 4, 3, 3).mul(1.5).add(offset);
        Tensor upstream = Torch.randn(rows, 4, 3, 3);
        Tensor ref = global.to(org.jtorch.types.DType.FLOAT64).detach().requiresGrad_(true);
        Tensor refVar = Torch.ones(new long[] {4}, org.jtorch.types.DType.FLOAT64, org.jtorch.types.Device.cpu());
        Tensor refOut = org.jtorch.nn.F.batchNorm(ref, null, refVar, null, null, true, 0.1, 1e-5);
        refOut.mul(upstream.to(org.jtorch.types.DType.FLOAT64)).sum().backward();
        Tensor x = global.narrow(0, from, n).detach().requiresGrad_(true);
        Tensor runVar = Torch.ones(4);
        Tensor out = SyncBatchNorm.syncBatchNorm(x, null, runVar, null, null, 0.1, 1e-5, pg);
        out.mul(upstream.narrow(0, from, n)).sum().backward();
        double dOut = maxDiff(refOut.narrow(0, from, n), out), dGrad = maxDiff(ref.grad().narrow(0, from, n), x.grad());
        double dVar = maxDiff(refVar, runVar);
        if (pg.rank() == 0) System.out.printf("accuracy offset=%g outputs=%.3g input_grads=%.3g running_var=%.3g%n", offset, dOut, dGrad, dVar);
        Distributed.destroyProcessGroup();
    }

    private static double maxDiff(Tensor a, Tensor b) {
        double[] x = a.toDoubleArray(), y = b.toDoubleArray();
        double worst = 0;
        for (int i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
        return worst;
    }
}
