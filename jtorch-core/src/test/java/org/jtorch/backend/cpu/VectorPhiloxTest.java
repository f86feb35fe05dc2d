package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import jdk.incubator.vector.LongVector;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The vectorised Philox uniforms hold the scalar generator's values bit for bit: every element from its block's
 * word, computed here element by element with {@link Generator#philox}, for ranges that start and end inside a
 * block, short ranges, counters past 2^32, and intervals where float rounding reaches the upper bound; on the vector
 * loops, on the scalar loop that runs while they are cold, and on the mix of both that a cold fill's probes make. Dropout's
 * factors made from the words keep exactly where the float32 uniform is below the threshold.
 */
class VectorPhiloxTest {
    private static final double[][] INTERVALS = {{0, 1}, {-3.5, 7.25}, {1, 1 + 1e-7}, {-1e-3, 0}, {2, 2}};
    private static final long[][] RANGES = {{0, 4096}, {3, 1001}, {1, 2}, {0, 0}, {5, 37}, {17, 16_401}};

    private static List<VectorPhilox.Warmth> loops() {
        return List.of(VectorPhilox.Warmth.vectorOnly(), VectorPhilox.Warmth.scalarOnly(), VectorPhilox.Warmth.cold());
    }

    /**
     * The vector generator's raw words are the scalar generator's in element order (block b's word j at {@code 4 b + j}),
     * for block counts of one vector of lanes up to a whole chunk, first blocks at odd offsets and across the counter's
     * low word wrapping past 2^32, and nothing written past the last block.
     */
    @Test
    void blocksAreTheScalarWordsInElementOrder() {
        Assumptions.assumeTrue(VectorPhilox.supported(), "no 512-bit vectors on this machine");
        int lanes = LongVector.SPECIES_512.length();
        int[] words = new int[4 * VectorPhilox.CHUNK_BLOCKS + 5];
        int[] w = new int[4];
        for (long first : new long[] {0, 1, 13, 12_347, (1L << 32) - 3, (1L << 32) + 5, 0x7ffffffffffffff1L}) {
            for (int blocks : new int[] {lanes, 2 * lanes, 3 * lanes, 5 * lanes, VectorPhilox.CHUNK_BLOCKS - lanes, VectorPhilox.CHUNK_BLOCKS}) {
                long seed = 0x2545F4914F6CDD1DL * (first + 1) + blocks;
                Arrays.fill(words, 0x5a5a5a5a);
                VectorPhilox.blocks(seed, first, blocks, words);
                for (int b = 0; b < blocks; b++) {
                    Generator.philox(seed, first + b, w);
                    for (int j = 0; j < 4; j++) {
                        assertEquals(w[j], words[4 * b + j], "word " + j + " of block " + (first + b) + ", " + blocks + " blocks from " + first);
                    }
                }
                for (int i = 4 * blocks; i < words.length; i++) assertEquals(0x5a5a5a5a, words[i], "word " + i + " past " + blocks + " blocks");
            }
        }
    }

    @Test
    void floatsMatchTheScalarGenerator() {
        Assumptions.assumeTrue(VectorPhilox.supported(), "no 512-bit vectors on this machine");
        for (VectorPhilox.Warmth loops : loops()) floatsMatchTheScalarGenerator(loops);
    }

    private static void floatsMatchTheScalarGenerator(VectorPhilox.Warmth loops) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(20_000 * Float.BYTES);
            for (long firstBlock : new long[] {0, 12_345, (1L << 32) - 3}) {
                for (double[] in : INTERVALS) {
                    for (long[] r : RANGES) {
                        long seed = 0x9E3779B97F4A7C15L ^ firstBlock;
                        VectorPhilox.uniformFloats(out, 4, r[0], r[1], in[0], in[1], seed, firstBlock, loops);
                        int[] w = new int[4];
                        for (long i = r[0]; i < r[1]; i++) {
                            Generator.philox(seed, firstBlock + i / 4, w);
                            float expected = (float) (in[0] + (w[(int) (i & 3)] >>> 8) * (1.0 / (1 << 24)) * (in[1] - in[0]));
                            if (expected >= in[1] && in[1] > in[0]) expected = (float) in[0];
                            float actual = out.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 + i * Float.BYTES);
                            assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(actual),
                                    "element " + i + " of [" + in[0] + ", " + in[1] + ") from block " + firstBlock);
                        }
                    }
                }
            }
        }
    }

    @Test
    void doublesMatchTheScalarGenerator() {
        Assumptions.assumeTrue(VectorPhilox.supported(), "no 512-bit vectors on this machine");
        for (VectorPhilox.Warmth loops : loops()) doublesMatchTheScalarGenerator(loops);
    }

    private static void doublesMatchTheScalarGenerator(VectorPhilox.Warmth loops) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(20_000 * Double.BYTES);
            for (long firstBlock : new long[] {0, 777, (1L << 32) - 1}) {
                for (double[] in : INTERVALS) {
                    for (long[] r : RANGES) {
                        long seed = 42 + firstBlock;
                        VectorPhilox.uniformDoubles(out, 8, r[0], r[1], in[0], in[1], seed, firstBlock, loops);
                        int[] w = new int[4];
                        for (long i = r[0]; i < r[1]; i++) {
                            Generator.philox(seed, firstBlock + i / 2, w);
                            int k = (int) (i & 1) * 2;
                            long bits = ((w[k] & 0xffffffffL) << 21) ^ ((w[k + 1] & 0xffffffffL) >>> 11);
                            double expected = in[0] + (bits & ((1L << 53) - 1)) * (1.0 / (1L << 53)) * (in[1] - in[0]);
                            if (expected >= in[1] && in[1] > in[0]) expected = in[0];
                            double actual = out.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 8 + i * Double.BYTES);
                            assertEquals(Double.doubleToRawLongBits(expected), Double.doubleToRawLongBits(actual),
                                    "element " + i + " of [" + in[0] + ", " + in[1] + ") from block " + firstBlock);
                        }
                    }
                }
            }
        }
    }

    /**
     * The scalar loop that cold fills start on and the vector loops write the same bytes, float32 and float64 (the two
     * dtypes these loops fill), over odd lengths and odd starts, many chunks long; a cold state's fill mixes them.
     */
    @Test
    void scalarAndVectorLoopsWriteTheSameBytes() {
        Assumptions.assumeTrue(VectorPhilox.supported(), "no 512-bit vectors on this machine");
        long[] lengths = {1, 3, 31, 33, 127, 511, 513, 4097, 100_003};
        long[] starts = {0, 1, 7};
        try (Arena arena = Arena.ofConfined()) {
            long bytes = (100_003 + 8) * Double.BYTES;
            MemorySegment vector = arena.allocate(bytes), scalar = arena.allocate(bytes), mixed = arena.allocate(bytes);
            VectorPhilox.Warmth cold = VectorPhilox.Warmth.cold();
            for (boolean wide : new boolean[] {false, true}) {
                for (long start : starts) {
                    for (long n : lengths) {
                        long seed = 0x5DEECE66DL * n + start, firstBlock = 3 * n;
                        for (MemorySegment s : List.of(vector, scalar, mixed)) s.fill((byte) 0x7f);
                        fill(wide, vector, start, n, seed, firstBlock, VectorPhilox.Warmth.vectorOnly());
                        fill(wide, scalar, start, n, seed, firstBlock, VectorPhilox.Warmth.scalarOnly());
                        fill(wide, mixed, start, n, seed, firstBlock, cold);
                        String what = (wide ? "float64" : "float32") + " elements " + start + " .. " + (start + n);
                        assertEquals(-1, vector.mismatch(scalar), "scalar loop against the vector loops, " + what);
                        assertEquals(-1, vector.mismatch(mixed), "a cold fill against the vector loops, " + what);
                        long last = (start + n - 1) * (wide ? Double.BYTES : Float.BYTES);
                        assertTrue(vector.get(ValueLayout.JAVA_INT_UNALIGNED, last) != 0x7f7f7f7f, "nothing written, " + what);
                    }
                }
            }
        }
    }

    @Test
    void dropoutFactorsKeepWhereTheUniformIsBelowTheThreshold() {
        Assumptions.assumeTrue(VectorPhilox.supported(), "no 512-bit vectors on this machine");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(20_000 * Float.BYTES), mask = arena.allocate(20_000);
            for (long firstBlock : new long[] {0, 12_345, (1L << 32) - 3}) {
                long seed = 0x5851F42D4C957F2DL + firstBlock;
                int[] w = new int[4];
                Generator.philox(seed, firstBlock + 25, w);
                // Thresholds at and next to an element's own uniform (element 100 = word 0 of block 25), exact multiples
                // of 2^-24 and not, and the ends.
                float own = (float) ((w[0] >>> 8) * (1.0 / (1 << 24)));
                float[] thresholds = {0.9f, 0.1f, 0.5f, own, Math.nextUp(own), Math.nextDown(own), 0.3f + 0x1p-26f, 0, 1, 1.5f, -1};
                for (float keepBelow : thresholds) {
                    for (long[] r : new long[][] {{0, 4096}, {4, 1004}, {16, 16_400}, {8, 39}}) {
                        out.fill((byte) 0x7f);
                        mask.fill((byte) 7);
                        long end = VectorPhilox.dropoutFactors(out, 4, mask, 1, r[0], r[1], keepBelow, 1.25f, seed, firstBlock);
                        assertEquals(r[0] + (r[1] - r[0]) / 32 * 32, end, "whole vectors of blocks written in [" + r[0] + ", " + r[1] + ")");
                        for (long i = r[0]; i < r[1]; i++) {
                            Generator.philox(seed, firstBlock + i / 4, w);
                            boolean keep = (float) ((w[(int) (i & 3)] >>> 8) * (1.0 / (1 << 24))) < keepBelow;
                            String at = "element " + i + " below " + keepBelow + " from block " + firstBlock;
                            float factor = out.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 + i * Float.BYTES);
                            byte kept = mask.get(ValueLayout.JAVA_BYTE, 1 + i);
                            if (i < end) {
                                assertEquals(keep ? 1.25f : 0f, factor, at);
                                assertEquals(keep ? 1 : 0, kept, at);
                            } else {
                                assertEquals(0x7f7f7f7f, Float.floatToRawIntBits(factor), at + ": past the returned end");
                                assertEquals(7, kept, at + ": past the returned end");
                            }
                        }
                    }
                }
            }
        }
    }

    private static void fill(boolean wide, MemorySegment out, long start, long n, long seed, long firstBlock, VectorPhilox.Warmth loops) {
        if (wide) VectorPhilox.uniformDoubles(out, 0, start, start + n, -0.25, 3, seed, firstBlock, loops);
        else VectorPhilox.uniformFloats(out, 0, start, start + n, -0.25, 3, seed, firstBlock, loops);
    }
}
