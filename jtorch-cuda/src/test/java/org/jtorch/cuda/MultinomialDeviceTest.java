package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * multinomial on cuda:0 ({@code multinomial.cu}): the CPU's indices from the same generator, bit for bit, with and without
 * replacement; nothing read back or waited for at the call; a bad row reported at the next synchronisation with the
 * stream (or at the call in synchronous mode), naming the op, the shape and the first bad row.
 */
class MultinomialDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final String DEFERRED = " (found by multinomial's CUDA check and reported at the next synchronisation";
    @RegisterExtension
    final DeferredCheckCase deferred = new DeferredCheckCase();

    /** Weights {@code rows x c} in [0, 1) with every fifth one zero, from {@code seed}. */
    private static Tensor weights(long seed, long rows, long c) {
        Tensor w = Torch.rand(new long[] {rows, c}, DType.FLOAT64, Device.cpu(), new Generator(seed));
        double[] v = w.toDoubleArray();
        for (int i = 0; i < v.length; i += 5) v[i] = 0;
        return Torch.tensor(v).reshape(rows, c);
    }

    private static long[] draws(Tensor p, long k, boolean replacement, long seed) {
        return p.multinomial(k, replacement, new Generator(seed)).toLongArray();
    }

    @Test
    void theDevicesIndicesAreTheCpusForTheSameGenerator() {
        long[][] cases = {{1, 7, 1}, {1, 7, 5}, {3, 50, 1}, {3, 50, 17}, {64, 1000, 1}, {5, 300, 100}, {2, 600, 600}};
        for (long[] k : cases) {
            for (DType t : new DType[] {DType.FLOAT64, DType.FLOAT32}) {
                Tensor cpu = weights(k[0] * 31 + k[1], k[0], k[1]).to(t);
                Tensor dev = cpu.to(CUDA);
                for (boolean replacement : new boolean[] {true, false}) {
                    String what = (replacement ? "with" : "without") + " replacement, " + k[0] + " x " + k[1] + ", k = " + k[2] + ", " + t;
                    assertArrayEquals(draws(cpu, k[2], replacement, 5), draws(dev, k[2], replacement, 5), what);
                }
            }
        }
        // a 1-D strided (transposed column) input and a float16 one
        Tensor m = weights(3, 40, 6);
        Tensor column = m.transpose(0, 1).select(0, 2);
        assertArrayEquals(draws(column, 30, true, 8), draws(m.to(CUDA).transpose(0, 1).select(0, 2), 30, true, 8), "1-D, strided");
        assertArrayEquals(draws(m.to(DType.FLOAT16), 4, false, 9), draws(m.to(DType.FLOAT16).to(CUDA), 4, false, 9), "float16");
    }

    /**
     * Long rows with replacement: the block's threads sum a chunk each ({@code RandomOpKernels.multinomialScanChunk}: 196
     * chunks of 1,024 for 200,000 categories, 256 of 1,172 for 300,000), the CPU's chunks and additions, so its indices.
     */
    @Test
    void longRowsWithReplacementAreTheCpusDraws() {
        for (long c : new long[] {200_000, 300_000}) {
            Tensor cpu = weights(c, 2, c);
            for (DType t : new DType[] {DType.FLOAT64, DType.FLOAT32}) {
                Tensor p = cpu.to(t);
                assertArrayEquals(draws(p, 500, true, 7), draws(p.to(CUDA), 500, true, 7), c + " categories, " + t);
            }
        }
    }

    @Test
    void theDrawsFollowTheWeightsAndNeverAZeroCategory() {
        double[] w = {0.1, 0, 2, 0.5, 0, 1.4};
        Tensor p = Torch.tensor(w).to(CUDA);
        long[] s = draws(p, 40_000, true, 2);
        long[] seen = new long[w.length];
        for (long i : s) seen[(int) i]++;
        for (int j = 0; j < w.length; j++) {
            double expected = w[j] / 4.0 * s.length;
            assertEquals(expected, seen[j], 4 * Math.sqrt(expected) + 1e-9, "category " + j + " of " + java.util.Arrays.toString(seen));
        }
        // without replacement: the positive categories first, then the zero ones in index order
        long[] all = draws(p, 6, false, 3);
        assertEquals(java.util.Set.of(0L, 2L, 3L, 5L), java.util.Set.of(all[0], all[1], all[2], all[3]));
        assertArrayEquals(new long[] {1, 4}, new long[] {all[4], all[5]});
        // the first of two draws without replacement follows the weights too
        Tensor rows = Torch.tensor(w).reshape(1, 6).expand(20_000, 6).contiguous().to(CUDA);
        long[] firsts = rows.multinomial(2, false, new Generator(4)).select(1, 0).toLongArray();
        long[] first = new long[w.length];
        for (long i : firsts) first[(int) i]++;
        assertEquals(0, first[1] + first[4], "zero categories drawn first");
        assertEquals(2 / 4.0 * firsts.length, first[2], 4 * Math.sqrt(firsts.length / 2.0), java.util.Arrays.toString(first));
    }

    @Test
    void nothingIsReadBackOrWaitedForAtTheCall() {
        Tensor p = weights(11, 64, 1000).to(DType.FLOAT32).to(CUDA);
        for (boolean replacement : new boolean[] {true, false}) {
            Cuda.synchronize(CUDA);
            long[] before = GemmEpilogueDeviceTest.simulatorStats();
            Tensor s = p.multinomial(replacement ? 300 : 7, replacement, new Generator(6));
            long[] after = GemmEpilogueDeviceTest.simulatorStats();
            assertEquals(before[4], after[4], "synchronisations during the call, replacement " + replacement);
            assertEquals(before[6], after[6], "bytes copied to the host during the call, replacement " + replacement);
            assertEquals(before[5], after[5], "bytes copied to the device during the call, replacement " + replacement);
            assertEquals(64 * (replacement ? 300 : 7), s.toLongArray().length);
        }
    }

    @Test
    void aBadRowIsReportedAtTheNextSynchronisationNamingTheShapeAndRow() {
        Tensor p = Torch.tensor(new double[] {1, 2, 0, 0, 1, Double.NaN, 3, 1}).reshape(4, 2).to(CUDA);
        Tensor s = p.multinomial(3, true, new Generator(1)); // nothing waited for: no exception here
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, s::toLongArray);
        assertTrue(e.getMessage().startsWith("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)"
                + " (prob_dist of shape [4, 2], row 1)" + DEFERRED), e.getMessage());
        long[] v = s.toLongArray(); // reported once; the bad rows' samples are 0, the others drawn
        for (int i = 3; i < 9; i++) assertEquals(0, v[i], "the bad rows' samples, " + java.util.Arrays.toString(v));
        assertArrayEquals(draws(Torch.tensor(new double[] {1, 2, 3, 1}).reshape(2, 2), 3, true, 1),
                new long[] {v[0], v[1], v[2], v[9], v[10], v[11]}, "the good rows, as the CPU draws them");

        Tensor negative = Torch.tensor(new double[] {1, 1, 1, -1}).reshape(2, 2).to(CUDA);
        negative.multinomial(1, false, new Generator(1));
        IllegalArgumentException n = assertThrows(IllegalArgumentException.class, () -> Cuda.synchronize(CUDA));
        assertTrue(n.getMessage().startsWith("multinomial(): probability tensor contains either `inf`, `nan` or element < 0"
                + " (prob_dist of shape [2, 2], row 1)" + DEFERRED), n.getMessage());
        Tensor infinite = Torch.tensor(new double[] {1, Double.POSITIVE_INFINITY}).to(CUDA);
        Tensor after = infinite.multinomial(2, true, new Generator(1)).add(1);
        IllegalArgumentException i = assertThrows(IllegalArgumentException.class, after::toLongArray);
        assertTrue(i.getMessage().startsWith("multinomial(): invalid multinomial distribution (encountering probability entry = infinity or NaN)"
                + " (prob_dist of shape [2])" + DEFERRED), i.getMessage());
        assertArrayEquals(new long[] {1, 1}, after.toLongArray(), "the device stays usable");
    }

    @Test
    void synchronousChecksRaiseTheCpusErrorAtTheCall() {
        Cuda.setSynchronousIndexChecks(true);
        Tensor p = Torch.tensor(new double[] {1, 1, -1, 2}).reshape(2, 2).to(CUDA);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.multinomial(2, true, new Generator(1)));
        IllegalArgumentException cpu = assertThrows(IllegalArgumentException.class, () -> p.to(Device.cpu()).multinomial(2, true, new Generator(1)));
        assertEquals(cpu.getMessage(), e.getMessage());
        assertEquals("multinomial(): invalid multinomial distribution (encountering probability entry < 0) (prob_dist of shape [2, 2], row 1)",
                e.getMessage());
    }
}
