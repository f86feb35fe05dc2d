package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.UnaryOp;

/**
 * Float32 rows of the elementwise ops in the Vector API: unit-stride rows, or broadcast (zero-stride)
 * operands for binary ops, with scalar tails that use the ops' reference definitions.
 *
 * <p>Why one loop per op: a vector returned from a call that C2 does not inline is boxed on the heap,
 * which costs 20-50x. Shared helpers that switch on the op grow past C2's inlining limits once they
 * are compiled on their own, so the switch is outside the loops and each loop body is a single
 * expression. The methods return false when an op has no vector form here.
 */
final class VectorF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Byte i of entry b is bit i of b: spreads 8 mask bits into 8 bool bytes with one store. */
    private static final long[] BITS_TO_BYTES = new long[256];

    static {
        for (int b = 0; b < 256; b++) {
            long v = 0;
            for (int i = 0; i < 8; i++) if ((b & (1 << i)) != 0) v |= 1L << (8 * i);
            BITS_TO_BYTES[b] = v;
        }
    }

    /** Shuffles pairing lane i with lane i ^ (FL/2), i ^ (FL/4), ..., i ^ 1: the folds of {@link #sumLanes}. */
    private static final VectorShuffle<Float>[] FOLDS = folds();

    private VectorF32() {}

    @SuppressWarnings("unchecked")
    private static VectorShuffle<Float>[] folds() {
        int steps = Integer.numberOfTrailingZeros(FL);
        VectorShuffle<Float>[] f = new VectorShuffle[steps];
        for (int k = 0; k < steps; k++) {
            int half = FL >> (k + 1);
            f[k] = VectorShuffle.fromOp(FS, i -> i ^ half);
        }
        return f;
    }

    /**
     * The sum of {@code v}'s lanes in a fixed pairwise order. {@code reduceLanes(ADD)} leaves the order
     * unspecified, and C2's intrinsic and the interpreter's fallback do differ, so results would change
     * as code gets compiled; this keeps training runs bit-for-bit reproducible within a JVM.
     */
    static float sumLanes(FloatVector v) {
        for (VectorShuffle<Float> fold : FOLDS) v = v.add(v.rearrange(fold));
        return v.lane(0);
    }

    private static FloatVector ld(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    static boolean hasUnary(UnaryOp op) {
        return switch (op) {
            case NEG, ABS, RELU, EXP, LOG, SQRT, RSQRT, RECIPROCAL, TANH, SIGMOID, SIN, COS, SILU, GELU_TANH,
                 CLAMP, LOG1P, EXPM1, LEAKY_RELU -> true;
            default -> false;
        };
    }

    /** {@code out[i] = op(x[i])} over {@code n} contiguous floats. */
    static void unary(UnaryOp op, MemorySegment xs, long xo, MemorySegment os, long oo, long n, float p0, float p1) {
        long i = 0;
        long upper = n - n % FL;
        final float one = 1f;
        switch (op) {
            case NEG -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).neg().intoMemorySegment(os, oo + 4 * i, LE); }
            case ABS -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).abs().intoMemorySegment(os, oo + 4 * i, LE); }
            case RELU -> {
                // NaN compares false and is kept, as PyTorch.
                for (; i < upper; i += FL) {
                    FloatVector x = ld(xs, xo + 4 * i);
                    x.blend(0f, x.compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case LEAKY_RELU -> {
                for (; i < upper; i += FL) {
                    FloatVector x = ld(xs, xo + 4 * i);
                    x.blend(x.mul(p0), x.compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case CLAMP -> {
                float lo = p0 == p0 ? p0 : Float.NEGATIVE_INFINITY;
                float hi = p1 == p1 ? p1 : Float.POSITIVE_INFINITY;
                for (; i < upper; i += FL) {
                    FloatVector x = ld(xs, xo + 4 * i);
                    x.max(lo).min(hi).blend(x, x.compare(VectorOperators.NE, x)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case EXP -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.EXP).intoMemorySegment(os, oo + 4 * i, LE); }
            case LOG -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.LOG).intoMemorySegment(os, oo + 4 * i, LE); }
            case LOG1P -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.LOG1P).intoMemorySegment(os, oo + 4 * i, LE); }
            case EXPM1 -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.EXPM1).intoMemorySegment(os, oo + 4 * i, LE); }
            case TANH -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.TANH).intoMemorySegment(os, oo + 4 * i, LE); }
            case SIN -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.SIN).intoMemorySegment(os, oo + 4 * i, LE); }
            case COS -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.COS).intoMemorySegment(os, oo + 4 * i, LE); }
            case SQRT -> { for (; i < upper; i += FL) ld(xs, xo + 4 * i).sqrt().intoMemorySegment(os, oo + 4 * i, LE); }
            case RSQRT -> { for (; i < upper; i += FL) FloatVector.broadcast(FS, one).div(ld(xs, xo + 4 * i).sqrt()).intoMemorySegment(os, oo + 4 * i, LE); }
            case RECIPROCAL -> { for (; i < upper; i += FL) FloatVector.broadcast(FS, one).div(ld(xs, xo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE); }
            case SIGMOID -> {
                for (; i < upper; i += FL) {
                    FloatVector e = ld(xs, xo + 4 * i).neg().lanewise(VectorOperators.EXP);
                    FloatVector.broadcast(FS, one).div(e.add(one)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case SILU -> {
                for (; i < upper; i += FL) {
                    FloatVector x = ld(xs, xo + 4 * i);
                    x.div(x.neg().lanewise(VectorOperators.EXP).add(one)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case GELU_TANH -> {
                float beta = (float) Math.sqrt(2.0 / Math.PI);
                for (; i < upper; i += FL) {
                    FloatVector x = ld(xs, xo + 4 * i);
                    FloatVector inner = x.mul(x).mul(x).mul(0.044715f).add(x).mul(beta);
                    x.mul(0.5f).mul(inner.lanewise(VectorOperators.TANH).add(one)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            default -> throw new IllegalStateException("no vector form for " + op);
        }
        for (; i < n; i++) os.set(ElementIO.F32, oo + 4 * i, (float) op.apply(xs.get(ElementIO.F32, xo + 4 * i), p0, p1));
    }

    static boolean hasBinary(BinaryOp op) {
        return switch (op) {
            case ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, THRESHOLD_BACKWARD -> true;
            default -> false;
        };
    }

    static boolean hasComparison(BinaryOp op) {
        return switch (op) {
            case EQ, NE, LT, LE, GT, GE -> true;
            default -> false;
        };
    }

    /**
     * {@code out[i] = op(a[i], b[i])} over {@code n} floats; an operand flagged as broadcast is the
     * single value at its offset.
     */
    static void binary(BinaryOp op, MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                       MemorySegment os, long oo, long n, float alpha) {
        long sa = aConst ? 0 : 4;
        long sb = bConst ? 0 : 4;
        if (aConst && bConst) {
            float r = (float) op.apply(as.get(ElementIO.F32, ao), bs.get(ElementIO.F32, bo), alpha);
            for (long i = 0; i < n; i++) os.set(ElementIO.F32, oo + 4 * i, r);
            return;
        }
        // A broadcast operand becomes a constant vector; the loop-invariant choice is unswitched by C2.
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        long i = 0;
        long upper = n - n % FL;
        switch (op) {
            case ADD -> {
                if (alpha == 1f) {
                    for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).add(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
                } else {
                    for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).add(a(bConst, bc, bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case SUB -> {
                if (alpha == 1f) {
                    for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).sub(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
                } else {
                    for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).sub(a(bConst, bc, bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            case MUL -> { for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).mul(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE); }
            case DIV -> { for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).div(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE); }
            case MAXIMUM -> { for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).max(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE); }
            case MINIMUM -> { for (; i < upper; i += FL) a(aConst, ac, as, ao + 4 * i).min(a(bConst, bc, bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE); }
            case THRESHOLD_BACKWARD -> {
                for (; i < upper; i += FL) {
                    FloatVector b = a(bConst, bc, bs, bo + 4 * i);
                    a(aConst, ac, as, ao + 4 * i).blend(0f, b.compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
                }
            }
            default -> throw new IllegalStateException("no vector form for " + op);
        }
        for (; i < n; i++) {
            float x = as.get(ElementIO.F32, ao + sa * i);
            float y = bs.get(ElementIO.F32, bo + sb * i);
            os.set(ElementIO.F32, oo + 4 * i, scalar(op, x, y, alpha));
        }
    }

    /** The float arithmetic of the vector loops, for tails (so a tensor's elements agree bit for bit). */
    private static float scalar(BinaryOp op, float x, float y, float alpha) {
        return switch (op) {
            case ADD -> alpha == 1f ? x + y : x + y * alpha;
            case SUB -> alpha == 1f ? x - y : x - y * alpha;
            case MUL -> x * y;
            case DIV -> x / y;
            default -> (float) op.apply(x, y, alpha);
        };
    }

    /** Loads a vector, or returns the broadcast constant. Small enough to be inlined everywhere. */
    private static FloatVector a(boolean isConst, FloatVector c, MemorySegment s, long off) {
        return isConst ? c : FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    /** {@code out[i] = a[i] op b[i]} as bool bytes (0/1); NaN compares false except for {@code ne}. */
    static void compare(BinaryOp op, MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                        MemorySegment os, long oo, long n) {
        long sa = aConst ? 0 : 4;
        long sb = bConst ? 0 : 4;
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        long i = 0;
        long upper = FL % 8 == 0 ? n - n % FL : 0;
        VectorOperators.Comparison cmp = switch (op) {
            case EQ -> VectorOperators.EQ;
            case NE -> VectorOperators.NE;
            case LT -> VectorOperators.LT;
            case LE -> VectorOperators.LE;
            case GT -> VectorOperators.GT;
            default -> VectorOperators.GE;
        };
        switch (op) {
            case EQ -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.EQ, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            case NE -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.NE, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            case LT -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.LT, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            case LE -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.LE, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            case GT -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.GT, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            case GE -> { for (; i < upper; i += FL) storeBits(os, oo + i, a(aConst, ac, as, ao + 4 * i).compare(VectorOperators.GE, a(bConst, bc, bs, bo + 4 * i)).toLong()); }
            default -> throw new IllegalStateException("no vector form for " + op + " (" + cmp + ")");
        }
        for (; i < n; i++) {
            double x = as.get(ElementIO.F32, ao + sa * i);
            double y = bs.get(ElementIO.F32, bo + sb * i);
            os.set(ElementIO.I8, oo + i, op.apply(x, y, 1) != 0 ? (byte) 1 : 0);
        }
    }

    /** Writes the low {@code FL} bits of {@code bits} as {@code FL} bool bytes, 8 at a time. */
    private static void storeBits(MemorySegment os, long off, long bits) {
        for (int k = 0; k < FL; k += 8) {
            os.set(ElementIO.I64, off + k, BITS_TO_BYTES[(int) ((bits >>> k) & 0xff)]);
        }
    }
}
