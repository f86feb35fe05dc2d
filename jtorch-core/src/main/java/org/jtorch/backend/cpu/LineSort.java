package org.jtorch.backend.cpu;

import java.util.Arrays;

/**
 * Stable sorts of a line's positions. Dtypes of at most 32 bits take {@link #sortPacked}: each element becomes one
 * {@code long} holding an order-preserving 32-bit key above its position, so a primitive {@link Arrays#sort} of
 * those longs is a stable sort. 64-bit dtypes take a stable merge sort of positions {@code 0..n-1} by keys held in a {@code double[]} (floating lines) or
 * a {@code long[]} (integral lines, exact beyond 2^53). Order as PyTorch's sort: NaN above every number,
 * -0.0 equal to 0.0; descending reverses the key order but equal keys still keep their positions' order.
 * One instance per thread: it owns its scratch buffers.
 */
final class LineSort {
    private int[] order = new int[0];
    private int[] scratch = new int[0];
    private double[] dkeys;
    private long[] lkeys;
    private boolean descending;

    private long[] packed = new long[0];

    /**
     * Sorts positions {@code 0..n-1} by {@code values[0..n)}, which are floats ({@code floating}: f32, f16, bf16, all
     * exact as float) or integers of at most 32 bits held exactly in doubles; writes the positions to {@code out}.
     */
    void sortPacked(double[] values, int n, boolean floating, boolean descending, long[] out) {
        if (packed.length < n) packed = new long[n];
        for (int i = 0; i < n; i++) {
            int key = floating ? floatKey((float) values[i]) : (int) values[i];
            if (descending) key = ~key;
            packed[i] = ((long) key << 32) | i;
        }
        Arrays.sort(packed, 0, n);
        for (int i = 0; i < n; i++) out[i] = packed[i] & 0xffffffffL;
    }

    /** An int whose signed order is the float order, NaN above +inf, -0.0 equal to 0.0. */
    private static int floatKey(float f) {
        if (f != f) return 0x7fc00000;
        int bits = Float.floatToRawIntBits(f == 0 ? 0f : f);
        return bits ^ ((bits >> 31) & 0x7fffffff);
    }

    /** Sorts positions by {@code keys[0..n)}; the result is the returned array's first n entries. */
    int[] sort(double[] keys, int n, boolean descending) {
        this.dkeys = keys;
        this.lkeys = null;
        return run(n, descending);
    }

    int[] sort(long[] keys, int n, boolean descending) {
        this.lkeys = keys;
        this.dkeys = null;
        return run(n, descending);
    }

    private int[] run(int n, boolean descending) {
        this.descending = descending;
        if (order.length < n) {
            order = new int[n];
            scratch = new int[n];
        }
        for (int i = 0; i < n; i++) order[i] = i;
        mergeSort(0, n);
        return order;
    }

    /** Whether position b must come before position a (strictly), so that ties keep their order. */
    private boolean before(int b, int a) {
        int c = dkeys != null ? compare(dkeys[b], dkeys[a]) : Long.compare(lkeys[b], lkeys[a]);
        return descending ? c > 0 : c < 0;
    }

    private static int compare(double x, double y) {
        if (x < y) return -1;
        if (x > y) return 1;
        boolean nx = Double.isNaN(x), ny = Double.isNaN(y);
        return nx == ny ? 0 : nx ? 1 : -1;
    }

    private void mergeSort(int lo, int hi) {
        if (hi - lo <= 16) {
            for (int i = lo + 1; i < hi; i++) {
                int v = order[i];
                int j = i - 1;
                while (j >= lo && before(v, order[j])) {
                    order[j + 1] = order[j];
                    j--;
                }
                order[j + 1] = v;
            }
            return;
        }
        int mid = (lo + hi) >>> 1;
        mergeSort(lo, mid);
        mergeSort(mid, hi);
        if (!before(order[mid], order[mid - 1])) return;
        System.arraycopy(order, lo, scratch, lo, hi - lo);
        int i = lo, j = mid, k = lo;
        while (i < mid && j < hi) order[k++] = before(scratch[j], scratch[i]) ? scratch[j++] : scratch[i++];
        while (i < mid) order[k++] = scratch[i++];
        while (j < hi) order[k++] = scratch[j++];
    }
}
