package org.jtorch.backend.cpu;

import java.util.Arrays;

/**
 * Stable sorts of a line's positions, in PyTorch's order: NaN above every number, -0.0 equal to 0.0; descending
 * reverses the key order while equal keys keep their positions' order. Each element's value becomes an
 * order-preserving integer key. Dtypes of at most 32 bits pack that key above the position in one {@code long},
 * so a primitive {@link Arrays#sort} of the longs is a stable sort; 64-bit dtypes take an LSD radix sort of
 * (key, position) pairs, stable by construction, skipping the byte passes where every key agrees. One instance
 * per thread: it owns its scratch buffers.
 */
final class LineSort {
    private static final int SMALL = 32;

    private long[] keys = new long[0], keysScratch = new long[0];
    private int[] positions = new int[0], positionsScratch = new int[0];
    private final int[] counts = new int[257];

    /**
     * Sorts positions {@code 0..n-1} by {@code values[0..n)}, which are floats ({@code floating}: f32, f16, bf16, all
     * exact as float) or integers of at most 32 bits held exactly in doubles; writes the first {@code k} positions to
     * {@code out}. For k < n the k first are selected before they are sorted (the packed keys are distinct, so the
     * selection keeps the stable order).
     */
    void sortPacked(double[] values, int n, int k, boolean floating, boolean descending, long[] out) {
        ensure(n);
        for (int i = 0; i < n; i++) {
            int key = floating ? floatKey((float) values[i]) : (int) values[i];
            if (descending) key = ~key;
            keys[i] = ((long) key << 32) | i;
        }
        if (k < n) select(keys, n, k);
        Arrays.sort(keys, 0, k);
        for (int i = 0; i < k; i++) out[i] = keys[i] & 0xffffffffL;
    }

    /** Moves the k smallest of the distinct {@code a[0..n)} to {@code a[0..k)} (quickselect, median-of-three pivots). */
    private static void select(long[] a, int n, int k) {
        int lo = 0, hi = n - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            long pivot = Math.max(Math.min(a[lo], a[mid]), Math.min(Math.max(a[lo], a[mid]), a[hi]));
            int i = lo, j = hi;
            while (i <= j) {
                while (a[i] < pivot) i++;
                while (a[j] > pivot) j--;
                if (i <= j) {
                    long t = a[i];
                    a[i++] = a[j];
                    a[j--] = t;
                }
            }
            if (k - 1 <= j) hi = j;
            else if (k - 1 >= i) lo = i;
            else return;
        }
    }

    /** Sorts positions by float64 {@code values[0..n)}. */
    void sortDoubles(double[] values, int n, boolean descending, long[] out) {
        ensure(n);
        for (int i = 0; i < n; i++) keys[i] = unsignedOrder(doubleKey(values[i]), descending);
        sortKeys(n, out);
    }

    /** Sorts positions by int64 {@code values[0..n)}. */
    void sortLongs(long[] values, int n, boolean descending, long[] out) {
        ensure(n);
        for (int i = 0; i < n; i++) keys[i] = unsignedOrder(values[i], descending);
        sortKeys(n, out);
    }

    /** An int whose signed order is the float order, NaN above +inf, -0.0 equal to 0.0. */
    private static int floatKey(float f) {
        if (f != f) return 0x7fc00000;
        int bits = Float.floatToRawIntBits(f == 0 ? 0f : f);
        return bits ^ ((bits >> 31) & 0x7fffffff);
    }

    private static long doubleKey(double d) {
        if (d != d) return 0x7ff8000000000000L;
        long bits = Double.doubleToRawLongBits(d == 0 ? 0.0 : d);
        return bits ^ ((bits >> 63) & 0x7fffffffffffffffL);
    }

    /** A signed key as one whose unsigned order is the wanted order. */
    private static long unsignedOrder(long signedKey, boolean descending) {
        return (descending ? ~signedKey : signedKey) ^ Long.MIN_VALUE;
    }

    private void ensure(int n) {
        if (keys.length >= n) return;
        keys = new long[n];
        keysScratch = new long[n];
        positions = new int[n];
        positionsScratch = new int[n];
    }

    /** Stable sort of positions by the unsigned keys in {@code keys[0..n)}. */
    private void sortKeys(int n, long[] out) {
        long[] k = keys, kNext = keysScratch;
        int[] p = positions, pNext = positionsScratch;
        for (int i = 0; i < n; i++) p[i] = i;
        if (n <= SMALL) {
            for (int i = 1; i < n; i++) {
                long key = k[i];
                int j = i - 1;
                while (j >= 0 && Long.compareUnsigned(k[j], key) > 0) {
                    k[j + 1] = k[j];
                    p[j + 1] = p[j];
                    j--;
                }
                k[j + 1] = key;
                p[j + 1] = i;
            }
        } else {
            for (int shift = 0; shift < 64; shift += 8) {
                Arrays.fill(counts, 0);
                for (int i = 0; i < n; i++) counts[(int) ((k[i] >>> shift) & 0xff) + 1]++;
                boolean oneBucket = false;
                for (int b = 1; b <= 256 && !oneBucket; b++) oneBucket = counts[b] == n;
                if (oneBucket) continue;
                for (int b = 0; b < 256; b++) counts[b + 1] += counts[b];
                for (int i = 0; i < n; i++) {
                    int dst = counts[(int) ((k[i] >>> shift) & 0xff)]++;
                    kNext[dst] = k[i];
                    pNext[dst] = p[i];
                }
                long[] kt = k;
                k = kNext;
                kNext = kt;
                int[] pt = p;
                p = pNext;
                pNext = pt;
            }
        }
        for (int i = 0; i < n; i++) out[i] = p[i];
    }
}
