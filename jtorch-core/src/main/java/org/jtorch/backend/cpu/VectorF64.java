package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/** Float64 lane arithmetic the kernels share: a deterministic sum of a vector's lanes, as {@link VectorF32}'s. */
final class VectorF64 {
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int DL = DS.length();

    /** Shuffles pairing lane i with lane i ^ (DL/2), i ^ (DL/4), ..., i ^ 1: the folds of {@link #sumLanes}. */
    private static final VectorShuffle<Double>[] FOLDS = folds();

    private VectorF64() {}

    @SuppressWarnings("unchecked")
    private static VectorShuffle<Double>[] folds() {
        int steps = Integer.numberOfTrailingZeros(DL);
        VectorShuffle<Double>[] f = new VectorShuffle[steps];
        for (int k = 0; k < steps; k++) {
            int half = DL >> (k + 1);
            f[k] = VectorShuffle.fromOp(DS, i -> i ^ half);
        }
        return f;
    }

    /**
     * The sum of {@code v}'s lanes in a fixed pairwise order (the upper half folded onto the lower, repeatedly).
     * {@code reduceLanes(ADD)} leaves the order unspecified, and C2's intrinsic and the interpreter's fallback differ,
     * so a sum would change in its last bits as the code got compiled.
     */
    static double sumLanes(DoubleVector v) {
        for (VectorShuffle<Double> fold : FOLDS) v = v.add(v.rearrange(fold));
        return v.lane(0);
    }
}
