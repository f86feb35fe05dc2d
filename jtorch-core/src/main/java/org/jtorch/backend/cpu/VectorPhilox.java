package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.types.Generator;

/**
 * {@link Generator#philox} for many consecutive blocks at once, one block per vector lane, and the uniform floats
 * made from them. The bits are the scalar generator's: a block's four words land at its four elements, so a tensor
 * filled here holds what the element-by-element loop wrote (and what the other backends write).
 *
 * <p>Each lane keeps a 32-bit word zero-extended in a 64-bit lane, so that Philox's 32 x 32 -> 64-bit products are
 * plain 64-bit lane multiplies, exact.
 *
 * <p>Until C2 has compiled the vector loops they run as the Vector API's boxed per-lane fallbacks, about ten times a
 * scalar loop's time (a cold JVM filled 1M floats in 523 ms that way against 54 ms by scalar code): a program's weight
 * initialisation paid that before its first step. So each kind of fill (float32, float64) starts on a scalar loop
 * over the same blocks and formula, which C1 compiles in milliseconds, and runs only one vector of blocks per chunk
 * through the vector loops, timed, once the scalar chunks since the last probe have taken a quarter of its time (so
 * a cold fill costs at most five times the scalar loop's, however slow the fallbacks). The probes' calls bring the
 * vector loops to C2; the first probe no slower per block than twice the fastest scalar chunk switches that kind of
 * fill to the vector loops for good. Both loops write the same bits, so the switch changes only the time; no thread
 * of its own runs it. {@code -Djtorch.philox.scalarWhileCold=false} starts on the vector loops.
 */
final class VectorPhilox {
    private static final VectorSpecies<Long> LONGS = LongVector.SPECIES_512;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_256;
    private static final VectorSpecies<Double> DOUBLES = DoubleVector.SPECIES_512;
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_256;
    /** Blocks per vector. */
    private static final int LANES = LONGS.length();
    private static final long M0 = 0xD2511F53L, M1 = 0xCD9E8D57L;
    private static final int W0 = 0x9E3779B9, W1 = 0xBB67AE85;
    private static final long LOW32 = 0xffffffffL;
    private static final double TWO_POW_M24 = 1.0 / (1 << 24);
    private static final double TWO_POW_M53 = 1.0 / (1L << 53);
    /**
     * Lanes of two vectors of word pairs that interleave them, the first vector's lane b, then the second's: blocks
     * {@code 0 .. LANES / 2 - 1} ({@link #FIRST_HALF}) and the rest ({@link #SECOND_HALF}), as {@code selectFrom}'s
     * indexes (at and past {@code LANES}: the second vector).
     */
    private static final long[] FIRST_HALF = new long[LANES], SECOND_HALF = new long[LANES];
    /** Blocks generated per pass of a chunk: a 2 KiB word buffer, reused per thread. */
    static final int CHUNK_BLOCKS = 128;
    private static final ThreadLocal<int[]> WORDS = ThreadLocal.withInitial(() -> new int[4 * CHUNK_BLOCKS]);
    /** {@link #WORDS} as float64 draws read them in pairs, native ({@link CpuConvolutionKernels.Scratch} says why). */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> WORD_PAIRS = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);

    private static final long MAX_PROBE_WAIT_NANOS = 100_000;
    /**
     * Probes may take up to this many times the scalar chunks' time: the calls C2 needs cost the same CPU at any
     * share (a cold JVM's 140k-float fills switched after 51M elements at 1, 20M at 4, 1.06-1.09 s in all), and a
     * program with dropout should reach the vector loops within its first steps.
     */
    private static final long PROBE_SHARE = 4;
    private static final boolean SCALAR_WHILE_COLD = !"false".equals(System.getProperty("jtorch.philox.scalarWhileCold"));
    /** The float32 fills' state; {@link #DOUBLE_FILLS} the float64 ones'. */
    private static final Warmth FLOAT_FILLS = new Warmth(!SCALAR_WHILE_COLD, 0), DOUBLE_FILLS = new Warmth(!SCALAR_WHILE_COLD, 0);

    /**
     * Whether one kind of fill has switched to its vector loops, and the timings that decide it. The fields are
     * shared by the filling threads without locks: a lost update only moves a probe or the switch by a chunk.
     */
    static final class Warmth {
        volatile boolean vectorLoops;
        /** The fastest scalar chunk so far, per block. */
        double bestScalarNanosPerBlock = Double.POSITIVE_INFINITY;
        long scalarNanosSinceProbe;
        /** The last probe's time: the next comes once the scalar chunks have taken {@code 1 / PROBE_SHARE} of it. */
        long lastProbeNanos;

        private Warmth(boolean vectorLoops, long lastProbeNanos) {
            this.vectorLoops = vectorLoops;
            this.lastProbeNanos = lastProbeNanos;
        }

        /** A fresh state that starts on the scalar loop and probes, as the fills' own do in a new JVM. */
        static Warmth cold() {
            return new Warmth(false, 0);
        }

        /** Scalar chunks only, never a probe. */
        static Warmth scalarOnly() {
            return new Warmth(false, Long.MAX_VALUE);
        }

        /** The vector loops from the start. */
        static Warmth vectorOnly() {
            return new Warmth(true, 0);
        }

        /** Whether the next chunk starts with a probe of the vector loops. */
        boolean probeDue() {
            return PROBE_SHARE * scalarNanosSinceProbe >= lastProbeNanos;
        }

        void probed(long nanos) {
            // A probe the OS preempted must not hold back the next one for a whole time slice.
            lastProbeNanos = Math.min(nanos, MAX_PROBE_WAIT_NANOS);
            scalarNanosSinceProbe = 0;
            if (bestScalarNanosPerBlock < Double.POSITIVE_INFINITY && nanos <= 2 * LANES * bestScalarNanosPerBlock) vectorLoops = true;
        }

        void scalarChunk(long nanos, int blocks) {
            scalarNanosSinceProbe += nanos;
            if (blocks > 0) bestScalarNanosPerBlock = Math.min(bestScalarNanosPerBlock, (double) nanos / blocks);
        }
    }

    static {
        for (int l = 0; l < LANES; l++) {
            FIRST_HALF[l] = l / 2 + (l % 2) * LANES;
            SECOND_HALF[l] = LANES / 2 + FIRST_HALF[l];
        }
    }

    private VectorPhilox() {}

    /** Whether this machine runs the 512-bit lanes this class is written for as vectors. */
    static boolean supported() {
        return LongVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /** The words of blocks {@code first .. first + blocks - 1} ({@code blocks} a multiple of the lanes), in element order. */
    static void blocks(long seed, long first, int blocks, int[] words) {
        long k0 = seed & LOW32, k1 = (seed >>> 32) & LOW32;
        LongVector lane = LongVector.zero(LONGS).addIndex(1);
        LongVector firstHalf = LongVector.fromArray(LONGS, FIRST_HALF, 0), secondHalf = LongVector.fromArray(LONGS, SECOND_HALF, 0);
        // Four vectors of blocks per pass, a to d, their rounds interleaved: a round is a chain of a 64-bit multiply's
        // latency and three cheap ops, so one vector alone left the multiplier idle most of the time (1.9 ns a word
        // against 1.2 for two vectors and 1.1 for four). Vectors past the last block are computed and dropped.
        for (int at = 0; at < blocks; at += 4 * LANES) {
            LongVector counterA = lane.add(first + at);
            LongVector counterB = lane.add(first + at + LANES);
            LongVector counterC = lane.add(first + at + 2 * LANES);
            LongVector counterD = lane.add(first + at + 3 * LANES);
            LongVector a0 = counterA.and(LOW32), a1 = counterA.lanewise(VectorOperators.LSHR, 32);
            LongVector b0 = counterB.and(LOW32), b1 = counterB.lanewise(VectorOperators.LSHR, 32);
            LongVector c0 = counterC.and(LOW32), c1 = counterC.lanewise(VectorOperators.LSHR, 32);
            LongVector d0 = counterD.and(LOW32), d1 = counterD.lanewise(VectorOperators.LSHR, 32);
            LongVector a2 = LongVector.zero(LONGS), a3 = a2, b2 = a2, b3 = a2, c2 = a2, c3 = a2, d2 = a2, d3 = a2;
            int key0 = (int) k0, key1 = (int) k1;
            for (int r = 0; r < 10; r++) {
                long key0Lane = key0 & LOW32, key1Lane = key1 & LOW32;
                LongVector pa0 = a0.mul(M0), pa1 = a2.mul(M1);
                LongVector pb0 = b0.mul(M0), pb1 = b2.mul(M1);
                LongVector pc0 = c0.mul(M0), pc1 = c2.mul(M1);
                LongVector pd0 = d0.mul(M0), pd1 = d2.mul(M1);
                // The key xored first: off the multiply's chain, the same bits.
                a0 = pa1.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, a1.lanewise(VectorOperators.XOR, key0Lane));
                a2 = pa0.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, a3.lanewise(VectorOperators.XOR, key1Lane));
                a1 = pa1.and(LOW32);
                a3 = pa0.and(LOW32);
                b0 = pb1.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, b1.lanewise(VectorOperators.XOR, key0Lane));
                b2 = pb0.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, b3.lanewise(VectorOperators.XOR, key1Lane));
                b1 = pb1.and(LOW32);
                b3 = pb0.and(LOW32);
                c0 = pc1.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, c1.lanewise(VectorOperators.XOR, key0Lane));
                c2 = pc0.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, c3.lanewise(VectorOperators.XOR, key1Lane));
                c1 = pc1.and(LOW32);
                c3 = pc0.and(LOW32);
                d0 = pd1.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, d1.lanewise(VectorOperators.XOR, key0Lane));
                d2 = pd0.lanewise(VectorOperators.LSHR, 32).lanewise(VectorOperators.XOR, d3.lanewise(VectorOperators.XOR, key1Lane));
                d1 = pd1.and(LOW32);
                d3 = pd0.and(LOW32);
                key0 += W0;
                key1 += W1;
            }
            // Element order without scatter stores: each block's words 0, 1 and 2, 3 as one little-endian 64-bit lane
            // each, the two vectors of those interleaved by two-vector permutes (vpermi2q), stored whole. Written out per
            // vector: a method for it was past C2's inlining node budget here, and its vectors went boxed.
            LongVector a01 = a0.or(a1.lanewise(VectorOperators.LSHL, 32)), a23 = a2.or(a3.lanewise(VectorOperators.LSHL, 32));
            firstHalf.selectFrom(a01, a23).reinterpretAsInts().intoArray(words, 4 * at);
            secondHalf.selectFrom(a01, a23).reinterpretAsInts().intoArray(words, 4 * at + 2 * LANES);
            if (at + LANES < blocks) {
                LongVector b01 = b0.or(b1.lanewise(VectorOperators.LSHL, 32)), b23 = b2.or(b3.lanewise(VectorOperators.LSHL, 32));
                firstHalf.selectFrom(b01, b23).reinterpretAsInts().intoArray(words, 4 * at + 4 * LANES);
                secondHalf.selectFrom(b01, b23).reinterpretAsInts().intoArray(words, 4 * at + 6 * LANES);
            }
            if (at + 2 * LANES < blocks) {
                LongVector c01 = c0.or(c1.lanewise(VectorOperators.LSHL, 32)), c23 = c2.or(c3.lanewise(VectorOperators.LSHL, 32));
                firstHalf.selectFrom(c01, c23).reinterpretAsInts().intoArray(words, 4 * at + 8 * LANES);
                secondHalf.selectFrom(c01, c23).reinterpretAsInts().intoArray(words, 4 * at + 10 * LANES);
            }
            if (at + 3 * LANES < blocks) {
                LongVector d01 = d0.or(d1.lanewise(VectorOperators.LSHL, 32)), d23 = d2.or(d3.lanewise(VectorOperators.LSHL, 32));
                firstHalf.selectFrom(d01, d23).reinterpretAsInts().intoArray(words, 4 * at + 12 * LANES);
                secondHalf.selectFrom(d01, d23).reinterpretAsInts().intoArray(words, 4 * at + 14 * LANES);
            }
        }
    }

    /**
     * Uniform float32 values in {@code [low, high)} at elements {@code begin .. end - 1} of {@code out} (contiguous
     * floats from byte {@code base}), element {@code i} from word {@code i % 4} of block {@code firstBlock + i / 4}:
     * {@code low + (w >>> 8) 2^-24 (high - low)} in double, rounded to float, and {@code low} where that rounding
     * reached {@code high}, as {@link CpuRandomKernels}'s scalar loop.
     */
    static void uniformFloats(MemorySegment out, long base, long begin, long end, double low, double high, long seed, long firstBlock) {
        uniformFloats(out, base, begin, end, low, high, seed, firstBlock, FLOAT_FILLS);
    }

    /** {@link #uniformFloats} on the loops {@code warmth} picks. */
    static void uniformFloats(MemorySegment out, long base, long begin, long end, double low, double high, long seed, long firstBlock,
                              Warmth warmth) {
        int[] words = WORDS.get();
        // Whole blocks from the first whole one; the partial blocks at both ends go element by element.
        long i = begin;
        long firstWhole = Math.min(end, (begin + 3) & ~3L);
        i = scalarFloats(out, base, i, firstWhole, low, high, seed, firstBlock);
        // The vector loop is its own method, called per chunk: a long first fill would otherwise compile it on stack
        // (OSR), whose profiled loop predicates trapped and recompiled it without -XX:-UseProfiledLoopPredicate.
        while (end - i >= 4L * LANES) {
            int blocks = (int) Math.min(CHUNK_BLOCKS, (end - i) / 4 / LANES * LANES);
            chunk(false, out, base + i * Float.BYTES, seed, firstBlock + i / 4, blocks, low, high, words, null, warmth);
            i += 4L * blocks;
        }
        scalarFloats(out, base, i, end, low, high, seed, firstBlock);
    }

    /**
     * Blocks {@code first .. first + blocks - 1} ({@code blocks} a multiple of the lanes) as uniforms to {@code out} from
     * byte {@code at}, float64 ({@code wide}: two a block) or float32 (four), on the loops {@code warmth} picks.
     */
    private static void chunk(boolean wide, MemorySegment out, long at, long seed, long first, int blocks, double low, double high,
                              int[] words, MemorySegment wordBytes, Warmth warmth) {
        if (warmth.vectorLoops) {
            vectorChunk(wide, out, at, seed, first, blocks, low, high, words, wordBytes);
            return;
        }
        int probed = 0;
        long start = System.nanoTime();
        if (warmth.probeDue()) {
            probed = LANES;
            vectorChunk(wide, out, at, seed, first, LANES, low, high, words, wordBytes);
            long now = System.nanoTime();
            warmth.probed(now - start);
            start = now;
        }
        // A block is 16 bytes of output either way: four floats or two doubles.
        scalarChunk(wide, out, at + 16L * probed, seed, first + probed, blocks - probed, low, high, words);
        warmth.scalarChunk(System.nanoTime() - start, blocks - probed);
    }

    private static void vectorChunk(boolean wide, MemorySegment out, long at, long seed, long first, int blocks, double low, double high,
                                    int[] words, MemorySegment wordBytes) {
        blocks(seed, first, blocks, words);
        if (wide) doublesOfWords(out, at, words, wordBytes, 2 * blocks, low, high);
        else floatsOfWords(out, at, words, 4 * blocks, low, high);
    }

    private static void scalarChunk(boolean wide, MemorySegment out, long at, long seed, long first, int blocks, double low, double high,
                                    int[] words) {
        scalarBlocks(seed, first, blocks, words);
        if (wide) scalarDoublesOfWords(out, at, words, 2 * blocks, low, high);
        else scalarFloatsOfWords(out, at, words, 4 * blocks, low, high);
    }

    /** {@code count} uniform floats from {@code words} to {@code out} at byte {@code at}, as {@link #uniformFloats} says. */
    private static void floatsOfWords(MemorySegment out, long at, int[] words, int count, double low, double high) {
        double range = high - low;
        boolean clampHigh = high > low;
        float lowF = (float) low;
        for (int w = 0; w < count; w += FLOATS.length()) {
            IntVector bits = IntVector.fromArray(INTS, words, w).lanewise(VectorOperators.LSHR, 8);
            DoubleVector u = (DoubleVector) bits.convertShape(VectorOperators.I2D, DOUBLES, 0);
            DoubleVector v = u.mul(TWO_POW_M24).mul(range).add(low);
            FloatVector f = (FloatVector) v.convertShape(VectorOperators.D2F, FLOATS, 0);
            if (clampHigh) {
                VectorMask<Double> atHigh = ((DoubleVector) f.convertShape(VectorOperators.F2D, DOUBLES, 0))
                        .compare(VectorOperators.GE, high);
                if (atHigh.anyTrue()) f = f.blend(lowF, atHigh.cast(FLOATS));
            }
            f.intoMemorySegment(out, at + (long) w * Float.BYTES, ByteOrder.nativeOrder());
        }
    }

    /** Uniform float64 values as {@link #uniformFloats}: element {@code i} from words {@code 2 (i % 2)} and the next of block {@code i / 2}. */
    static void uniformDoubles(MemorySegment out, long base, long begin, long end, double low, double high, long seed, long firstBlock) {
        uniformDoubles(out, base, begin, end, low, high, seed, firstBlock, DOUBLE_FILLS);
    }

    /** {@link #uniformDoubles} on the loops {@code warmth} picks. */
    static void uniformDoubles(MemorySegment out, long base, long begin, long end, double low, double high, long seed, long firstBlock,
                               Warmth warmth) {
        int[] words = WORDS.get();
        MemorySegment wordBytes = WORD_PAIRS.get().get((long) words.length * Integer.BYTES);
        long i = begin;
        long firstWhole = Math.min(end, (begin + 1) & ~1L);
        i = scalarDoubles(out, base, i, firstWhole, low, high, seed, firstBlock);
        while (end - i >= 2L * LANES) {
            int blocks = (int) Math.min(CHUNK_BLOCKS, (end - i) / 2 / LANES * LANES);
            chunk(true, out, base + i * Double.BYTES, seed, firstBlock + i / 2, blocks, low, high, words, wordBytes, warmth);
            i += 2L * blocks;
        }
        scalarDoubles(out, base, i, end, low, high, seed, firstBlock);
    }

    /** {@code count} uniform doubles from {@code words} (two words each) to {@code out} at byte {@code at}, as {@link #uniformDoubles} says. */
    private static void doublesOfWords(MemorySegment out, long at, int[] words, MemorySegment wordBytes, int count, double low, double high) {
        double range = high - low;
        boolean clampHigh = high > low;
        MemorySegment.copy(words, 0, wordBytes, ValueLayout.JAVA_INT, 0, 2 * count);
        for (int e = 0; e < count; e += DOUBLES.length()) {
            // Little-endian pairs: the element's first word in the low half, its second in the high half.
            LongVector pair = LongVector.fromMemorySegment(LONGS, wordBytes, (long) e * Long.BYTES, ByteOrder.LITTLE_ENDIAN);
            LongVector bits = pair.and(LOW32).lanewise(VectorOperators.LSHL, 21)
                    .lanewise(VectorOperators.XOR, pair.lanewise(VectorOperators.LSHR, 32 + 11))
                    .and((1L << 53) - 1);
            DoubleVector v = ((DoubleVector) bits.convertShape(VectorOperators.L2D, DOUBLES, 0)).mul(TWO_POW_M53).mul(range).add(low);
            if (clampHigh) {
                VectorMask<Double> atHigh = v.compare(VectorOperators.GE, high);
                if (atHigh.anyTrue()) v = v.blend(low, atHigh);
            }
            v.intoMemorySegment(out, at + (long) e * Double.BYTES, ByteOrder.nativeOrder());
        }
    }

    /** {@link #blocks} one block at a time by {@link Generator#philox}: scalar code, which C1 compiles in milliseconds. */
    static void scalarBlocks(long seed, long first, int blocks, int[] words) {
        int[] w = new int[4];
        for (int b = 0; b < blocks; b++) {
            Generator.philox(seed, first + b, w);
            System.arraycopy(w, 0, words, 4 * b, 4);
        }
    }

    /** {@link #floatsOfWords} element by element. */
    private static void scalarFloatsOfWords(MemorySegment out, long at, int[] words, int count, double low, double high) {
        for (int w = 0; w < count; w++) out.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at + (long) w * Float.BYTES, uniformFloat(words[w], low, high));
    }

    /** {@link #doublesOfWords} element by element. */
    private static void scalarDoublesOfWords(MemorySegment out, long at, int[] words, int count, double low, double high) {
        for (int e = 0; e < count; e++) {
            out.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at + (long) e * Double.BYTES, uniformDouble(words[2 * e], words[2 * e + 1], low, high));
        }
    }

    /** The uniform float of one Philox word, as {@link #uniformFloats} says. */
    private static float uniformFloat(int word, double low, double high) {
        float v = (float) (low + (word >>> 8) * TWO_POW_M24 * (high - low));
        return v >= high && high > low ? (float) low : v;
    }

    /** The uniform double of two consecutive Philox words, as {@link #uniformDoubles} says. */
    private static double uniformDouble(int first, int second, double low, double high) {
        long bits = ((first & LOW32) << 21) ^ ((second & LOW32) >>> 11);
        double v = low + (bits & ((1L << 53) - 1)) * TWO_POW_M53 * (high - low);
        return v >= high && high > low ? low : v;
    }

    /**
     * Dropout's factors of elements {@code begin .. end - 1} ({@code begin} a multiple of 4) from the words themselves:
     * float32 {@code scale} where the element's {@link #uniformFloats} value in [0, 1) is below {@code keepBelow}, else 0,
     * to {@code out} (element {@code i} at byte {@code base + 4 i}), and 1 or 0 to {@code mask} (at byte
     * {@code maskBase + i}) where not null. That value, {@code (w >>> 8) 2^-24}, is exact in float32, so it is below
     * {@code keepBelow} exactly where {@code w >>> 8 < ceil(keepBelow 2^24)}: the same keeps as the float test, without
     * the conversion through float64. Whole vectors of blocks only; returns the first element not written.
     */
    static long dropoutFactors(MemorySegment out, long base, MemorySegment mask, long maskBase, long begin, long end, float keepBelow,
                               float scale, long seed, long firstBlock) {
        int[] words = WORDS.get();
        int below = (int) Math.ceil(keepBelow * (double) (1 << 24));
        long i = begin;
        while (end - i >= 4L * LANES) {
            int blocks = (int) Math.min(CHUNK_BLOCKS, (end - i) / 4 / LANES * LANES);
            blocks(seed, firstBlock + i / 4, blocks, words);
            factorsOfWords(words, 4 * blocks, below, scale, out, base + i * Float.BYTES, mask, maskBase + i);
            i += 4L * blocks;
        }
        return i;
    }

    private static void factorsOfWords(int[] words, int count, int below, float scale, MemorySegment out, long at, MemorySegment mask, long maskAt) {
        FloatVector zero = FloatVector.zero(FloatVector.SPECIES_512);
        ByteVector none = ByteVector.zero(ByteVector.SPECIES_128);
        for (int w = 0; w < count; w += IntVector.SPECIES_512.length()) {
            VectorMask<Integer> keep = IntVector.fromArray(IntVector.SPECIES_512, words, w).lanewise(VectorOperators.LSHR, 8)
                    .compare(VectorOperators.LT, below);
            zero.blend(scale, keep.cast(FloatVector.SPECIES_512)).intoMemorySegment(out, at + (long) w * Float.BYTES, ByteOrder.LITTLE_ENDIAN);
            if (mask != null) none.blend((byte) 1, keep.cast(ByteVector.SPECIES_128)).intoMemorySegment(mask, maskAt + w, ByteOrder.LITTLE_ENDIAN);
        }
    }

    private static long scalarFloats(MemorySegment out, long base, long begin, long end, double low, double high, long seed,
                                     long firstBlock) {
        int[] w = new int[4];
        for (long i = begin; i < end; i++) {
            Generator.philox(seed, firstBlock + i / 4, w);
            out.set(ValueLayout.JAVA_FLOAT_UNALIGNED, base + i * Float.BYTES, uniformFloat(w[(int) (i & 3)], low, high));
        }
        return end;
    }

    private static long scalarDoubles(MemorySegment out, long base, long begin, long end, double low, double high, long seed,
                                      long firstBlock) {
        int[] w = new int[4];
        for (long i = begin; i < end; i++) {
            Generator.philox(seed, firstBlock + i / 2, w);
            int k = (int) (i & 1) * 2;
            out.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, base + i * Double.BYTES, uniformDouble(w[k], w[k + 1], low, high));
        }
        return end;
    }
}
