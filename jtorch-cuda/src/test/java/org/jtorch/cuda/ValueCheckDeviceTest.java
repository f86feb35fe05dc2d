package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * binary_cross_entropy's and bernoulli's input checks on cuda:0 ({@code valuecheck.cu}): nothing read back or waited for
 * at the call (the simulator's counters); an input outside [0, 1] reported at the next synchronisation with the stream,
 * naming the op, shape, dtype and first bad element, the device usable after; in synchronous mode the CPU's message at
 * the call; a compiled function raises it too.
 */
class ValueCheckDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    @RegisterExtension
    final DeferredCheckCase deferred = new DeferredCheckCase();

    private static Tensor uniform(long seed, DType dtype, long... shape) {
        return Torch.rand(shape, DType.FLOAT64, Device.cpu(), new Generator(seed)).to(dtype);
    }

    @Test
    void nothingIsReadBackOrWaitedForAtTheCall() {
        Tensor p = uniform(1, DType.FLOAT32, 64, 1000).to(CUDA), t = uniform(2, DType.FLOAT32, 64, 1000).to(CUDA);
        Tensor w = uniform(3, DType.FLOAT32, 1000).to(CUDA);
        String[] calls = {"mean", "weighted sum", "bernoulli"};
        for (String call : calls) {
            Cuda.synchronize(CUDA);
            long[] before = GemmEpilogueDeviceTest.simulatorStats();
            Tensor r = switch (call) {
                case "mean" -> F.binaryCrossEntropy(p, t);
                case "weighted sum" -> F.binaryCrossEntropy(p, t, w, F.Reduction.SUM);
                default -> Torch.bernoulli(p, new Generator(4));
            };
            long[] after = GemmEpilogueDeviceTest.simulatorStats();
            assertEquals(before[4], after[4], "synchronisations during the call, " + call);
            assertEquals(before[6], after[6], "bytes copied to the host during the call, " + call);
            assertEquals(before[5], after[5], "bytes copied to the device during the call, " + call);
            r.toDoubleArray();
        }
    }

    @Test
    void aBadInputIsReportedAtTheNextSynchronisationNamingTheElement() {
        Tensor p = Torch.tensor(new double[] {0.5, 0.25, 0.5, 0.75, Double.NaN, 1.5}).reshape(2, 3).to(DType.FLOAT32).to(CUDA);
        Tensor t = Torch.tensor(new double[] {1, 0, 1, 0, 1, 0}).reshape(2, 3).to(DType.FLOAT32).to(CUDA);
        Tensor loss = F.binaryCrossEntropy(p, t); // nothing waited for: no exception here
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, loss::item);
        assertTrue(e.getMessage().startsWith("binaryCrossEntropy: all elements of input should be between 0 and 1 (input of shape"
                + " [2, 3], torch.float32: element [1, 1] is outside [0, 1] or NaN) (found by binary_cross_entropy's CUDA check and"
                + " reported at the next synchronisation"), e.getMessage());
        Tensor fixed = Torch.tensor(new double[] {0.5, 0.25, 0.5, 0.75, 0, 1}).reshape(2, 3).to(DType.FLOAT32);
        Tensor good = F.binaryCrossEntropy(fixed.to(CUDA), t, null, F.Reduction.NONE);
        assertArrayEquals(F.binaryCrossEntropy(fixed, t.to(Device.cpu()), null, F.Reduction.NONE).toDoubleArray(), good.toDoubleArray(),
                1e-6, "the device stays usable");

        Tensor probabilities = Torch.tensor(new double[] {0.5, 0.5, -0.5, 2}).to(CUDA);
        Torch.bernoulli(probabilities, new Generator(1));
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class, () -> Cuda.synchronize(CUDA));
        assertTrue(b.getMessage().startsWith("bernoulli(): Expected p_in >= 0 && p_in <= 1 to be true, but got false (element [2] of the"
                + " probabilities of shape [4], torch.float64, is outside [0, 1] or NaN) (found by bernoulli's CUDA check"), b.getMessage());
    }

    @Test
    void synchronousChecksRaiseTheCpusErrorAtTheCall() {
        Cuda.setSynchronousIndexChecks(true);
        Tensor p = Torch.tensor(new double[] {0.5, 0.25, -1, 0.5}).reshape(2, 2);
        Tensor t = Torch.tensor(new double[] {1, 0, 1, 0}).reshape(2, 2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.binaryCrossEntropy(p.to(CUDA), t.to(CUDA)));
        IllegalArgumentException cpu = assertThrows(IllegalArgumentException.class, () -> F.binaryCrossEntropy(p, t));
        assertEquals(cpu.getMessage(), e.getMessage());
        IllegalArgumentException b = assertThrows(IllegalArgumentException.class, () -> Torch.bernoulli(p.to(CUDA), new Generator(2)));
        IllegalArgumentException bcpu = assertThrows(IllegalArgumentException.class, () -> Torch.bernoulli(p, new Generator(2)));
        assertEquals(bcpu.getMessage(), b.getMessage());
    }

    @Test
    void aCompiledFunctionRaisesTheDeferredError() {
        Tensor p = uniform(5, DType.FLOAT32, 4, 8).to(CUDA), t = uniform(6, DType.FLOAT32, 4, 8).to(CUDA);
        TensorFunction unread = in -> {
            F.binaryCrossEntropy(in[0], in[1]);
            return in[1].mul(2.0);
        };
        TensorFunction compiled = Jit.trace(unread, p, t);
        compiled.apply(p, t).toDoubleArray();
        Tensor bad = p.mul(3.0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> compiled.apply(bad, t).toDoubleArray());
        assertTrue(e.getMessage().startsWith("binaryCrossEntropy: all elements of input should be between 0 and 1"), e.getMessage());
    }
}
