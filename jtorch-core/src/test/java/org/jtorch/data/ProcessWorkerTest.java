package org.jtorch.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * {@link WorkerMode#PROCESS} (issue 19, defect 13's real fix): workers in child JVMs, built from the dataset's class,
 * killed at a timeout or close, so a dataset stuck where Java cannot interrupt it leaves nothing running.
 */
class ProcessWorkerTest {
    /** {@code (i, i^2)} and target {@code i % 3}. */
    public static final class Squares implements Dataset<Sample> {
        @Override
        public Sample get(int index) {
            return new Sample(Torch.tensor(new float[] {index, index * index}), Torch.tensor(new long[] {index % 3}).reshape());
        }

        @Override
        public int size() {
            return 10;
        }
    }

    /** Index 1 spins forever and ignores interrupts, as code blocked in a native call would. */
    public static final class Stuck implements Dataset<Tensor> {
        @Override
        public Tensor get(int index) {
            if (index == 1) {
                long spins = 0;
                while (spins >= 0) spins += Thread.interrupted() ? 1 : 2; // never returns, never stops on an interrupt
            }
            return Torch.tensor(new float[] {index});
        }

        @Override
        public int size() {
            return 4;
        }
    }

    /** Index 3 throws. */
    public static final class Failing implements Dataset<Tensor> {
        @Override
        public Tensor get(int index) {
            if (index == 3) throw new IllegalStateException("sample 3 is corrupt");
            return Torch.tensor(new float[] {index});
        }

        @Override
        public int size() {
            return 6;
        }
    }

    /** The first child to read index 2 dies there (a crash in native code); later children do not. */
    public static final class DiesOnce implements Dataset<Tensor> {
        @Override
        public Tensor get(int index) {
            java.nio.file.Path marker = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"),
                    "jtorch-process-worker-test-" + ProcessHandle.current().parent().orElseThrow().pid());
            if (index == 2 && !java.nio.file.Files.exists(marker)) {
                try {
                    java.nio.file.Files.createFile(marker);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                Runtime.getRuntime().halt(3);
            }
            return Torch.tensor(new float[] {index});
        }

        @Override
        public int size() {
            return 4;
        }
    }

    @Test
    void aWorkerProcessThatDiedIsReplacedInTheNextEpoch() throws Exception {
        java.nio.file.Path marker = java.nio.file.Path.of(System.getProperty("java.io.tmpdir"),
                "jtorch-process-worker-test-" + ProcessHandle.current().pid());
        java.nio.file.Files.deleteIfExists(marker);
        try (DataLoader<Tensor> loader = DataLoader.builder(new DiesOnce()).batchSize(2).numWorkers(1).persistentWorkers(true)
                .workerMode(WorkerMode.PROCESS).build()) {
            DataLoaderException e = assertThrows(DataLoaderException.class, () -> {
                for (Tensor b : loader) b.sum();
            });
            assertTrue(e.getMessage().contains("process ended while loading dataset index 2"), e.getMessage());
            List<Float> seen = new ArrayList<>();
            for (Tensor b : loader) for (float v : b.toFloatArray()) seen.add(v);
            assertEquals(List.of(0f, 1f, 2f, 3f), seen);
        } finally {
            java.nio.file.Files.deleteIfExists(marker);
        }
    }

    private static List<float[]> epoch(WorkerMode mode) {
        List<float[]> out = new ArrayList<>();
        try (DataLoader<Sample> loader = DataLoader.builder(new Squares()).batchSize(4).shuffle(true).generator(new Generator(7))
                .numWorkers(2).workerMode(mode).build()) {
            for (Sample b : loader) {
                out.add(b.input().toFloatArray());
                out.add(b.target().toFloatArray());
            }
        }
        return out;
    }

    @Test
    void batchesEqualThoseOfWorkerThreads() {
        List<float[]> threads = epoch(WorkerMode.THREAD);
        List<float[]> processes = epoch(WorkerMode.PROCESS);
        assertEquals(threads.size(), processes.size());
        for (int i = 0; i < threads.size(); i++) assertArrayEquals(threads.get(i), processes.get(i), "tensor " + i);
        assertEquals(6, threads.size(), "3 batches of input and target");
    }

    @Test
    void aStuckWorkerIsKilledAtTheTimeoutAndNamesTheSampleIndex() {
        DataLoader<Tensor> loader = DataLoader.builder(new Stuck()).batchSize(2).numWorkers(1).timeout(Duration.ofSeconds(5))
                .workerMode(WorkerMode.PROCESS).build();
        long start = System.nanoTime();
        DataLoaderException e = assertThrows(DataLoaderException.class, () -> {
            for (Tensor b : loader) b.sum();
        });
        double seconds = (System.nanoTime() - start) * 1e-9;
        loader.close();
        assertTrue(e.getMessage().contains("worker 0") && e.getMessage().contains("dataset index 1"), e.getMessage());
        assertTrue(seconds < 9, "the timeout surfaces at the timeout: " + seconds + " s");
        assertTrue(workerProcesses().isEmpty(), "a worker process still runs: " + workerProcesses());
    }

    @Test
    void aWorkerExceptionNamesTheSampleIndex() {
        try (DataLoader<Tensor> loader = DataLoader.builder(new Failing()).batchSize(2).numWorkers(2)
                .workerMode(WorkerMode.PROCESS).build()) {
            DataLoaderException e = assertThrows(DataLoaderException.class, () -> {
                for (Tensor b : loader) b.sum();
            });
            assertEquals(3, e.index());
            assertTrue(e.getMessage().contains("dataset index 3") && e.getMessage().contains("sample 3 is corrupt"), e.getMessage());
        }
        assertTrue(workerProcesses().isEmpty(), "a worker process still runs: " + workerProcesses());
    }

    @Test
    void aDatasetTheChildCannotBuildIsRefusedAtBuild() {
        Dataset<Tensor> anonymous = new Dataset<>() {
            @Override
            public Tensor get(int index) {
                return Torch.zeros(1);
            }

            @Override
            public int size() {
                return 1;
            }
        };
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DataLoader.builder(anonymous).numWorkers(1).workerMode(WorkerMode.PROCESS).build());
        assertTrue(e.getMessage().contains("public no-arg constructor"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(new Squares()).workerMode(WorkerMode.PROCESS).build());
    }

    /** This JVM's child processes running a DataLoader worker. */
    private static List<ProcessHandle> workerProcesses() {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().commandLine().orElse("").contains(WorkerProcess.class.getName())).toList();
    }
}
