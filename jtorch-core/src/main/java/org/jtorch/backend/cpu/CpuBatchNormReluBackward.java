package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU's training-mode batch norm backward through the ReLU after it
 * ({@link org.jtorch.backend.NormalizationKernels#batchNormReluBackward}): the incoming gradient is masked where the
 * ReLU's input {@code y = (x - mean) * invstd * weight + bias} is not positive, recomputed from {@code x} as each
 * element is read, in both of batch norm's passes (the per-channel sums, then the input's gradient), so the masked
 * gradient is never written. Float32, contiguous {@code [n, c, s]} planes of at least one vector; each channel's sums
 * in a fixed order (plane by plane, a plane's f32 lanes joining a double total), so results do not depend on the
 * thread count.
 *
 * <p>With a {@code residual} ({@link org.jtorch.backend.NormalizationKernels#batchNormAddReluBackward}, the join of a
 * residual block, {@code relu(batch_norm(x) + residual)}) the ReLU's input is {@code y + residual}, and the masked
 * gradient, which is also the residual's gradient, is written to {@code masked} by the pass that gathers the sums;
 * the second pass reads it back instead of masking again.
 */
final class CpuBatchNormReluBackward {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Minimum elements of work per thread before a pass goes parallel. */
    private static final long GRAIN = 32_768;

    private CpuBatchNormReluBackward() {}

    /** Whether the operands fit this kernel: float32, contiguous {@code [n, c, s]} with {@code s} at least one vector. */
    static boolean fits(StridedView gradOut, StridedView x, long n, long c, long s, StridedView gradInput) {
        return gradOut.dtype() == DType.FLOAT32 && x.dtype() == DType.FLOAT32 && s >= FL && gradOut.isContiguous() && x.isContiguous()
                && (gradInput == null || gradInput.dtype() == DType.FLOAT32 && gradInput.isContiguous()) && gradOut.numel() == n * c * s
                && x.numel() == n * c * s;
    }

    /** {@link #fits}, and a residual and masked output of the same {@code [n, c, s]}, float32 and contiguous. */
    static boolean fitsJoin(StridedView gradOut, StridedView x, StridedView residual, StridedView masked, long n, long c, long s,
                            StridedView gradInput) {
        return fits(gradOut, x, n, c, s, gradInput) && fits(residual, masked, n, c, s, null);
    }

    static void run(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                    StridedView weight, StridedView bias, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        run(gradOut, x, null, null, n, c, s, mean, invstd, weight, bias, gradInput, gradWeight, gradBias);
    }

    /** {@link #run} of the join: {@code residual} and {@code masked} both given (see the class comment), or both null. */
    static void run(StridedView gradOut, StridedView x, StridedView residual, StridedView masked, long n, long c, long s, StridedView mean,
                    StridedView invstd, StridedView weight, StridedView bias, StridedView gradInput, StridedView gradWeight,
                    StridedView gradBias) {
        int cc = Math.toIntExact(c);
        double[] invstdValues = CpuNormalizationKernels.channels(invstd, cc, 1);
        float[] m = CpuNormalizationKernels.floats(CpuNormalizationKernels.channels(mean, cc, 0));
        float[] is = CpuNormalizationKernels.floats(invstdValues);
        float[] w = CpuNormalizationKernels.floats(CpuNormalizationKernels.channels(weight, cc, 1));
        float[] b = CpuNormalizationKernels.floats(CpuNormalizationKernels.channels(bias, cc, 0));
        double[] sumG = new double[cc];
        double[] sumGXmu = new double[cc];
        MemorySegment gs = gradOut.memory();
        MemorySegment xs = x.memory();
        long gb = gradOut.offset() * 4;
        long xb = x.offset() * 4;
        MemorySegment rs = residual == null ? null : residual.memory();
        long rb = residual == null ? 0 : residual.offset() * 4;
        MemorySegment ms = masked == null ? null : masked.memory();
        long mb = masked == null ? 0 : masked.offset() * 4;
        Parallel.forRange(c, Math.max(1, GRAIN / Math.max(1, 2 * n * s)), (begin, end) -> {
            for (long ch = begin; ch < end; ch++) {
                int k = (int) ch;
                double sg = 0;
                double sgx = 0;
                for (long i = 0; i < n; i++) {
                    long plane = (i * c + ch) * s * 4;
                    float[] part = rs == null ? planeSums(gs, gb + plane, xs, xb + plane, s, m[k], is[k], w[k], b[k])
                            : joinPlaneSums(gs, gb + plane, xs, xb + plane, rs, rb + plane, ms, mb + plane, s, m[k], is[k], w[k], b[k]);
                    sg += part[0];
                    sgx += part[1];
                }
                sumG[k] = sg;
                sumGXmu[k] = sgx;
            }
        });
        if (gradBias != null) CpuNormalizationKernels.storeChannels(gradBias, sumG);
        if (gradWeight != null) {
            double[] gw = new double[cc];
            for (int i = 0; i < cc; i++) gw[i] = sumGXmu[i] * invstdValues[i];
            CpuNormalizationKernels.storeChannels(gradWeight, gw);
        }
        if (gradInput == null) return;
        double count = (double) n * s;
        // gradInput = (gm - (x - mean) * k - mean(gm)) * invstd * weight, gm the masked gradient.
        float[] a = new float[cc];
        float[] kk = new float[cc];
        float[] mg = new float[cc];
        for (int i = 0; i < cc; i++) {
            a[i] = (float) (invstdValues[i] * w[i]);
            kk[i] = count > 0 ? (float) (sumGXmu[i] / count * invstdValues[i] * invstdValues[i]) : 0;
            mg[i] = count > 0 ? (float) (sumG[i] / count) : 0;
        }
        MemorySegment ds = gradInput.memory();
        long db = gradInput.offset() * 4;
        Parallel.forRange(n * c, Math.max(1, GRAIN / s), (begin, end) -> {
            for (long p = begin; p < end; p++) {
                int ch = (int) (p % c);
                if (ms == null) {
                    planeGradInput(gs, gb + p * s * 4, xs, xb + p * s * 4, ds, db + p * s * 4, s, m[ch], is[ch], w[ch], b[ch], kk[ch], mg[ch], a[ch]);
                } else {
                    maskedPlaneGradInput(ms, mb + p * s * 4, xs, xb + p * s * 4, ds, db + p * s * 4, s, m[ch], kk[ch], mg[ch], a[ch]);
                }
            }
        });
    }

    /** {@code sum(gm)} and {@code sum(gm * (x - mean))} over one plane, {@code gm} the gradient where the ReLU's input is positive. */
    private static float[] planeSums(MemorySegment gs, long go, MemorySegment xs, long xo, long len, float mean, float invstd, float weight,
                                     float bias) {
        FloatVector acc = FloatVector.zero(FS);
        FloatVector acc2 = FloatVector.zero(FS);
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector xm = ld(xs, xo + 4 * j).sub(mean);
            FloatVector g = masked(ld(gs, go + 4 * j), xm, invstd, weight, bias);
            acc = acc.add(g);
            acc2 = g.fma(xm, acc2);
        }
        float ts = 0;
        float tq = 0;
        for (; j < len; j++) {
            float xm = xs.get(ElementIO.F32, xo + 4 * j) - mean;
            if (xm * invstd * weight + bias > 0) {
                float g = gs.get(ElementIO.F32, go + 4 * j);
                ts += g;
                tq += g * xm;
            }
        }
        return new float[] {VectorF32.sumLanes(acc) + ts, VectorF32.sumLanes(acc2) + tq};
    }

    /**
     * {@link #planeSums} of the join: the mask where {@code y + residual} is positive, the masked gradient stored to
     * {@code ms} as it is summed. A loop of its own rather than flags in {@link #planeSums}' loop: each vector loop
     * stays free of branches on its operands.
     */
    private static float[] joinPlaneSums(MemorySegment gs, long go, MemorySegment xs, long xo, MemorySegment rs, long ro, MemorySegment ms,
                                         long mo, long len, float mean, float invstd, float weight, float bias) {
        FloatVector acc = FloatVector.zero(FS);
        FloatVector acc2 = FloatVector.zero(FS);
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector xm = ld(xs, xo + 4 * j).sub(mean);
            FloatVector z = xm.mul(invstd).mul(weight).add(bias).add(ld(rs, ro + 4 * j));
            FloatVector g = FloatVector.zero(FS).blend(ld(gs, go + 4 * j), z.compare(VectorOperators.GT, 0f));
            g.intoMemorySegment(ms, mo + 4 * j, LE);
            acc = acc.add(g);
            acc2 = g.fma(xm, acc2);
        }
        float ts = 0;
        float tq = 0;
        for (; j < len; j++) {
            float xm = xs.get(ElementIO.F32, xo + 4 * j) - mean;
            float g = xm * invstd * weight + bias + rs.get(ElementIO.F32, ro + 4 * j) > 0 ? gs.get(ElementIO.F32, go + 4 * j) : 0;
            ms.set(ElementIO.F32, mo + 4 * j, g);
            ts += g;
            tq += g * xm;
        }
        return new float[] {VectorF32.sumLanes(acc) + ts, VectorF32.sumLanes(acc2) + tq};
    }

    /** {@link #planeGradInput} from the already masked gradient {@code gm} (the join's second pass). */
    private static void maskedPlaneGradInput(MemorySegment gms, long go, MemorySegment xs, long xo, MemorySegment ds, long dO, long len,
                                             float mean, float k, float meanG, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector xm = ld(xs, xo + 4 * j).sub(mean);
            ld(gms, go + 4 * j).sub(xm.mul(k)).sub(meanG).mul(a).intoMemorySegment(ds, dO + 4 * j, LE);
        }
        for (; j < len; j++) {
            float xm = xs.get(ElementIO.F32, xo + 4 * j) - mean;
            ds.set(ElementIO.F32, dO + 4 * j, (gms.get(ElementIO.F32, go + 4 * j) - xm * k - meanG) * a);
        }
    }

    private static void planeGradInput(MemorySegment gs, long go, MemorySegment xs, long xo, MemorySegment ds, long dO, long len, float mean,
                                       float invstd, float weight, float bias, float k, float meanG, float a) {
        long upper = len - len % FL;
        long j = 0;
        for (; j < upper; j += FL) {
            FloatVector xm = ld(xs, xo + 4 * j).sub(mean);
            masked(ld(gs, go + 4 * j), xm, invstd, weight, bias).sub(xm.mul(k)).sub(meanG).mul(a).intoMemorySegment(ds, dO + 4 * j, LE);
        }
        for (; j < len; j++) {
            float xm = xs.get(ElementIO.F32, xo + 4 * j) - mean;
            float g = xm * invstd * weight + bias > 0 ? gs.get(ElementIO.F32, go + 4 * j) : 0;
            ds.set(ElementIO.F32, dO + 4 * j, (g - xm * k - meanG) * a);
        }
    }

    private static FloatVector ld(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    /** The incoming gradient where the ReLU's input {@code xm * invstd * weight + bias} is positive, else 0. */
    private static FloatVector masked(FloatVector g, FloatVector xm, float invstd, float weight, float bias) {
        return FloatVector.zero(FS).blend(g, xm.mul(invstd).mul(weight).add(bias).compare(VectorOperators.GT, 0f));
    }
}
