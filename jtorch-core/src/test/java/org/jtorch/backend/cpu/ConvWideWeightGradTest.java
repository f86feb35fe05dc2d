package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
            ConvWeightGradSumsTest.checkAgainstDefinition(g, r, 1, 1, ConvWideWeightGradF32::weightGrad);
            i++;
        }
    }
}
