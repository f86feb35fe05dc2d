package org.jtorch.data;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jtorch.Tensor;
import org.jtorch.backend.cpu.Parallel;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * Batches of samples from a {@link Dataset} or an {@link IterableDataset}, as
 * {@code torch.utils.data.DataLoader}: sampling, batching, collation, worker threads with prefetching,
 * persistent workers and pinned memory.
 *
 * <pre>{@code
 * var loader = DataLoader.builder(trainSet).batchSize(64).shuffle(true).generator(new Generator(0))
 *         .numWorkers(2).build();
 * for (int epoch = 0; epoch < 5; epoch++) {
 *     for (Sample batch : loader) {                 // batch.input(): [64, ...], batch.target(): [64]
 *         try (var scope = new MemoryScope()) { step(batch.input(), batch.target()); }
 *     }
 * }
 * }</pre>
 *
 * <h2>Order</h2>
 * Batches come out in the sampler's order whatever the number of workers: worker {@code k % numWorkers}
 * loads batch {@code k} and a reorder buffer releases them in order. With {@code shuffle}, every epoch
 * draws a new permutation from the generator (the default generator, seeded by
 * {@code Torch.manualSeed}, when none is given), so the same seed repeats the same epochs.
 *
 * <h2>Ownership of batches</h2>
 * Samples are loaded and collated inside a {@link MemoryScope} on the loading thread: tensors made by
 * {@code Dataset.get}, by transforms and by collation are released there, except those in the batch.
 * The batch's tensors are owned by the iterator that returned it and are closed when the next batch is
 * requested ({@code next()}), when the iteration ends ({@code hasNext()} returns false) or when the
 * iterator is closed. To keep a batch beyond that, take it with {@link BatchIterator#keep()} (the
 * caller closes it then) or copy what you need ({@code batch.input().clone()}). Tensors that a dataset
 * returns from its own storage, not created while loading, are never closed by the loader.
 *
 * <h2>Stopping early</h2>
 * Iterators are {@link AutoCloseable}: closing stops the workers (their threads have ended when
 * {@code close()} returns) and releases every batch in flight. A plain {@code for} loop that runs to
 * the end needs nothing else. After a {@code break} out of a plain {@code for} loop, the loader still
 * holds the last batch and its workers until its next {@code iterator()} (the next epoch) or
 * {@link #close()}; to release them at once, iterate with try-with-resources:
 * <pre>{@code
 * try (var it = loader.iterator()) { while (it.hasNext()) { var b = it.next(); if (done(b)) break; } }
 * }</pre>
 * As a safety net, the workers of a loader dropped without either are stopped once the garbage
 * collector finds it unreachable (its last batch is then left to the collector and counted as a leak
 * in the allocator's statistics).
 *
 * <h2>Threads and failures</h2>
 * A loader and its iterators are used from one thread. Worker threads are daemon threads named
 * {@code jtorch-dataloader-worker-<id>}; they call {@code Dataset.get} concurrently, with intra-op
 * parallelism off on their threads (ops inside them run single-threaded, as in PyTorch's workers; a
 * {@code workerInitFn} may turn it back on with {@code Parallel.setSerialOnThisThread(false)}). An exception in a
 * worker (or in {@code get} on the consuming thread without workers) is re-thrown from {@code next()}
 * as a {@link DataLoaderException} naming the dataset index, with the original exception as its cause;
 * the iterator is closed then. With a {@code timeout}, waiting longer than that for a worker's batch
 * throws a {@code DataLoaderException} naming the worker and the dataset index it is loading.
 *
 * <h2>Stuck workers</h2>
 * Closing waits for the batches being loaded, each for up to the {@code timeout} (10 s without one) since
 * its loading began; after a failure (a timeout included) it does not wait. A worker still busy then is
 * interrupted, and one that ignores the interrupt for half a second (spinning, or blocked in native code) is
 * abandoned: Java cannot stop a thread. A warning names the worker, the dataset index and where its thread
 * is; the thread, a daemon, runs on until {@code get} returns, and its batch is then discarded. A dataset
 * that may hang should bound its own blocking calls, or run in worker processes
 * ({@code workerMode(WorkerMode.PROCESS)}: each worker a child JVM that builds the dataset from its class), which a
 * timeout or close kills at once.
 *
 * @param <B> the batch type
 */
public final class DataLoader<B> implements Iterable<B>, AutoCloseable {
    private static final System.Logger LOG = System.getLogger("org.jtorch.data");
    private static final AtomicBoolean PIN_MEMORY_WARNED = new AtomicBoolean();
    private static final AtomicInteger PIN_MEMORY_WARNINGS = new AtomicInteger();
    private static final Task STOP = new Task(-1, -1, null);
    private static final Cleaner CLEANER = Cleaner.create();
    /** How long closing waits for a batch being loaded when the loader has no timeout. */
    private static final long DEFAULT_GRACE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** How long an interrupted worker has to stop before it is abandoned. */
    private static final long INTERRUPT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /** Worker threads that did not stop and were left running; see {@link #abandonedWorkers()}. */
    private static final Set<Thread> ABANDONED = ConcurrentHashMap.newKeySet();

    private final Dataset<?> dataset;
    private final IterableDataset<?> iterableDataset;
    private final Sampler sampler;
    private final BatchSampler batchSampler;
    private final Integer batchSize;
    private final boolean dropLast;
    private final CollateFn<Object, Object> collate;
    private final int numWorkers;
    private final int prefetchFactor;
    private final boolean persistentWorkers;
    private final boolean pinMemory;
    private final MemoryPinner pinner;
    private final Device transferDevice;
    private final Duration timeout;
    private final Consumer<WorkerInfo> workerInitFn;
    private final Generator generator;
    private final Loading loading;

    private long epochs;
    private LoaderIterator active;
    private final PoolHolder persistent = new PoolHolder();
    private boolean closed;

    /** An iterator over one epoch's batches; see the class comment for who owns the batches. */
    public interface BatchIterator<B> extends Iterator<B>, AutoCloseable {
        /**
         * Takes the batch last returned by {@code next()} away from the loader: it will not be closed
         * by the iterator, and the caller closes its tensors (e.g. {@link Sample#close()} or
         * {@link Collate#closeTensors}). Returns it.
         */
        B keep();

        /**
         * Stops the workers of this epoch and releases every batch it still owns. Batches being loaded
         * are finished first, each within the {@code timeout} (10 s without one) from its start; a worker
         * still busy then is interrupted, and one that ignores that is abandoned with a warning (see
         * "Stuck workers" above). The other threads have ended when this returns. Persistent workers are only
         * told to drop this epoch's work. Idempotent.
         */
        @Override
        void close();
    }

    @SuppressWarnings("unchecked")
    private DataLoader(Builder<?, ?> b) {
        this.dataset = b.dataset;
        this.iterableDataset = b.iterable;
        this.batchSize = b.batchSize;
        this.dropLast = b.dropLast;
        this.numWorkers = b.numWorkers;
        this.prefetchFactor = b.prefetchFactor;
        this.persistentWorkers = b.persistentWorkers;
        this.pinMemory = b.pinMemory;
        this.transferDevice = b.transferDevice;
        this.timeout = b.timeout;
        this.workerInitFn = b.workerInitFn;
        this.generator = b.generator;
        this.collate = (CollateFn<Object, Object>) (b.collate != null ? b.collate : defaultCollate());
        if (dataset != null) {
            Sampler s = b.sampler;
            if (s == null) {
                s = b.shuffle ? new RandomSampler(dataset.size(), false, null, b.generator) : new SequentialSampler(dataset.size());
            }
            this.sampler = b.batchSampler != null ? null : s;
            this.batchSampler = b.batchSampler != null ? b.batchSampler
                    : batchSize == null ? null : new BatchSampler(s, batchSize, dropLast);
        } else {
            this.sampler = null;
            this.batchSampler = null;
        }
        this.pinner = pinMemory ? findPinner() : null;
        CLEANER.register(this, persistent);
        this.loading = new Loading(dataset, iterableDataset, batchSize, dropLast, batchSize != null || batchSampler != null,
                collate, pinner, workerInitFn, numWorkers, b.workerMode == WorkerMode.PROCESS);
    }

    /** A builder for a loader over a map-style dataset; batches have the sample's type under the default collate. */
    public static <T> Builder<T, T> builder(Dataset<T> dataset) {
        return new Builder<>(Arguments.nonNull("DataLoader.builder", "dataset", dataset), null);
    }

    /** A builder for a loader over an iterable dataset. */
    public static <T> Builder<T, T> builder(IterableDataset<T> dataset) {
        return new Builder<>(null, Arguments.nonNull("DataLoader.builder", "dataset", dataset));
    }

    /**
     * Number of batches per epoch ({@code len(loader)}): the batch sampler's size, or for an iterable
     * dataset of known size the number of batches it makes. Throws {@link UnsupportedOperationException}
     * for an iterable dataset of unknown size.
     */
    public int size() {
        if (dataset != null) return batchSampler != null ? batchSampler.size() : sampler.size();
        int n = iterableDataset.size();
        if (n < 0) throw new UnsupportedOperationException("DataLoader.size: the IterableDataset does not know its size");
        if (batchSize == null) return n;
        return dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
    }

    public int numWorkers() {
        return numWorkers;
    }

    public Integer batchSize() {
        return batchSize;
    }

    /** Whether batches are pinned (false when {@code pinMemory} was requested but no pinner is available). */
    public boolean pinsMemory() {
        return pinner != null;
    }

    /**
     * Starts an epoch. A previous iterator of this loader that is still open is closed first (its
     * batch is released): a loader runs one epoch at a time.
     */
    @Override
    public BatchIterator<B> iterator() {
        if (closed) throw new IllegalStateException("DataLoader: iterator() after close()");
        if (active != null) active.close();
        active = new LoaderIterator(epochs++);
        return active;
    }

    /** Closes the open iterator, if any, and stops persistent workers. Idempotent. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        if (active != null) active.close();
        persistent.shutdown(graceNanos());
    }

    /** How many times the pin-memory warning was logged in this JVM (0 or 1). */
    static int pinMemoryWarnings() {
        return PIN_MEMORY_WARNINGS.get();
    }

    /** Worker threads abandoned because they ignored an interrupt at shutdown, and still running. */
    static Set<Thread> abandonedWorkers() {
        ABANDONED.removeIf(t -> !t.isAlive());
        return Set.copyOf(ABANDONED);
    }

    /** How long closing waits for batches being loaded, measured from the start of each. */
    private long graceNanos() {
        return timeout.isZero() ? DEFAULT_GRACE_NANOS : timeout.toNanos();
    }

    private static MemoryPinner findPinner() {
        var found = MemoryPinner.find();
        if (found.isPresent()) return found.get();
        if (PIN_MEMORY_WARNED.compareAndSet(false, true)) {
            PIN_MEMORY_WARNINGS.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "DataLoader: 'pinMemory' is set but no accelerator is found, so pinned memory "
                    + "will not be used");
        }
        return null;
    }

    private static CollateFn<Object, Object> defaultCollate() {
        return samples -> {
            Object first = samples.get(0);
            if (first instanceof Number || first instanceof Boolean || first instanceof CharSequence) {
                throw new IllegalStateException("DataLoader: the default collate turns " + first.getClass().getSimpleName()
                        + " samples into a " + (first instanceof CharSequence ? "List<String>" : "Tensor")
                        + ", not a batch of the sample's type; build the loader with .collate(Collate.toTensor()) or another collate");
            }
            return Collate.defaultCollate(samples);
        };
    }

    // ------------------------------------------------------------------ loading (any thread)

    private record Task(long epoch, long seq, int[] indices) {}

    /** A loaded batch (with the tensors the loader owns), a failure, or an exhausted iterable worker. */
    private record Result(long epoch, long seq, int worker, Object batch, List<Tensor> owned, DataLoaderException error,
                          boolean exhausted) {
        static Result exhausted(long epoch, long seq, int worker) {
            return new Result(epoch, seq, worker, null, List.of(), null, true);
        }

        static Result failure(long epoch, long seq, int worker, DataLoaderException e) {
            return new Result(epoch, seq, worker, null, List.of(), e, false);
        }

        void release() {
            for (Tensor t : owned) t.close();
        }
    }

    private static String where(int worker) {
        return worker < 0 ? "DataLoader (no workers)" : "DataLoader worker " + worker;
    }

    private static String describe(Throwable e) {
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }

    /**
     * What worker threads need to load batches. Workers reference only this (never the loader or an
     * iterator), so that an abandoned loader or iterator can be garbage collected and its workers stopped.
     */
    private static final class Loading {
        final Dataset<?> dataset;
        final IterableDataset<?> iterableDataset;
        final Integer batchSize;
        final boolean dropLast;
        final boolean batching;
        final CollateFn<Object, Object> collate;
        final MemoryPinner pinner;
        final Consumer<WorkerInfo> workerInitFn;
        final int numWorkers;
        /** {@link WorkerMode#PROCESS}: each worker thread forwards its batches to a child JVM. */
        final boolean processes;

        Loading(Dataset<?> dataset, IterableDataset<?> iterableDataset, Integer batchSize, boolean dropLast, boolean batching,
                CollateFn<Object, Object> collate, MemoryPinner pinner, Consumer<WorkerInfo> workerInitFn, int numWorkers,
                boolean processes) {
            this.processes = processes;
            this.dataset = dataset;
            this.iterableDataset = iterableDataset;
            this.batchSize = batchSize;
            this.dropLast = dropLast;
            this.batching = batching;
            this.collate = collate;
            this.pinner = pinner;
            this.workerInitFn = workerInitFn;
            this.numWorkers = numWorkers;
        }

        /** Loads the batch of {@code indices} from the map-style dataset; {@code progress} (null without workers) sees each index. */
        private Result load(long epoch, long seq, int[] indices, int worker, Worker progress) {
            try (MemoryScope scope = new MemoryScope()) {
                List<Object> samples = new ArrayList<>(indices.length);
                for (int index : indices) {
                    if (progress != null) progress.index = index;
                    try {
                        samples.add(dataset.get(index));
                    } catch (Throwable e) {
                        return Result.failure(epoch, seq, worker, new DataLoaderException(where(worker) + " failed to load dataset index "
                                + index + " (batch indices " + Arrays.toString(indices) + "): " + describe(e), e, worker, index, indices));
                    }
                }
                return finish(scope, epoch, seq, worker, samples, indices);
            }
        }

        /**
         * Loads the batch of {@code indices} in the worker's child JVM (started on first use, and again after one
         * died): the samples come back
         * through a file and are collated here. The child being killed (timeout, close) ends the wait.
         */
        private Result loadInProcess(long epoch, long seq, int[] indices, int worker, Worker w) {
            try (MemoryScope scope = new MemoryScope()) {
                List<Object> samples;
                try {
                    if (w.child == null || !w.child.isAlive()) { // first use, or the last child died (a persistent worker goes on)
                        if (w.child != null) w.child.close();
                        w.child = WorkerProcess.start(dataset.getClass(), worker);
                        if (w.pool.shutDown) w.child.close(); // shut down while it started: the wait below ends at once
                    }
                    w.child.request(indices);
                    while (true) {
                        byte tag = w.child.readTag();
                        if (tag == 'I') {
                            w.index = w.child.readInt();
                        } else if (tag == 'E') {
                            int index = w.child.readInt();
                            String what = w.child.readUtf();
                            return Result.failure(epoch, seq, worker, new DataLoaderException(where(worker) + " (process " + w.child.pid()
                                    + ") failed to load dataset index " + index + " (batch indices " + Arrays.toString(indices) + "): "
                                    + what, null, worker, index, indices));
                        } else {
                            samples = WorkerProcess.readSamples(java.nio.file.Path.of(w.child.readUtf()));
                            break;
                        }
                    }
                } catch (java.io.IOException e) {
                    int index = w.index;
                    return Result.failure(epoch, seq, worker, new DataLoaderException(where(worker) + "'s process ended while loading "
                            + (index >= 0 ? "dataset index " + index + " (batch indices " : "batch indices (") + Arrays.toString(indices)
                            + "): " + describe(e), e, worker, index, indices));
                }
                return finish(scope, epoch, seq, worker, samples, indices);
            }
        }

        /** Loads the next batch of a worker's stream; {@code exhausted} when the stream has no full batch left. */
        private Result loadIterable(long epoch, long seq, Iterator<?> it, int worker) {
            try (MemoryScope scope = new MemoryScope()) {
                int want = batchSize == null ? 1 : batchSize;
                List<Object> samples = new ArrayList<>(want);
                try {
                    while (samples.size() < want && it.hasNext()) samples.add(it.next());
                } catch (Throwable e) {
                    return Result.failure(epoch, seq, worker, new DataLoaderException(where(worker) + " failed while iterating the "
                            + "IterableDataset (sample " + samples.size() + " of batch " + seq + "): " + describe(e), e, worker, -1, null));
                }
                if (samples.isEmpty() || (samples.size() < want && dropLast)) return Result.exhausted(epoch, seq, worker);
                return finish(scope, epoch, seq, worker, samples, null);
            }
        }

        /** Collates and pins inside {@code scope}; the batch's tensors created there leave it and become the loader's. */
        private Result finish(MemoryScope scope, long epoch, long seq, int worker, List<Object> samples, int[] indices) {
            Object batch;
            try {
                batch = !batching ? samples.get(0) : collate.collate(samples);
                if (pinner != null) batch = pinner.pin(batch);
            } catch (Throwable e) {
                String what = indices != null ? "batch indices " + Arrays.toString(indices) : "batch " + seq;
                return Result.failure(epoch, seq, worker, new DataLoaderException(where(worker) + " failed to collate " + what
                        + ": " + describe(e), e, worker, -1, indices));
            }
            List<Tensor> owned = new ArrayList<>();
            Collate.forEachTensor(batch, t -> {
                if (t.scope() == scope) {
                    t.untrack();
                    owned.add(t);
                }
            });
            return new Result(epoch, seq, worker, batch, owned, null, false);
        }
    }

    // ------------------------------------------------------------------ workers

    /** Worker threads with one task queue each and a shared result queue. */
    private static final class WorkerPool {
        final List<Worker> workers;
        final BlockingQueue<Result> results = new LinkedBlockingQueue<>();
        /** Set by {@link #shutdown}: a worker finishing a batch later releases it instead of delivering it. */
        volatile boolean shutDown;

        WorkerPool(Loading loading, long baseSeed) {
            int n = loading.numWorkers;
            workers = new ArrayList<>(n);
            for (int i = 0; i < n; i++) workers.add(new Worker(loading, new WorkerInfo(i, n, baseSeed + i), this));
            for (Worker w : workers) w.thread.start();
        }

        /**
         * Cancels queued tasks, stops the threads and releases every undelivered batch. A worker busy with a
         * batch may finish it within {@code graceNanos} of the batch's start; then it is interrupted, and if
         * it does not stop within {@link #INTERRUPT_WAIT_NANOS} it is abandoned with a warning.
         */
        void shutdown(long graceNanos) {
            shutDown = true;
            for (Worker w : workers) {
                w.tasks.clear();
                w.tasks.add(STOP);
                killProcess(w); // a child JVM can be stopped: no waiting, no abandoning
            }
            try {
                for (Worker w : workers) {
                    boolean busy = w.busy != null; // read before busySince, which the worker writes first
                    long deadline = (busy ? w.busySince : System.nanoTime()) + graceNanos;
                    join(w.thread, deadline);
                }
                List<Worker> stuck = new ArrayList<>();
                for (Worker w : workers) {
                    if (w.thread.isAlive()) {
                        w.thread.interrupt();
                        stuck.add(w);
                    }
                }
                long deadline = System.nanoTime() + INTERRUPT_WAIT_NANOS;
                for (Worker w : stuck) join(w.thread, deadline);
                for (Worker w : stuck) if (w.thread.isAlive()) abandon(w);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (Worker w : workers) killProcess(w); // one started meanwhile
            Result r;
            while ((r = results.poll()) != null) r.release();
        }

        private static void killProcess(Worker w) {
            WorkerProcess c = w.child;
            if (c != null) c.close();
        }

        private static void join(Thread t, long deadlineNanos) throws InterruptedException {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0) t.join(Duration.ofNanos(left));
        }

        private static void abandon(Worker w) {
            ABANDONED.add(w.thread);
            StringBuilder at = new StringBuilder();
            StackTraceElement[] stack = w.thread.getStackTrace();
            for (int i = 0; i < Math.min(4, stack.length); i++) at.append("\n\tat ").append(stack[i]);
            LOG.log(System.Logger.Level.WARNING, where(w.info.id()) + " (thread " + w.thread.getName() + ") did not stop: it "
                    + w.describeBusy() + ", and it ignored an interrupt. Java cannot stop a thread, so it is abandoned: "
                    + "it keeps running (a daemon thread, it does not keep the JVM alive) until its call returns, and "
                    + "its batch is then discarded. Bound the blocking calls in the dataset to avoid this." + at);
        }
    }

    private static final class Worker implements Runnable {
        final Loading loading;
        final WorkerInfo info;
        final WorkerPool pool;
        final BlockingQueue<Task> tasks = new LinkedBlockingQueue<>();
        final Thread thread;
        Iterator<?> stream;
        long streamEpoch = -1;
        boolean streamDone;
        /** The task being loaded (null while idle), since when, and the dataset index being read (-1: none). */
        volatile Task busy;
        volatile long busySince;
        volatile int index = -1;
        /** {@link WorkerMode#PROCESS}: the child JVM loading this worker's batches (null until the first). */
        volatile WorkerProcess child;

        Worker(Loading loading, WorkerInfo info, WorkerPool pool) {
            this.loading = loading;
            this.info = info;
            this.pool = pool;
            this.thread = new Thread(this, "jtorch-dataloader-worker-" + info.id());
            thread.setDaemon(true);
        }

        @Override
        public void run() {
            WorkerInfo.setCurrent(info);
            // Workers already load in parallel: their ops run single-threaded, as PyTorch's workers
            // (torch.set_num_threads(1)), instead of queueing for the intra-op pool and waking its threads.
            // Set before workerInitFn, which may turn it back on.
            Parallel.setSerialOnThisThread(true);
            Throwable initError = null;
            try {
                if (loading.workerInitFn != null) {
                    try {
                        loading.workerInitFn.accept(info);
                    } catch (Throwable e) {
                        initError = e;
                    }
                }
                while (true) {
                    Task t = tasks.take();
                    if (t == STOP) return;
                    Result r;
                    if (initError != null) {
                        r = Result.failure(t.epoch, t.seq, info.id(), new DataLoaderException(where(info.id())
                                + " failed in its workerInitFn: " + describe(initError), initError, info.id(), -1, t.indices));
                    } else {
                        busySince = System.nanoTime();
                        busy = t;
                        try {
                            r = process(t);
                        } finally {
                            busy = null;
                            index = -1;
                        }
                    }
                    if (pool.shutDown) { // a batch finished after shutdown (a worker that was abandoned or interrupted)
                        r.release();
                        return;
                    }
                    pool.results.add(r);
                    if (pool.shutDown && pool.results.remove(r)) {
                        r.release();
                        return;
                    }
                }
            } catch (InterruptedException e) {
                // shutdown of a worker stuck in user code; nothing left to deliver
            } finally {
                Parallel.setSerialOnThisThread(false);
                WorkerInfo.setCurrent(null);
            }
        }

        /** What this worker is doing, for messages: "has been loading dataset index 5 (batch indices [4, 5]) for 2.0 s". */
        String describeBusy() {
            Task t = busy;
            if (t == null) return "is between batches";
            int i = index;
            String what = t.indices == null ? "batch " + t.seq + " from the IterableDataset"
                    : (i >= 0 ? "dataset index " + i + " (batch indices " + Arrays.toString(t.indices) + ")"
                    : "batch indices " + Arrays.toString(t.indices));
            return String.format("has been loading %s for %.1f s", what, (System.nanoTime() - busySince) * 1e-9);
        }

        private Result process(Task t) {
            if (loading.processes) return loading.loadInProcess(t.epoch, t.seq, t.indices, info.id(), this);
            if (loading.dataset != null) return loading.load(t.epoch, t.seq, t.indices, info.id(), this);
            if (streamEpoch != t.epoch) {
                streamEpoch = t.epoch;
                streamDone = false;
                try {
                    stream = loading.iterableDataset.iterator();
                } catch (Throwable e) {
                    streamDone = true;
                    return Result.failure(t.epoch, t.seq, info.id(), new DataLoaderException(where(info.id())
                            + " failed to create the IterableDataset's iterator: " + describe(e), e, info.id(), -1, null));
                }
            }
            if (streamDone) return Result.exhausted(t.epoch, t.seq, info.id());
            Result r = loading.loadIterable(t.epoch, t.seq, stream, info.id());
            if (r.exhausted) streamDone = true;
            return r;
        }
    }

    /**
     * Batches an epoch loaded but has not handed out, and the workers it started. Also the cleaning
     * action of an iterator dropped without {@code close()}: its workers are stopped when the garbage
     * collector finds it unreachable (the batch it last returned is left alone: the caller may still hold it).
     */
    private static final class EpochState implements Runnable {
        final WorkerPool ownPool;
        final Map<Long, Result> reorder = new HashMap<>();
        Result pending;
        /** How long stopping the workers waits for batches being loaded; 0 once the epoch failed. */
        volatile long graceNanos;

        EpochState(WorkerPool ownPool, long graceNanos) {
            this.ownPool = ownPool;
            this.graceNanos = graceNanos;
        }

        void releaseUndelivered() {
            if (pending != null) pending.release();
            pending = null;
            for (Result r : reorder.values()) r.release();
            reorder.clear();
        }

        @Override
        public void run() {
            releaseUndelivered();
            if (ownPool != null) ownPool.shutdown(graceNanos);
        }
    }

    /** The persistent workers; also the cleaning action of a loader dropped without {@code close()}. */
    private static final class PoolHolder implements Runnable {
        volatile WorkerPool pool;

        @Override
        public void run() {
            shutdown(DEFAULT_GRACE_NANOS);
        }

        void shutdown(long graceNanos) {
            WorkerPool p = pool;
            pool = null;
            if (p != null) p.shutdown(graceNanos);
        }
    }

    // ------------------------------------------------------------------ the iterator

    private final class LoaderIterator implements BatchIterator<B> {
        private final long epoch;
        private final Iterator<int[]> batches;        // map-style batches of indices (null for iterable datasets)
        private final Iterator<Integer> singles;      // map-style without batching
        private final WorkerPool pool;
        private final EpochState state;
        private final Cleaner.Cleanable cleanable;
        private final boolean[] activeWorkers;
        private Iterator<?> stream;                   // iterable dataset without workers
        private long sent;
        private long received;                        // results taken from the queue
        private long next;                            // sequence number of the next batch to return
        private int nextWorker;
        private Result current;
        private boolean finished;

        LoaderIterator(long epoch) {
            this.epoch = epoch;
            // Drawn for every epoch whatever the worker count, so that worker counts do not change the shuffle order.
            long baseSeed = RandomDraws.seed(generator == null ? Generator.defaultGenerator() : generator);
            if (dataset != null) {
                this.batches = batchSampler != null ? batchSampler.iterator() : null;
                this.singles = batchSampler == null ? sampler.iterator() : null;
            } else {
                this.batches = null;
                this.singles = null;
            }
            if (numWorkers == 0) {
                pool = null;
                activeWorkers = null;
            } else {
                if (persistentWorkers) {
                    if (persistent.pool == null) persistent.pool = new WorkerPool(loading, baseSeed);
                    pool = persistent.pool;
                } else {
                    pool = new WorkerPool(loading, baseSeed);
                }
                activeWorkers = new boolean[numWorkers];
                Arrays.fill(activeWorkers, true);
            }
            state = new EpochState(pool != null && !persistentWorkers ? pool : null, graceNanos());
            cleanable = CLEANER.register(this, state);
        }

        @Override
        public boolean hasNext() {
            if (finished) return false;
            if (state.pending == null) {
                try {
                    state.pending = advance();
                } catch (RuntimeException | Error e) {
                    abort();
                    throw e;
                }
                if (state.pending == null) close();
            }
            return state.pending != null;
        }

        @Override
        @SuppressWarnings("unchecked")
        public B next() {
            if (!hasNext()) throw new NoSuchElementException("DataLoader: no more batches in this epoch");
            if (current != null) current.release();
            current = state.pending;
            state.pending = null;
            if (current.error != null) {
                DataLoaderException e = current.error;
                abort();
                throw e;
            }
            if (transferDevice != null && current.batch != null) current = transfer(current);
            return (B) current.batch;
        }

        /**
         * The batch with its tensors copied to the transfer device (from pinned memory asynchronously, ordered
         * before this thread's later work on the device's current stream); the host tensors stay owned until
         * the next batch, as the copies may still read them.
         */
        private Result transfer(Result r) {
            List<Tensor> owned = new ArrayList<>(r.owned);
            Object moved = pinner != null ? pinner.toDevice(r.batch, transferDevice)
                    : Collate.mapTensors(r.batch, t -> t.to(transferDevice));
            Collate.forEachTensor(moved, t -> {
                if (!t.device().equals(transferDevice)) return;
                t.untrack();
                owned.add(t);
            });
            return new Result(r.epoch, r.seq, r.worker, moved, owned, null, false);
        }

        @Override
        @SuppressWarnings("unchecked")
        public B keep() {
            if (current == null || current.batch == null) throw new IllegalStateException("DataLoader: keep() before next()");
            Result r = current;
            // The batch's tensors go to the caller; host copies a transfer left behind stay the loader's.
            java.util.Set<Tensor> inBatch = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            Collate.forEachTensor(r.batch, inBatch::add);
            List<Tensor> rest = new ArrayList<>();
            for (Tensor t : r.owned) if (!inBatch.contains(t)) rest.add(t);
            current = new Result(r.epoch, r.seq, r.worker, r.batch, rest, null, false);
            return (B) r.batch;
        }

        @Override
        public void close() {
            close(false);
        }

        /** Closes after a failure: the batches being loaded are not waited for (a timed-out worker may never finish). */
        private void abort() {
            close(true);
        }

        private void close(boolean failed) {
            if (finished) return;
            finished = true;
            if (current != null) current.release();
            current = null;
            if (failed) state.graceNanos = 0;
            if (pool != null && pool == persistent.pool) {
                state.releaseUndelivered();
                if (failed || !drain()) persistent.shutdown(state.graceNanos);
            }
            cleanable.clean(); // releases undelivered batches and stops this epoch's own workers
            if (active == this) active = null;
        }

        /** Persistent workers: cancels this epoch's queued tasks and releases the batches still being loaded. */
        private boolean drain() {
            long cancelled = 0;
            for (Worker w : pool.workers) {
                List<Task> removed = new ArrayList<>();
                w.tasks.drainTo(removed);
                cancelled += removed.size();
            }
            long deadline = System.nanoTime() + (timeout.isZero() ? TimeUnit.SECONDS.toNanos(60) : timeout.toNanos());
            while (received + cancelled < sent) {
                try {
                    Result r = pool.results.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    if (r == null) return false;
                    received++;
                    r.release();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }

        /** The next result in order, or null at the end of the epoch. */
        private Result advance() {
            if (pool == null) return loadHere();
            while (true) {
                fill();
                Result r = state.reorder.remove(next);
                if (r == null) {
                    if (next == sent) return null;
                    r = poll();
                    received++;
                    if (r.seq != next) {
                        state.reorder.put(r.seq, r);
                        continue;
                    }
                }
                next++;
                if (r.exhausted) {
                    activeWorkers[r.worker] = false;
                    continue;
                }
                fill();
                return r;
            }
        }

        /** Without workers: loads the next batch on this thread. */
        private Result loadHere() {
            long seq = next++;
            if (dataset != null) {
                int[] indices;
                if (batches != null) {
                    if (!batches.hasNext()) return null;
                    indices = batches.next();
                } else {
                    if (!singles.hasNext()) return null;
                    indices = new int[] {singles.next()};
                }
                return loading.load(epoch, seq, indices, -1, null);
            }
            if (stream == null) {
                try {
                    stream = iterableDataset.iterator();
                } catch (Throwable e) {
                    return Result.failure(epoch, seq, -1, new DataLoaderException(where(-1)
                            + " failed to create the IterableDataset's iterator: " + describe(e), e, -1, -1, null));
                }
            }
            Result r = loading.loadIterable(epoch, seq, stream, -1);
            return r.exhausted ? null : r;
        }

        /** Keeps {@code prefetchFactor * numWorkers} batches in flight, dealt to the workers in turn. */
        private void fill() {
            while (sent - next < (long) prefetchFactor * numWorkers) {
                int[] indices = null;
                if (dataset != null) {
                    if (batches != null) {
                        if (!batches.hasNext()) return;
                        indices = batches.next();
                    } else {
                        if (!singles.hasNext()) return;
                        indices = new int[] {singles.next()};
                    }
                }
                int w = nextActiveWorker();
                if (w < 0) return;
                pool.workers.get(w).tasks.add(new Task(epoch, sent++, indices));
            }
        }

        private int nextActiveWorker() {
            for (int k = 0; k < numWorkers; k++) {
                int w = nextWorker;
                nextWorker = (nextWorker + 1) % numWorkers;
                if (activeWorkers[w]) return w;
            }
            return -1;
        }

        /** The timeout error, naming the worker that owes batch {@code next} and what it is loading, when known. */
        private DataLoaderException timedOut() {
            String message = String.format("DataLoader timed out after %.3f s waiting for batch %d", timeout.toNanos() * 1e-9, next);
            for (Worker w : pool.workers) {
                Task t = w.busy;
                if (t != null && t.epoch == epoch && t.seq == next) {
                    int index = w.index;
                    return new DataLoaderException(message + ": " + where(w.info.id()) + " " + w.describeBusy(),
                            null, w.info.id(), index, t.indices);
                }
                for (Task queued : w.tasks) {
                    if (queued.epoch == epoch && queued.seq == next) {
                        return new DataLoaderException(message + ": it waits in the queue of " + where(w.info.id()) + ", which "
                                + w.describeBusy(), null, w.info.id(), -1, queued.indices);
                    }
                }
            }
            return new DataLoaderException(message, null, -1, -1, null);
        }

        /** Waits for a worker's result, checking the timeout and that the workers are alive. */
        private Result poll() {
            long start = System.nanoTime();
            while (true) {
                long waitNanos = timeout.isZero() ? TimeUnit.MILLISECONDS.toNanos(100)
                        : timeout.toNanos() - (System.nanoTime() - start);
                Result r;
                try {
                    r = waitNanos > 0 ? pool.results.poll(waitNanos, TimeUnit.NANOSECONDS) : pool.results.poll();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new DataLoaderException("DataLoader: interrupted while waiting for batch " + next, e, -1, -1, null);
                }
                if (r != null) {
                    if (r.epoch != epoch) { // a batch of an earlier epoch that closing did not wait for
                        r.release();
                        continue;
                    }
                    return r;
                }
                if (!timeout.isZero() && System.nanoTime() - start >= timeout.toNanos()) throw timedOut();
                for (Worker w : pool.workers) {
                    if (!w.thread.isAlive()) {
                        throw new DataLoaderException("DataLoader worker " + w.info.id() + " exited unexpectedly", null,
                                w.info.id(), -1, null);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ builder

    /**
     * Options of a {@link DataLoader}, named as PyTorch's keyword arguments.
     *
     * @param <T> the sample type
     * @param <B> the batch type (the sample type under the default collate; set by {@link #collate})
     */
    public static final class Builder<T, B> {
        private final Dataset<T> dataset;
        private final IterableDataset<T> iterable;
        private Integer batchSize = 1;
        private boolean batchSizeSet;
        private boolean shuffle;
        private Sampler sampler;
        private BatchSampler batchSampler;
        private boolean dropLast;
        private CollateFn<? super T, ?> collate;
        private int numWorkers;
        private int prefetchFactor = 2;
        private boolean prefetchFactorSet;
        private boolean persistentWorkers;
        private boolean pinMemory;
        private Device transferDevice;
        private Duration timeout = Duration.ZERO;
        private Consumer<WorkerInfo> workerInitFn;
        private Generator generator;
        private WorkerMode workerMode = WorkerMode.THREAD;

        private Builder(Dataset<T> dataset, IterableDataset<T> iterable) {
            this.dataset = dataset;
            this.iterable = iterable;
        }

        /** Samples per batch (default 1); null disables batching: each sample is returned as it is, uncollated. */
        public Builder<T, B> batchSize(Integer batchSize) {
            if (batchSize != null && batchSize <= 0) {
                throw new IllegalArgumentException("DataLoader: batchSize should be a positive integer value, but got batchSize=" + batchSize);
            }
            this.batchSize = batchSize;
            this.batchSizeSet = true;
            return this;
        }

        /** A new random order every epoch, drawn from {@link #generator}. */
        public Builder<T, B> shuffle(boolean shuffle) {
            this.shuffle = shuffle;
            return this;
        }

        public Builder<T, B> sampler(Sampler sampler) {
            this.sampler = sampler;
            return this;
        }

        /** Yields the indices of each batch; excludes batchSize, shuffle, sampler and dropLast. */
        public Builder<T, B> batchSampler(BatchSampler batchSampler) {
            this.batchSampler = batchSampler;
            return this;
        }

        /** Drops the last batch when it is smaller than batchSize. */
        public Builder<T, B> dropLast(boolean dropLast) {
            this.dropLast = dropLast;
            return this;
        }

        /** Replaces the default collate; the batch type becomes {@code C}. */
        @SuppressWarnings("unchecked")
        public <C> Builder<T, C> collate(CollateFn<? super T, C> collate) {
            this.collate = Arguments.nonNull("DataLoader.Builder.collate", "collate", collate);
            return (Builder<T, C>) this;
        }

        /** Worker threads loading batches in parallel (0: load on the consuming thread). */
        public Builder<T, B> numWorkers(int numWorkers) {
            if (numWorkers < 0) {
                throw new IllegalArgumentException("DataLoader: numWorkers option should be non-negative; use numWorkers=0 to disable workers");
            }
            this.numWorkers = numWorkers;
            return this;
        }

        /** Batches loaded in advance by each worker (default 2). */
        public Builder<T, B> prefetchFactor(int prefetchFactor) {
            if (prefetchFactor < 1) throw new IllegalArgumentException("DataLoader: prefetchFactor must be at least 1, got " + prefetchFactor);
            this.prefetchFactor = prefetchFactor;
            this.prefetchFactorSet = true;
            return this;
        }

        /** Keeps the worker threads between epochs (until {@link DataLoader#close()}). */
        public Builder<T, B> persistentWorkers(boolean persistentWorkers) {
            this.persistentWorkers = persistentWorkers;
            return this;
        }

        /**
         * Copies batches into pinned host memory for fast transfers to an accelerator, through a
         * {@link MemoryPinner}; without one (no accelerator) the option is accepted and does nothing.
         */
        public Builder<T, B> pinMemory(boolean pinMemory) {
            this.pinMemory = pinMemory;
            return this;
        }

        /**
         * Hands out batches on {@code device} instead of the CPU (jtorch's addition; PyTorch users call
         * {@code .to(device, non_blocking=True)} on each batch): the iterator copies each batch there when
         * {@code next()} returns it. With {@link #pinMemory} and an available pinner, the copies run from
         * pinned memory on a side stream, without blocking the host, and the calling thread's current stream
         * on {@code device} waits for them (an event), so the next step's kernels see the batch. The device
         * tensors are owned like any batch tensor.
         */
        public Builder<T, B> transferTo(Device device) {
            this.transferDevice = device;
            return this;
        }

        /** Longest wait for a worker's batch; zero (default) waits indefinitely. */
        public Builder<T, B> timeout(Duration timeout) {
            if (timeout.isNegative()) throw new IllegalArgumentException("DataLoader: timeout option should be non-negative");
            this.timeout = timeout;
            return this;
        }

        /** Called first in each worker thread (which {@link WorkerInfo#current()} also describes). */
        public Builder<T, B> workerInitFn(Consumer<WorkerInfo> workerInitFn) {
            this.workerInitFn = workerInitFn;
            return this;
        }

        /**
         * Worker threads in this JVM ({@link WorkerMode#THREAD}, the default) or each worker in a child JVM that a
         * timeout or close kills ({@link WorkerMode#PROCESS}: for datasets that may block in native code or ignore
         * interrupts; see {@link WorkerMode}).
         */
        public Builder<T, B> workerMode(WorkerMode workerMode) {
            this.workerMode = Arguments.nonNull("DataLoader.Builder.workerMode", "workerMode", workerMode);
            return this;
        }

        /** Source of shuffle orders and worker seeds (default: the default generator). */
        public Builder<T, B> generator(Generator generator) {
            this.generator = generator;
            return this;
        }

        public DataLoader<B> build() {
            if (numWorkers == 0 && persistentWorkers) {
                throw new IllegalArgumentException("DataLoader: persistentWorkers option needs numWorkers > 0");
            }
            if (workerMode == WorkerMode.PROCESS) {
                if (numWorkers == 0) throw new IllegalArgumentException("DataLoader: workerMode(PROCESS) needs numWorkers > 0");
                if (dataset == null) throw new IllegalArgumentException("DataLoader: workerMode(PROCESS) needs a map-style Dataset");
                if (workerInitFn != null) {
                    throw new IllegalArgumentException("DataLoader: workerMode(PROCESS) runs no workerInitFn (it would run in another JVM)");
                }
                WorkerProcess.checkConstructible(dataset);
            }
            if (numWorkers == 0 && prefetchFactorSet) {
                throw new IllegalArgumentException("DataLoader: prefetchFactor option could only be specified with numWorkers > 0");
            }
            if (iterable != null) {
                if (shuffle) throw new IllegalArgumentException("DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=true");
                if (sampler != null) throw new IllegalArgumentException("DataLoader with IterableDataset: expected unspecified sampler option");
                if (batchSampler != null) throw new IllegalArgumentException("DataLoader with IterableDataset: expected unspecified batchSampler option");
            }
            if (sampler != null && shuffle) throw new IllegalArgumentException("DataLoader: sampler option is mutually exclusive with shuffle");
            if (batchSampler != null && (batchSizeSet || shuffle || sampler != null || dropLast)) {
                throw new IllegalArgumentException("DataLoader: batchSampler option is mutually exclusive with batchSize, shuffle, sampler, and dropLast");
            }
            if (batchSize == null && batchSampler == null) {
                if (dropLast) throw new IllegalArgumentException("DataLoader: batchSize=null option disables auto-batching and is mutually exclusive with dropLast");
                if (collate != null) throw new IllegalArgumentException("DataLoader: batchSize=null returns samples uncollated; a collate function needs batches");
            }
            return new DataLoader<>(this);
        }
    }
}
