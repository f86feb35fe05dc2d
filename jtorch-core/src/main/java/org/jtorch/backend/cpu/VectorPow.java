package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels' {@code pow} under {@code -Djtorch.cpu.deterministicMath=true}, the same bits interpreted and compiled,
 * with {@code Math.pow}'s special cases (the callers put C's {@code pow(1, y) = 1} and {@code pow(-1, inf) = 1} on
 * top). The JDK's {@code lanewise(POW)} is SVML in C2's code and {@code Math.pow} per lane in the fallback.
 *
 * <p>Float lanes: {@code 2^(y log2 |x|)} in double lanes, each half of the vector in turn, then rounded to float, within
 * an ulp of {@code StrictMath.pow} ({@code VectorPowTest}). {@code log2 |x| = k + 2 atanh(s) / ln 2} with
 * {@code |x| = 2^k m}, m in {@code [sqrt(2)/2, sqrt(2))}, {@code s = (m - 1) / (m + 1)} and atanh's series to
 * {@code s^17} (truncation under 2^-44); {@code w = y log2 |x|} (relative error about 2^-50, under 2^-42 absolute
 * where the result is a finite nonzero float), {@code 2^w = 2^n 2^r}, {@code r = w - n} exact, {@code 2^r} by its Taylor
 * polynomial of degree 11 (under 2^-47). The double result is 2^-42 from the exact power, so its rounding to float is
 * the correctly rounded float but where the exact value lies within 2^-42 relative of a halfway point. The sign: an
 * odd integer y keeps x's sign bit; a negative x with a non-integer y is NaN. A zero x: y is scaled by 2^200 first, so
 * that w is far past the clamp (+0 for y > 0, +inf for y < 0) and 0^0 = 1. A vector with an infinite or NaN lane in x
 * or y takes {@link StrictMath#pow} lane by lane (float through double).
 *
 * <p>The two halves are written out rather than one helper called twice: after the first half the compile's node count
 * is past C2's {@code NodeCountInliningCutoff}, so a second call of a helper would be refused and its vectors boxed; the
 * Vector API's own methods are force-inlined. The method itself (830 bytes of bytecode) is too big for C2 to inline
 * into a kernel ("hot method too big"): the kernel boxes x, y and the result at each call. 24 ms for 4M floats
 * against the JDK's 4.9 (positive bases; 40-250 ms with negative ones) and the scalar form's 365 (docs/BENCHMARKS.md,
 * issue 20, nineteenth session). Getting under FreqInlineSize is not enough: a 292-byte form (the halves as a two-pass
 * loop) was inlined only until C2 had compiled pow on its own (the C1-compiled kernels call it first), 3,824 bytes of
 * code, past InlineSmallCode (2,500); from then on C2 refuses it ("already compiled into a big method"; twentieth
 * session).
 *
 * <p>Double lanes: fdlibm's pow, StrictMath's bits (see {@link #pow(DoubleVector, DoubleVector)}).
 */
final class VectorPow {
    private VectorPow() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;

    private static final FloatVector INF_F = FloatVector.broadcast(FS, Float.POSITIVE_INFINITY), ONE_F = FloatVector.broadcast(FS, 1f),
            MINUS_ONE_F = FloatVector.broadcast(FS, -1f), NAN_F = FloatVector.broadcast(FS, Float.NaN);
    /** y's magnitude capped where every float is an even integer, so that its conversion to int is exact. */
    private static final FloatVector INT_CAP_F = FloatVector.broadcast(FS, 0x1p30f), TWO100_F = FloatVector.broadcast(FS, 0x1p100f);

    /** As {@link VectorLog}'s double reduction: 1 + f in [sqrt(2)/2, sqrt(2)), k exact as a double. */
    private static final LongVector SQRT_HALF_SHIFT_D = LongVector.broadcast(LS, (0x3ff00000L - 0x3fe6a09eL) << 32),
            MANTISSA_D = LongVector.broadcast(LS, 0x000fffffffffffffL), SQRT_HALF_BITS_D = LongVector.broadcast(LS, 0x3fe6a09eL << 32),
            K_BIAS_D = LongVector.broadcast(LS, Double.doubleToRawLongBits(0x1.8p52) - 1023);
    private static final DoubleVector ROUND_D = d(0x1.8p52), ONE_D = d(1), TWO_D = d(2);
    /** {@code log2(1 + f) = s P(s^2)}: P's coefficients {@code 2 / ((2j + 1) ln 2)}, j = 0..8. */
    private static final DoubleVector L0, L1, L2, L3, L4, L5, L6, L7, L8;
    /** w clamped to +-200: 2^n stays a normal double, and the float result is 0 or infinite past +-150 anyway. */
    private static final DoubleVector W_LOW = d(-200), W_HIGH = d(200);
    /** 1.5 * 2^52 + 1023: adding it rounds w to an integer n held, biased, in the low bits. */
    private static final DoubleVector ROUND_BIASED_D = d(0x1.8p52 + 1023);
    /** {@code 2^r = sum (r ln 2)^j / j!}, j = 0..11. */
    private static final DoubleVector E0, E1, E2, E3, E4, E5, E6, E7, E8, E9, E10, E11;

    static {
        double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
        double[] l = new double[9];
        for (int j = 0; j < l.length; j++) l[j] = 2 * log2e / (2 * j + 1);
        L0 = d(l[0]); L1 = d(l[1]); L2 = d(l[2]); L3 = d(l[3]); L4 = d(l[4]); L5 = d(l[5]); L6 = d(l[6]); L7 = d(l[7]); L8 = d(l[8]);
        double[] e = new double[12];
        e[0] = 1;
        for (int j = 1; j < e.length; j++) e[j] = e[j - 1] * ln2 / j;
        E0 = d(e[0]); E1 = d(e[1]); E2 = d(e[2]); E3 = d(e[3]); E4 = d(e[4]); E5 = d(e[5]); E6 = d(e[6]); E7 = d(e[7]); E8 = d(e[8]);
        E9 = d(e[9]); E10 = d(e[10]); E11 = d(e[11]);
    }

    private static DoubleVector d(double v) {
        return DoubleVector.broadcast(DS, v);
    }

    static FloatVector pow(FloatVector x, FloatVector y) {
        FloatVector a = x.abs();
        if (!a.compare(VectorOperators.LT, INF_F).and(y.abs().compare(VectorOperators.LT, INF_F)).allTrue()) return strictPow(x, y);
        FloatVector sign = signOf(x, y);
        FloatVector yz = y.blend(y.mul(TWO100_F).mul(TWO100_F), a.compare(VectorOperators.EQ, 0f));

        // The low half: log2 |x|, w = y log2 |x|, 2^w.
        DoubleVector xd = (DoubleVector) a.convertShape(VectorOperators.F2D, DS, 0);
        LongVector ix = xd.reinterpretAsLongs().add(SQRT_HALF_SHIFT_D);
        DoubleVector k = ix.lanewise(VectorOperators.LSHR, 52).add(K_BIAS_D).reinterpretAsDoubles().sub(ROUND_D);
        DoubleVector f = ix.and(MANTISSA_D).add(SQRT_HALF_BITS_D).reinterpretAsDoubles().sub(ONE_D);
        DoubleVector s = f.div(f.add(TWO_D));
        DoubleVector z = s.mul(s);
        DoubleVector p = z.fma(L8, L7).fma(z, L6).fma(z, L5).fma(z, L4).fma(z, L3).fma(z, L2).fma(z, L1).fma(z, L0);
        DoubleVector w = s.fma(p, k).mul((DoubleVector) yz.convertShape(VectorOperators.F2D, DS, 0)).max(W_LOW).min(W_HIGH);
        DoubleVector t = w.add(ROUND_BIASED_D);
        DoubleVector r = w.sub(t.sub(ROUND_BIASED_D));
        DoubleVector e = r.fma(E11, E10).fma(r, E9).fma(r, E8).fma(r, E7).fma(r, E6).fma(r, E5).fma(r, E4).fma(r, E3).fma(r, E2)
                .fma(r, E1).fma(r, E0).mul(t.reinterpretAsLongs().lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());
        FloatVector low = (FloatVector) e.convertShape(VectorOperators.D2F, FS, 0);

        // The high half, the same steps.
        xd = (DoubleVector) a.convertShape(VectorOperators.F2D, DS, 1);
        ix = xd.reinterpretAsLongs().add(SQRT_HALF_SHIFT_D);
        k = ix.lanewise(VectorOperators.LSHR, 52).add(K_BIAS_D).reinterpretAsDoubles().sub(ROUND_D);
        f = ix.and(MANTISSA_D).add(SQRT_HALF_BITS_D).reinterpretAsDoubles().sub(ONE_D);
        s = f.div(f.add(TWO_D));
        z = s.mul(s);
        p = z.fma(L8, L7).fma(z, L6).fma(z, L5).fma(z, L4).fma(z, L3).fma(z, L2).fma(z, L1).fma(z, L0);
        w = s.fma(p, k).mul((DoubleVector) yz.convertShape(VectorOperators.F2D, DS, 1)).max(W_LOW).min(W_HIGH);
        t = w.add(ROUND_BIASED_D);
        r = w.sub(t.sub(ROUND_BIASED_D));
        e = r.fma(E11, E10).fma(r, E9).fma(r, E8).fma(r, E7).fma(r, E6).fma(r, E5).fma(r, E4).fma(r, E3).fma(r, E2)
                .fma(r, E1).fma(r, E0).mul(t.reinterpretAsLongs().lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());
        FloatVector high = (FloatVector) e.convertShape(VectorOperators.D2F, FS, -1);

        // The halves' other lanes are +0, and the magnitudes are never -0: the sum is the two halves exactly.
        return low.add(high).mul(sign);
    }

    /**
     * 1, -1 where the result takes x's sign (x's sign bit set, -0 included, and y an odd integer), NaN where x is
     * negative and y not an integer.
     */
    private static FloatVector signOf(FloatVector x, FloatVector y) {
        FloatVector capped = y.abs().min(INT_CAP_F);
        IntVector yi = (IntVector) capped.convert(VectorOperators.F2I, 0);
        VectorMask<Float> integer = yi.convert(VectorOperators.I2F, 0).compare(VectorOperators.EQ, capped);
        VectorMask<Float> odd = yi.and(1).compare(VectorOperators.NE, 0).cast(FS).and(integer);
        VectorMask<Float> negative = x.reinterpretAsInts().compare(VectorOperators.LT, 0).cast(FS);
        return ONE_F.blend(MINUS_ONE_F, negative.and(odd)).blend(NAN_F, x.compare(VectorOperators.LT, 0f).andNot(integer));
    }

    /** {@link StrictMath#pow} lane by lane, in double, rounded to float. */
    private static FloatVector strictPow(FloatVector x, FloatVector y) {
        float[] xs = x.toArray(), ys = y.toArray();
        for (int i = 0; i < xs.length; i++) xs[i] = (float) StrictMath.pow(xs[i], ys[i]);
        return FloatVector.fromArray(FS, xs, 0);
    }

    /** fdlibm's pow (StrictMath's): |y| above this takes its branch for huge exponents (here, StrictMath itself). */
    private static final double Y_HUGE = 0x1.00000ffffffffp31;
    /** fdlibm's log2: 2/(3 ln 2) in one piece and as a float head and its tail; log2(1.5) as a head and tail. */
    private static final double CP = 0x1.ec709dc3a03fdp-1, CP_H = 0x1.ec709ep-1, CP_L = -0x1.e2fe0145b01f5p-28,
            DP_H = 0x1.2b8034p-1, DP_L = 0x1.cfdeb43cfd006p-27;
    /** fdlibm's polynomial for (3/2)(log(x) - 2s - 2/3 s^3). */
    private static final double LG1 = 0x1.3333333333303p-1, LG2 = 0x1.b6db6db6fabffp-2, LG3 = 0x1.55555518f264dp-2,
            LG4 = 0x1.17460a91d4101p-2, LG5 = 0x1.d864a93c9db65p-3, LG6 = 0x1.a7e284a454eefp-3;
    /** fdlibm's exp2: the remez polynomial and ln 2 in one piece, as a head and its tail. */
    private static final double P1 = 0x1.555555555553ep-3, P2 = -0x1.6c16c16bebd93p-9, P3 = 0x1.1566aaf25de2cp-14,
            P4 = -0x1.bbd41c5d26bf1p-20, P5 = 0x1.6376972bea4d0p-25, LN2 = 0x1.62e42fefa39efp-1, LN2_H = 0x1.62e43p-1,
            LN2_L = -0x1.05c610ca86c39p-29;
    /** A double's high word (fdlibm's __HI), as the high half of a long; clearing the rest is fdlibm's __LO(v, 0). */
    private static final long HIGH_WORD = 0xffffffff00000000L;
    private static final DoubleVector ONE_DV = d(1), NAN_DV = d(Double.NaN);

    /**
     * fdlibm's pow ({@link StrictMath#pow}) in double lanes, the same operations in the same order lane by lane (no
     * fused multiply-adds), so the same bits as StrictMath's. fdlibm's branches are blends; where a lane would take
     * one of its rare branches (x or y infinite or NaN, x subnormal, |y| above about 2^31, a result that overflows or
     * underflows or is subnormal) the vector takes {@link StrictMath#pow} lane by lane. Zero x and fdlibm's exponents
     * 0, 1, -1, 2 and 0.5 are blended in as fdlibm returns them. Too big to be inlined into a kernel (1,607 bytes), so
     * boxed at each call: 50 ms for 2M doubles against the JDK's 9.8 and StrictMath lane by lane's 286
     * (docs/BENCHMARKS.md, issue 20, twentieth session).
     */
    static DoubleVector pow(DoubleVector x, DoubleVector y) {
        DoubleVector ax = x.abs(), ay = y.abs();
        VectorMask<Double> zero = ax.compare(VectorOperators.EQ, 0);
        if (!ax.compare(VectorOperators.LT, Double.POSITIVE_INFINITY).and(ay.compare(VectorOperators.LE, Y_HUGE)).allTrue()
                || ax.compare(VectorOperators.LT, Double.MIN_NORMAL).andNot(zero).anyTrue()) {
            return strictPow(x, y);
        }
        LongVector xBits = x.reinterpretAsLongs();
        // fdlibm's y_is_int where x is negative: |y| < 2^32 here, so its conversion to long is exact.
        LongVector yLong = (LongVector) ay.convert(VectorOperators.D2L, 0);
        VectorMask<Double> integer = ((DoubleVector) yLong.convert(VectorOperators.L2D, 0)).compare(VectorOperators.EQ, ay)
                .and(ay.compare(VectorOperators.GE, 1));
        VectorMask<Double> negative = xBits.compare(VectorOperators.LT, 0).cast(DS);
        VectorMask<Double> negativeOdd = yLong.and(1).compare(VectorOperators.NE, 0).cast(DS).and(integer).and(negative);

        // log2 |x| = t1 + t2: |x| = 2^n m, m reduced against 1 or 1.5, ss = (m - bp) / (m + bp) = s_h + s_l.
        LongVector ix = xBits.lanewise(VectorOperators.LSHR, 32).and(0x7fffffffL);
        LongVector j = ix.and(0xfffffL);
        VectorMask<Long> above = j.compare(VectorOperators.GE, 0xBB67AL);
        VectorMask<Long> k1 = j.compare(VectorOperators.GT, 0x3988EL).andNot(above);
        VectorMask<Double> k1d = k1.cast(DS);
        LongVector n = ix.lanewise(VectorOperators.LSHR, 20).sub(0x3ffL).lanewise(VectorOperators.ADD, 1L, above);
        ix = j.or(0x3ff00000L).lanewise(VectorOperators.SUB, 0x00100000L, above);
        DoubleVector m = ix.lanewise(VectorOperators.LSHL, 32).or(xBits.and(0xffffffffL)).reinterpretAsDoubles();
        DoubleVector bp = ONE_DV.blend(1.5, k1d);
        DoubleVector u = m.sub(bp);
        DoubleVector v = ONE_DV.div(m.add(bp));
        DoubleVector ss = u.mul(v);
        DoubleVector sH = ss.reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        DoubleVector tH = ix.lanewise(VectorOperators.ASHR, 1).or(0x20000000L).add(0x00080000L)
                .lanewise(VectorOperators.ADD, 1L << 18, k1).lanewise(VectorOperators.LSHL, 32).reinterpretAsDoubles();
        DoubleVector tL = m.sub(tH.sub(bp));
        DoubleVector sL = v.mul(u.sub(sH.mul(tH)).sub(sH.mul(tL)));
        DoubleVector s2 = ss.mul(ss);
        DoubleVector r = s2.mul(s2).mul(s2.mul(LG6).add(LG5).mul(s2).add(LG4).mul(s2).add(LG3).mul(s2).add(LG2).mul(s2).add(LG1));
        r = r.add(sL.mul(sH.add(ss)));
        s2 = sH.mul(sH);
        tH = s2.add(3.0).add(r).reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        tL = r.sub(tH.sub(3.0).sub(s2));
        u = sH.mul(tH);
        v = sL.mul(tH).add(tL.mul(ss));
        DoubleVector pH = u.add(v).reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        DoubleVector pL = v.sub(pH.sub(u));
        DoubleVector dpH = d(0).blend(DP_H, k1d), dpL = d(0).blend(DP_L, k1d);
        DoubleVector zH = pH.mul(CP_H);
        DoubleVector zL = pH.mul(CP_L).add(pL.mul(CP)).add(dpL);
        DoubleVector t = (DoubleVector) n.convert(VectorOperators.L2D, 0);
        DoubleVector t1 = zH.add(zL).add(dpH).add(t).reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        DoubleVector t2 = zL.sub(t1.sub(t).sub(dpH).sub(zH));

        // y log2 |x| = pH + pL, y split into a head (y1) and a tail.
        DoubleVector y1 = y.reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        pL = y.sub(y1).mul(t1).add(y.mul(t2));
        pH = y1.mul(t1);
        DoubleVector z = pL.add(pH);
        VectorMask<Double> outOfRange = z.compare(VectorOperators.GE, 1024).or(z.compare(VectorOperators.LE, -1075));

        // 2^(pH + pL) = 2^nz 2^(pH + pL - nz), nz the integer nearest z where |z| > 1/2, from z's bits as fdlibm.
        LongVector jz = z.reinterpretAsLongs().lanewise(VectorOperators.ASHR, 32);
        LongVector iz = jz.and(0x7fffffffL);
        VectorMask<Long> reduce = iz.compare(VectorOperators.GT, 0x3fe00000L);
        LongVector nz = jz.add(LongVector.broadcast(LS, 0x00100000L).lanewise(VectorOperators.ASHR,
                iz.lanewise(VectorOperators.ASHR, 20).sub(0x3ffL - 1)));
        LongVector kz = nz.and(0x7fffffffL).lanewise(VectorOperators.ASHR, 20).sub(0x3ffL);
        DoubleVector tn = nz.and(LongVector.broadcast(LS, 0x000fffffL).lanewise(VectorOperators.ASHR, kz).not()).and(0xffffffffL)
                .lanewise(VectorOperators.LSHL, 32).reinterpretAsDoubles();
        nz = nz.and(0xfffffL).or(0x00100000L).lanewise(VectorOperators.ASHR, LongVector.broadcast(LS, 20).sub(kz));
        nz = nz.lanewise(VectorOperators.NEG, jz.compare(VectorOperators.LT, 0)).blend(0, reduce.not());
        pH = pH.lanewise(VectorOperators.SUB, tn, reduce.cast(DS));
        t = pL.add(pH).reinterpretAsLongs().and(HIGH_WORD).reinterpretAsDoubles();
        u = t.mul(LN2_H);
        v = pL.sub(t.sub(pH)).mul(LN2).add(t.mul(LN2_L));
        z = u.add(v);
        DoubleVector w = v.sub(z.sub(u));
        t = z.mul(z);
        t1 = z.sub(t.mul(t.mul(P5).add(P4).mul(t).add(P3).mul(t).add(P2).mul(t).add(P1)));
        r = z.mul(t1).div(t1.sub(2.0)).sub(w.add(z.mul(w)));
        z = ONE_DV.sub(r.sub(z));
        LongVector scaled = z.reinterpretAsLongs().add(nz.lanewise(VectorOperators.LSHL, 52));
        VectorMask<Double> subnormal = scaled.lanewise(VectorOperators.ASHR, 52).compare(VectorOperators.LE, 0).cast(DS);

        // fdlibm returns these before its general path, so they also leave its range checks out.
        VectorMask<Double> yOne = ay.compare(VectorOperators.EQ, 1), yHalf = y.compare(VectorOperators.EQ, 0.5),
                yTwo = y.compare(VectorOperators.EQ, 2), yZero = y.compare(VectorOperators.EQ, 0);
        if (outOfRange.or(subnormal).andNot(zero).andNot(yOne).andNot(yHalf).andNot(yTwo).andNot(yZero).anyTrue()) return strictPow(x, y);
        DoubleVector sign = ONE_DV.blend(-1, negativeOdd);
        return scaled.reinterpretAsDoubles().mul(sign)
                .blend(d(0).blend(Double.POSITIVE_INFINITY, y.compare(VectorOperators.LT, 0)).mul(sign), zero)
                .blend(x, y.compare(VectorOperators.EQ, 1))
                .blend(ONE_DV.div(x), y.compare(VectorOperators.EQ, -1))
                .blend(x.add(0.0).sqrt(), yHalf)
                .blend(NAN_DV, negative.andNot(integer).andNot(zero))
                .blend(x.mul(x), yTwo)
                .blend(ONE_DV, yZero);
    }

    /** {@link StrictMath#pow} lane by lane. */
    private static DoubleVector strictPow(DoubleVector x, DoubleVector y) {
        double[] xs = x.toArray(), ys = y.toArray();
        for (int i = 0; i < xs.length; i++) xs[i] = StrictMath.pow(xs[i], ys[i]);
        return DoubleVector.fromArray(DS, xs, 0);
    }
}
