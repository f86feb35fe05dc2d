package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpKernel;
import org.jtorch.op.ReductionOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The CPU's {@link ReductionOps#LOG_SOFTMAX_BACKWARD_DATA}: {@code out = g - exp(y) * sum(g)} along each line, in two
 * passes over a line while it sits in L1 (the sum of {@code g}, then the result), where the composite form ran four
 * kernels over the whole tensor and wrote two temporaries of its size. Lines are contiguous in every operand
 * ({@link ReductionOps#softmaxBackwardForm}); each line's sum runs in a fixed lane order, so results do not depend on the
 * thread count.
 */
final class LogSoftmaxBackward {
    private LogSoftmaxBackward() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int DL = DS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements of work per thread before the kernel goes parallel. */
    private static final long GRAIN = 32_768;

    static void register() {
        KernelRegistry.register(Device.Type.CPU, ReductionOps.LOG_SOFTMAX_BACKWARD_DATA.kernel(), (OpKernel) LogSoftmaxBackward::run,
                ReductionOps::softmaxBackwardForm);
    }

    private static void run(StridedView out, StridedView[] in, double[] scalars) {
        if (out.numel() == 0) return;
        StridedView g = in[0], y = in[1];
        int dim = g.dim() == 0 ? 0 : (int) scalars[0];
        LineLayout l = new LineLayout(dim, out, g, y);
        int n = Math.toIntExact(l.length);
        boolean f32 = g.dtype() == DType.FLOAT32;
        MemorySegment os = out.memory(), gs = g.memory(), ys = y.memory();
        Parallel.forRange(l.lines, Math.max(1, GRAIN / Math.max(1, 2L * n)), (begin, end) -> {
            for (long line = begin; line < end; line++) {
                if (f32) rowF32(gs, l.offset(1, line), ys, l.offset(2, line), os, l.offset(0, line), n);
                else rowF64(gs, l.offset(1, line), ys, l.offset(2, line), os, l.offset(0, line), n);
            }
        });
    }

    /** One float32 line: the sum of {@code g} in four lane accumulators folded in a fixed order, then {@code g - exp(y) s}. */
    static void rowF32(MemorySegment gs, long go, MemorySegment ys, long yo, MemorySegment os, long oo, int n) {
        FloatVector a0 = FloatVector.zero(FS), a1 = a0, a2 = a0, a3 = a0;
        int i = 0;
        // four chains: one add chain alone is latency-bound
        for (; i + 4 * FL <= n; i += 4 * FL) {
            a0 = a0.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * i, LE));
            a1 = a1.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * (i + FL), LE));
            a2 = a2.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * (i + 2 * FL), LE));
            a3 = a3.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * (i + 3 * FL), LE));
        }
        for (; i + FL <= n; i += FL) a0 = a0.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * i, LE));
        if (i < n) a1 = a1.add(FloatVector.fromMemorySegment(FS, gs, go + 4L * i, LE, FS.indexInRange(i, n)));
        FloatVector negSum = FloatVector.broadcast(FS, -VectorF32.sumLanes(a0.add(a1).add(a2.add(a3))));
        int j = 0;
        for (; j + FL <= n; j += FL) {
            FloatVector e = exp(FloatVector.fromMemorySegment(FS, ys, yo + 4L * j, LE));
            e.fma(negSum, FloatVector.fromMemorySegment(FS, gs, go + 4L * j, LE)).intoMemorySegment(os, oo + 4L * j, LE);
        }
        if (j < n) {
            VectorMask<Float> m = FS.indexInRange(j, n);
            FloatVector e = exp(FloatVector.fromMemorySegment(FS, ys, yo + 4L * j, LE, m));
            e.fma(negSum, FloatVector.fromMemorySegment(FS, gs, go + 4L * j, LE, m)).intoMemorySegment(os, oo + 4L * j, LE, m);
        }
    }

    /**
     * {@code exp(y)}: log-softmax's outputs are never positive, so {@link SoftmaxF32#expNonPositive} (the forward's exponential);
     * a vector with a positive lane (the op called on other values) takes the JDK's.
     */
    private static FloatVector exp(FloatVector y) {
        return y.compare(VectorOperators.GT, 0f).anyTrue() ? VectorExp.exp(y) : SoftmaxF32.expNonPositive(y);
    }

    /** One float64 line, as {@link #rowF32}. */
    static void rowF64(MemorySegment gs, long go, MemorySegment ys, long yo, MemorySegment os, long oo, int n) {
        DoubleVector a0 = DoubleVector.zero(DS), a1 = a0;
        int i = 0;
        for (; i + 2 * DL <= n; i += 2 * DL) {
            a0 = a0.add(DoubleVector.fromMemorySegment(DS, gs, go + 8L * i, LE));
            a1 = a1.add(DoubleVector.fromMemorySegment(DS, gs, go + 8L * (i + DL), LE));
        }
        double s = VectorF64.sumLanes(a0.add(a1));
        for (; i < n; i++) s += gs.get(ElementIO.F64, go + 8L * i);
        DoubleVector negSum = DoubleVector.broadcast(DS, -s);
        int j = 0;
        for (; j + DL <= n; j += DL) {
            DoubleVector e = VectorExp.exp(DoubleVector.fromMemorySegment(DS, ys, yo + 8L * j, LE));
            e.fma(negSum, DoubleVector.fromMemorySegment(DS, gs, go + 8L * j, LE)).intoMemorySegment(os, oo + 8L * j, LE);
        }
        for (; j < n; j++) {
            os.set(ElementIO.F64, oo + 8L * j, gs.get(ElementIO.F64, go + 8L * j) - Math.exp(ys.get(ElementIO.F64, yo + 8L * j)) * s);
        }
    }
}
