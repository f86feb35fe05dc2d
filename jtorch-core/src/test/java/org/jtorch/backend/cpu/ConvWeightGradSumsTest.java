package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.junit.jupiter.api.Test;

/**
 * The weight gradients' chunk sums: {@link ConvF32#chunkSums}' buffers kept from call to call and cleared by each
 * chunk, and {@link ConvF32#sumPartials}' sum in chunk order (16-tap transposes or element by element, over the
 * threads), against the direct weight gradient's definition summed in float64 for DCGAN's 128 -> 256 layer.
 */
class ConvWeightGradSumsTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    /** 16 taps with whole 16-channel blocks (the transposes), and 9 taps or 24 channels (element by element). */
    @Test
    void sumPartialsAddsTheChunksInOrder() {
        Random r = new Random(7);
        int[][] shapes = {{5, 32, 16}, {3, 16, 16}, {4, 24, 16}, {6, 32, 9}, {1, 48, 16}, {40, 64, 16}};
        for (int[] s : shapes) {
            for (int chunks = 1; chunks <= 3; chunks++) {
                int cout = s[0], cin = s[1], kk = s[2], size = cout * cin * kk;
                float[][] partial = new float[chunks][size + 5]; // longer than the sums, as kept buffers may be
                for (float[] p : partial) for (int i = 0; i < p.length; i++) p[i] = (float) r.nextGaussian();
                try (Arena arena = Arena.ofShared()) { // shared: the sums run on the pool's threads
                    MemorySegment gw = arena.allocate((long) (size + 2) * Float.BYTES);
                    gw.fill((byte) 0x7f);
                    ConvF32.sumPartials(partial, cout, cin, kk, gw, 2);
                    for (int co = 0; co < cout; co++) {
                        for (int ci = 0; ci < cin; ci++) {
                            for (int t = 0; t < kk; t++) {
                                int col = (co * kk + t) * cin + ci;
                                float want = partial[0][col];
                                for (int c = 1; c < chunks; c++) want += partial[c][col];
                                float got = gw.getAtIndex(F32, 2 + ((long) co * cin + ci) * kk + t);
                                assertEquals(want, got, 0f, Arrays.toString(s) + " chunks " + chunks + " at " + co + "," + ci + "," + t);
                            }
                        }
                    }
                    assertEquals(Float.intBitsToFloat(0x7f7f7f7f), gw.getAtIndex(F32, 0), 0f, "before the offset");
                }
            }
        }
    }

    @Test
    void chunkSumsAreKeptAndClearedPerChunk() {
        float[][] first = ConvF32.chunkSums(2, 1000);
        Arrays.fill(first[0], 3f);
        Arrays.fill(first[1], 4f);
        float[][] second = ConvF32.chunkSums(2, 600);
        assertSame(first[0], second[0]);
        assertSame(first[1], second[1]);
        float[] cleared = ConvF32.clearedChunkSum(second, 1, 600);
        for (int i = 0; i < 600; i++) assertEquals(0f, cleared[i], 0f);
        assertTrue(ConvF32.chunkSums(3, 2000)[0].length >= 2000);
        assertEquals(1, ConvF32.chunkSums(1, 10).length);
    }

    /**
     * DCGAN's 128 -> 256 layer (8 -> 4 px, 4x4 stride 2 padding 1) at 3 images, twice into the same output with
     * other operands: the second call's buffers come back holding the first call's sums, which must not leak in.
     */
    @Test
    void directWeightGradientTwiceMatchesTheDefinition() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the tiles need 16 float lanes");
        Geometry g = new Geometry(3, 128, 8, 8, 256, 4, 4, 2, 2, 1, 1, 1, 1, 1, 4, 4);
        assertTrue(ConvDirectF32.handlesWeightGrad(g));
        Random r = new Random(11);
        for (int call = 0; call < 2; call++) {
            checkAgainstDefinition(g, r, 5, 3, (gy, gyOff, x, xOff, gw, gwOff, geometry) ->
                    ConvDirectF32.weightGrad(gy, gyOff, x, xOff, false, gw, gwOff, geometry));
        }
    }

    /**
     * The tiny-map weight gradient's channel strips kept in the calling thread's buffers: DCGAN's 128 -> 256 layer at 16
     * images, then shapes whose channels do not fill the last strip (20 and 40) and fewer images, so that the kept
     * buffers hold the larger call's values where the smaller one's zero channels go.
     */
    @Test
    void smallMapWeightGradientsReuseTheirStrips() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the tiles need 16 float lanes");
        Random r = new Random(12);
        Geometry dcgan = new Geometry(16, 128, 8, 8, 256, 4, 4, 2, 2, 1, 1, 1, 1, 1, 4, 4);
        Geometry odd = new Geometry(17, 40, 4, 4, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 4, 4);
        Geometry dcganAgain = new Geometry(19, 128, 8, 8, 256, 4, 4, 2, 2, 1, 1, 1, 1, 1, 4, 4);
        for (Geometry g : new Geometry[] {dcgan, odd, dcganAgain}) {
            assertTrue(ConvSmallMapF32.handles(g), g.toString());
            checkAgainstDefinition(g, r, g.cout() > 64 ? 7 : 1, g.cin() > 64 ? 5 : 1, ConvSmallMapF32::weightGrad);
        }
    }

    interface WeightGrad {
        void run(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g);
    }

    /**
     * Runs {@code kernel} on random operands into an offset output filled with garbage (overwritten, not added to) and
     * checks every coStep-th output and ciStep-th input channel against the weight gradient summed in float64.
     */
    static void checkAgainstDefinition(Geometry g, Random r, int coStep, int ciStep, WeightGrad kernel) {
        int n = g.n(), cin = g.cin(), cout = g.cout(), h = g.h(), w = g.w(), oh = g.oh(), ow = g.ow(), kh = g.kh(), kw = g.kw();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment x = random(arena, (long) n * cin * h * w, r), gy = random(arena, (long) n * cout * oh * ow, r);
            MemorySegment gw = arena.allocate((long) (cout * cin * kh * kw + 1) * Float.BYTES);
            gw.fill((byte) 0x7f);
            kernel.run(gy, 0, x, 0, gw, 1, g);
            for (int co = 0; co < cout; co += coStep) {
                for (int ci = 0; ci < cin; ci += ciStep) {
                    for (int ky = 0; ky < kh; ky++) {
                        for (int kx = 0; kx < kw; kx++) {
                            double sum = 0, scale = 0;
                            for (int b = 0; b < n; b++) {
                                for (int oy = 0; oy < oh; oy++) {
                                    int iy = oy * g.sh() - g.ph() + ky * g.dh();
                                    if (iy < 0 || iy >= h) continue;
                                    for (int ox = 0; ox < ow; ox++) {
                                        int ix = ox * g.sw() - g.pw() + kx * g.dw();
                                        if (ix < 0 || ix >= w) continue;
                                        double p = (double) gy.getAtIndex(F32, (((long) b * cout + co) * oh + oy) * ow + ox)
                                                * x.getAtIndex(F32, (((long) b * cin + ci) * h + iy) * w + ix);
                                        sum += p;
                                        scale += Math.abs(p);
                                    }
                                }
                            }
                            float got = gw.getAtIndex(F32, 1 + (((long) co * cin + ci) * kh + ky) * kw + kx);
                            assertEquals(sum, got, 1e-5 * Math.max(1, scale), g + " at " + co + "," + ci + "," + ky + "," + kx);
                        }
                    }
                }
            }
        }
    }

    private static MemorySegment random(Arena arena, long count, Random r) {
        MemorySegment s = arena.allocate(count * Float.BYTES, 64);
        for (long i = 0; i < count; i++) s.setAtIndex(F32, i, (float) r.nextGaussian());
        return s;
    }
}
