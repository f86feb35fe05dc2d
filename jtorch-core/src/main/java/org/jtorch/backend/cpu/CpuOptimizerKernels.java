package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.List;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OptimizerOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Fused optimizer updates for contiguous float32 CPU tensors: one pass over each parameter's memory,
 * reading and writing parameter, gradient and state once, with no temporary tensors.
 *
 * <p>Each kernel evaluates the same float32 operations, in the same order, as the optimizer's
 * composed tensor-op path (which follows PyTorch 1.13's single-tensor implementation), so both
 * paths round alike. Offsets are in bytes; the segments must not overlap except where stated.
 * Scalars arrive already rounded to float, as ATen's kernels receive them.
 *
 * <p>Registered as the CPU's kernels of {@link OptimizerOps}' ops: the lists are updated one tensor after another.
 */
public final class CpuOptimizerKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final long GRAIN = 1 << 15;

    private CpuOptimizerKernels() {}

    static void register() {
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.FUSED_SGD.kernel(), (l, t, s) -> sgd(l, OptimizerOps.SgdScalars.of(s)));
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.FUSED_ADAM.kernel(),
                (l, t, s) -> adam(l, OptimizerOps.AdamScalars.of(s, false)));
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.FUSED_ADAMW.kernel(),
                (l, t, s) -> adam(l, OptimizerOps.AdamScalars.of(s, true)));
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.FUSED_ADADELTA.kernel(),
                (l, t, s) -> adadelta(l, OptimizerOps.AdadeltaScalars.of(s)));
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.AMP_UNSCALE.kernel(),
                (l, t, s) -> unscaleAndCheckFinite(l[0], t[0], (float) readHost(t[1])));
        KernelRegistry.registerMutating(Device.Type.CPU, OptimizerOps.AMP_UPDATE_SCALE.kernel(), (l, t, s) -> updateScale(t[0], t[1], t[2], s));
    }

    private static MemorySegment seg(StridedView t) {
        return t == null ? null : t.memory();
    }

    private static long off(StridedView t) {
        return t == null ? 0 : t.offset() * 4;
    }

    private static StridedView at(StridedView[] list, int i) {
        return list.length == 0 ? null : list[i];
    }

    /** {@code _fused_sgd_}'s lists (params, grads, momentum buffers: empty without momentum), one tensor after another. */
    private static void sgd(StridedView[][] l, OptimizerOps.SgdScalars s) {
        for (int i = 0; i < l[0].length; i++) {
            StridedView p = l[0][i], g = l[1][i], b = at(l[2], i);
            sgdF32(seg(p), off(p), seg(g), off(g), seg(b), off(b), p.numel(), s.negLr(), s.weightDecay(), s.momentum(),
                    s.oneMinusDampening(), s.nesterov(), s.maximize(), s.firstStep());
        }
    }

    /** {@code _fused_adam(w)_}'s lists (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs: empty without AMSGrad). */
    private static void adam(StridedView[][] l, OptimizerOps.AdamScalars s) {
        for (int i = 0; i < l[0].length; i++) {
            StridedView p = l[0][i], g = l[1][i], m = l[2][i], v = l[3][i], x = at(l[4], i);
            adamF32(seg(p), off(p), seg(g), off(g), seg(m), off(m), seg(v), off(v), seg(x), off(x), p.numel(), s.paramScale(),
                    s.weightDecay(), s.beta1(), s.oneMinusBeta1(), s.beta2(), s.oneMinusBeta2(), s.bc2Sqrt(), s.eps(),
                    s.negStepSize(), s.maximize(), s.amsgrad());
        }
    }

    /**
     * Each gradient in turn: contiguous ones through {@link #unscaleAndCheckFinite(DType, MemorySegment,
     * long, long, float)} (one pass), strided ones element by element with the same arithmetic.
     */
    public static void unscaleAndCheckFinite(StridedView[] grads, StridedView foundInf, float invScale) {
        boolean found = false;
        for (StridedView g : grads) found |= unscaleAndCheckFinite(g, invScale);
        if (found) ElementCodec.setDouble(foundInf.dtype(), foundInf.memory(), foundInf.offset() * foundInf.dtype().byteSize(), 1.0);
    }

    /**
     * {@code _amp_update_scale_} on host memory ({@link OptimizerOps#updateScale}): reads and writes the three one-element
     * views; a device's kernel runs it on host copies.
     */
    public static void updateScale(StridedView scale, StridedView growthTracker, StridedView foundInf, double[] s) {
        double[] r = OptimizerOps.updateScale((float) readHost(scale), (int) readHost(growthTracker), readHost(foundInf) != 0, s[0],
                s[1], (long) s[2]);
        ElementCodec.setDouble(scale.dtype(), scale.memory(), scale.offset() * scale.dtype().byteSize(), r[0]);
        ElementCodec.setDouble(growthTracker.dtype(), growthTracker.memory(), growthTracker.offset() * growthTracker.dtype().byteSize(), r[1]);
    }

    /** The one element of a host view, as a double. */
    public static double readHost(StridedView v) {
        return ElementCodec.getDouble(v.dtype(), v.memory(), v.offset() * v.dtype().byteSize());
    }

    /** Unscales one CPU gradient in place; whether it held an inf or NaN. */
    private static boolean unscaleAndCheckFinite(StridedView grad, float invScale) {
        DType t = grad.dtype();
        if (grad.isContiguous()) {
            return unscaleAndCheckFinite(t, grad.memory(), grad.offset() * t.byteSize(), grad.numel(), invScale);
        }
        // A strided gradient (a view into a larger buffer): row by row, serially; such gradients are rare and small.
        ElementwiseIteration it = new ElementwiseIteration(grad);
        long stride = it.innerByteStride(0);
        boolean[] bad = {false};
        it.forEachRow(0, it.numel, (offsets, length) -> {
            for (long i = 0; i < length; i++) bad[0] |= unscaleElement(t, grad.memory(), offsets[0] + i * stride, invScale);
        });
        return bad[0];
    }

    /**
     * SGD: {@code d = ±g (+ wd*p)}; with momentum {@code buf = first ? d : buf*mu + d*(1-dampening)} and
     * {@code d = nesterov ? d + buf*mu : buf}; then {@code p += d * negLr}. {@code buf} is unused
     * (may be null) when {@code momentum == 0}.
     */
    public static void sgdF32(MemorySegment p, long po, MemorySegment g, long go, MemorySegment buf, long bo, long n,
                              float negLr, float weightDecay, float momentum, float oneMinusDampening, boolean nesterov,
                              boolean maximize, boolean firstStep) {
        Parallel.forRange(n, GRAIN, (begin, end) -> sgdRange(p, po, g, go, buf, bo, begin, end, negLr, weightDecay, momentum,
                oneMinusDampening, nesterov, maximize, firstStep));
    }

    private static void sgdRange(MemorySegment p, long po, MemorySegment g, long go, MemorySegment buf, long bo, long begin,
                                 long end, float negLr, float wd, float mu, float oneMinusDampening, boolean nesterov,
                                 boolean maximize, boolean first) {
        long i = begin;
        long upper = begin + FS.loopBound(end - begin);
        for (; i < upper; i += FS.length()) {
            long off = i * 4;
            FloatVector pv = FloatVector.fromMemorySegment(FS, p, po + off, LE);
            FloatVector d = FloatVector.fromMemorySegment(FS, g, go + off, LE);
            if (maximize) d = d.neg();
            if (wd != 0) d = d.add(pv.mul(wd));
            if (mu != 0) {
                FloatVector b = first ? d
                        : FloatVector.fromMemorySegment(FS, buf, bo + off, LE).mul(mu).add(d.mul(oneMinusDampening));
                b.intoMemorySegment(buf, bo + off, LE);
                d = nesterov ? d.add(b.mul(mu)) : b;
            }
            pv.add(d.mul(negLr)).intoMemorySegment(p, po + off, LE);
        }
        for (; i < end; i++) {
            long off = i * 4;
            float pv = p.get(ElementIO.F32, po + off);
            float d = g.get(ElementIO.F32, go + off);
            if (maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            if (mu != 0) {
                float b = first ? d : buf.get(ElementIO.F32, bo + off) * mu + d * oneMinusDampening;
                buf.set(ElementIO.F32, bo + off, b);
                d = nesterov ? d + b * mu : b;
            }
            p.set(ElementIO.F32, po + off, pv + d * negLr);
        }
    }

    /**
     * Adam and AdamW: {@code p *= paramScale} (AdamW's decoupled decay; 1 for Adam), {@code d = ±g (+ wd*p)}
     * (Adam's L2 decay; {@code weightDecay} 0 for AdamW), {@code m = m*b1 + d*(1-b1)},
     * {@code v = v*b2 + ((1-b2)*d)*d}, with AMSGrad {@code vmax = max(vmax, v)}, then
     * {@code p += (negStepSize*m) / (sqrt(v or vmax)/bc2Sqrt + eps)}. {@code vmax} may be null without AMSGrad.
     */
    public static void adamF32(MemorySegment p, long po, MemorySegment g, long go, MemorySegment m, long mo,
                               MemorySegment v, long vo, MemorySegment vmax, long xo, long n, float paramScale,
                               float weightDecay, float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2,
                               float bc2Sqrt, float eps, float negStepSize, boolean maximize, boolean amsgrad) {
        Parallel.forRange(n, GRAIN, (begin, end) -> adamRange(p, po, g, go, m, mo, v, vo, vmax, xo, begin, end, paramScale,
                weightDecay, beta1, oneMinusBeta1, beta2, oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad));
    }

    private static void adamRange(MemorySegment p, long po, MemorySegment g, long go, MemorySegment m, long mo,
                                  MemorySegment v, long vo, MemorySegment vmax, long xo, long begin, long end,
                                  float paramScale, float wd, float beta1, float oneMinusBeta1, float beta2,
                                  float oneMinusBeta2, float bc2Sqrt, float eps, float negStepSize, boolean maximize,
                                  boolean amsgrad) {
        long i = begin;
        long upper = begin + FS.loopBound(end - begin);
        for (; i < upper; i += FS.length()) {
            long off = i * 4;
            FloatVector pv = FloatVector.fromMemorySegment(FS, p, po + off, LE);
            if (paramScale != 1f) pv = pv.mul(paramScale);
            FloatVector d = FloatVector.fromMemorySegment(FS, g, go + off, LE);
            if (maximize) d = d.neg();
            if (wd != 0) d = d.add(pv.mul(wd));
            FloatVector mv = FloatVector.fromMemorySegment(FS, m, mo + off, LE).mul(beta1).add(d.mul(oneMinusBeta1));
            mv.intoMemorySegment(m, mo + off, LE);
            FloatVector vv = FloatVector.fromMemorySegment(FS, v, vo + off, LE).mul(beta2).add(d.mul(oneMinusBeta2).mul(d));
            vv.intoMemorySegment(v, vo + off, LE);
            if (amsgrad) {
                vv = FloatVector.fromMemorySegment(FS, vmax, xo + off, LE).max(vv);
                vv.intoMemorySegment(vmax, xo + off, LE);
            }
            FloatVector denom = vv.sqrt().div(bc2Sqrt).add(eps);
            pv.add(mv.mul(negStepSize).div(denom)).intoMemorySegment(p, po + off, LE);
        }
        for (; i < end; i++) {
            long off = i * 4;
            float pv = p.get(ElementIO.F32, po + off);
            if (paramScale != 1f) pv = pv * paramScale;
            float d = g.get(ElementIO.F32, go + off);
            if (maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            float mv = m.get(ElementIO.F32, mo + off) * beta1 + d * oneMinusBeta1;
            m.set(ElementIO.F32, mo + off, mv);
            float vv = v.get(ElementIO.F32, vo + off) * beta2 + d * oneMinusBeta2 * d;
            v.set(ElementIO.F32, vo + off, vv);
            if (amsgrad) {
                vv = Math.max(vmax.get(ElementIO.F32, xo + off), vv);
                vmax.set(ElementIO.F32, xo + off, vv);
            }
            float denom = (float) Math.sqrt(vv) / bc2Sqrt + eps;
            p.set(ElementIO.F32, po + off, pv + mv * negStepSize / denom);
        }
    }

    /** {@code _fused_adadelta_}'s lists (params, grads, square_avgs, acc_deltas), one tensor after another. */
    private static void adadelta(StridedView[][] l, OptimizerOps.AdadeltaScalars s) {
        for (int i = 0; i < l[0].length; i++) {
            StridedView p = l[0][i], g = l[1][i], sq = l[2][i], acc = l[3][i];
            adadeltaF32(seg(p), off(p), seg(g), off(g), seg(sq), off(sq), seg(acc), off(acc), p.numel(), s.negLr(), s.rho(),
                    s.oneMinusRho(), s.eps(), s.weightDecay(), s.maximize());
        }
    }

    /**
     * Adadelta: {@code d = ±g (+ wd*p)}, {@code s = s*rho + (d*(1-rho))*d},
     * {@code delta = sqrt(a + eps) / sqrt(s + eps) * d}, {@code a = a*rho + (delta*(1-rho))*delta},
     * {@code p += delta * negLr}: one pass instead of the composed path's eleven tensor ops and two temporaries.
     */
    public static void adadeltaF32(MemorySegment p, long po, MemorySegment g, long go, MemorySegment sq, long so,
                                   MemorySegment acc, long ao, long n, float negLr, float rho, float oneMinusRho, float eps,
                                   float weightDecay, boolean maximize) {
        Parallel.forRange(n, GRAIN, (begin, end) -> adadeltaRange(p, po, g, go, sq, so, acc, ao, begin, end, negLr, rho,
                oneMinusRho, eps, weightDecay, maximize));
    }

    private static void adadeltaRange(MemorySegment p, long po, MemorySegment g, long go, MemorySegment sq, long so,
                                      MemorySegment acc, long ao, long begin, long end, float negLr, float rho,
                                      float oneMinusRho, float eps, float wd, boolean maximize) {
        long i = begin;
        long upper = begin + FS.loopBound(end - begin);
        for (; i < upper; i += FS.length()) {
            long off = i * 4;
            FloatVector pv = FloatVector.fromMemorySegment(FS, p, po + off, LE);
            FloatVector d = FloatVector.fromMemorySegment(FS, g, go + off, LE);
            if (maximize) d = d.neg();
            if (wd != 0) d = d.add(pv.mul(wd));
            FloatVector s = FloatVector.fromMemorySegment(FS, sq, so + off, LE).mul(rho).add(d.mul(oneMinusRho).mul(d));
            s.intoMemorySegment(sq, so + off, LE);
            FloatVector a = FloatVector.fromMemorySegment(FS, acc, ao + off, LE);
            FloatVector delta = a.add(eps).sqrt().div(s.add(eps).sqrt()).mul(d);
            a.mul(rho).add(delta.mul(oneMinusRho).mul(delta)).intoMemorySegment(acc, ao + off, LE);
            pv.add(delta.mul(negLr)).intoMemorySegment(p, po + off, LE);
        }
        for (; i < end; i++) {
            long off = i * 4;
            float pv = p.get(ElementIO.F32, po + off);
            float d = g.get(ElementIO.F32, go + off);
            if (maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            float s = sq.get(ElementIO.F32, so + off) * rho + d * oneMinusRho * d;
            sq.set(ElementIO.F32, so + off, s);
            float a = acc.get(ElementIO.F32, ao + off);
            float delta = (float) Math.sqrt(a + eps) / (float) Math.sqrt(s + eps) * d;
            acc.set(ElementIO.F32, ao + off, a * rho + delta * oneMinusRho * delta);
            p.set(ElementIO.F32, po + off, pv + delta * negLr);
        }
    }

    // ------------------------------------------------------------------ GradScaler (org.jtorch.amp)

    /**
     * The GradScaler's fused unscale and inf/NaN check over one contiguous gradient of {@code n} elements
     * of {@code dtype} at byte offset {@code off}: {@code g *= invScale} in place (every element, finite
     * or not, as ATen's {@code _amp_foreach_non_finite_check_and_unscale_}), in one pass that also reports
     * whether any element was infinite or NaN before scaling. float16/bfloat16 multiply in float32 and
     * round once; float64 multiplies in double.
     */
    public static boolean unscaleAndCheckFinite(DType dtype, MemorySegment g, long off, long n, float invScale) {
        java.util.concurrent.atomic.AtomicBoolean found = new java.util.concurrent.atomic.AtomicBoolean();
        Parallel.forRange(n, GRAIN, (begin, end) -> {
            boolean bad = dtype == DType.FLOAT32 ? unscaleF32(g, off, begin, end, invScale)
                    : unscaleGeneric(dtype, g, off, begin, end, invScale);
            if (bad) found.set(true);
        });
        return found.get();
    }

    /** Non-finite detection rides along: {@code 0 * x} is NaN exactly when {@code x} is infinite or NaN. */
    private static boolean unscaleF32(MemorySegment g, long off, long begin, long end, float invScale) {
        FloatVector acc = FloatVector.zero(FS);
        long i = begin;
        long upper = begin + FS.loopBound(end - begin);
        for (; i < upper; i += FS.length()) {
            long o = off + i * 4;
            FloatVector v = FloatVector.fromMemorySegment(FS, g, o, LE);
            acc = acc.add(v.mul(0f));
            v.mul(invScale).intoMemorySegment(g, o, LE);
        }
        float tail = 0f;
        for (; i < end; i++) {
            long o = off + i * 4;
            float v = g.get(ElementIO.F32, o);
            tail += v * 0f;
            g.set(ElementIO.F32, o, v * invScale);
        }
        return Float.isNaN(acc.reduceLanes(jdk.incubator.vector.VectorOperators.ADD) + tail);
    }

    private static boolean unscaleGeneric(DType dtype, MemorySegment g, long off, long begin, long end, float invScale) {
        long es = dtype.byteSize();
        boolean bad = false;
        for (long i = begin; i < end; i++) bad |= unscaleElement(dtype, g, off + i * es, invScale);
        return bad;
    }

    /** {@code g *= invScale} for one element at byte offset {@code o}; whether it was infinite or NaN. */
    private static boolean unscaleElement(DType dtype, MemorySegment g, long o, float invScale) {
        double v = ElementCodec.getDouble(dtype, g, o);
        ElementCodec.setDouble(dtype, g, o, dtype == DType.FLOAT64 ? v * invScale : (double) ((float) v * invScale));
        return !Double.isFinite(v);
    }
}
