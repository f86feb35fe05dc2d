package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.junit.jupiter.api.Test;

/**
 * {@link ConvWideWeightGradF32} on the shapes it computes but the selection does not give it (any kernel size,
 * stride, padding and dilation; {@code ConvolutionFastPathTest.wideWeightGradients} covers the selected ones through
 * the ops), against the weight gradient summed in float64 straight from its definition.
 */
class ConvWideWeightGradTest {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    /**
     * 20 random geometries: 64 or 128 channels each way (tiles of 6 output channels with spare rows), 1x1 to 5x5
     * kernels, strides 1-3, paddings 0-2 and dilations 1-2 along each axis, 1-12 pixel inputs and 1-9 images (several
     * groups of small images and a short last group).
     */
    @Test
    void randomGeometriesMatchTheDefinition() {
        assumeTrue(FloatVector.SPECIES_PREFERRED.length() == 16, "the tiles need 16 float lanes");
        Random r = new Random(2020);
        for (int i = 0; i < 20; ) {
            int cin = 64 << r.nextInt(2), cout = 64 << r.nextInt(2), kh = 1 + r.nextInt(5), kw = 1 + r.nextInt(5);
            int sh = 1 + r.nextInt(3), sw = 1 + r.nextInt(3), ph = r.nextInt(3), pw = r.nextInt(3);
            int dh = 1 + r.nextInt(2), dw = 1 + r.nextInt(2), h = 1 + r.nextInt(12), w = 1 + r.nextInt(12), n = 1 + r.nextInt(9);
            int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
            if (h + 2 * ph < dh * (kh - 1) + 1 || w + 2 * pw < dw * (kw - 1) + 1) continue;
            Geometry g = new Geometry(n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, 1, oh, ow);
            assertTrue(ConvWideWeightGradF32.computes(g), g.toString());
            check(g, r);
            i++;
        }
    }

    private static void check(Geometry g, Random r) {
        int n = g.n(), cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw(), oh = g.oh(), ow = g.ow();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment x = random(arena, (long) n * cin * g.h() * g.w(), r);
            MemorySegment gy = random(arena, (long) n * cout * oh * ow, r);
            // Offsets into the segments, as a view's would be.
            MemorySegment gw = arena.allocate((long) (cout * cin * kh * kw + 3) * Float.BYTES);
            gw.fill((byte) 0x7f); // overwritten, not added to
            ConvWideWeightGradF32.weightGrad(gy, 0, x, 0, gw, 3, g);
            for (int co = 0; co < cout; co++) {
                for (int ci = 0; ci < cin; ci++) {
                    for (int ky = 0; ky < kh; ky++) {
                        for (int kx = 0; kx < kw; kx++) {
                            double sum = 0, scale = 0;
                            for (int b = 0; b < n; b++) {
                                for (int oy = 0; oy < oh; oy++) {
                                    int iy = oy * g.sh() - g.ph() + ky * g.dh();
                                    if (iy < 0 || iy >= g.h()) continue;
                                    for (int ox = 0; ox < ow; ox++) {
                                        int ix = ox * g.sw() - g.pw() + kx * g.dw();
                                        if (ix < 0 || ix >= g.w()) continue;
                                        double p = (double) gy.getAtIndex(F32, ((long) (b * cout + co) * oh + oy) * ow + ox)
                                                * x.getAtIndex(F32, ((long) (b * cin + ci) * g.h() + iy) * g.w() + ix);
                                        sum += p;
                                        scale += Math.abs(p);
                                    }
                                }
                            }
                            float got = gw.getAtIndex(F32, 3 + ((long) (co * cin + ci) * kh + ky) * kw + kx);
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
