package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.SpatialKernels.Pool2d;

/** Vector API paths of {@link CpuSpatialKernels} for contiguous float32 planes. */
final class SpatialF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    private SpatialF32() {}

    /** Sum of {@code n} floats from element {@code base}, accumulated in float lanes (as PyTorch's vectorised mean). */
    static double sum(MemorySegment s, long base, long n) {
        FloatVector acc = FloatVector.zero(FS);
        long i = 0;
        long off = base * 4;
        for (; i + FL <= n; i += FL) acc = acc.add(FloatVector.fromMemorySegment(FS, s, off + i * 4, LE));
        double r = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) r += s.getAtIndex(CpuSpatialKernels.F32, base + i);
        return r;
    }

    /** Sets {@code n} floats from element {@code base} to {@code v}. */
    static void fill(MemorySegment s, long base, long n, float v) {
        FloatVector fv = FloatVector.broadcast(FS, v);
        long i = 0;
        long off = base * 4;
        for (; i + FL <= n; i += FL) fv.intoMemorySegment(s, off + i * 4, LE);
        for (; i < n; i++) s.setAtIndex(CpuSpatialKernels.F32, base + i, v);
    }

    /** Whether {@link #maxPool} handles this geometry. */
    static boolean hasMaxPool(Pool2d g) {
        return false;
    }

    static void maxPool(MemorySegment is, long ib, MemorySegment os, MemorySegment xs, long ob, Pool2d g) {
        throw new UnsupportedOperationException();
    }
}
