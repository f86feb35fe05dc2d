package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels' {@code pow} under {@code -Djtorch.cpu.deterministicMath=true}: {@link StrictMath#pow} lane by lane
 * (float lanes through double, then rounded), the same bits interpreted and compiled, with {@code Math.pow}'s special
 * cases (the callers put C's {@code pow(1, y) = 1} and {@code pow(-1, inf) = 1} on top). The JDK's
 * {@code lanewise(POW)} is SVML in C2's code and {@code Math.pow} per lane in the fallback.
 *
 * <p>Scalar: no vector form yet (a float form through double lanes, {@code exp(y log x)}, would be accurate, but its
 * two halves' exp and log pass C2's node-count cutoff in one kernel; a double form needs log in more than double
 * precision). 17x (double) to 40x (float) slower than the JDK's vector pow (docs/BENCHMARKS.md, issue 20, eighteenth
 * session).
 */
final class VectorPow {
    private VectorPow() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;

    static FloatVector pow(FloatVector x, FloatVector y) {
        float[] xs = x.toArray(), ys = y.toArray();
        for (int i = 0; i < xs.length; i++) xs[i] = (float) StrictMath.pow(xs[i], ys[i]);
        return FloatVector.fromArray(FS, xs, 0);
    }

    static DoubleVector pow(DoubleVector x, DoubleVector y) {
        double[] xs = x.toArray(), ys = y.toArray();
        for (int i = 0; i < xs.length; i++) xs[i] = StrictMath.pow(xs[i], ys[i]);
        return DoubleVector.fromArray(DS, xs, 0);
    }
}
