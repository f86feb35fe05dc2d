package org.jtorch.distributed;

/**
 * PyTorch's CPU random engine ({@code at::mt19937}, the 32-bit Mersenne Twister), as seeded by
 * {@code torch.Generator().manual_seed(seed)}, and the {@code torch.randperm} that draws from it. jtorch's own
 * {@link org.jtorch.types.Generator} is counter-based (Philox) and produces other streams; this engine exists so that
 * {@link DistributedSampler} shuffles exactly as PyTorch's does for the same seed and epoch.
 *
 * <p>Not thread-safe.
 */
final class MersenneTwister {
    private static final int N = 624;
    private static final int M = 397;
    private static final int MATRIX_A = 0x9908b0df;
    private static final int UPPER_MASK = 0x80000000;
    private static final int LOWER_MASK = 0x7fffffff;

    private final int[] state = new int[N];
    private int next = N;

    /** As PyTorch: only the low 32 bits of the seed are used. */
    MersenneTwister(long seed) {
        state[0] = (int) seed;
        for (int j = 1; j < N; j++) state[j] = 1812433253 * (state[j - 1] ^ (state[j - 1] >>> 30)) + j;
    }

    /** The next 32-bit output, unsigned, as {@code CPUGeneratorImpl::random()}. */
    long nextUnsigned32() {
        if (next >= N) twist();
        int y = state[next++];
        y ^= y >>> 11;
        y ^= (y << 7) & 0x9d2c5680;
        y ^= (y << 15) & 0xefc60000;
        y ^= y >>> 18;
        return y & 0xffffffffL;
    }

    /** {@code CPUGeneratorImpl::random64()}: two outputs, the first the high half. */
    long next64() {
        long hi = nextUnsigned32();
        long lo = nextUnsigned32();
        return (hi << 32) | lo;
    }

    private void twist() {
        for (int k = 0; k < N; k++) {
            int y = (state[k] & UPPER_MASK) | (state[(k + 1) % N] & LOWER_MASK);
            state[k] = state[(k + M) % N] ^ (y >>> 1) ^ ((y & 1) != 0 ? MATRIX_A : 0);
        }
        next = 0;
    }

    /**
     * {@code torch.randperm(n, generator=g)} on the CPU: a Fisher-Yates shuffle drawing {@code random() % (n - i)}
     * for n below 2^32/20 (checked against PyTorch 1.13's fixtures), and, as PyTorch 2 does above that size,
     * the no-initialisation variant drawing {@code random64() % (i + 1)} (not covered by fixtures: a
     * permutation of 200 million entries is too large to commit).
     */
    int[] randperm(int n) {
        int[] r = new int[n];
        if (n < 0xffffffffL / 20) {
            for (int i = 0; i < n; i++) r[i] = i;
            for (int i = 0; i < n - 1; i++) {
                int z = (int) (nextUnsigned32() % (n - i));
                int saved = r[i];
                r[i] = r[z + i];
                r[z + i] = saved;
            }
        } else {
            for (int i = 0; i < n; i++) {
                int z = (int) Long.remainderUnsigned(next64(), i + 1);
                r[i] = r[z];
                r[z] = i;
            }
        }
        return r;
    }
}
