package org.jtorch.jit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;

/** What the JIT's tests share: the device they run on, and compiled against eager in values and gradients. */
final class JitChecks {
    /** Where the tests run: the CPU, or cuda:0 in the simulator pass ({@code -Djtorch.test.device=cuda:0}). */
    static final org.jtorch.types.Device DEVICE = org.jtorch.testing.Fixtures.device();

    private JitChecks() {}

    /**
     * {@code call()} on the CPU with the allocator's peak reset: asserts that the call's peak above what was allocated
     * before it stays under two blocks of {@code resultBytes} (the result and at most part of another), and returns
     * the result.
     */
    static Tensor assertPeakUnderTwoResults(java.util.function.Supplier<Tensor> call, long resultBytes) {
        org.jtorch.memory.Allocator cpu = org.jtorch.backend.Backends.of(DEVICE).allocator(DEVICE);
        long before = cpu.stats().allocatedBytes();
        cpu.resetPeakStats();
        Tensor y = call.get();
        long peak = cpu.stats().peakAllocatedBytes() - before;
        assertTrue(peak < 2 * resultBytes, "peak " + peak + " bytes above the inputs for a " + resultBytes + "-byte result");
        return y;
    }

    static Tensor randn(long... shape) {
        return Torch.randn(shape).to(DEVICE);
    }

    /** Standard normal float32 values on {@link #DEVICE} from {@code g}. */
    static Tensor randn(org.jtorch.types.Generator g, long... shape) {
        return Torch.randn(shape, org.jtorch.types.DType.FLOAT32, DEVICE, g);
    }

    /** {@code t}'s values, detached and copied to the CPU. */
    static float[] values(Tensor t) {
        try (Tensor c = t.detach().to(org.jtorch.types.Device.cpu())) {
            return c.toFloatArray();
        }
    }

    /** {@link #trainingCall}'s output and gradients, copied to the CPU. */
    static float[][] trainingValues(TensorFunction f, Tensor x, Tensor[] leaves, org.jtorch.types.Generator gen, Tensor weights) {
        Tensor[] call = trainingCall(f, x, leaves, gen, weights);
        float[][] r = new float[call.length][];
        for (int i = 0; i < call.length; i++) r[i] = values(call[i]);
        return r;
    }

    /** Bit for bit on the CPU; on another device within {@code deviceTolerance}, relative above magnitude 1. */
    static void assertSameOnCpu(float[] eager, float[] compiled, String what, float deviceTolerance) {
        org.junit.jupiter.api.Assertions.assertEquals(eager.length, compiled.length, what);
        for (int i = 0; i < eager.length; i++) {
            float e = eager[i], a = compiled[i];
            boolean same = DEVICE.isCpu() ? Float.floatToRawIntBits(e) == Float.floatToRawIntBits(a)
                    : Math.abs(e - a) <= deviceTolerance * Math.max(1, Math.abs(e));
            assertTrue(same, what + " at " + i + ": eager " + e + ", compiled " + a);
        }
    }

    /** Elementwise within {@code tolerance}, relative above magnitude 1; NaN matches NaN. */
    static void assertClose(Tensor expected, Tensor actual, float tolerance) {
        assertArrayEquals(expected.shape(), actual.shape());
        float[] e = expected.toFloatArray();
        float[] a = actual.toFloatArray();
        for (int i = 0; i < e.length; i++) {
            float tol = tolerance * Math.max(1, Math.abs(e[i]));
            assertTrue(Math.abs(e[i] - a[i]) <= tol || (Float.isNaN(e[i]) && Float.isNaN(a[i])),
                    "at " + i + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    /**
     * {@code f(x)}, then the gradients with respect to {@code leaves} of a fixed random weighting of it (a plain sum
     * would give a softmax's rows zero gradient).
     */
    static Tensor[] valueAndGradients(TensorFunction f, Tensor x, Tensor[] leaves) {
        for (Tensor t : leaves) if (t.grad() != null) t.grad().zero_();
        Tensor out = f.apply(x);
        Torch.manualSeed(99);
        out.mul(Torch.randn(out.shape()).to(DEVICE)).sum().backward();
        Tensor[] g = new Tensor[leaves.length + 1];
        g[0] = out.detach();
        for (int i = 0; i < leaves.length; i++) g[i + 1] = leaves[i].grad().clone();
        return g;
    }

    /**
     * A training call of {@code f} after {@code gen} is seeded: its output, then each leaf's gradient of the output
     * weighted by {@code weights} and summed (the leaves' gradients zeroed first).
     */
    static Tensor[] trainingCall(TensorFunction f, Tensor x, Tensor[] leaves, org.jtorch.types.Generator gen, Tensor weights) {
        for (Tensor t : leaves) if (t.grad() != null) t.grad().zero_();
        gen.manualSeed(42);
        Tensor out = f.apply(new Tensor[] {x});
        out.mul(weights).sum().backward();
        Tensor[] r = new Tensor[leaves.length + 1];
        r[0] = out.detach();
        for (int i = 0; i < leaves.length; i++) r[i + 1] = leaves[i].grad();
        return r;
    }

    /**
     * {@code f} traced on {@code x}, in inference and with autograd: values within {@code tolerance} of eager's,
     * gradients within 1e-5. Each signature is called twice: its first call is the trace, which runs eagerly.
     */
    static void assertCompiledMatchesEager(TensorFunction f, Tensor x, Tensor[] leaves, float tolerance) {
        TensorFunction compiled = Jit.trace(f, x);
        try (var g = Grad.noGrad()) {
            compiled.apply(x);
            assertClose(f.apply(x), compiled.apply(x), tolerance);
        }
        Tensor[] eager = valueAndGradients(f, x, leaves);
        valueAndGradients(compiled, x, leaves);
        Tensor[] fused = valueAndGradients(compiled, x, leaves);
        assertClose(eager[0], fused[0], tolerance);
        for (int i = 1; i < eager.length; i++) assertClose(eager[i], fused[i], 1e-5f);
    }
}
