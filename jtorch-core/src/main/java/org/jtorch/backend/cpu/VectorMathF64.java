package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.Fn;

/**
 * The float64 Vector API form of each formula function, for generated float64 rows: {@link VectorMath}'s methods
 * over {@link DoubleVector}, named alike (the generator picks the class by the compute dtype). The transcendentals
 * are the Vector API's (SVML on x86), within 1 ulp of {@code StrictMath} where the tests sweep them, but exp, expm1
 * and sigmoid are {@link VectorExp}'s (the same bits interpreted and compiled), tanh is {@link VectorTanhF64}'s (the
 * stub call cost 3.6 times float32's per element); erf and the exact GELU are {@link VectorErfF64}'s (with eight
 * double lanes); functions without a double vector form here (rounding, and erf and GELU on narrower vectors) make
 * the generator decline, and the reference serves.
 */
public final class VectorMathF64 {
    private VectorMathF64() {}

    static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    public static final int LANES = DS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();

    static boolean supports(Fn fn) {
        return VectorMath.supports(fn) && (VectorErfF64.SUPPORTED || fn != Fn.ERF && fn != Fn.GELU && fn != Fn.GELU_BACKWARD);
    }

    // ---------------------------------------------------------------- loads, stores, loop bounds

    public static long upper(long len) {
        return len - len % LANES;
    }

    public static VectorMask<Double> mask(long i, long len) {
        return DS.indexInRange(i, len);
    }

    public static DoubleVector load(MemorySegment s, long off, long i) {
        return DoubleVector.fromMemorySegment(DS, s, off + 8 * i, LE);
    }

    public static DoubleVector loadMasked(MemorySegment s, long off, long i, VectorMask<Double> m) {
        return DoubleVector.fromMemorySegment(DS, s, off + 8 * i, LE, m);
    }

    public static void store(DoubleVector v, MemorySegment s, long off, long i) {
        v.intoMemorySegment(s, off + 8 * i, LE);
    }

    public static void storeMasked(DoubleVector v, MemorySegment s, long off, long i, VectorMask<Double> m) {
        v.intoMemorySegment(s, off + 8 * i, LE, m);
    }

    /** Bytes, as many lanes as doubles: a bool row step. */
    static final VectorSpecies<Byte> BS = VectorSpecies.of(byte.class, VectorShape.forBitSize(DS.vectorBitSize() / 8));

    public static void storeBool(DoubleVector v, MemorySegment s, long off, long i) {
        ByteVector.zero(BS).blend((byte) 1, v.compare(VectorOperators.NE, 0).cast(BS)).intoMemorySegment(s, off + i, LE);
    }

    public static void storeBoolMasked(DoubleVector v, MemorySegment s, long off, long i, VectorMask<Double> m) {
        ByteVector.zero(BS).blend((byte) 1, v.compare(VectorOperators.NE, 0).cast(BS)).intoMemorySegment(s, off + i, LE, m.cast(BS));
    }

    public static DoubleVector splatAt(MemorySegment s, long off) {
        return DoubleVector.broadcast(DS, s.get(ElementIO.F64, off));
    }

    public static DoubleVector param(double[] params, int j, double ifNone) {
        double v = params[j];
        return DoubleVector.broadcast(DS, v != v ? ifNone : v);
    }

    public static DoubleVector constant(double c) {
        return DoubleVector.broadcast(DS, c);
    }

    // ---------------------------------------------------------------- the functions, one per Fn

    public static DoubleVector neg(DoubleVector a) { return a.neg(); }
    public static DoubleVector abs(DoubleVector a) { return a.abs(); }
    public static DoubleVector add(DoubleVector a, DoubleVector b) { return a.add(b); }
    public static DoubleVector sub(DoubleVector a, DoubleVector b) { return a.sub(b); }
    public static DoubleVector mul(DoubleVector a, DoubleVector b) { return a.mul(b); }
    public static DoubleVector div(DoubleVector a, DoubleVector b) { return a.div(b); }
    public static DoubleVector exp(DoubleVector a) { return VectorExp.exp(a); }
    public static DoubleVector log(DoubleVector a) { return VectorLog.ENABLED ? VectorLog.log(a) : a.lanewise(VectorOperators.LOG); }
    public static DoubleVector log1p(DoubleVector a) { return VectorLog.ENABLED ? VectorLog.log1p(a) : a.lanewise(VectorOperators.LOG1P); }
    /** {@code log1p(exp(a))} under the deterministic switch ({@link VectorMath#log1pExp}). */
    public static DoubleVector log1pExp(DoubleVector a) { return VectorLog.log1pExp(a); }
    public static DoubleVector expm1(DoubleVector a) { return VectorExp.expm1(a); }
    public static DoubleVector tanh(DoubleVector a) { return VectorTanhF64.tanh(a); }
    public static DoubleVector sin(DoubleVector a) { return VectorExp.DETERMINISTIC ? VectorTrig.sin(a) : a.lanewise(VectorOperators.SIN); }
    public static DoubleVector cos(DoubleVector a) { return VectorExp.DETERMINISTIC ? VectorTrig.cos(a) : a.lanewise(VectorOperators.COS); }
    public static DoubleVector sqrt(DoubleVector a) { return a.sqrt(); }
    public static DoubleVector pow(DoubleVector a, DoubleVector b) { return cPow(a, b); }

    /**
     * C's {@code pow} ({@link Fn#cPow}, as ATen's): the intrinsic (SVML) already gives {@code pow(1, y) = 1} and
     * {@code pow(-1, inf) = 1}, but the interpreted Vector API follows {@code Math.pow} (NaN), so the result would
     * depend on whether the kernel had been compiled yet.
     */
    private static DoubleVector cPow(DoubleVector a, DoubleVector b) {
        VectorMask<Double> one = a.compare(VectorOperators.EQ, 1)
                .or(a.compare(VectorOperators.EQ, -1).and(b.abs().compare(VectorOperators.EQ, Double.POSITIVE_INFINITY)));
        return (VectorExp.DETERMINISTIC ? VectorPow.pow(a, b) : a.lanewise(VectorOperators.POW, b)).blend(1, one);
    }
    public static DoubleVector erf(DoubleVector a) { return VectorErfF64.erf(a); }
    public static DoubleVector gelu(DoubleVector a) { return VectorErfF64.gelu(a); }
    public static DoubleVector gelu_backward(DoubleVector g, DoubleVector x) { return VectorErfF64.geluBackward(g, x); }

    public static DoubleVector pow_scalar(DoubleVector a, DoubleVector e) {
        double p = e.lane(0);
        if (e.compare(VectorOperators.NE, p).anyTrue()) return powScalarLanes(a, e);
        if (p == 0.5) return a.sqrt();
        if (p == -0.5) return DoubleVector.broadcast(DS, 1).div(a.sqrt());
        if (p == 2) return a.mul(a);
        if (p == 3) return a.mul(a).mul(a);
        if (p == -1) return DoubleVector.broadcast(DS, 1).div(a);
        if (p == -2) return DoubleVector.broadcast(DS, 1).div(a.mul(a));
        return cPow(a, e);
    }

    /** The special cases lane by lane, for an exponent that is not the same in every lane. */
    private static DoubleVector powScalarLanes(DoubleVector a, DoubleVector e) {
        DoubleVector one = DoubleVector.broadcast(DS, 1);
        return cPow(a, e)
                .blend(one.div(a.mul(a)), e.compare(VectorOperators.EQ, -2))
                .blend(one.div(a), e.compare(VectorOperators.EQ, -1))
                .blend(a.mul(a).mul(a), e.compare(VectorOperators.EQ, 3))
                .blend(a.mul(a), e.compare(VectorOperators.EQ, 2))
                .blend(one.div(a.sqrt()), e.compare(VectorOperators.EQ, -0.5))
                .blend(a.sqrt(), e.compare(VectorOperators.EQ, 0.5));
    }

    public static DoubleVector sigmoid(DoubleVector a) {
        return DoubleVector.broadcast(DS, 1).div(VectorExp.exp(a.neg()).add(1));
    }

    public static DoubleVector relu(DoubleVector a) { return a.blend(0, a.compare(VectorOperators.LE, 0)); }

    public static DoubleVector threshold(DoubleVector a, DoubleVector b) { return a.blend(0, b.compare(VectorOperators.LE, 0)); }

    public static DoubleVector sign(DoubleVector a) {
        return DoubleVector.zero(DS).blend(1, a.compare(VectorOperators.GT, 0)).blend(-1, a.compare(VectorOperators.LT, 0));
    }

    public static DoubleVector isinf(DoubleVector a) { return ones(a.abs().compare(VectorOperators.EQ, Double.POSITIVE_INFINITY)); }
    public static DoubleVector isfinite(DoubleVector a) { return ones(a.abs().compare(VectorOperators.LT, Double.POSITIVE_INFINITY)); }
    public static DoubleVector gt(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.GT, b)); }
    public static DoubleVector ge(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.GE, b)); }
    public static DoubleVector lt(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.LT, b)); }
    public static DoubleVector le(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.LE, b)); }
    public static DoubleVector eq(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.EQ, b)); }
    public static DoubleVector ne(DoubleVector a, DoubleVector b) { return ones(a.compare(VectorOperators.NE, b)); }

    private static DoubleVector ones(VectorMask<Double> m) {
        return DoubleVector.zero(DS).blend(1, m);
    }

    public static DoubleVector select(DoubleVector cond, DoubleVector a, DoubleVector b) {
        return b.blend(a, cond.compare(VectorOperators.NE, 0));
    }

    public static DoubleVector max(DoubleVector a, DoubleVector b) { return a.max(b); }

    public static DoubleVector min(DoubleVector a, DoubleVector b) { return a.min(b); }

    public static DoubleVector clamp(DoubleVector x, DoubleVector lo, DoubleVector hi) {
        DoubleVector l = lo.blend(Double.NEGATIVE_INFINITY, lo.compare(VectorOperators.NE, lo));
        DoubleVector h = hi.blend(Double.POSITIVE_INFINITY, hi.compare(VectorOperators.NE, hi));
        return x.max(l).min(h).blend(x, x.compare(VectorOperators.NE, x));
    }
}
