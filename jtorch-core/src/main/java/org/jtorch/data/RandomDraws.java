package org.jtorch.data;

import org.jtorch.types.Generator;

/** Random 64-bit words and uniforms from a {@link Generator}'s Philox stream, for samplers. */
final class RandomDraws {
    private RandomDraws() {}

    /** {@code count} random 64-bit words; each 128-bit Philox block gives two. */
    static long[] longs(Generator gen, int count) {
        long[] out = new long[count];
        long[] st = gen.reserve(Math.max(1, (count + 1) / 2));
        Generator.Bits64 bits = new Generator.Bits64(st[0], st[1]);
        for (int i = 0; i < count; i++) out[i] = bits.at(i);
        return out;
    }

    /** {@code count} uniforms in [0, 1) with 53 random bits each. */
    static double[] uniforms(Generator gen, int count) {
        long[] bits = longs(gen, count);
        double[] u = new double[count];
        for (int i = 0; i < count; i++) u[i] = (bits[i] >>> 11) * 0x1.0p-53;
        return u;
    }

    /** One random 63-bit non-negative value (a seed). */
    static long seed(Generator gen) {
        return longs(gen, 1)[0] >>> 1;
    }

    /** A random permutation of {@code 0..n-1} (Fisher-Yates). */
    static int[] permutation(Generator gen, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) p[i] = i;
        if (n < 2) return p;
        long[] bits = longs(gen, n - 1);
        for (int i = n - 1; i > 0; i--) {
            int j = (int) Long.remainderUnsigned(bits[i - 1], i + 1L);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }
}
