package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.nn.F;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The input checks inside the kernels ({@code backend.ValueCheckKernels}): binary_cross_entropy's loss and range check in
 * one pass ({@code binary_cross_entropy_elementwise}) and bernoulli's probabilities, on the test device
 * ({@code -Djtorch.test.device}; a device raises at the next synchronisation, so each refused call's result is read):
 * the losses equal to the composition of pointwise ops the kernel replaced, within a few ulps on the CPU (the same
 * steps, but the JDK's vector log differs in its last bit between compiled and interpreted code); PyTorch 1.13's
 * message for an input outside [0, 1] and for NaN, naming the shape, dtype and first bad element; the JIT keeps the
 * check (no graph break, the error raised by a compiled function, even where the loss goes unread).
 */
@ExtendWith(ScopePerTest.class)
class ValueCheckKernelsTest {
    private static final Device DEVICE = Fixtures.device();
    private final Generator gen = new Generator(47);

    private Tensor uniform(DType dtype, long... shape) {
        return Torch.rand(shape, DType.FLOAT64, Device.cpu(), gen).to(dtype);
    }

    /** The pointwise composition the kernel replaced, op by op in the operands' dtype. */
    private static Tensor composed(Tensor p, Tensor t, Tensor w) {
        Tensor loss = t.sub(1.0).mul(p.neg().log1p().clampMin(-100)).sub(t.mul(p.log().clampMin(-100)));
        return w == null ? loss : loss.mul(w);
    }

    @Test
    void theLossesAreTheCompositionsWithinAFewUlps() {
        // lengths around the vector widths and the threads' grain; 0 and 1 exactly (the clamped logarithms)
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (long n : new long[] {1, 7, 33, 1000, DEVICE.isCpu() ? 100_003 : 20_003}) {
                Tensor p = uniform(dtype, n), t = uniform(dtype, n), w = uniform(dtype, n);
                double[] pv = p.toDoubleArray();
                pv[0] = 0;
                if (n > 2) pv[(int) n - 2] = 1;
                p = Torch.tensor(pv).to(dtype).to(DEVICE);
                t = t.to(DEVICE);
                w = w.to(DEVICE);
                String what = dtype + ", " + n + " elements";
                Tensor none = F.binaryCrossEntropy(p, t, null, F.Reduction.NONE);
                Tensor weighted = F.binaryCrossEntropy(p, t, w, F.Reduction.NONE);
                if (DEVICE.isCpu()) {
                    // The same steps as the composition, so the same bits, except where one of the two log kernels has been
                    // compiled by C2 and the other not yet: the JDK's vector log has other bits in its intrinsic than in its
                    // fallback (docs/BENCHMARKS.md, the fifteenth session's lead section). Within a few ulps, then.
                    double ulp = dtype == DType.FLOAT32 ? 5e-7 : 1e-15;
                    OpTestSupport.assertCloseRelative(composed(p, t, null), none, ulp, what);
                    OpTestSupport.assertCloseRelative(composed(p, t, w), weighted, ulp, what + ", weighted");
                } else {
                    OpTestSupport.assertCloseRelative(composed(p, t, null).to(Device.cpu()), none.to(Device.cpu()), 1e-6, what);
                    OpTestSupport.assertCloseRelative(composed(p, t, w).to(Device.cpu()), weighted.to(Device.cpu()), 1e-6, what + ", weighted");
                }
                assertEquals(dtype, none.dtype());
                OpTestSupport.assertCloseRelative(none.mean(), F.binaryCrossEntropy(p, t), dtype == DType.FLOAT32 ? 5e-7 : 1e-15, what + ", mean");
                OpTestSupport.assertCloseRelative(weighted.sum(), F.binaryCrossEntropy(p, t, w, F.Reduction.SUM), dtype == DType.FLOAT32 ? 5e-7 : 1e-15,
                        what + ", sum");
            }
        }
    }

    @Test
    void otherFormsGoThroughScratchOfTheComputeDtype() {
        Tensor p = uniform(DType.FLOAT64, 6, 5), t = uniform(DType.FLOAT64, 6, 5), w = uniform(DType.FLOAT64, 5);
        Tensor reference = composed(p, t, w.expand(6, 5)).to(Device.cpu());
        Tensor pd = p.to(DEVICE), td = t.to(DEVICE);
        // a broadcast weight, transposed (strided) operands, mixed dtypes (float64 result), float32 weight
        OpTestSupport.assertCloseRelative(reference, F.binaryCrossEntropy(pd, td, w.to(DEVICE), F.Reduction.NONE).to(Device.cpu()), 1e-15, "broadcast weight");
        Tensor pt = p.transpose(0, 1).contiguous().to(DEVICE).transpose(0, 1), tt = t.transpose(0, 1).contiguous().to(DEVICE).transpose(0, 1);
        assertFalse(pt.isContiguous());
        OpTestSupport.assertCloseRelative(reference, F.binaryCrossEntropy(pt, tt, w.to(DEVICE), F.Reduction.NONE).to(Device.cpu()), 1e-15, "strided");
        Tensor mixed = F.binaryCrossEntropy(pd.to(DType.FLOAT32), td, w.to(DType.FLOAT32).to(DEVICE), F.Reduction.NONE);
        assertEquals(DType.FLOAT64, mixed.dtype());
        OpTestSupport.assertCloseRelative(composed(p.to(DType.FLOAT32).to(DType.FLOAT64), t, w.to(DType.FLOAT32).to(DType.FLOAT64).expand(6, 5)),
                mixed.to(Device.cpu()), 1e-15, "mixed dtypes");
        // 16-bit operands: computed in float32, rounded once
        for (DType half : new DType[] {DType.FLOAT16, DType.BFLOAT16}) {
            Tensor r = F.binaryCrossEntropy(pd.to(half), td.to(half), null, F.Reduction.NONE);
            assertEquals(half, r.dtype());
            Tensor exact = composed(p.to(half).to(DType.FLOAT32), t.to(half).to(DType.FLOAT32), null).to(half);
            // within one 16-bit ulp on the CPU (the float32 steps agree to an ulp or two, see above), looser on a device
            double tol = DEVICE.isCpu() ? (half == DType.FLOAT16 ? 1e-3 : 8e-3) : 1e-2;
            OpTestSupport.assertCloseRelative(exact.to(DType.FLOAT64), r.to(Device.cpu()).to(DType.FLOAT64), tol, half.toString());
        }
    }

    @Test
    void anInputOutsideTheUnitIntervalIsRefusedNamingTheFirstBadElement() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            for (double bad : new double[] {1.5, -1e-7, Double.NaN, Double.POSITIVE_INFINITY}) {
                double[] v = uniform(DType.FLOAT64, 3 * 50_000).toDoubleArray();
                v[70_001] = bad; // past the first thread's chunk
                v[140_000] = 2;
                Tensor p = Torch.tensor(v).reshape(3, 50_000).to(dtype).to(DEVICE), t = uniform(dtype, 3, 50_000).to(DEVICE);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.binaryCrossEntropy(p, t).item());
                assertTrue(e.getMessage().startsWith("binaryCrossEntropy: all elements of input should be between 0 and 1"
                        + " (input of shape [3, 50000], " + dtype + ": element [1, 20001] is outside [0, 1] or NaN)"), e.getMessage());
            }
        }
        // a strided input: the position is the element's in the input's shape
        Tensor p = Torch.tensor(new double[] {0.5, 0.5, 0.5, 1.25, 0.5, 0.5}).reshape(2, 3).to(DEVICE).transpose(0, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> F.binaryCrossEntropy(p, p.mul(0.5), null, F.Reduction.NONE).toDoubleArray());
        assertTrue(e.getMessage().contains("(input of shape [3, 2], torch.float64: element [0, 1] is outside"), e.getMessage());
        // a float16 one
        Tensor h = Torch.tensor(new double[] {0.5, -0.5}).to(DType.FLOAT16).to(DEVICE);
        IllegalArgumentException he = assertThrows(IllegalArgumentException.class, () -> F.binaryCrossEntropy(h, h.abs()).item());
        assertTrue(he.getMessage().contains("(input of shape [2], torch.float16: element [1] is outside"), he.getMessage());
    }

    @Test
    void bernoulliRefusesProbabilitiesOutsideTheUnitIntervalNamingTheElement() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16}) {
            for (double bad : new double[] {1.5, -0.25, Double.NaN}) {
                double[] v = uniform(DType.FLOAT64, 200_000).toDoubleArray();
                v[150_001] = bad;
                v[190_000] = -1;
                Tensor p = Torch.tensor(v).reshape(2, 100_000).to(dtype).to(DEVICE);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> Torch.bernoulli(p, new Generator(3)).toDoubleArray());
                assertTrue(e.getMessage().startsWith("bernoulli(): Expected p_in >= 0 && p_in <= 1 to be true, but got false (element"
                        + " [1, 50001] of the probabilities of shape [2, 100000], " + dtype + ", is outside [0, 1] or NaN)"), e.getMessage());
            }
        }
        Tensor edges = Torch.tensor(new double[] {0, 1, 0, 1}).to(DEVICE);
        assertArrayEquals(new double[] {0, 1, 0, 1}, Torch.bernoulli(edges, new Generator(3)).toDoubleArray());
    }

    @Test
    void aCompiledFunctionKeepsTheChecksWithoutAGraphBreak() {
        Tensor p = uniform(DType.FLOAT32, 4, 8).to(DEVICE), t = uniform(DType.FLOAT32, 4, 8).to(DEVICE);
        Tensor bad = Torch.tensor(new double[] {0.5, 1.5}).to(DType.FLOAT32).to(DEVICE).repeat(16).reshape(4, 8);
        TensorFunction loss = in -> F.binaryCrossEntropy(in[0].sigmoid().mul(in[1]), in[1]).add(1.0);
        // the loss unread: the check still runs (and the draws advance the generator as eagerly)
        TensorFunction unread = in -> {
            F.binaryCrossEntropy(in[0], in[1]);
            Torch.bernoulli(in[1], gen);
            return in[0].mul(2.0);
        };
        for (TensorFunction f : new TensorFunction[] {loss, unread}) {
            String plan = Jit.explain(f, p, t);
            assertFalse(plan.contains("runs eagerly"), plan);
            assertTrue(plan.contains("binary_cross_entropy_elementwise("), plan);
        }
        TensorFunction compiled = Jit.trace(loss, p, t);
        compiled.apply(p, t);
        OpTestSupport.assertCloseRelative(loss.apply(new Tensor[] {p, t}).to(Device.cpu()), compiled.apply(p, t).to(Device.cpu()), 1e-6, "compiled");
        // sigmoid(x) * 1.5 may leave [0, 1]
        Tensor big = Torch.full(new long[] {4, 8}, 10.0, DType.FLOAT32, DEVICE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> compiled.apply(big, bad).item());
        assertTrue(e.getMessage().startsWith("binaryCrossEntropy: all elements of input should be between 0 and 1 (input of shape [4, 8], torch.float32:"
                + " element [0, 1] is outside"), e.getMessage());
        TensorFunction compiledUnread = Jit.trace(unread, p, t);
        compiledUnread.apply(p, t);
        IllegalArgumentException u = assertThrows(IllegalArgumentException.class, () -> compiledUnread.apply(bad, t).toDoubleArray());
        assertTrue(u.getMessage().contains("all elements of input should be between 0 and 1"), u.getMessage());
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class, () -> compiledUnread.apply(p, bad).toDoubleArray());
        assertTrue(b.getMessage().startsWith("bernoulli(): Expected p_in >= 0 && p_in <= 1"), b.getMessage());
    }
}
