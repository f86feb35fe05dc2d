package org.jtorch.distributed;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * One rank of {@link CollectivesTest}'s MPI jobs, and of {@link NcclCollectivesTest}'s jobs on the CUDA simulator
 * ({@code -Djtorch.test.backend=nccl}: the same checks on CUDA tensors). Rank r holds {@code arange(n) * (r + 1) + r}, so every
 * collective's expected result is a closed formula over the ranks; a failed check throws (the rank exits
 * non-zero) and a passed scenario prints {@code rank R ok}.
 */
public final class CollectivesWorker {
    private static final DType[] DTYPES = {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16, DType.INT8,
            DType.UINT8, DType.INT16, DType.INT32, DType.INT64};

    /** {@code mpi} (CPU tensors) or {@code nccl} (CUDA tensors). */
    private static final String BACKEND = System.getProperty("jtorch.test.backend", "mpi");
    private static final Device DEVICE = BACKEND.equals("nccl") ? Device.cuda() : Device.cpu();

    public static void main(String[] args) throws Exception {
        Duration timeout = Duration.ofSeconds(args[0].equals("watchdog") ? 3 : 30);
        if (args[0].equals("watchdog")) startTogether();
        ProcessGroup pg = BACKEND.equals("mpi") ? MpiProcessGroup.init(timeout) : Distributed.initProcessGroup(BACKEND, timeout);
        switch (args[0]) {
            case "collectives" -> collectives(pg);
            case "disagreement" -> disagreement(pg);
            case "timeout" -> timeout(pg);
            case "killed" -> killed(pg);
            case "throws" -> throwing(pg);
            case "watchdog" -> watchdog(pg);
            case "batch-p2p" -> batchP2p(pg);
            default -> throw new IllegalArgumentException(args[0]);
        }
        pg.close();
        System.out.println("rank " + pg.rank() + " ok");
    }

    /** The values rank {@code r} holds: arange(n) * (r + 1) + r. */
    private static Tensor values(int r, int n, DType dtype) {
        try (Tensor a = Torch.arange(n)) {
            try (Tensor scaled = a.mul(r + 1.0)) {
                try (Tensor shifted = scaled.add(r); Tensor typed = shifted.to(dtype)) {
                    return typed.to(DEVICE);
                }
            }
        }
    }

    private static double reduce(ReduceOp op, int size, long i) {
        double sum = 0;
        double max = Double.NEGATIVE_INFINITY;
        double min = Double.POSITIVE_INFINITY;
        for (int r = 0; r < size; r++) {
            double v = i * (r + 1.0) + r;
            sum += v;
            max = Math.max(max, v);
            min = Math.min(min, v);
        }
        return switch (op) {
            case SUM -> sum;
            case AVG -> sum / size;
            case MAX -> max;
            case MIN -> min;
        };
    }

    private static void collectives(ProcessGroup pg) {
        int rank = pg.rank();
        int size = pg.size();
        int n = 6;
        for (DType dtype : DTYPES) {
            if (dtype == DType.INT16 && BACKEND.equals("nccl")) {
                try (Tensor t = values(rank, n, dtype)) {
                    expectThrows(IllegalArgumentException.class, () -> pg.allReduce(t), "the nccl backend has no int16");
                }
                continue;
            }
            for (ReduceOp op : ReduceOp.values()) {
                if (op == ReduceOp.AVG && !dtype.isFloatingPoint()) continue;
                try (Tensor t = values(rank, n, dtype)) {
                    pg.allReduce(t, op).waitFor();
                    double[] got = t.toDoubleArray();
                    for (int i = 0; i < n; i++) {
                        check(Math.abs(got[i] - reduce(op, size, i)) <= 1e-2 * Math.abs(reduce(op, size, i)) + 1e-6,
                                "allReduce " + op + " " + dtype + " element " + i + ": " + got[i] + " != " + reduce(op, size, i));
                    }
                }
            }
        }
        // bool: SUM and MAX are a logical or, MIN a logical and.
        try (Tensor b = on(Torch.tensor(new float[] {rank == 0 ? 1 : 0, 1, 0}).to(DType.BOOL))) {
            pg.allReduce(b, ReduceOp.SUM).waitFor();
            check(Arrays.equals(b.toDoubleArray(), new double[] {1, 1, 0}), "bool SUM " + Arrays.toString(b.toDoubleArray()));
        }
        try (Tensor b = on(Torch.tensor(new float[] {rank == 0 ? 1 : 0, 1, 0}).to(DType.BOOL))) {
            pg.allReduce(b, ReduceOp.MIN).waitFor();
            check(Arrays.equals(b.toDoubleArray(), new double[] {size == 1 ? 1 : 0, 1, 0}), "bool MIN " + Arrays.toString(b.toDoubleArray()));
        }
        // An operation sees the caller's work issued before it, and work issued after waitFor sees its result (on a
        // device: ordered by events, with no host synchronisation in between; the simulator holds kernels back).
        for (int k = 0; k < 3; k++) {
            try (Tensor t = values(rank, 4096, DType.FLOAT32)) {
                t.mul_(3);
                pg.allReduce(t, ReduceOp.SUM).waitFor();
                t.add_(1);
                double[] got = t.toDoubleArray();
                for (int i = 0; i < got.length; i += 1023) {
                    double want = 3 * reduce(ReduceOp.SUM, size, i) + 1;
                    check(got[i] == want, "stream order, element " + i + ": " + got[i] + " != " + want);
                }
            }
        }
        // A non-contiguous tensor goes through a copy and comes back in place.
        try (Tensor base = values(rank, 6, DType.FLOAT32); Tensor m = base.view(2, 3); Tensor t = m.t()) {
            pg.allReduce(t, ReduceOp.SUM).waitFor();
            double[] got = base.toDoubleArray();
            for (int i = 0; i < 6; i++) check(got[i] == reduce(ReduceOp.SUM, size, i), "transposed allReduce element " + i + ": " + got[i]);
        }
        // Several operations in flight at once complete in order.
        List<Tensor> many = new ArrayList<>();
        List<Work> works = new ArrayList<>();
        for (int k = 0; k < 8; k++) {
            Tensor t = values(rank, 1000 + k, DType.FLOAT64);
            many.add(t);
            works.add(pg.allReduce(t, ReduceOp.MAX));
        }
        for (int k = 0; k < 8; k++) {
            works.get(k).waitFor();
            // Reading the values synchronises with the current stream, which a device backend's waitFor ordered after the work.
            double[] got = many.get(k).toDoubleArray();
            check(works.get(k).isCompleted() && works.get(k).isSuccess(), "work " + k + " completed");
            check(got[999] == reduce(ReduceOp.MAX, size, 999), "in-flight allReduce " + k);
            many.get(k).close();
        }
        int src = size - 1;
        for (DType dtype : new DType[] {DType.FLOAT32, DType.INT64, DType.BFLOAT16}) {
            try (Tensor t = values(rank, n, dtype)) {
                pg.broadcast(t, src).waitFor();
                try (Tensor expected = values(src, n, dtype)) {
                    check(Arrays.equals(t.toDoubleArray(), expected.toDoubleArray()), "broadcast " + dtype + ": " + t);
                }
            }
        }
        try (Tensor in = values(rank, n, DType.INT32); Tensor out = on(Torch.zeros(size, n).to(DType.INT32))) {
            pg.allGatherIntoTensor(out, in).waitFor();
            for (int r = 0; r < size; r++) {
                try (Tensor row = out.select(0, r); Tensor expected = values(r, n, DType.INT32)) {
                    check(Arrays.equals(row.toDoubleArray(), expected.toDoubleArray()), "allGatherIntoTensor row " + r + ": " + row);
                }
            }
        }
        List<Tensor> outs = new ArrayList<>();
        for (int r = 0; r < size; r++) outs.add(on(Torch.zeros(n)));
        try (Tensor in = values(rank, n, DType.FLOAT32)) {
            pg.allGather(outs, in).waitFor();
        }
        for (int r = 0; r < size; r++) {
            try (Tensor expected = values(r, n, DType.FLOAT32)) {
                check(Arrays.equals(outs.get(r).toDoubleArray(), expected.toDoubleArray()), "allGather " + r + ": " + outs.get(r));
            }
            outs.get(r).close();
        }
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG}) {
            int chunk = 3;
            try (Tensor in = values(rank, chunk * size, DType.FLOAT32); Tensor out = on(Torch.zeros(chunk))) {
                pg.reduceScatterTensor(out, in, op).waitFor();
                double[] got = out.toDoubleArray();
                for (int i = 0; i < chunk; i++) {
                    double want = reduce(op, size, (long) rank * chunk + i);
                    check(Math.abs(got[i] - want) < 1e-5, "reduceScatterTensor " + op + " element " + i + ": " + got[i] + " != " + want);
                }
            }
        }
        pg.barrier().waitFor();
        if (size >= 2 && rank < 2) {
            // Rank 0 sends first, rank 1 receives first: operations run in order on each rank's one MPI thread.
            try (Tensor mine = values(rank, n, DType.INT64); Tensor theirs = on(Torch.zeros(n).to(DType.INT64))) {
                int peer = 1 - rank;
                if (rank == 0) {
                    pg.send(mine, peer, 7);
                    pg.recv(theirs, peer, 8).waitFor();
                } else {
                    pg.recv(theirs, peer, 7);
                    pg.send(mine, peer, 8).waitFor();
                }
                try (Tensor expected = values(peer, n, DType.INT64)) {
                    check(Arrays.equals(theirs.toDoubleArray(), expected.toDoubleArray()), "recv: " + theirs);
                }
            }
        }
        try (Tensor ints = on(Torch.zeros(2).to(DType.INT32))) {
            expectThrows(IllegalArgumentException.class, () -> pg.allReduce(ints, ReduceOp.AVG), "AVG needs a floating-point tensor");
        }
    }

    /** Every rank reports the same disagreement, naming the collective and each rank's shape; the group stays usable. */
    private static void disagreement(ProcessGroup pg) {
        int rank = pg.rank();
        try (Tensor t = on(Torch.zeros(4, rank == 0 ? 3 : 2))) {
            String m = expectThrows(DistributedException.class, () -> pg.allReduce(t).waitFor(), "allReduce: the ranks disagree");
            check(m.contains("rank 0 allReduce(SUM) float32 [4, 3]") && m.contains("rank 1 allReduce(SUM) float32 [4, 2]"), m);
            System.out.println("rank " + rank + ": " + m);
        }
        try (Tensor t = on(Torch.zeros(5).to(rank == 0 ? DType.FLOAT32 : DType.INT64))) {
            String m = expectThrows(DistributedException.class, () -> pg.broadcast(t, 0).waitFor(), "broadcast: the ranks disagree");
            check(m.contains("rank 0 broadcast(src=0) float32 [5]") && m.contains("rank 1 broadcast(src=0) int64 [5]"), m);
        }
        try (Tensor t = on(Torch.zeros(5))) {
            String m = expectThrows(DistributedException.class,
                    () -> (rank == 0 ? pg.allReduce(t) : pg.broadcast(t, 0)).waitFor(), "the ranks disagree");
            check(m.contains("rank 0 allReduce(SUM)") && m.contains("rank 1 broadcast(src=0)"), m);
        }
        try (Tensor t = on(Torch.zeros(rank == 0 ? 3 : 4))) {
            if (rank == 0) {
                pg.send(t, 1, 3).waitFor();
            } else {
                String m = expectThrows(DistributedException.class, () -> pg.recv(t, 0, 3).waitFor(), "recv on rank 1");
                check(m.contains("rank 0 sent send(tag=3) float32 [3]") && m.contains("expects send(tag=3) float32 [4]"), m);
            }
        }
        try (Tensor t = on(Torch.ones(3))) {
            pg.allReduce(t).waitFor();
            check(t.toDoubleArray()[0] == pg.size(), "the group works after a disagreement");
        }
    }

    /** Rank 1 never joins; rank 0's wait fails in time naming the collective and rank, then it exits non-zero. */
    private static void timeout(ProcessGroup pg) throws InterruptedException {
        if (pg.rank() == 1) {
            Thread.sleep(60_000);
            return;
        }
        try (Tensor t = on(Torch.ones(3))) {
            String m = expectThrows(DistributedException.class, () -> pg.allReduce(t).waitFor(Duration.ofSeconds(2)), "did not complete within 2 s");
            System.out.println("rank 0: " + m);
            String next = expectThrows(DistributedException.class, () -> pg.barrier().waitFor(), "unusable after an earlier failure");
            System.out.println("rank 0 then: " + next);
            pg.close(); // returns at once: a broken group is not finalised
            System.out.println("rank 0 closed");
            System.out.flush();
            System.exit(3);
        }
    }

    /**
     * Rank 1 stops taking part (alive, but it never calls the collective). Without header checks rank 0's all-reduce is
     * enqueued at once and its wait returns (it only orders streams), so the hang is on the device: the watchdog must
     * abort the communicator within the 3 s timeout, which ends the kernel (the host's read of the tensor returns),
     * and name the collective, its tensor and the rank in the group's next error.
     */
    /**
     * The watchdog's 3 s group timeout also bounds the group's start (the store rendezvous and {@code ncclCommInitRank}),
     * which at load 26 both ranks missed while the other JVM was still starting. So the ranks first make the device ready
     * and wait for each other (a file each in the temporary folder, named by the job's port), with a minute to spare.
     */
    private static void startTogether() throws Exception {
        try (Tensor ready = on(Torch.ones(1))) {
            ready.toDoubleArray();
        }
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        String job = "jtorch-watchdog-" + System.getenv("MASTER_PORT") + "-rank";
        int size = Integer.parseInt(System.getenv("WORLD_SIZE"));
        Path mine = Files.writeString(tmp.resolve(job + System.getenv("RANK")), "");
        mine.toFile().deleteOnExit(); // on failures; a halt skips it (rank 0 removes them after the watchdog)
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (int r = 0; r < size; r++) {
            while (!Files.exists(tmp.resolve(job + r))) {
                check(System.nanoTime() < deadline, "rank " + r + " did not start within 60 s");
                Thread.sleep(10);
            }
        }
    }

    private static void watchdog(ProcessGroup pg) throws InterruptedException {
        if (pg.rank() == 1) {
            Thread.sleep(20_000); // still alive: the simulator's NCCL must not see a dead peer
            System.out.println("rank 1 stayed away");
            System.out.flush();
            Runtime.getRuntime().halt(0); // its communicator saw the abort; nothing to finalise
        }
        try (Tensor t = on(Torch.ones(4, 3))) {
            long start = System.nanoTime();
            pg.allReduce(t).waitFor();
            t.toDoubleArray(); // waits for the kernel, which only the watchdog's abort ends
            long waited = (System.nanoTime() - start) / 1_000_000;
            System.out.println("rank 0 released after " + waited + " ms");
            check(waited >= 2_500 && waited < 15_000, "the watchdog fires after the 3 s timeout, not long after: " + waited + " ms");
            String next = expectThrows(DistributedException.class, () -> pg.barrier().waitFor(), "nccl watchdog");
            System.out.println("rank 0 then: " + next);
        } finally {
            // Rank 1 ends by halting: rank 0 removes both ranks' start files.
            for (int r = 0; r < pg.size(); r++) {
                try {
                    Files.deleteIfExists(Path.of(System.getProperty("java.io.tmpdir"), "jtorch-watchdog-" + System.getenv("MASTER_PORT") + "-rank" + r));
                } catch (java.io.IOException e) {
                    // a file left in the temporary folder: harmless
                }
            }
        }
    }

    /**
     * Every rank sends to the next and receives from the previous in one batch, sends listed first on every rank (single
     * blocking sends of 4 MiB would deadlock that way): a 1M-element float32 tensor, a small int64 one, and a receive
     * into a non-contiguous view; each arrives as the sender's values. A batch naming this rank as a peer is refused.
     */
    private static void batchP2p(ProcessGroup pg) {
        int rank = pg.rank();
        int next = (rank + 1) % pg.size();
        int prev = (rank + pg.size() - 1) % pg.size();
        int big = 1 << 20;
        try (Tensor out = values(rank, big, DType.FLOAT32); Tensor in = on(Torch.zeros(big)); Tensor small = values(rank, 5, DType.INT64);
                Tensor smallIn = values(rank, 5, DType.INT64); Tensor grid = values(rank, 12, DType.FLOAT32); Tensor sent = grid.view(3, 4);
                Tensor storage = on(Torch.zeros(4, 3)); Tensor view = storage.t()) {
            check(!view.isContiguous(), "the receive target is a non-contiguous view");
            pg.batchIsendIrecv(List.of(P2POp.isend(out, next), P2POp.isend(small, next), new P2POp(true, sent, next, 1),
                    P2POp.irecv(in, prev), P2POp.irecv(smallIn, prev), new P2POp(false, view, prev, 1))).waitFor();
            try (Tensor expected = values(prev, big, DType.FLOAT32); Tensor expectedSmall = values(prev, 5, DType.INT64);
                    Tensor expectedGrid = values(prev, 12, DType.FLOAT32)) {
                check(Arrays.equals(in.toDoubleArray(), expected.toDoubleArray()), "the 1M-element receive holds rank " + prev + "'s values");
                check(Arrays.equals(smallIn.toDoubleArray(), expectedSmall.toDoubleArray()), "the int64 receive holds rank " + prev + "'s values");
                try (Tensor got = view.contiguous()) {
                    check(Arrays.equals(got.toDoubleArray(), expectedGrid.toDoubleArray()), "the view received rank " + prev + "'s values");
                }
            }
            String m = expectThrows(IllegalArgumentException.class, () -> pg.batchIsendIrecv(List.of(P2POp.isend(out, rank))), "names this rank");
            System.out.println("rank " + rank + ": " + m);
        }
        // A receive whose shape disagrees with its send fails naming both; the matching op in the same batch still
        // arrives, and the group stays usable.
        try (Tensor wide = values(rank, 6, DType.FLOAT32); Tensor wideView = wide.view(2, 3); Tensor tall = on(Torch.zeros(3, 2));
                Tensor small = values(rank, 5, DType.INT64); Tensor smallIn = on(Torch.zeros(new long[] {5}, DType.INT64, org.jtorch.types.Device.cpu()))) {
            String m = expectThrows(DistributedException.class, () -> pg.batchIsendIrecv(List.of(P2POp.isend(wideView, next),
                    P2POp.isend(small, next), P2POp.irecv(tall, prev), P2POp.irecv(smallIn, prev))).waitFor(), "batchIsendIrecv on rank " + rank);
            System.out.println("rank " + rank + ": " + m);
            try (Tensor expectedSmall = values(prev, 5, DType.INT64)) {
                check(Arrays.equals(smallIn.toDoubleArray(), expectedSmall.toDoubleArray()), "the agreeing receive of the batch arrived");
            }
            try (Tensor t = on(Torch.ones(3))) {
                pg.allReduce(t).waitFor();
                check(t.toDoubleArray()[0] == pg.size(), "the group works after a batch that disagreed");
            }
        }
    }

    /** {@code t} on the backend's device (the CPU tensor closed when it moved). */
    private static Tensor on(Tensor t) {
        if (DEVICE.isCpu()) return t;
        try (t) {
            return t.to(DEVICE);
        }
    }

    /** Rank 1 is killed (SIGKILL) after joining; rank 0's next collective fails long before its timeout, naming it. */
    private static void killed(ProcessGroup pg) throws Exception {
        if (pg.rank() == 1) {
            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            Thread.sleep(60_000);
            return;
        }
        allReduceWithAPeerGone(pg);
    }

    /** Rank 1 throws after joining, ending its process without closing the group; rank 0's next collective is as in {@link #killed}. */
    private static void throwing(ProcessGroup pg) throws Exception {
        if (pg.rank() == 1) throw new IllegalStateException("rank 1 fails on purpose");
        allReduceWithAPeerGone(pg);
    }

    /**
     * Rank 0's all-reduce with rank 1 gone: on nccl it fails naming rank 1 and this rank exits with 3; under
     * {@code mpirun} the runtime ends this rank first, naming rank 1 itself.
     */
    private static void allReduceWithAPeerGone(ProcessGroup pg) {
        try (Tensor t = on(Torch.ones(3))) {
            long start = System.nanoTime();
            String m = expectThrows(DistributedException.class, () -> pg.allReduce(t).waitFor(Duration.ofSeconds(60)), "rank 1");
            System.out.println("rank 0: " + m);
            System.out.println("rank 0 failed after " + (System.nanoTime() - start) / 1_000_000_000 + " s");
            System.out.flush();
            System.exit(3);
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError("rank check failed: " + what);
    }

    private static <T extends Throwable> String expectThrows(Class<T> type, Runnable body, String fragment) {
        try {
            body.run();
        } catch (Throwable t) {
            if (type.isInstance(t) && t.getMessage() != null && t.getMessage().contains(fragment)) return t.getMessage();
            throw new AssertionError("expected " + type.getSimpleName() + " with '" + fragment + "', got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + " with '" + fragment + "', nothing was thrown");
    }
}
