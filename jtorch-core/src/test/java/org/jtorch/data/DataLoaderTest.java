package org.jtorch.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.cpu.Parallel;
import org.jtorch.memory.MemoryScope;
import org.jtorch.memory.MemoryStats;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The DataLoader's contract: PyTorch 1.13's torch.utils.data.DataLoader semantics plus jtorch's ownership rules. */
class DataLoaderTest {
    /**
     * Sample i: input {@code 2 * x[i] + 1} (made by a transform, with temporaries), target i (a view).
     * Records the threads that load; optionally fails at one index or spins a little to make workers
     * finish out of order.
     */
    static final class Squares implements Dataset<Sample>, AutoCloseable {
        final int n;
        final Tensor x;
        final Tensor y;
        final Set<Thread> threads = ConcurrentHashMap.newKeySet();
        final AtomicInteger loads = new AtomicInteger();
        volatile int failAt = -1;
        volatile boolean jitter;
        volatile long sleepMillisAt0;

        Squares(int n) {
            this.n = n;
            float[] xs = new float[n * 2];
            for (int i = 0; i < xs.length; i++) xs[i] = i;
            long[] ys = new long[n];
            for (int i = 0; i < n; i++) ys[i] = i;
            x = Torch.tensor(xs, n, 2);
            y = Torch.tensor(ys);
        }

        @Override
        public Sample get(int index) {
            threads.add(Thread.currentThread());
            loads.incrementAndGet();
            if (index == failAt) throw new IllegalStateException("bad sample " + index);
            if (index == 0 && sleepMillisAt0 > 0) {
                try {
                    Thread.sleep(sleepMillisAt0);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (jitter) spin((index * 7 % 5) * 200_000L);
            Tensor row = x.select(0, index);
            return new Sample(row.mul(2.0).add(1.0), y.select(0, index));
        }

        @Override
        public int size() {
            return n;
        }

        @Override
        public void close() {
            x.close();
            y.close();
        }
    }

    static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) Thread.onSpinWait();
    }

    private final List<AutoCloseable> toClose = new ArrayList<>();

    private <T extends AutoCloseable> T closeLater(T c) {
        toClose.add(c);
        return c;
    }

    @AfterEach
    void closeAll() throws Exception {
        Collections.reverse(toClose);
        for (AutoCloseable c : toClose) c.close();
    }

    private Squares squares(int n) {
        return closeLater(new Squares(n));
    }

    private static List<long[]> targets(Iterable<Sample> loader) {
        List<long[]> out = new ArrayList<>();
        for (Sample b : loader) out.add(b.target().toLongArray());
        return out;
    }

    private static long[] flat(List<long[]> batches) {
        return batches.stream().flatMapToLong(Arrays::stream).toArray();
    }

    private static void assertAllStopped(Set<Thread> threads) {
        for (Thread t : threads) {
            if (t.getName().startsWith("jtorch-dataloader-worker")) assertFalse(t.isAlive(), t.getName() + " still running");
        }
    }

    private static Set<Thread> workers(Set<Thread> threads) {
        Set<Thread> w = new java.util.HashSet<>();
        for (Thread t : threads) if (t.getName().startsWith("jtorch-dataloader-worker")) w.add(t);
        return w;
    }

    // ------------------------------------------------------------------ order

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 1, 2, 4})
    void batchesComeInSamplerOrderWhateverTheWorkerCount(int numWorkers) {
        Squares d = squares(37);
        d.jitter = true;
        try (DataLoader<Sample> loader = DataLoader.builder(d).batchSize(4).numWorkers(numWorkers).build()) {
            int k = 0;
            for (Sample b : loader) {
                int from = 4 * k;
                int len = Math.min(4, 37 - from);
                assertArrayEquals(LongStreamRange(from, len), b.target().toLongArray(), "batch " + k);
                assertArrayEquals(new long[] {len, 2}, b.input().shape());
                float[] expected = new float[len * 2];
                for (int i = 0; i < expected.length; i++) expected[i] = 2 * (2 * from + i) + 1;
                assertArrayEquals(expected, b.input().toFloatArray(), "batch " + k);
                k++;
            }
            assertEquals(10, k);
            assertEquals(10, loader.size());
        }
        if (numWorkers > 0) assertEquals(numWorkers, workers(d.threads).size(), "every worker loaded");
        assertAllStopped(d.threads);
    }

    private static long[] LongStreamRange(int from, int len) {
        return java.util.stream.LongStream.range(from, from + len).toArray();
    }

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2})
    void shuffleIsReproducibleWithTheSameSeedAndChangesEveryEpoch(int numWorkers) {
        Squares d = squares(40);
        List<long[]> run1 = new ArrayList<>();
        List<long[]> run2 = new ArrayList<>();
        for (List<long[]> run : List.of(run1, run2)) {
            try (var loader = DataLoader.builder(d).batchSize(8).shuffle(true).generator(new Generator(1234)).numWorkers(numWorkers).build()) {
                for (int epoch = 0; epoch < 3; epoch++) run.add(flat(targets(loader)));
            }
        }
        for (int e = 0; e < 3; e++) {
            assertArrayEquals(run1.get(e), run2.get(e), "epoch " + e + " repeats with the same seed");
            assertArrayEquals(IntStream.range(0, 40).asLongStream().toArray(), Arrays.stream(run1.get(e)).sorted().toArray(),
                    "epoch " + e + " is a permutation");
        }
        assertFalse(Arrays.equals(run1.get(0), run1.get(1)), "a new permutation each epoch");
        assertFalse(Arrays.equals(run1.get(1), run1.get(2)), "a new permutation each epoch");
    }

    @Test
    void shuffleOrderDoesNotDependOnTheWorkerCount() {
        Squares d = squares(30);
        List<long[]> orders = new ArrayList<>();
        for (int w : new int[] {0, 1, 3}) {
            try (var loader = DataLoader.builder(d).batchSize(5).shuffle(true).generator(new Generator(99)).numWorkers(w).build()) {
                orders.add(flat(targets(loader)));
                orders.add(flat(targets(loader)));
            }
        }
        for (int i = 2; i < orders.size(); i++) assertArrayEquals(orders.get(i % 2), orders.get(i));
    }

    @Test
    void shuffleWithoutGeneratorFollowsManualSeed() {
        Squares d = squares(20);
        try (var loader = DataLoader.builder(d).batchSize(20).shuffle(true).build()) {
            Torch.manualSeed(17);
            long[] a = flat(targets(loader));
            Torch.manualSeed(17);
            assertArrayEquals(a, flat(targets(loader)));
        }
    }

    // ------------------------------------------------------------------ batching options

    @Test
    void dropLastDropsTheIncompleteBatch() {
        Squares d = squares(10);
        try (var keep = DataLoader.builder(d).batchSize(3).build(); var drop = DataLoader.builder(d).batchSize(3).dropLast(true).build()) {
            assertEquals(4, keep.size());
            assertEquals(List.of(3, 3, 3, 1), targets(keep).stream().map(a -> a.length).toList());
            assertEquals(3, drop.size());
            assertEquals(List.of(3, 3, 3), targets(drop).stream().map(a -> a.length).toList());
        }
    }

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2})
    void batchSizeNullReturnsEachSampleUncollated(int numWorkers) {
        Squares d = squares(5);
        try (DataLoader<Sample> loader = DataLoader.builder(d).batchSize(null).numWorkers(numWorkers).build()) {
            assertEquals(5, loader.size());
            int i = 0;
            for (Sample s : loader) {
                assertArrayEquals(new long[] {2}, s.input().shape());
                assertEquals(i++, s.target().itemLong());
            }
            assertEquals(5, i);
        }
    }

    @Test
    void batchSamplerChoosesTheBatches() {
        Squares d = squares(10);
        BatchSampler bs = new BatchSampler(new SubsetRandomSampler(new int[] {1, 3, 5, 7, 9}, new Generator(0)), 2, false);
        try (var loader = DataLoader.builder(d).batchSampler(bs).numWorkers(2).build()) {
            List<long[]> t = targets(loader);
            assertEquals(3, loader.size());
            assertEquals(List.of(2, 2, 1), t.stream().map(a -> a.length).toList());
            assertArrayEquals(new long[] {1, 3, 5, 7, 9}, Arrays.stream(flat(t)).sorted().toArray());
        }
    }

    @Test
    void samplerOptionSetsTheOrder() {
        Squares d = squares(6);
        Sampler reversed = new Sampler() {
            @Override
            public java.util.PrimitiveIterator.OfInt iterator() {
                return IntStream.range(0, 6).map(i -> 5 - i).iterator();
            }

            @Override
            public int size() {
                return 6;
            }
        };
        try (var loader = DataLoader.builder(d).batchSize(4).sampler(reversed).numWorkers(2).build()) {
            assertArrayEquals(new long[] {5, 4, 3, 2, 1, 0}, flat(targets(loader)));
        }
    }

    @Test
    void customCollateChangesTheBatchType() {
        Squares d = squares(8);
        CollateFn<Sample, Tensor> sumOfTargets = samples -> {
            long s = 0;
            for (Sample x : samples) s += x.target().itemLong();
            return Torch.scalar(s);
        };
        try (DataLoader<Tensor> loader = DataLoader.builder(d).batchSize(4).collate(sumOfTargets).numWorkers(2).build()) {
            List<Long> sums = new ArrayList<>();
            for (Tensor t : loader) sums.add(t.itemLong());
            assertEquals(List.of(0L + 1 + 2 + 3, 4L + 5 + 6 + 7), sums);
        }
    }

    @Test
    void numberSamplesNeedTheTensorCollate() {
        Dataset<Integer> labels = DatasetsTest.range(6);
        try (DataLoader<Tensor> loader = DataLoader.builder(labels).batchSize(3).collate(Collate.toTensor()).build()) {
            List<long[]> out = new ArrayList<>();
            for (Tensor t : loader) out.add(t.toLongArray());
            assertArrayEquals(new long[] {3, 4, 5}, out.get(1));
        }
        try (DataLoader<Integer> wrong = DataLoader.builder(labels).batchSize(3).build()) {
            var e = assertThrows(DataLoaderException.class, () -> wrong.iterator().next());
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("Collate.toTensor()"), e.getCause().getMessage());
        }
    }

    // ------------------------------------------------------------------ failures

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2})
    void aFailingSampleIsRethrownWithItsIndexAndCause(int numWorkers) {
        Squares d = squares(40);
        d.failAt = 13;
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(numWorkers).build()) {
            List<long[]> before = new ArrayList<>();
            var e = assertThrows(DataLoaderException.class, () -> {
                for (Sample b : loader) before.add(b.target().toLongArray());
            });
            assertEquals(3, before.size(), "the batches before the failing one were delivered in order");
            assertEquals(13, e.index());
            assertArrayEquals(new int[] {12, 13, 14, 15}, e.batchIndices());
            assertInstanceOf(IllegalStateException.class, e.getCause());
            assertEquals("bad sample 13", e.getCause().getMessage());
            assertTrue(e.getMessage().contains("dataset index 13"), e.getMessage());
            assertEquals(numWorkers == 0 ? -1 : 1, e.workerId(), "batch 3 is loaded by worker 3 % 2");
        }
        assertAllStopped(d.threads);
    }

    @Test
    void aFailingCollateNamesTheBatchIndices() {
        Squares d = squares(8);
        CollateFn<Sample, Tensor> broken = samples -> {
            if (samples.get(0).target().itemLong() == 4) throw new ArithmeticException("collate broke");
            return Torch.scalar(0L);
        };
        try (var loader = DataLoader.builder(d).batchSize(4).collate(broken).numWorkers(2).build()) {
            var it = loader.iterator();
            it.next();
            var e = assertThrows(DataLoaderException.class, it::next);
            assertEquals(-1, e.index());
            assertArrayEquals(new int[] {4, 5, 6, 7}, e.batchIndices());
            assertInstanceOf(ArithmeticException.class, e.getCause());
            assertFalse(it.hasNext(), "the iterator is closed after a failure");
        }
    }

    @Test
    void aFailingWorkerInitFnIsReported() {
        Squares d = squares(8);
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(2)
                .workerInitFn(w -> { throw new IllegalArgumentException("no init"); }).build()) {
            var e = assertThrows(DataLoaderException.class, () -> loader.iterator().next());
            assertTrue(e.getMessage().contains("workerInitFn"), e.getMessage());
            assertEquals("no init", e.getCause().getMessage());
        }
    }

    @Test
    void timeoutFailsWhenAWorkerIsTooSlow() {
        Squares d = squares(8);
        d.sleepMillisAt0 = 600;
        try (var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).timeout(Duration.ofMillis(100)).build()) {
            // Without the timeout, next() would return the batch after 600 ms.
            var e = assertThrows(DataLoaderException.class, () -> loader.iterator().next());
            assertTrue(e.getMessage().contains("timed out after 0.100 s"), e.getMessage());
        }
        assertAllStopped(d.threads);
    }

    /**
     * Spins at one index, ignoring interrupts, until released: a dataset stuck in code that never checks for them
     * (a busy loop, or a native call). Samples are 0-d int64 tensors of their index.
     */
    static final class SpinsAt implements Dataset<Tensor> {
        final int stuckIndex;
        volatile boolean released;

        SpinsAt(int stuckIndex) {
            this.stuckIndex = stuckIndex;
        }

        @Override
        public Tensor get(int index) {
            if (index == stuckIndex) spinUntilReleased();
            return Torch.scalar((long) index);
        }

        private void spinUntilReleased() {
            while (!released) Thread.onSpinWait();
        }

        @Override
        public int size() {
            return 8;
        }
    }

    /** The loader's log records while {@code body} runs. */
    private static List<java.util.logging.LogRecord> logged(ThrowingRunnable body) throws Exception {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("org.jtorch.data");
        List<java.util.logging.LogRecord> records = Collections.synchronizedList(new ArrayList<>());
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(handler);
        try {
            body.run();
        } finally {
            log.removeHandler(handler);
        }
        return records;
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** The abandoned worker thread of {@code worker}, after checking that it is reported and still spinning. */
    private static Thread assertAbandoned(List<java.util.logging.LogRecord> records, int worker, int index) {
        String name = "jtorch-dataloader-worker-" + worker;
        List<String> warnings = records.stream().filter(r -> r.getLevel() == java.util.logging.Level.WARNING)
                .map(java.util.logging.LogRecord::getMessage).filter(m -> m.contains(name)).toList();
        assertEquals(1, warnings.size(), "one warning for the stuck worker: " + warnings);
        String w = warnings.get(0);
        assertTrue(w.startsWith("DataLoader worker " + worker + " (thread " + name + ") did not stop: it has been loading "
                + "dataset index " + index), w);
        assertTrue(w.contains("ignored an interrupt"), w);
        assertTrue(w.contains("SpinsAt.spinUntilReleased"), "the warning shows where the thread is: " + w);
        Thread t = DataLoader.abandonedWorkers().stream().filter(x -> x.getName().equals(name)).findFirst().orElseThrow();
        assertTrue(t.isAlive());
        return t;
    }

    /** Issue 19: a worker spinning in get made a 2 s timeout surface after 12-14 s, and survived close forever. */
    @ParameterizedTest(name = "persistent workers: {0}")
    @ValueSource(booleans = {false, true})
    void aTimeoutSurfacesOnTimeWhenAWorkerIgnoresInterruptsAndTheWorkerIsAbandonedWithAWarning(boolean persistent)
            throws Exception {
        SpinsAt d = new SpinsAt(5);
        Duration timeout = Duration.ofSeconds(2);
        long[] elapsed = new long[1];
        DataLoaderException[] error = new DataLoaderException[1];
        List<java.util.logging.LogRecord> records = logged(() -> {
            long start = System.nanoTime();
            try (var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).persistentWorkers(persistent)
                    .timeout(timeout).build()) {
                error[0] = assertThrows(DataLoaderException.class, () -> {
                    for (Tensor batch : loader) assertEquals(2, batch.numel());
                });
            }
            elapsed[0] = System.nanoTime() - start;
        });
        Thread stuck = null;
        try {
            // Batch 2 holds indices [4, 5] and goes to worker 2 % 2 = 0.
            String message = error[0].getMessage();
            assertTrue(message.startsWith("DataLoader timed out after 2.000 s waiting for batch 2: DataLoader worker 0 has "
                    + "been loading dataset index 5 (batch indices [4, 5]) for "), message);
            assertEquals(0, error[0].workerId());
            assertEquals(5, error[0].index());
            assertTrue(elapsed[0] < timeout.plusSeconds(2).toNanos(),
                    "the error and close() came " + elapsed[0] / 1e9 + " s after the start, expected about 2.5 s");
            stuck = assertAbandoned(records, 0, 5);
        } finally {
            d.released = true;
        }
        stuck.join(10_000);
        assertFalse(stuck.isAlive(), "released, the abandoned worker discards its batch and ends");
        assertFalse(DataLoader.abandonedWorkers().contains(stuck));
    }

    @Test
    void closingEarlyAbandonsAWorkerStuckPastTheTimeoutWithAWarning() throws Exception {
        SpinsAt d = new SpinsAt(5);
        long[] closeNanos = new long[1];
        List<java.util.logging.LogRecord> records = logged(() -> {
            try (var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).timeout(Duration.ofSeconds(1)).build();
                 var it = loader.iterator()) {
                assertArrayEquals(new long[] {0, 1}, it.next().toLongArray());
                Thread.sleep(100); // worker 0 is now spinning on index 5
                long start = System.nanoTime();
                it.close();
                closeNanos[0] = System.nanoTime() - start;
            }
        });
        Thread stuck = null;
        try {
            assertTrue(closeNanos[0] < Duration.ofSeconds(3).toNanos(), "close took " + closeNanos[0] / 1e9 + " s");
            stuck = assertAbandoned(records, 0, 5);
        } finally {
            d.released = true;
        }
        stuck.join(10_000);
        assertFalse(stuck.isAlive());
    }

    @Test
    void aGenerousTimeoutDoesNotFire() {
        Squares d = squares(8);
        try (var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).timeout(Duration.ofSeconds(30)).build()) {
            assertEquals(4, targets(loader).size());
        }
    }

    // ------------------------------------------------------------------ lifetime and shutdown

    @Test
    void aBatchIsReleasedWhenTheNextIsRequestedAndTheLastWhenTheEpochEnds() {
        Squares d = squares(6);
        try (var loader = DataLoader.builder(d).batchSize(3).numWorkers(1).build()) {
            var it = loader.iterator();
            Sample first = it.next();
            assertFalse(first.input().isClosed());
            assertTrue(it.hasNext());
            assertFalse(first.input().isClosed(), "hasNext() alone keeps the current batch");
            Sample second = it.next();
            assertTrue(first.input().isClosed() && first.target().isClosed());
            assertFalse(it.hasNext());
            assertTrue(second.input().isClosed(), "the end of the epoch releases the last batch");
        }
    }

    @Test
    void keepTakesABatchAwayFromTheLoader() {
        Squares d = squares(6);
        try (var loader = DataLoader.builder(d).batchSize(3).numWorkers(2).build()) {
            Sample kept;
            try (var it = loader.iterator()) {
                it.next();
                kept = it.keep();
                it.next();
            }
            try (kept) {
                assertFalse(kept.input().isClosed());
                assertArrayEquals(new long[] {0, 1, 2}, kept.target().toLongArray());
            }
        }
    }

    @Test
    void tensorsTheDatasetOwnsAreNotClosedByTheLoader() {
        List<Tensor> stored = new ArrayList<>();
        for (int i = 0; i < 4; i++) stored.add(closeLater(Torch.full(new long[] {2}, (double) i)));
        Dataset<Tensor> d = new Dataset<>() {
            @Override
            public Tensor get(int index) {
                return stored.get(index);
            }

            @Override
            public int size() {
                return 4;
            }
        };
        for (int w : new int[] {0, 2}) {
            try (var uncollated = DataLoader.builder(d).batchSize(null).numWorkers(w).build();
                 var batched = DataLoader.builder(d).batchSize(2).numWorkers(w).build()) {
                for (Tensor t : uncollated) assertFalse(t.isClosed());
                Tensor last = null;
                for (Tensor t : batched) last = t;
                assertTrue(last.isClosed(), "the stacked batch is the loader's");
            }
        }
        for (Tensor t : stored) assertFalse(t.isClosed());
    }

    @Test
    void closingEarlyStopsTheWorkersAndReleasesEveryBatchInFlight() throws Exception {
        Squares d = squares(200);
        MemoryStats before = settledStats();
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(2).prefetchFactor(4).build()) {
            try (var it = loader.iterator()) {
                it.next();
                it.next();
                Thread.sleep(50); // let the workers fill their prefetch queues
            }
            assertEquals(2, workers(d.threads).size());
            assertAllStopped(d.threads);
            MemoryStats after = settledStats();
            assertEquals(before.activeBlocks(), after.activeBlocks(), "no batch left allocated: " + after);
            assertEquals(before.leakedStorages(), after.leakedStorages());
        }
    }

    @Test
    void breakingOutOfAPlainForLoopIsCleanedUpByTheNextEpochOrClose() {
        Squares d = squares(40);
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(2).build()) {
            Sample held = null;
            for (Sample b : loader) {
                held = b;
                break;
            }
            assertFalse(held.input().isClosed(), "the batch of a break stays valid until the loader moves on");
            Set<Thread> epoch1 = workers(d.threads);
            assertEquals(10, targets(loader).size(), "the next epoch starts from the beginning");
            assertTrue(held.input().isClosed());
            assertAllStopped(epoch1);
            for (Sample b : loader) {
                held = b;
                break;
            }
            loader.close();
            assertTrue(held.input().isClosed());
            assertAllStopped(d.threads);
            assertThrows(IllegalStateException.class, loader::iterator);
        }
    }

    @Test
    void theWorkersOfALoaderDroppedWithoutCloseStopAfterGarbageCollection() throws Exception {
        Squares d = squares(40);
        Set<Thread> started = new java.util.HashSet<>();
        started.addAll(breakOutOfAFreshLoader(d, false));
        started.addAll(breakOutOfAFreshLoader(d, true));
        assertEquals(4, started.size());
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (started.stream().anyMatch(Thread::isAlive) && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        assertAllStopped(started);
    }

    private static Set<Thread> liveWorkerThreads() {
        return workers(Thread.getAllStackTraces().keySet());
    }

    /** Breaks out of a plain for loop over a new loader, then drops it without close(); returns the workers it started. */
    private static Set<Thread> breakOutOfAFreshLoader(Squares d, boolean persistentWorkers) {
        Set<Thread> before = liveWorkerThreads();
        var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).persistentWorkers(persistentWorkers).build();
        for (Sample b : loader) {
            assertEquals(2, b.target().numel());
            b.close(); // this test is about threads: leave nothing for the leak counter of other tests
            break;
        }
        Set<Thread> started = liveWorkerThreads();
        started.removeAll(before);
        return started;
    }

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2})
    void fiveEpochsLeaveNoMemoryBehind(int numWorkers) {
        Squares d = squares(50);
        try (var loader = DataLoader.builder(d).batchSize(8).shuffle(true).generator(new Generator(5)).numWorkers(numWorkers).build()) {
            targets(loader); // warm-up: first-use allocations
            MemoryStats before = settledStats();
            double total = 0;
            for (int epoch = 0; epoch < 5; epoch++) {
                for (Sample b : loader) {
                    try (MemoryScope scope = new MemoryScope()) {
                        total += b.input().sum().item();
                    }
                }
            }
            // sum over i of (2 * 2i + 1) + (2 * (2i + 1) + 1) = sum of (8i + 4), i < 50, per epoch.
            assertEquals(5 * (8.0 * 49 * 50 / 2 + 4 * 50), total, 1e-3);
            MemoryStats after = settledStats();
            assertEquals(before.activeBlocks(), after.activeBlocks(), "before: " + before + "\nafter: " + after);
            assertEquals(before.allocatedBytes(), after.allocatedBytes());
            assertEquals(before.leakedStorages(), after.leakedStorages(), "nothing left to the garbage collector");
        }
        assertAllStopped(d.threads);
    }

    /** Allocator counters after the garbage collector has run the cleaners of anything unreachable. */
    private static MemoryStats settledStats() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return Torch.memoryStats(Device.cpu());
    }

    // ------------------------------------------------------------------ workers

    @Test
    void persistentWorkersAreReusedAcrossEpochs() {
        Squares d = squares(16);
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(2).persistentWorkers(true).build()) {
            for (int epoch = 0; epoch < 3; epoch++) {
                assertArrayEquals(IntStream.range(0, 16).asLongStream().toArray(), flat(targets(loader)));
                Set<Thread> w = workers(d.threads);
                assertEquals(2, w.size(), "the same two threads every epoch");
                for (Thread t : w) assertTrue(t.isAlive(), "alive between epochs");
            }
            // An epoch closed early leaves the workers ready for the next one.
            try (var it = loader.iterator()) {
                it.next();
            }
            assertArrayEquals(IntStream.range(0, 16).asLongStream().toArray(), flat(targets(loader)));
            assertEquals(2, workers(d.threads).size());
        }
        assertAllStopped(d.threads);
    }

    @Test
    void nonPersistentWorkersAreNewThreadsEachEpoch() {
        Squares d = squares(16);
        try (var loader = DataLoader.builder(d).batchSize(4).numWorkers(2).build()) {
            for (int epoch = 0; epoch < 3; epoch++) {
                targets(loader);
                assertAllStopped(d.threads);
            }
            assertEquals(6, workers(d.threads).size());
        }
    }

    @Test
    void workersHaveIdsSeedsAndRunTheInitFunction() {
        Squares d = squares(8);
        List<WorkerInfo> inits = Collections.synchronizedList(new ArrayList<>());
        Set<String> seenInGet = ConcurrentHashMap.newKeySet();
        Dataset<Sample> probe = new Dataset<>() {
            @Override
            public Sample get(int index) {
                WorkerInfo w = WorkerInfo.current();
                seenInGet.add(w.id() + "/" + w.numWorkers());
                return d.get(index);
            }

            @Override
            public int size() {
                return d.size();
            }
        };
        long[] seeds = new long[3];
        try (var loader = DataLoader.builder(probe).batchSize(1).numWorkers(3).generator(new Generator(8)).workerInitFn(inits::add).build()) {
            targets(loader);
        }
        assertEquals(3, inits.size());
        for (WorkerInfo w : inits) seeds[w.id()] = w.seed();
        assertEquals(seeds[0] + 1, seeds[1]);
        assertEquals(seeds[0] + 2, seeds[2]);
        assertEquals(Set.of("0/3", "1/3", "2/3"), seenInGet);
        inits.clear();
        try (var again = DataLoader.builder(probe).batchSize(1).numWorkers(3).generator(new Generator(8)).workerInitFn(inits::add).build()) {
            targets(again);
        }
        assertEquals(seeds[0], inits.stream().filter(w -> w.id() == 0).findFirst().orElseThrow().seed(), "seeds repeat with the generator");
        assertNull(WorkerInfo.current(), "no WorkerInfo outside workers");
    }

    @Test
    void workersLoadBatchesConcurrently() {
        // Batches 0 and 1 go to workers 0 and 1; each waits for the other inside get(), which only
        // completes if the two loads run at the same time.
        var barrier = new java.util.concurrent.CyclicBarrier(2);
        Dataset<Integer> meeting = new Dataset<>() {
            @Override
            public Integer get(int index) {
                if (index < 2) {
                    try {
                        barrier.await(10, java.util.concurrent.TimeUnit.SECONDS);
                    } catch (Exception e) {
                        throw new IllegalStateException("sample " + index + " was loaded alone", e);
                    }
                }
                return index;
            }

            @Override
            public int size() {
                return 4;
            }
        };
        try (var loader = DataLoader.builder(meeting).batchSize(1).collate(Collate.toTensor()).numWorkers(2).build()) {
            List<Long> got = new ArrayList<>();
            for (Tensor t : loader) got.add(t.itemLong());
            assertEquals(List.of(0L, 1L, 2L, 3L), got);
        }
    }

    @Test
    void workersRunOpsSingleThreadedAsPyTorchWorkersDo() {
        // PyTorch's workers call torch.set_num_threads(1): a parallel loop inside get() runs inline, as
        // one call over its whole range on the worker's own thread; a workerInitFn can turn parallelism
        // back on, and the consuming thread keeps it.
        int saved = Parallel.numThreads();
        Parallel.setNumThreads(2);
        try {
            for (boolean reenable : new boolean[] {false, true}) {
                Map<Integer, List<String>> calls = new ConcurrentHashMap<>();
                Dataset<Integer> d = new Dataset<>() {
                    @Override
                    public Integer get(int index) {
                        List<String> seen = Collections.synchronizedList(new ArrayList<>());
                        Thread loader = Thread.currentThread();
                        Parallel.forChunks(2, (b, e) -> seen.add(b + ".." + e + (Thread.currentThread() == loader ? " inline" : "")));
                        calls.put(index, seen);
                        return Parallel.serialOnThisThread() ? 1 : 0;
                    }

                    @Override
                    public int size() {
                        return 6;
                    }
                };
                var b = DataLoader.builder(d).batchSize(1).collate(Collate.toTensor()).numWorkers(2);
                if (reenable) b.workerInitFn(w -> Parallel.setSerialOnThisThread(false));
                try (var loader = b.build()) {
                    for (Tensor t : loader) assertEquals(reenable ? 0 : 1, t.itemLong(), "serial inside the worker");
                }
                assertEquals(6, calls.size());
                for (var e : calls.entrySet()) {
                    List<String> got = new ArrayList<>(e.getValue());
                    Collections.sort(got);
                    if (reenable) {
                        assertEquals(2, got.size(), "sample " + e.getKey() + ": two chunks with parallelism back on: " + got);
                    } else {
                        assertEquals(List.of("0..2 inline"), got, "sample " + e.getKey());
                    }
                }
            }
            assertFalse(Parallel.inParallelRegion(), "the consuming thread keeps its parallelism");
        } finally {
            Parallel.setNumThreads(saved);
        }
    }

    @Test
    void prefetchFactorBoundsTheBatchesInFlight() throws Exception {
        Squares d = squares(100);
        try (var loader = DataLoader.builder(d).batchSize(1).numWorkers(2).prefetchFactor(2).build(); var it = loader.iterator()) {
            it.next();
            // 2 workers x 2 batches in flight, refilled once after the first batch was consumed.
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (d.loads.get() < 5 && System.nanoTime() < deadline) Thread.sleep(10);
            Thread.sleep(100);
            assertEquals(5, d.loads.get());
        }
    }

    @Test
    void pinMemoryWithoutAnAcceleratorIsAcceptedAndWarnsOnce() {
        Squares d = squares(4);
        boolean accelerator = java.util.ServiceLoader.load(MemoryPinner.class).stream().anyMatch(p -> p.get().isAvailable());
        org.junit.jupiter.api.Assumptions.assumeFalse(accelerator, "a MemoryPinner is available: pinning is real here");
        try (var a = DataLoader.builder(d).batchSize(2).pinMemory(true).build();
             var b = DataLoader.builder(d).batchSize(2).numWorkers(1).pinMemory(true).build()) {
            assertFalse(a.pinsMemory());
            assertEquals(1, DataLoader.pinMemoryWarnings());
            assertEquals(2, targets(a).size());
            assertEquals(2, targets(b).size());
        }
    }

    // ------------------------------------------------------------------ iterable datasets

    /** Samples 0..n-1 as 0-d int64 tensors, sharded across workers by WorkerInfo when asked. */
    static IterableDataset<Tensor> stream(int n, boolean shard, boolean knownSize) {
        return new IterableDataset<>() {
            @Override
            public Iterator<Tensor> iterator() {
                WorkerInfo w = WorkerInfo.current();
                int start = shard && w != null ? w.id() : 0;
                int step = shard && w != null ? w.numWorkers() : 1;
                return IntStream.iterate(start, i -> i < n, i -> i + step).mapToObj(i -> Torch.scalar((long) i)).iterator();
            }

            @Override
            public int size() {
                return knownSize ? n : -1;
            }
        };
    }

    private static List<long[]> batches(DataLoader<Tensor> loader) {
        List<long[]> out = new ArrayList<>();
        for (Tensor t : loader) out.add(t.toLongArray());
        return out;
    }

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2, 3})
    void iterableDatasetShardedByWorkerInfoYieldsEachSampleOnce(int numWorkers) {
        try (var loader = DataLoader.builder(stream(23, true, true)).batchSize(4).numWorkers(numWorkers).build()) {
            List<long[]> b = batches(loader);
            assertArrayEquals(IntStream.range(0, 23).asLongStream().toArray(), Arrays.stream(flat(b)).sorted().toArray());
            assertEquals(6, loader.size());
            if (numWorkers == 2) {
                // Batch k comes from worker k % 2, as PyTorch: worker 0 has the even samples, worker 1 the odd ones.
                assertArrayEquals(new long[] {0, 2, 4, 6}, b.get(0));
                assertArrayEquals(new long[] {1, 3, 5, 7}, b.get(1));
                assertArrayEquals(new long[] {8, 10, 12, 14}, b.get(2));
            }
            assertEquals(b.stream().map(a -> Arrays.toString(a)).toList(), batches(loader).stream().map(a -> Arrays.toString(a)).toList(),
                    "the next epoch repeats");
        }
    }

    @ParameterizedTest(name = "{0} workers")
    @ValueSource(ints = {0, 2})
    void aFailingIterableDatasetIsReported(int numWorkers) {
        IterableDataset<Tensor> broken = () -> { throw new java.io.UncheckedIOException(new java.io.IOException("disk gone")); };
        try (var loader = DataLoader.builder(broken).batchSize(2).numWorkers(numWorkers).build()) {
            var e = assertThrows(DataLoaderException.class, () -> loader.iterator().next());
            assertTrue(e.getMessage().contains("IterableDataset's iterator"), e.getMessage());
            assertInstanceOf(java.io.UncheckedIOException.class, e.getCause());
        }
    }

    @Test
    void iterableDatasetWithoutShardingIsRepeatedByEachWorker() {
        try (var loader = DataLoader.builder(stream(10, false, false)).batchSize(3).numWorkers(2).build()) {
            long[] all = flat(batches(loader));
            assertEquals(20, all.length);
            assertThrows(UnsupportedOperationException.class, loader::size);
        }
    }

    @Test
    void iterableDatasetWithDropLastAndPersistentWorkers() {
        try (var loader = DataLoader.builder(stream(10, true, true)).batchSize(2).dropLast(true).numWorkers(2)
                .persistentWorkers(true).build()) {
            for (int epoch = 0; epoch < 2; epoch++) {
                List<long[]> b = batches(loader);
                // Each worker has 5 samples: 2 full batches and a dropped single.
                assertEquals(4, b.size());
                for (long[] x : b) assertEquals(2, x.length);
            }
        }
    }

    @Test
    void iterableDatasetWithoutBatching() {
        try (var loader = DataLoader.builder(stream(5, true, true)).batchSize(null).numWorkers(2).build()) {
            assertArrayEquals(new long[] {0, 1, 2, 3, 4}, flat(batches(loader)));
        }
    }

    // ------------------------------------------------------------------ options

    @Test
    void conflictingOptionsAreRejectedAsPyTorchDoes() {
        Squares d = squares(4);
        var seq = new SequentialSampler(4);
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).shuffle(true).sampler(seq).build());
        assertThrows(IllegalArgumentException.class,
                () -> DataLoader.builder(d).batchSize(2).batchSampler(new BatchSampler(seq, 2, false)).build());
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).persistentWorkers(true).build());
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).prefetchFactor(3).build());
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).batchSize(null).dropLast(true).build());
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).numWorkers(-1));
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).timeout(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(d).batchSize(0));
        assertThrows(IllegalArgumentException.class, () -> DataLoader.builder(stream(3, false, false)).shuffle(true).build());
    }

    @Test
    void iteratorIsExhaustedAfterTheEpoch() {
        Squares d = squares(3);
        try (var loader = DataLoader.builder(d).batchSize(3).build()) {
            var it = loader.iterator();
            assertNotNull(it.next());
            assertFalse(it.hasNext());
            assertThrows(java.util.NoSuchElementException.class, it::next);
            assertThrows(IllegalStateException.class, () -> loader.iterator().keep());
        }
    }

    @Test
    void startingAnEpochClosesTheOpenIterator() {
        Squares d = squares(8);
        try (var loader = DataLoader.builder(d).batchSize(2).numWorkers(2).build()) {
            var first = loader.iterator();
            Sample b = first.next();
            var second = loader.iterator();
            assertTrue(b.input().isClosed());
            assertFalse(first.hasNext());
            assertNotEquals(first, second);
            assertEquals(4, targets(() -> second).size());
        }
    }
}
