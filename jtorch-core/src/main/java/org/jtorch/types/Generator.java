package org.jtorch.types;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
/**
 * A seeded, counter-based random number generator (Philox4x32-10, as cuRAND and PyTorch's CUDA
 * generator use). The state is a 64-bit seed and a 64-bit offset counting consumed 128-bit blocks, so
 * any element of a random fill can be computed independently: fills run in parallel and give the same
 * values whatever the thread count, and the same stream can later be produced on a GPU.
 *
 * <p>Thread safety: {@link #reserve} is synchronised; each fill reserves its own range of blocks.
 */
public final class Generator {
    private static final int M0 = 0xD2511F53;
    private static final int M1 = 0xCD9E8D57;
    private static final int W0 = 0x9E3779B9;
    private static final int W1 = 0xBB67AE85;

    /** Ids in creation order; the default generator's is 0. */
    private static final AtomicLong NEXT_ID = new AtomicLong();
    /** The generators a random op has named by id ({@link #id}), held weakly: an id does not keep its generator alive. */
    private static final ConcurrentHashMap<Long, Ref> BY_ID = new ConcurrentHashMap<>();
    private static final ReferenceQueue<Generator> RELEASED = new ReferenceQueue<>();

    private static final Generator DEFAULT = new Generator(67280421310721L);

    private final long id = NEXT_ID.getAndIncrement();
    private volatile boolean listed;
    private long seed;
    private long offset;

    public Generator(long seed) {
        this.seed = seed;
    }

    private static final class Ref extends WeakReference<Generator> {
        final long id;

        Ref(Generator g) {
            super(g, RELEASED);
            id = g.id;
        }
    }

    /**
     * The number by which a random op's arguments name this generator (PyTorch's {@code Generator? generator}
     * parameter): the dispatcher draws from the generator it names when the op runs, so a replayed trace draws fresh
     * numbers as an eager call would. Ids grow in creation order and fit a double exactly; the default generator's is 0.
     */
    public long id() {
        if (!listed && id != 0) {
            for (Object r; (r = RELEASED.poll()) != null; ) BY_ID.remove(((Ref) r).id, r);
            BY_ID.putIfAbsent(id, new Ref(this));
            listed = true;
        }
        return id;
    }

    /** The generator with id {@code id} ({@link #id}), or an exception naming {@code op} when none is alive. */
    public static Generator byId(String op, long id) {
        Arguments.nonNull("Generator.byId", "op", op);
        if (id == 0) return DEFAULT;
        Ref r = BY_ID.get(id);
        Generator g = r == null ? null : r.get();
        if (g == null) throw new IllegalStateException(op + ": no generator with id " + id + " is alive");
        return g;
    }

    /** The id the next generator created will get: a generator whose id is at least this was made after the call. */
    public static long nextId() {
        return NEXT_ID.get();
    }

    /** The process-wide generator that {@link org.jtorch.Torch#manualSeed} seeds. */
    public static Generator defaultGenerator() {
        return DEFAULT;
    }

    public synchronized Generator manualSeed(long newSeed) {
        this.seed = newSeed;
        this.offset = 0;
        return this;
    }

    public synchronized long initialSeed() {
        return seed;
    }

    /** State for checkpoints: {seed, offset}. */
    public synchronized long[] getState() {
        return new long[] {seed, offset};
    }

    public synchronized void setState(long[] state) {
        Arguments.nonNull("Generator.setState", "state", state);
        if (state.length != 2) throw new IllegalArgumentException("Generator.setState: expected {seed, offset}");
        seed = state[0];
        offset = state[1];
    }

    /** Reserves {@code blocks} consecutive 128-bit blocks; returns {seed, first block}. */
    public synchronized long[] reserve(long blocks) {
        long start = offset;
        offset += blocks;
        return new long[] {seed, start};
    }

    /** Writes the 4 random 32-bit words of block {@code counter} under {@code seed} into {@code out}. */
    public static void philox(long seed, long counter, int[] out) {
        Arguments.nonNull("Generator.philox", "out", out);
        int c0 = (int) counter;
        int c1 = (int) (counter >>> 32);
        int c2 = 0;
        int c3 = 0;
        int k0 = (int) seed;
        int k1 = (int) (seed >>> 32);
        for (int r = 0; r < 10; r++) {
            long p0 = (M0 & 0xffffffffL) * (c0 & 0xffffffffL);
            long p1 = (M1 & 0xffffffffL) * (c2 & 0xffffffffL);
            int hi0 = (int) (p0 >>> 32);
            int lo0 = (int) p0;
            int hi1 = (int) (p1 >>> 32);
            int lo1 = (int) p1;
            c0 = hi1 ^ c1 ^ k0;
            c1 = lo1;
            c2 = hi0 ^ c3 ^ k1;
            c3 = lo0;
            k0 += W0;
            k1 += W1;
        }
        out[0] = c0;
        out[1] = c1;
        out[2] = c2;
        out[3] = c3;
    }

    /**
     * 64-bit draws two to a Philox block, as {@code randint} and {@code randperm}'s shuffle take them: draw {@code i} is half
     * {@code i & 1} of block {@code firstBlock + i / 2} (words 0 and 1, or 2 and 3, the first the high half), each block
     * computed once for the draws that share it, in whatever order they are asked for. Not thread-safe: one per thread.
     */
    public static final class Bits64 {
        private final long seed;
        private final long firstBlock;
        private final int[] words = new int[4];
        private long loaded = -1;

        public Bits64(long seed, long firstBlock) {
            this.seed = seed;
            this.firstBlock = firstBlock;
        }

        /** Draw {@code i}. */
        public long at(long i) {
            long block = firstBlock + i / 2;
            if (block != loaded) {
                philox(seed, block, words);
                loaded = block;
            }
            int k = (int) (i & 1) * 2;
            return ((long) words[k] << 32) | (words[k + 1] & 0xffffffffL);
        }
    }
}
