package org.jtorch.backend.cpu;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@code erf} and the exact GELU (through erfc) over float64 lanes, within 2 and 8 ulps (the tests sweep them against
 * an exact reference), as {@link VectorErf} does for float32; the generated float64 rows call them
 * ({@link VectorMathF64}).
 *
 * <p>Below |x| = 1/2, erf's Taylor series {@code x P(x^2)} (15 terms). From 1/2 on, {@code erfc(a) = exp(-a^2) R(a)}
 * with {@code a^2 = hi + lo} split exactly (an FMA; GELU multiplies {@code x/2 R} before the exponential, which is
 * subnormal in the far tail), and R by one of eight Chebyshev pieces of 16 terms: seven
 * intervals of width 1/2 over [1/2, 4), then {@code R(a) = H(s) / a} in {@code s = 16 / a^2} for a past 4 (H is flat
 * there; erfc underflows past 27). Each lane picks its piece's coefficients with one in-register permute per term
 * (eight pieces, eight double lanes), so a vector costs one polynomial whatever its lanes' spread; with fewer than
 * eight lanes the vector form is not offered ({@link #SUPPORTED}) and the reference serves. The coefficients
 * ({@link #PIECE_TABLE}) are a fit to R's exact values that the tests recompute and check.
 */
final class VectorErfF64 {
    private VectorErfF64() {}

    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int PIECES = 8;
    /** Whether the vector form is offered: one permute picks a lane's piece only with eight lanes. */
    static final boolean SUPPORTED = DS.length() == PIECES;

    private static final double SPLIT = 0.5;
    /** Where the tail piece, in s = 16 / a^2, takes over. */
    private static final double TAIL = 4;
    private static final int TERMS = 16;
    private static final double[] SMALL = taylor(15);

    static DoubleVector erf(DoubleVector x) {
        DoubleVector a = x.abs();
        DoubleVector r = small(x);
        VectorMask<Double> big = a.compare(VectorOperators.GE, SPLIT);
        if (big.anyTrue()) {
            // Past 6, erfc is below half an ulp of 1: 1 - erfc rounds to 1. NaN stays NaN through the polynomial.
            DoubleVector six = a.min(6.0);
            DoubleVector hi = six.mul(six);
            DoubleVector one = DoubleVector.broadcast(DS, 1).sub(expPart(hi, six.fma(six, hi.neg())).mul(rPart(hi, six)));
            r = r.blend(one.blend(one.neg(), x.compare(VectorOperators.LT, 0)), big);
        }
        return r;
    }

    private static final double MINUS_RSQRT2 = -Math.sqrt(0.5);

    /** {@code x/2 erfc(-x / sqrt 2)}, the square of {@code x / sqrt 2} from x's exact square halved (as {@link VectorErf#gelu}). */
    static DoubleVector gelu(DoubleVector x) {
        DoubleVector x2 = x.mul(x);
        DoubleVector hi = x2.mul(0.5);
        DoubleVector lo = x.fma(x, x2.neg()).mul(0.5);
        DoubleVector t = x.mul(MINUS_RSQRT2);
        DoubleVector a = t.abs();
        VectorMask<Double> big = a.compare(VectorOperators.GE, SPLIT);
        DoubleVector erfc = DoubleVector.broadcast(DS, 1).sub(small(t));
        DoubleVector half = x.mul(0.5);
        if (!big.anyTrue()) return half.mul(erfc);
        DoubleVector e = expPart(hi, lo);
        DoubleVector r = rPart(hi, a);
        // In the negative tail exp(-a^2) may be subnormal: x/2 R is formed first, so that only the result rounds there.
        DoubleVector tail = half.mul(r).mul(e);
        DoubleVector head = half.mul(DoubleVector.broadcast(DS, 2).sub(r.mul(e)));
        return half.mul(erfc).blend(head.blend(tail, t.compare(VectorOperators.GE, 0)), big);
    }

    private static final double RSQRT_2PI = 1 / Math.sqrt(2 * Math.PI);

    /**
     * {@code g (Phi(x) + x phi(x))}, GELU's derivative times the gradient, with one exponential for the density and the
     * distribution (as {@link VectorErf#geluBackward}); below |x / sqrt 2| = 1/2 the distribution is the series'.
     */
    static DoubleVector geluBackward(DoubleVector g, DoubleVector x) {
        DoubleVector x2 = x.mul(x);
        DoubleVector hi = x2.mul(0.5);
        DoubleVector lo = x.fma(x, x2.neg()).mul(0.5);
        DoubleVector t = x.mul(MINUS_RSQRT2);
        DoubleVector a = t.abs();
        DoubleVector e = expPart(hi, lo);
        DoubleVector cdf = DoubleVector.broadcast(DS, 1).sub(small(t)).mul(0.5);
        VectorMask<Double> big = a.compare(VectorOperators.GE, SPLIT);
        if (big.anyTrue()) {
            // Phi(-|x|) = exp(-x^2/2) R(a) / 2; Phi(|x|) = 1 - Phi(-|x|) does not cancel.
            DoubleVector lower = e.mul(rPart(hi, a)).mul(0.5);
            cdf = cdf.blend(lower.blend(DoubleVector.broadcast(DS, 1).sub(lower), x.compare(VectorOperators.GT, 0)), big);
        }
        return g.mul(x.mul(e).fma(DoubleVector.broadcast(DS, RSQRT_2PI), cdf));
    }

    /** {@code x P(x^2)} with the Taylor coefficients. */
    private static DoubleVector small(DoubleVector x) {
        DoubleVector x2 = x.mul(x);
        DoubleVector p = DoubleVector.broadcast(DS, SMALL[SMALL.length - 1]);
        for (int k = SMALL.length - 2; k >= 0; k--) p = p.fma(x2, DoubleVector.broadcast(DS, SMALL[k]));
        return p.mul(x);
    }

    /**
     * {@code exp(-a^2)} with {@code a^2 = hi + lo} exactly: {@code exp(-lo)} taken as {@code 1 - lo}; past a^2 = 800
     * (exp underflows) lo is dropped (NaN for an infinite a).
     */
    private static DoubleVector expPart(DoubleVector hi, DoubleVector lo) {
        DoubleVector small = lo.blend(0, hi.compare(VectorOperators.GT, 800.0));
        return VectorExp.exp(hi.neg()).mul(DoubleVector.broadcast(DS, 1).sub(small));
    }

    /** {@code R(a) = erfc(a) exp(a^2)} for a >= 1/2, {@code hi} = a^2 rounded. */
    private static DoubleVector rPart(DoubleVector hi, DoubleVector a) {
        VectorMask<Double> tail = a.compare(VectorOperators.GE, TAIL);
        // The piece: the number of interval starts past 1/2 that a reaches (0 for NaN, whose lanes stay NaN through u).
        DoubleVector piece = DoubleVector.zero(DS);
        for (int j = 1; j < PIECES; j++) piece = piece.add(1.0, a.compare(VectorOperators.GE, SPLIT + 0.5 * j));
        VectorShuffle<Double> pick = piece.toShuffle();
        // u in [-1, 1]: 4a - (3 + 2j) over piece j's interval [1/2 + j/2, 1 + j/2], 32 / a^2 - 1 in the tail.
        DoubleVector u = a.mul(4).sub(piece.mul(2).add(3)).blend(DoubleVector.broadcast(DS, 32).div(hi).sub(1), tail);
        // Clenshaw's recurrence on the Chebyshev series (the monomial form of 16 terms would cancel).
        DoubleVector u2 = u.add(u);
        DoubleVector b1 = DoubleVector.zero(DS);
        DoubleVector b2 = DoubleVector.zero(DS);
        for (int k = TERMS - 1; k >= 1; k--) {
            DoubleVector b = u2.fma(b1, COEFFICIENTS[k].rearrange(pick)).sub(b2);
            b2 = b1;
            b1 = b;
        }
        DoubleVector r = u.fma(b1, COEFFICIENTS[0].rearrange(pick)).sub(b2);
        return r.blend(r.div(a), tail);
    }

    // ---------------------------------------------------------------- coefficients

    private static double[] taylor(int terms) {
        double[] c = new double[terms];
        double factorial = 1;
        for (int n = 0; n < terms; n++) {
            if (n > 0) factorial *= n;
            c[n] = 2 / Math.sqrt(Math.PI) * (n % 2 == 0 ? 1 : -1) / (factorial * (2 * n + 1));
        }
        return c;
    }

    /**
     * Per piece j, the Chebyshev coefficients of R on [1/2 + j/2, 1 + j/2] (j < 7), and of {@code H(s) = a R(a)} in
     * {@code s = 16 / a^2} (j = 7), in u on [-1, 1]. Fitted to R evaluated exactly enough in BigDecimal, twice (the
     * second fit to the first's residual at the nodes, which removes the rounding of the first's sums: about 20 ulps
     * of R against 2 after); {@code VectorErfF64Test} refits them (a second of BigDecimal arithmetic, too slow for
     * start-up) and checks this table against the fit.
     */
    static final double[][] PIECE_TABLE = {
        {
            0.5142540300448141, -0.09353436157631646, 0.0073495435679659556, -5.170287683170902E-4,
            3.3274891810400566E-5, -1.9877609419360963E-6, 1.113719839917434E-7, -5.8986496119446985E-9,
            2.9712989841049305E-10, -1.4304890912893076E-11, 6.608808045845187E-13, -2.939421771402205E-14,
            1.2447999125598748E-15, -6.348238098394908E-17, -2.6071596297545935E-18, -5.672591193758233E-18
        },
        {
            0.3711927943420716, -0.05279955194046569, 0.0033807623615918917, -1.9896338415155765E-4,
            1.0911979120975293E-5, -5.632372066300664E-7, 2.7564656120511505E-8, -1.2864436004546274E-9,
            5.7518932869615213E-11, -2.47320455405436E-12, 1.0259335018716601E-13, -4.118845811648872E-15,
            1.541530062544571E-16, -1.3723329063039608E-17, -2.8855965413133224E-18, -4.2262603910644554E-18
        },
        {
            0.28672723893640484, -0.03300680108481148, 0.0017591477886840803, -8.788195718622805E-5,
            4.151610275614116E-6, -1.8669721329771765E-7, 8.033784467340577E-9, -3.321836190254603E-10,
            1.3243543610198757E-11, -5.10541304089922E-13, 1.907540147820833E-14, -6.84847844048819E-16,
            3.3928894564237414E-17, -4.339375526670209E-18, -2.756851161948633E-18, -8.426306746061318E-18
        },
        {
            0.23209235631383532, -0.022251257622195108, 0.0010068780404189391, -4.332790552146061E-5,
            1.7831407324376355E-6, -7.049777845509682E-8, 2.6872932957740376E-9, -9.906296257354348E-11,
            3.540495549379209E-12, -1.2293361467779795E-13, 4.1544440193979585E-15, -1.3218599171994324E-16,
            2.9970463122188444E-18, 5.650842309409337E-18, -3.060629991117871E-19, 6.351249344329995E-18
        },
        {
            0.1942820812745081, -0.015879247883337604, 6.208296616878318E-4, -2.3328859409809597E-5,
            8.456745835099485E-7, -2.96637012588004E-8, 1.0094101795081598E-9, -3.3394275751759615E-11,
            1.0760963538797626E-12, -3.3824607647484963E-14, 1.0333549427607487E-15, -3.4027663076546675E-17,
            -6.537703174016068E-20, 4.416184359051454E-18, 3.9237826852261744E-18, 5.8697461854171285E-18
        },
        {
            0.16674094078984744, -0.011840246176534596, 4.06027066053894E-4, -1.348793686242396E-5,
            4.351207693860019E-7, -1.3660344481921675E-8, 4.181059367516755E-10, -1.2495860948665833E-11,
            3.6517443222441425E-13, -1.0439533034624487E-14, 2.8477089887571877E-16, -1.591828169569249E-17,
            2.747489584135849E-18, 7.403469940133575E-18, 1.0397227592490533E-17, 2.2058204229281118E-20
        },
        {
            0.1458678994299681, -0.009138826774976062, 2.7841748283801093E-4, -8.26542689606506E-6,
            2.395159038286892E-7, -6.784928848864083E-9, 1.881315573471747E-10, -5.1118989662528185E-12,
            1.3626277560398145E-13, -3.571563463820747E-15, 9.158700372580767E-17, -4.3974636907350144E-18,
            6.0957682962640605E-18, 1.6128872154632587E-18, -4.189700206954286E-18, -1.6658202806246394E-18
        },
        {
            0.555925693425176, -0.008090332092115706, 1.6776836928684836E-4, -5.531041633813135E-6,
            2.4436936403699584E-7, -1.3327004408738942E-8, 8.550274943139175E-10, -6.254006724192286E-11,
            5.101741843436912E-12, -4.566831362809835E-13, 4.429611672740723E-14, -4.613690159028565E-15,
            4.906167633137853E-16, -1.0360744254258009E-16, -8.08841861719348E-19, 4.988951325500644E-19
        }
    };

    /** Per Chebyshev index k, lane j: the coefficient of piece j. */
    private static final DoubleVector[] COEFFICIENTS = SUPPORTED ? coefficients() : null;

    private static DoubleVector[] coefficients() {
        DoubleVector[] c = new DoubleVector[TERMS];
        double[] lanes = new double[PIECES];
        for (int k = 0; k < TERMS; k++) {
            for (int j = 0; j < PIECES; j++) lanes[j] = PIECE_TABLE[j][k];
            c[k] = DoubleVector.fromArray(DS, lanes, 0);
        }
        return c;
    }
}
