package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Copies between the CPU and the device under test ({@code -Djtorch.test.device=cuda:0}) as the declared ops {@code
 * _to_copy} and {@code copy_}: values, dtype conversion in the same copy, broadcasting, autograd (each gradient comes back
 * to its input's device and dtype, also at second order), and the JIT's trace, which sees each copy as one op. Skipped on
 * the CPU alone, where there is no second device.
 */
class CrossDeviceCopyOpsTest {
    private static final Device CPU = Device.cpu();
    private Device device;
    private final Generator gen = new Generator(31);

    @BeforeEach
    void needsASecondDevice() {
        device = Fixtures.device();
        assumeFalse(device.isCpu(), "needs a second device (-Djtorch.test.device=cuda:0)");
    }

    private Tensor host(DType dtype, long... shape) {
        return Torch.randn(shape, DType.FLOAT64, CPU, gen).to(dtype);
    }

    @Test
    void movesConvertInTheSameCopyAndComeBackUnchanged() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = host(DType.FLOAT64, 3, 5).transpose(0, 1);             // strided source
            Tensor there = x.to(device, DType.FLOAT32);
            assertEquals(device, there.device());
            assertEquals(DType.FLOAT32, there.dtype());
            assertArrayEquals(new long[] {5, 3}, there.shape());
            assertArrayEquals(x.to(DType.FLOAT32).contiguous().toFloatArray(), there.to(CPU).toFloatArray());
            Tensor ints = Torch.arange(0, 7, 1, DType.INT64, CPU).to(device);
            assertArrayEquals(new long[] {0, 1, 2, 3, 4, 5, 6}, ints.to(CPU).toLongArray());
            // Already there: a new reference to the same data, no copy.
            Tensor same = there.to(device);
            assertTrue(same.storage() == there.storage());
        }
    }

    @Test
    void copyAcrossDevicesBroadcastsAndConverts() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor row = host(DType.FLOAT64, 4);
            Tensor dst = Torch.zeros(new long[] {3, 4}, DType.FLOAT32, device);
            dst.copy_(row);
            float[] want = row.to(DType.FLOAT32).expand(3, 4).contiguous().toFloatArray();
            assertArrayEquals(want, dst.to(CPU).toFloatArray());
            Tensor back = Torch.zeros(new long[] {3, 4}, DType.FLOAT64, CPU);
            back.copy_(dst);
            assertArrayEquals(row.to(DType.FLOAT32).to(DType.FLOAT64).expand(3, 4).contiguous().toDoubleArray(), back.toDoubleArray());
            String m = assertThrows(IllegalArgumentException.class, () -> dst.copy_(host(DType.FLOAT32, 5))).getMessage();
            assertTrue(m.startsWith("copy_: ") && m.contains("[5]") && m.contains("[3, 4]"), m);
        }
    }

    @Test
    void gradientsComeBackToEachInputsDeviceAndDtype() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = host(DType.FLOAT64, 2, 3).requiresGrad_();
            Tensor moved = x.to(device, DType.FLOAT32);
            assertEquals("ToCopyBackward0", moved.gradFn().name());
            Tensor w = host(DType.FLOAT32, 2, 3).to(device);
            moved.mul(w).sum().backward();
            assertEquals(CPU, x.grad().device());
            assertEquals(DType.FLOAT64, x.grad().dtype());
            assertArrayEquals(w.to(CPU).to(DType.FLOAT64).toDoubleArray(), x.grad().toDoubleArray());

            // copy_ across devices: src (CPU, float64, broadcast) gets the gradient summed to its shape; dst's old values none.
            Tensor src = host(DType.FLOAT64, 3).requiresGrad_();
            Tensor base = Torch.zeros(new long[] {2, 3}, DType.FLOAT32, device).requiresGrad_();
            Tensor dst = base.mul(1.0);
            dst.copy_(src);
            assertEquals("CopyBackwards", dst.gradFn().name());
            dst.mul(w).sum().backward();
            assertEquals(CPU, src.grad().device());
            assertEquals(DType.FLOAT64, src.grad().dtype());
            float[] ws = w.to(CPU).sum(new int[] {0}, false).toFloatArray();
            double[] got = src.grad().toDoubleArray();
            for (int i = 0; i < 3; i++) assertEquals(ws[i], got[i], 1e-6, "column " + i);
            assertEquals(device, base.grad().device());
            assertArrayEquals(new float[6], base.grad().to(CPU).toFloatArray());
        }
    }

    @Test
    void roundTripsPassGradcheckAtFirstAndSecondOrder() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = host(DType.FLOAT64, 2, 3).requiresGrad_();
            Tensor y = host(DType.FLOAT64, 3).requiresGrad_();
            assertTrue(Gradcheck.check(in -> {
                Tensor a = in[0].to(device);
                Tensor d = Torch.zeros(new long[] {2, 3}, DType.FLOAT64, device);
                d.copy_(in[1]);
                return a.mul(a).mul(d).to(CPU);
            }, x, y));
            // Second order: d/dx of (dy/dx) through two moves.
            Tensor g = Autograd.grad(new Tensor[] {x.to(device).pow(3).sum()}, new Tensor[] {x}, null, true, true, false)[0];
            assertEquals(CPU, g.device());
            Tensor gg = Autograd.grad(g.sum(), x);
            assertEquals(CPU, gg.device());
            double[] xs = x.toDoubleArray();
            double[] ggs = gg.toDoubleArray();
            for (int i = 0; i < xs.length; i++) assertEquals(6 * xs[i], ggs[i], 1e-12, "element " + i);
        }
    }

    @Test
    void theTraceSeesEachMoveAsOneOpAndReplaysIt() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor bias = host(DType.FLOAT32, 4).to(device);
            TensorFunction f = in -> {
                Tensor h = in[0].to(device).relu().add(bias);
                Tensor out = Torch.zeros(new long[] {3, 4}, DType.FLOAT32, CPU);
                out.copy_(h.mul(2));
                return out.add(h.to(CPU));
            };
            Tensor x = host(DType.FLOAT32, 3, 4);
            String plan = Jit.explain(f, x);
            assertTrue(plan.contains("_to_copy("), plan);
            assertTrue(!plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            for (int round = 0; round < 2; round++) {
                Tensor y = host(DType.FLOAT32, 3, 4);
                Tensor want = f.apply(y);
                Tensor got = compiled.apply(y);
                assertEquals(CPU, got.device());
                assertArrayEquals(want.toFloatArray(), got.toFloatArray(), 1e-6f);
            }
        }
    }

    @Test
    void gradientsThroughACompiledMoveMatchEager() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor w = host(DType.FLOAT32, 4, 4).to(device);
            TensorFunction f = in -> in[0].to(device).mm(w).tanh().to(CPU).sum();
            Tensor x = host(DType.FLOAT32, 3, 4).requiresGrad_();
            TensorFunction compiled = Jit.trace(f, x);
            Tensor x1 = host(DType.FLOAT32, 3, 4).requiresGrad_();
            Tensor x2 = x1.detach().requiresGrad_();
            f.apply(x1).backward();
            compiled.apply(x2).backward();
            assertEquals(CPU, x2.grad().device());
            assertArrayEquals(x1.grad().toFloatArray(), x2.grad().toFloatArray(), 1e-6f);
        }
    }
}
