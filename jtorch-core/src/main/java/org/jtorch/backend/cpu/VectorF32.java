package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
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
                 CLAMP, LOG1P, EXPM1, LEAKY_RELU, ERF, GELU -> true;
            default -> false;
        };
    }

    /** {@code out[i] = op(x[i])} over {@code n} contiguous floats. */
    static void unary(UnaryOp op, MemorySegment xs, long xo, MemorySegment os, long oo, long n, float p0, float p1) {
        long upper = n - n % FL;
        switch (op) {
            case NEG -> neg(xs, xo, os, oo, upper);
            case ABS -> abs(xs, xo, os, oo, upper);
            case RELU -> relu(xs, xo, os, oo, upper);
            case LEAKY_RELU -> leakyRelu(xs, xo, os, oo, upper, p0);
            case CLAMP -> clamp(xs, xo, os, oo, upper, p0 == p0 ? p0 : Float.NEGATIVE_INFINITY, p1 == p1 ? p1 : Float.POSITIVE_INFINITY);
            case EXP -> exp(xs, xo, os, oo, upper);
            case LOG -> log(xs, xo, os, oo, upper);
            case LOG1P -> log1p(xs, xo, os, oo, upper);
            case EXPM1 -> expm1(xs, xo, os, oo, upper);
            case TANH -> tanh(xs, xo, os, oo, upper);
            case SIN -> sin(xs, xo, os, oo, upper);
            case COS -> cos(xs, xo, os, oo, upper);
            case SQRT -> sqrt(xs, xo, os, oo, upper);
            case RSQRT -> rsqrt(xs, xo, os, oo, upper);
            case RECIPROCAL -> reciprocal(xs, xo, os, oo, upper);
            case SIGMOID -> sigmoid(xs, xo, os, oo, upper);
            case SILU -> silu(xs, xo, os, oo, upper);
            case GELU_TANH -> geluTanh(xs, xo, os, oo, upper);
            case ERF -> VectorErf.erf(xs, xo, os, oo, upper);
            case GELU -> VectorErf.gelu(xs, xo, os, oo, upper);
            default -> throw new IllegalStateException("no vector form for " + op);
        }
        if (upper < n) unaryTail(op, xs, xo, os, oo, upper, n, p0, p1);
    }

    /** Elements {@code [from, n)} with the op's scalar definition. */
    private static void unaryTail(UnaryOp op, MemorySegment xs, long xo, MemorySegment os, long oo, long from, long n, float p0,
                                  float p1) {
        for (long i = from; i < n; i++) os.set(ElementIO.F32, oo + 4 * i, (float) op.apply(xs.get(ElementIO.F32, xo + 4 * i), p0, p1));
    }

    // One small method per op (the switch above only dispatches): each compiles on its own with every Vector API call
    // inlined and intrinsified. In one big method C2 ran out of inlining budget in mixed workloads and the vector ops
    // fell back to their boxed Java implementations (FloatVector.bTest & co. in profiles).

    private static void neg(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).neg().intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void abs(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).abs().intoMemorySegment(os, oo + 4 * i, LE);
    }

    /** NaN compares false and is kept, as PyTorch. */
    private static void relu(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) {
            FloatVector x = ld(xs, xo + 4 * i);
            x.blend(0f, x.compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void leakyRelu(MemorySegment xs, long xo, MemorySegment os, long oo, long upper, float slope) {
        for (long i = 0; i < upper; i += FL) {
            FloatVector x = ld(xs, xo + 4 * i);
            x.blend(x.mul(slope), x.compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    /** {@code lo}/{@code hi} with NaN bounds already replaced by infinities; NaN inputs are kept. */
    private static void clamp(MemorySegment xs, long xo, MemorySegment os, long oo, long upper, float lo, float hi) {
        for (long i = 0; i < upper; i += FL) {
            FloatVector x = ld(xs, xo + 4 * i);
            x.max(lo).min(hi).blend(x, x.compare(VectorOperators.NE, x)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void exp(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.EXP).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void log(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.LOG).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void log1p(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.LOG1P).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void expm1(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.EXPM1).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void tanh(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.TANH).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void sin(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.SIN).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void cos(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).lanewise(VectorOperators.COS).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void sqrt(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) ld(xs, xo + 4 * i).sqrt().intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void rsqrt(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (long i = 0; i < upper; i += FL) one.div(ld(xs, xo + 4 * i).sqrt()).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void reciprocal(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (long i = 0; i < upper; i += FL) one.div(ld(xs, xo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
    }

    private static void sigmoid(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (long i = 0; i < upper; i += FL) {
            FloatVector e = ld(xs, xo + 4 * i).neg().lanewise(VectorOperators.EXP);
            one.div(e.add(1f)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void silu(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        for (long i = 0; i < upper; i += FL) {
            FloatVector x = ld(xs, xo + 4 * i);
            x.div(x.neg().lanewise(VectorOperators.EXP).add(1f)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void geluTanh(MemorySegment xs, long xo, MemorySegment os, long oo, long upper) {
        float beta = (float) Math.sqrt(2.0 / Math.PI);
        for (long i = 0; i < upper; i += FL) {
            FloatVector x = ld(xs, xo + 4 * i);
            FloatVector inner = x.mul(x).mul(x).mul(0.044715f).add(x).mul(beta);
            // 0.5 x (1 + tanh z) = x / (1 + exp(-2z)): the same function without the cancellation of 1 + tanh z for negative x.
            x.div(inner.mul(-2f).lanewise(VectorOperators.EXP).add(1f)).intoMemorySegment(os, oo + 4 * i, LE);
        }
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
        if (aConst && bConst) {
            float r = (float) op.apply(as.get(ElementIO.F32, ao), bs.get(ElementIO.F32, bo), alpha);
            for (long i = 0; i < n; i++) os.set(ElementIO.F32, oo + 4 * i, r);
            return;
        }
        long upper = n - n % FL;
        // Each op's loops are a method of their own, with the broadcast operand chosen outside the loop (a constant
        // vector, loaded once): the loops themselves hold no branches.
        switch (op) {
            case ADD -> {
                if (alpha == 1f) add(as, ao, aConst, bs, bo, bConst, os, oo, upper);
                else addScaled(as, ao, aConst, bs, bo, bConst, os, oo, upper, alpha);
            }
            case SUB -> {
                if (alpha == 1f) sub(as, ao, aConst, bs, bo, bConst, os, oo, upper);
                else subScaled(as, ao, aConst, bs, bo, bConst, os, oo, upper, alpha);
            }
            case MUL -> mul(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case DIV -> div(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case MAXIMUM -> max(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case MINIMUM -> min(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case THRESHOLD_BACKWARD -> thresholdBackward(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            default -> throw new IllegalStateException("no vector form for " + op);
        }
        if (upper < n) binaryTail(op, as, ao, aConst, bs, bo, bConst, os, oo, upper, n, alpha);
    }

    /** Elements {@code [from, n)} with {@link #scalar}. */
    private static void binaryTail(BinaryOp op, MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                                   MemorySegment os, long oo, long from, long n, float alpha) {
        long sa = aConst ? 0 : 4;
        long sb = bConst ? 0 : 4;
        for (long i = from; i < n; i++) {
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

    /** The broadcast value at {@code off} in every lane. */
    private static FloatVector splat(MemorySegment s, long off) {
        return FloatVector.broadcast(FS, s.get(ElementIO.F32, off));
    }

    // The binary loops: at most one operand is broadcast (both are handled by binary itself).

    private static void add(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.add(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).add(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).add(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void addScaled(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                                  MemorySegment os, long oo, long upper, float alpha) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.add(ld(bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo).mul(alpha);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).add(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).add(ld(bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void sub(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.sub(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).sub(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).sub(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void subScaled(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                                  MemorySegment os, long oo, long upper, float alpha) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.sub(ld(bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo).mul(alpha);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).sub(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).sub(ld(bs, bo + 4 * i).mul(alpha)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void mul(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.mul(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).mul(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).mul(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void div(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.div(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).div(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).div(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void max(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.max(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).max(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).max(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    private static void min(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                            long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.min(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            FloatVector b = splat(bs, bo);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).min(b).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).min(ld(bs, bo + 4 * i)).intoMemorySegment(os, oo + 4 * i, LE);
        }
    }

    /** {@code b <= 0 ? 0 : a} (ReLU's backward: {@code a} the gradient, {@code b} the result); NaN in {@code b} keeps {@code a}. */
    private static void thresholdBackward(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                                          MemorySegment os, long oo, long upper) {
        if (aConst) {
            FloatVector a = splat(as, ao);
            for (long i = 0; i < upper; i += FL) a.blend(0f, ld(bs, bo + 4 * i).compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
        } else if (bConst) {
            VectorMask<Float> zero = splat(bs, bo).compare(VectorOperators.LE, 0f);
            for (long i = 0; i < upper; i += FL) ld(as, ao + 4 * i).blend(0f, zero).intoMemorySegment(os, oo + 4 * i, LE);
        } else {
            for (long i = 0; i < upper; i += FL) {
                ld(as, ao + 4 * i).blend(0f, ld(bs, bo + 4 * i).compare(VectorOperators.LE, 0f)).intoMemorySegment(os, oo + 4 * i, LE);
            }
        }
    }

    /** {@code out[i] = a[i] op b[i]} as bool bytes (0/1); NaN compares false except for {@code ne}. */
    static void compare(BinaryOp op, MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst,
                        MemorySegment os, long oo, long n) {
        long upper = FL % 8 == 0 ? n - n % FL : 0;
        switch (op) {
            case EQ -> eq(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case NE -> ne(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case LT -> lt(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case LE -> le(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case GT -> gt(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            case GE -> ge(as, ao, aConst, bs, bo, bConst, os, oo, upper);
            default -> throw new IllegalStateException("no vector form for " + op);
        }
        long sa = aConst ? 0 : 4;
        long sb = bConst ? 0 : 4;
        for (long i = upper; i < n; i++) {
            double x = as.get(ElementIO.F32, ao + sa * i);
            double y = bs.get(ElementIO.F32, bo + sb * i);
            os.set(ElementIO.I8, oo + i, op.apply(x, y, 1) != 0 ? (byte) 1 : 0);
        }
    }

    // The comparison loops, one method per operator (a constant operator in each, so the compare is intrinsified);
    // comparisons are not on the training path, so a broadcast operand is picked inside the loop.

    private static void eq(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.EQ, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    private static void ne(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.NE, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    private static void lt(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.LT, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    private static void le(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.LE, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    private static void gt(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.GT, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    private static void ge(MemorySegment as, long ao, boolean aConst, MemorySegment bs, long bo, boolean bConst, MemorySegment os,
                           long oo, long upper) {
        FloatVector ac = FloatVector.broadcast(FS, aConst ? as.get(ElementIO.F32, ao) : 0f);
        FloatVector bc = FloatVector.broadcast(FS, bConst ? bs.get(ElementIO.F32, bo) : 0f);
        for (long i = 0; i < upper; i += FL) {
            storeBits(os, oo + i, pick(aConst, ac, as, ao + 4 * i).compare(VectorOperators.GE, pick(bConst, bc, bs, bo + 4 * i)).toLong());
        }
    }

    /** Loads a vector, or returns the broadcast constant. Small enough to be inlined everywhere. */
    private static FloatVector pick(boolean isConst, FloatVector c, MemorySegment s, long off) {
        return isConst ? c : ld(s, off);
    }

    /** Writes the low {@code FL} bits of {@code bits} as {@code FL} bool bytes, 8 at a time. */
    private static void storeBits(MemorySegment os, long off, long bits) {
        for (int k = 0; k < FL; k += 8) {
            os.set(ElementIO.I64, off + k, BITS_TO_BYTES[(int) ((bits >>> k) & 0xff)]);
        }
    }
}
