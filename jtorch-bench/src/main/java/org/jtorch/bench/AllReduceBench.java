package org.jtorch.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.distributed.Distributed;
import org.jtorch.distributed.ProcessGroup;

/**
 * One rank of the all-reduce benchmark ({@code scripts/bench-allreduce}, under {@code mpirun}): jtorch's
 * {@code ProcessGroup.allReduce(SUM)} on float32 tensors of 4 KiB to 64 MiB, issued and waited on, the same sizes
 * and repetitions as the raw MPI program beside it ({@code src/main/c/allreduce_bench.c}); rank 0 prints
 * "bytes median_seconds".
 */
public final class AllReduceBench {
    private AllReduceBench() {}

    public static void main(String[] args) {
        ProcessGroup pg = Distributed.initProcessGroup("mpi", Duration.ofMinutes(5));
        for (long bytes = 4096; bytes <= 64L << 20; bytes *= 4) {
            int reps = bytes <= (1 << 20) ? 200 : 20;
            double[] t = new double[reps];
            try (Tensor buf = Torch.ones(bytes / 4)) {
                for (int w = 0; w < 5; w++) pg.allReduce(buf).waitFor();
                for (int r = 0; r < reps; r++) {
                    pg.barrier().waitFor();
                    long s = System.nanoTime();
                    pg.allReduce(buf).waitFor();
                    t[r] = (System.nanoTime() - s) / 1e9;
                }
            }
            Arrays.sort(t);
            if (pg.rank() == 0) System.out.printf(Locale.ROOT, "%d %.9f%n", bytes, t[reps / 2]);
        }
        Distributed.destroyProcessGroup();
    }
}
