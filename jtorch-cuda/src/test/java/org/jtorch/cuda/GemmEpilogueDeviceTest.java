package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.LinalgKernels.Activation;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.ops.Linalg;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * cuBLASLt's bias and activation epilogues on cuda:0 ({@code CudaLinalgKernels.mmBiasActivation}): a linear layer's
 * bias, ReLU and tanh-GELU computed by the GEMM, against the CPU in float64 for every dtype; the operands it declines;
 * and, on the simulator, the launches it saves: a linear layer's bias needs no copy kernel, and a compiled
 * linear-ReLU or linear-GELU is one cuBLASLt call and no kernel.
 */
class GemmEpilogueDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final Device CPU = Device.cpu();

    @BeforeEach
    void needsCuda() {
        DeviceCases.assumeAvailable(CUDA);
    }

    private static Tensor reference(Tensor x, Tensor w, Tensor b, Activation activation) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor lin = F.linear(x.to(CPU).to(DType.FLOAT64), w.to(CPU).to(DType.FLOAT64),
                    b == null ? null : b.to(CPU).to(DType.FLOAT64));
            Tensor out = switch (activation) {
                case NONE -> lin;
                case RELU -> lin.relu();
                case GELU_TANH -> F.gelu(lin, "tanh");
            };
            return scope.keep(out);
        }
    }

    /** Within one rounding to {@code t} (plus the f32 accumulator's error for the narrow types) of {@code want}. */
    private static void assertClose(String what, Tensor want, Tensor got, DType t) {
        assertArrayEquals(want.shape(), got.shape(), what);
        double[] e = want.toDoubleArray();
        double[] a = got.to(CPU).to(DType.FLOAT64).toDoubleArray();
        double rel = t == DType.FLOAT64 ? 1e-13 : t == DType.FLOAT32 ? 2e-6 : 2 * DeviceCases.epsilon(t);
        for (int i = 0; i < e.length; i++) {
            assertTrue(Math.abs(e[i] - a[i]) <= rel * Math.max(1, Math.abs(e[i])), what + " at " + i + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    @Test
    void biasAndActivationEpiloguesMatchTheCpuInEveryDtype() {
        Torch.manualSeed(3);
        for (DType t : List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16)) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor x = Torch.randn(3, 11, 20).to(t).to(CUDA);
                Tensor w = Torch.randn(16, 20).mul(0.3).to(t).to(CUDA);
                Tensor b = Torch.randn(16).to(t).to(CUDA);
                for (Activation act : Activation.values()) {
                    for (Tensor bias : new Tensor[] {b, null}) {
                        if (act == Activation.NONE && bias == null) continue;
                        String what = t + " " + act + (bias == null ? " without bias" : " with bias");
                        assertTrue(Linalg.fusesLinearActivation(x, w, bias, act, act == Activation.GELU_TANH), what);
                        Tensor[] r = Linalg.linearActivation(x, w, bias, act, act == Activation.GELU_TANH);
                        assertClose(what, reference(x, w, bias, act), r[0], t);
                        if (act == Activation.GELU_TANH) assertClose(what + " (pre-activation)", reference(x, w, bias, Activation.NONE), r[1], t);
                    }
                }
                // Eager linear takes the bias epilogue.
                assertClose(t + " F.linear", reference(x, w, b, Activation.NONE), F.linear(x, w, b), t);
            }
        }
    }

    /**
     * The JIT asks whether the fused kernel takes a linear layer ({@code fusesLinearActivation}, the dispatcher's test) and
     * then runs it: the product is planned once for the two, for each activation and dtype.
     */
    @Test
    void theTestAndTheRunThatFollowsPlanTheProductOnce() {
        Torch.manualSeed(5);
        int rows = 20; // a new geometry each call: a plan remembered from the call before cannot serve it
        for (DType t : List.of(DType.FLOAT32, DType.FLOAT64)) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor w = Torch.randn(32, 40).mul(0.2).to(t).to(CUDA);
                Tensor b = Torch.randn(32).to(t).to(CUDA);
                for (Activation act : List.of(Activation.RELU, Activation.GELU_TANH)) {
                    for (boolean keep : new boolean[] {false, true}) {
                        Tensor x = Torch.randn(rows++, 40).to(t).to(CUDA);
                        String what = t + " " + act + (keep ? " keeping its input" : "") + ", " + x.size(0) + " rows";
                        long before = CudaLinalgKernels.EPILOGUE_PLANS.sum();
                        assertTrue(Linalg.fusesLinearActivation(x, w, b, act, keep), what);
                        Tensor[] r = Linalg.linearActivation(x, w, b, act, keep);
                        assertEquals(1, CudaLinalgKernels.EPILOGUE_PLANS.sum() - before, what + ": plans made for the test and the run");
                        assertClose(what, reference(x, w, b, act), r[0], t);
                    }
                }
            }
        }
    }

    @Test
    void operandsCuBlasLtCannotTakeAreDeclined() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(5, 8).to(CUDA);
            Tensor w = Torch.randn(12, 8).to(CUDA);
            Tensor b = Torch.randn(12).to(CUDA);
            // A GELU input matrix whose leading dimension (12) is not a multiple of 8: declined by the op's test, the
            // product and the activation's kernel instead, with the same values.
            assertFalse(Linalg.fusesLinearActivation(x, w, b, Activation.GELU_TANH, true));
            Tensor[] unfused = Linalg.linearActivation(x, w, b, Activation.GELU_TANH, true);
            assertClose("unfused GELU", reference(x, w, b, Activation.GELU_TANH), unfused[0], DType.FLOAT32);
            assertClose("unfused GELU's input", reference(x, w, b, Activation.NONE), unfused[1], DType.FLOAT32);
            // A strided bias.
            Tensor strided = Torch.randn(24).to(CUDA).slice(0, 0, 24, 2);
            assertFalse(Linalg.fusesLinearActivation(x, w, strided, Activation.RELU, false));
            assertClose("unfused ReLU", reference(x, w, strided, Activation.RELU),
                    Linalg.linearActivation(x, w, strided, Activation.RELU, false)[0], DType.FLOAT32);
            // Eager linear then copies the bias in, as before.
            assertClose("F.linear, strided bias", reference(x, w, strided, Activation.NONE), F.linear(x, w, strided), DType.FLOAT32);
            // An empty inner dimension: the bias alone, through the fallback.
            Tensor empty = Torch.zeros(5, 0).to(CUDA);
            assertClose("k = 0", reference(empty, Torch.zeros(12, 0).to(CUDA), b, Activation.NONE),
                    F.linear(empty, Torch.zeros(12, 0).to(CUDA), b), DType.FLOAT32);
        }
    }

    /** The simulator's counters jtsim_get_stats (src/sim/jtsim.h): kernel launches and library calls; absent on a real driver. */
    static long[] counts() {
        long[] all = simulatorStats();
        return new long[] {all[0], all[3]};
    }

    /**
     * All twelve counters of jtsim_get_stats, in its struct's order (kernel launches, graph launches, kernels run, library
     * calls, synchronizations, bytes host to device, bytes device to host, ...); skips on a real driver.
     */
    static long[] simulatorStats() {
        var get = CudaRuntime.system().driver().library().optionalDowncall(
                java.lang.foreign.FunctionDescriptor.ofVoid(java.lang.foreign.ValueLayout.ADDRESS), "jtsim_get_stats");
        assumeTrue(get.isPresent(), "launch counts need the CUDA simulator");
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var stats = arena.allocate(java.lang.foreign.ValueLayout.JAVA_LONG, 12);
            get.get().invokeExact(stats);
            return stats.toArray(java.lang.foreign.ValueLayout.JAVA_LONG);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** {@code {kernel launches, library calls}} of one call of {@code f}. */
    private static long[] launchesOf(TensorFunction f, Tensor x) {
        long[] before = counts();
        try (Tensor out = f.apply(x)) {
            Cuda.synchronize(CUDA);
        }
        long[] after = counts();
        return new long[] {after[0] - before[0], after[1] - before[1]};
    }

    @Test
    void aCompiledLinearActivationIsOneCublasLtCallAndNoKernel() {
        counts(); // skips on a real GPU
        Torch.manualSeed(4);
        Tensor w = Torch.randn(64, 24).to(CUDA);
        Tensor b = Torch.randn(64).to(CUDA);
        Tensor x = Torch.randn(32, 24).to(CUDA);
        TensorFunction relu = in -> F.linear(in[0], w, b).relu();
        TensorFunction gelu = in -> F.gelu(F.linear(in[0], w, b), "tanh");
        try (Grad.Mode off = Grad.noGrad()) {
            // Eager: the GEMM with its bias, then the activation's kernel.
            assertArrayEquals(new long[] {1, 1}, launchesOf(relu, x), "eager linear + relu");
            for (TensorFunction f : List.of(relu, gelu)) {
                TensorFunction compiled = Jit.trace(f, x);
                compiled.apply(x).close(); // the trace
                assertArrayEquals(new long[] {0, 1}, launchesOf(compiled, x), "compiled, inference");
            }
        }
        // With autograd too: the GELU's input comes from the same call (GELU_AUX_BIAS), the ReLU's gradient reads its output.
        Tensor wg = w.detach().requiresGrad_(true);
        TensorFunction geluGrad = in -> F.gelu(F.linear(in[0], wg, b), "tanh");
        TensorFunction compiled = Jit.trace(geluGrad, x);
        compiled.apply(x).close();
        assertArrayEquals(new long[] {0, 1}, launchesOf(compiled, x), "compiled GELU with autograd, forward");
        TensorFunction reluGrad = Jit.trace(in -> F.linear(in[0], wg, b).relu(), x);
        reluGrad.apply(x).close();
        assertArrayEquals(new long[] {0, 1}, launchesOf(reluGrad, x), "compiled ReLU with autograd, forward");
    }
}
