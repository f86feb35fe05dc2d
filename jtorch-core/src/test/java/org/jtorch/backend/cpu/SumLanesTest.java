package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/** Lane sums follow one fixed pairwise order, whatever compiles the code (so results are reproducible). */
class SumLanesTest {
    /** Folds the upper half onto the lower half until one value is left: the order sumLanes promises. */
    private static float pairwise(float[] lanes) {
        float[] a = lanes.clone();
        for (int half = a.length / 2; half >= 1; half /= 2) {
            for (int i = 0; i < half; i++) a[i] = a[i] + a[i + half];
        }
        return a[0];
    }

    @Test
    void sumsLanesInTheDocumentedPairwiseOrder() {
        int n = FloatVector.SPECIES_PREFERRED.length();
        Random r = new Random(1);
        for (int trial = 0; trial < 1000; trial++) {
            float[] lanes = new float[n];
            for (int i = 0; i < n; i++) lanes[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(8) - 4));
            FloatVector v = FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, lanes, 0);
            assertEquals(Float.floatToIntBits(pairwise(lanes)), Float.floatToIntBits(VectorF32.sumLanes(v)), "trial " + trial);
        }
    }

    @Test
    void sumsDoubleLanesInTheDocumentedPairwiseOrder() {
        int n = jdk.incubator.vector.DoubleVector.SPECIES_PREFERRED.length();
        Random r = new Random(2);
        for (int trial = 0; trial < 1000; trial++) {
            double[] lanes = new double[n];
            for (int i = 0; i < n; i++) lanes[i] = r.nextGaussian() * Math.pow(10, r.nextInt(16) - 8);
            double[] a = lanes.clone();
            for (int half = n / 2; half >= 1; half /= 2) {
                for (int i = 0; i < half; i++) a[i] = a[i] + a[i + half];
            }
            var v = jdk.incubator.vector.DoubleVector.fromArray(jdk.incubator.vector.DoubleVector.SPECIES_PREFERRED, lanes, 0);
            assertEquals(Double.doubleToLongBits(a[0]), Double.doubleToLongBits(VectorF64.sumLanes(v)), "trial " + trial);
        }
    }
}
