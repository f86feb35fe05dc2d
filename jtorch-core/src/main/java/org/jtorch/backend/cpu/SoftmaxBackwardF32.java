package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Softmax's gradient along one contiguous float32 row, {@code out = y (g - sum(g y))}, in two passes over the row while
 * it sits in L1 (the dot product, then the result), where the derivative as ops runs three kernels over the whole
 * tensor and stores two temporaries of its size. The output may be {@code g} itself: each element is read before it is
 * written. The dot product runs in a fixed lane order, so results do not depend on the thread count.
 */
final class SoftmaxBackwardF32 {
    private SoftmaxBackwardF32() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    /** One row of {@code n} values: {@code g} at byte offset {@code go}, {@code y} at {@code yo}, the result at {@code oo}. */
    static void row(MemorySegment gs, long go, MemorySegment ys, long yo, MemorySegment os, long oo, int n) {
        FloatVector a0 = FloatVector.zero(FS), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        // four chains: one fma chain alone is latency-bound
        for (; i + 4 * FL <= n; i += 4 * FL) {
            a0 = load(gs, go, i).fma(load(ys, yo, i), a0);
            a1 = load(gs, go, i + FL).fma(load(ys, yo, i + FL), a1);
            a2 = load(gs, go, i + 2 * FL).fma(load(ys, yo, i + 2 * FL), a2);
            a3 = load(gs, go, i + 3 * FL).fma(load(ys, yo, i + 3 * FL), a3);
        }
        for (; i + FL <= n; i += FL) a0 = load(gs, go, i).fma(load(ys, yo, i), a0);
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            a1 = FloatVector.fromMemorySegment(FS, gs, go + 4L * i, LE, m).fma(FloatVector.fromMemorySegment(FS, ys, yo + 4L * i, LE, m), a1);
        }
        FloatVector dot = FloatVector.broadcast(FS, VectorF32.sumLanes(a0.add(a1).add(a2.add(a3))));
        int j = 0;
        for (; j + FL <= n; j += FL) load(ys, yo, j).mul(load(gs, go, j).sub(dot)).intoMemorySegment(os, oo + 4L * j, LE);
        if (j < n) {
            VectorMask<Float> m = FS.indexInRange(j, n);
            FloatVector y = FloatVector.fromMemorySegment(FS, ys, yo + 4L * j, LE, m);
            y.mul(FloatVector.fromMemorySegment(FS, gs, go + 4L * j, LE, m).sub(dot)).intoMemorySegment(os, oo + 4L * j, LE, m);
        }
    }

    private static FloatVector load(MemorySegment s, long base, int i) {
        return FloatVector.fromMemorySegment(FS, s, base + 4L * i, LE);
    }
}
