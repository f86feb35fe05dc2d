package org.jtorch.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/** Float32 lane arithmetic the kernels share: a deterministic sum of a vector's lanes. */
final class VectorF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();

    /** Shuffles pairing lane i with lane i ^ (FL/2), i ^ (FL/4), ..., i ^ 1: the folds of {@link #sumLanes}. */
    private static final VectorShuffle<Float>[] FOLDS = folds();

    private VectorF32() {}

    @SuppressWarnings("unchecked")
    private static VectorShuffle<Float>[] folds() {
        int steps = Integer.numberOfTrailingZeros(FL);
        VectorShuffle<Float>[] f = new VectorShuffle[steps];
        for (int k = 0; k < steps; k++) {
            int half = FL >> (k + 1);
            f[k] = VectorShuffle.fromOp(FS, i -> i ^ half);
        }
        return f;
    }

    /**
     * The sum of {@code v}'s lanes in a fixed pairwise order. {@code reduceLanes(ADD)} leaves the order
     * unspecified, and C2's intrinsic and the interpreter's fallback do differ, so results would change
     * as code gets compiled; this keeps training runs bit-for-bit reproducible within a JVM.
     */
    static float sumLanes(FloatVector v) {
        for (VectorShuffle<Float> fold : FOLDS) v = v.add(v.rearrange(fold));
        return v.lane(0);
    }

    /**
     * {@link #sumLanes} of lanes held in the first {@code FL} floats of an array (the scalar forms of short rows),
     * folded in the same pairs, so with the same bits; overwrites them.
     */
    static float sumLanes(float[] lanes) {
        for (int half = FL / 2; half >= 1; half /= 2) {
            for (int i = 0; i < half; i++) lanes[i] += lanes[i + half];
        }
        return lanes[0];
    }
}
