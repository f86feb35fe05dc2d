package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.cuda.kernels.LayerNormPlan;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.NormalizationOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Layer norm's CUDA kernels ({@code layernorm.cu}: {@code CudaNormalizationKernels.layerNorm} / {@code layerNormBackward}) on
 * cuda:0 against the CPU backend's fused kernels: output, mean and rstd, and the three gradients, for float32, float64 and
 * float16/bfloat16 rows (computed in float32, statistics float32), rows of 1, 3, 1,000 and 4,097 values (longer than a block),
 * more rows than one column-sums part, zero-size and strided inputs; gradients of both orders in float64 on the device
 * against finite differences; the weight and bias gradients the same bits on every call; and, on the simulator, one launch
 * per forward and two or three per backward. PyTorch 1.13's values are core's fixture suites on cuda:0.
 */
class LayerNormDeviceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final Device CPU = Device.cpu();

    @BeforeEach
    void needsCuda() {
        DeviceCases.assumeAvailable(CUDA);
    }

    private static Tensor randn(Generator g, DType t, long... shape) {
        return Torch.randn(shape, DType.FLOAT64, CPU, g).mul(1.5).add(0.25).to(t);
    }

    /** Relative tolerance of the device against the CPU: both compute in float32 (or float64) and round once. */
    private static double tolerance(DType t) {
        return switch (t) {
            case FLOAT64 -> 1e-12;
            case FLOAT32 -> 4e-6;
            default -> 2 * DeviceCases.epsilon(t);
        };
    }

    private static void assertClose(String what, Tensor want, Tensor got, double rel) {
        assertArrayEquals(want.shape(), got.shape(), what);
        assertEquals(want.dtype(), got.dtype(), what);
        double[] e = want.to(CPU).to(DType.FLOAT64).toDoubleArray();
        double[] a = got.to(CPU).to(DType.FLOAT64).toDoubleArray();
        for (int i = 0; i < e.length; i++) {
            boolean same = Double.isNaN(e[i]) ? Double.isNaN(a[i]) : Math.abs(e[i] - a[i]) <= rel * Math.max(1, Math.abs(e[i]));
            assertTrue(same, what + " at " + i + " of " + e.length + ": expected " + e[i] + ", got " + a[i]);
        }
    }

    /** native_layer_norm's three outputs and the three gradients of {@code sum(y * probe)} on {@code d}. */
    private static Tensor[] run(Device d, Tensor x, Tensor w, Tensor b, int dims, Tensor probe) {
        Tensor xd = x.to(d).requiresGrad_(true);
        Tensor wd = w == null ? null : w.to(d).requiresGrad_(true), bd = b == null ? null : b.to(d).requiresGrad_(true);
        Tensor[] outs = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {xd, wd, bd}, dims, 1e-5);
        List<Tensor> leaves = new java.util.ArrayList<>(List.of(xd));
        if (wd != null) leaves.add(wd);
        if (bd != null) leaves.add(bd);
        Tensor[] g = Autograd.grad(new Tensor[] {outs[0].mul(probe.to(d)).sum()}, leaves.toArray(Tensor[]::new));
        Tensor[] all = new Tensor[3 + g.length];
        for (int k = 0; k < 3; k++) all[k] = outs[k].detach();
        System.arraycopy(g, 0, all, 3, g.length);
        return all;
    }

    private static void compare(String what, Tensor x, Tensor w, Tensor b, int dims) {
        Generator g = new Generator(x.numel() + 7);
        Tensor probe = randn(g, x.dtype(), x.shape());
        try (MemoryScope scope = new MemoryScope()) {
            Tensor[] cpu = run(CPU, x, w, b, dims, probe), cuda = run(CUDA, x, w, b, dims, probe);
            String[] names = {"output", "mean", "rstd", "grad_input", "grad_weight", "grad_bias"};
            double rel = tolerance(x.dtype());
            for (int k = 0; k < cpu.length; k++) {
                // The weight and bias gradients of 16-bit rows are sums over rows rounded once to 16 bits: within one rounding.
                assertClose(what + " " + names[k], cpu[k], cuda[k], k >= 4 && rel > 1e-6 ? 2 * rel : k >= 3 && x.dtype() == DType.FLOAT32 ? 3e-5 : rel);
            }
        }
    }

    @Test
    void everyDtypeAndRowLengthMatchesTheCpu() {
        Generator g = new Generator(5);
        for (DType t : List.of(DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16)) {
            for (long cols : new long[] {1, 3, 1000, 4097}) {
                long rows = cols > 1000 ? 3 : 6;
                Tensor x = randn(g, t, 2, rows / 2, cols);
                compare(t + " rows of " + cols + ", affine", x, randn(g, t, cols), randn(g, t, cols), 1);
                compare(t + " rows of " + cols + ", plain", x, null, null, 1);
            }
            // two normalised dimensions, a weight without a bias
            compare(t + " [4, 5, 7] over [5, 7]", randn(g, t, 4, 5, 7), randn(g, t, 5, 7), null, 2);
        }
    }

    @Test
    void manyRowsSumTheWeightGradientInSeveralPartsTheSameBitsEveryCall() {
        Generator g = new Generator(6);
        // 300 rows: five parts of 64 rows for the column sums, added in order by the finish kernel
        Tensor x = randn(g, DType.FLOAT32, 300, 37), w = randn(g, DType.FLOAT32, 37), b = randn(g, DType.FLOAT32, 37);
        compare("300 x 37", x, w, b, 1);
        compare("9000 x 5", randn(g, DType.FLOAT32, 9000, 5), randn(g, DType.FLOAT32, 5), randn(g, DType.FLOAT32, 5), 1);
        Tensor probe = randn(g, DType.FLOAT32, 300, 37);
        Tensor[] first = run(CUDA, x, w, b, 1, probe), second = run(CUDA, x, w, b, 1, probe);
        for (int k = 0; k < first.length; k++) assertArrayEquals(first[k].to(CPU).toFloatArray(), second[k].to(CPU).toFloatArray());
    }

    @Test
    void stridedAndMixedDtypeOperandsAreMadeContiguousFirst() {
        Generator g = new Generator(7);
        // a transposed input, a weight that is every other element of a longer row
        Tensor x = randn(g, DType.FLOAT32, 37, 8).t();
        Tensor w = randn(g, DType.FLOAT32, 74).slice(0, 0, 74, 2), b = randn(g, DType.FLOAT32, 37);
        assertTrue(!x.isContiguous() && !w.isContiguous());
        compare("transposed input, strided weight", x, w, b, 1);
        // a bfloat16 input under a float32 weight computes in float32 and gives a float32 result
        Tensor xb = randn(g, DType.BFLOAT16, 6, 11);
        Tensor wf = randn(g, DType.FLOAT32, 11);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor want = F.layerNorm(xb, new long[] {11}, wf, null, 1e-5);
            Tensor got = F.layerNorm(xb.to(CUDA), new long[] {11}, wf.to(CUDA), null, 1e-5);
            assertClose("bf16 input, f32 weight", want, got, tolerance(DType.FLOAT32));
        }
    }

    @Test
    void zeroSizeInputs() {
        for (long[] shape : new long[][] {{0, 5}, {3, 0}, {2, 0, 4}}) {
            int dims = 1;
            long cols = shape[shape.length - 1];
            Tensor x = Torch.zeros(shape);
            Tensor w = Torch.ones(cols), b = Torch.zeros(cols);
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] cpu = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {x, w, b}, dims, 1e-5);
                Tensor[] cuda = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {x.to(CUDA), w.to(CUDA), b.to(CUDA)}, dims,
                        1e-5);
                for (int k = 0; k < 3; k++) assertClose(java.util.Arrays.toString(shape) + " output " + k, cpu[k], cuda[k], 0);
                Tensor xd = x.to(CUDA).requiresGrad_(true), wd = w.to(CUDA).requiresGrad_(true);
                Tensor[] gr = Autograd.grad(new Tensor[] {F.layerNorm(xd, new long[] {cols}, wd, null, 1e-5).sum()}, new Tensor[] {xd, wd});
                assertArrayEquals(shape, gr[0].shape());
                assertArrayEquals(new double[(int) cols], gr[1].to(CPU).to(DType.FLOAT64).toDoubleArray(), 0);
            }
        }
    }

    @Test
    void gradientsOfBothOrdersInFloat64OnTheDevice() {
        Generator g = new Generator(8);
        Function<Tensor[], Tensor> affine = a -> F.layerNorm(a[0], new long[] {2, 3}, a[1], a[2], 1e-5);
        Tensor[] in = {randn(g, DType.FLOAT64, 4, 2, 3).to(CUDA).requiresGrad_(true), randn(g, DType.FLOAT64, 2, 3).to(CUDA).requiresGrad_(true),
                       randn(g, DType.FLOAT64, 2, 3).to(CUDA).requiresGrad_(true)};
        assertTrue(Gradcheck.check(affine, in));
        Function<Tensor[], Tensor> first = a -> {
            Tensor y = affine.apply(a);
            Tensor probe = Torch.linspace(-1, 1, y.numel(), DType.FLOAT64, CUDA).reshape(y.shape());
            Tensor[] gr = Autograd.grad(new Tensor[] {y}, a, new Tensor[] {probe}, true, true, false);
            return Torch.cat(new Tensor[] {gr[0].reshape(-1), gr[1].reshape(-1), gr[2].reshape(-1)}, 0);
        };
        assertTrue(Gradcheck.check(first, in));
        // rows of 1 and of 70 (more than one block's warp), no affine
        for (long cols : new long[] {1, 70}) {
            Function<Tensor[], Tensor> plain = a -> F.layerNorm(a[0], new long[] {cols}, null, null, 1e-5);
            assertTrue(Gradcheck.check(plain, randn(g, DType.FLOAT64, 3, cols).to(CUDA).requiresGrad_(true)));
        }
    }

    @Test
    void theDeclaredOpRunsTheNativeKernelsNotTheDecomposition() {
        assertTrue(KernelRegistry.hasStructured(NormalizationOps.NATIVE_LAYER_NORM, Device.Type.CUDA));
        assertTrue(KernelRegistry.hasStructured(NormalizationOps.NATIVE_LAYER_NORM_BACKWARD, Device.Type.CUDA));
        Tensor x = Torch.randn(4, 9).to(CUDA).requiresGrad_(true);
        Tensor w = Torch.randn(9).to(CUDA).requiresGrad_(true);
        KernelProfiler.reset();
        KernelProfiler.start();
        Tensor y;
        try {
            y = F.layerNorm(x, new long[] {9}, w, null, 1e-5);
            Autograd.grad(new Tensor[] {y.sum()}, new Tensor[] {x, w});
        } finally {
            KernelProfiler.stop();
        }
        assertEquals("NativeLayerNormBackward0", y.gradFn().name());
        List<String> kernels = KernelProfiler.entries().stream().map(KernelProfiler.Entry::kernel).toList();
        assertTrue(kernels.stream().anyMatch(k -> k.startsWith("native_layer_norm ")), kernels.toString());
        assertTrue(kernels.stream().anyMatch(k -> k.startsWith("native_layer_norm_backward ")), kernels.toString());
        assertTrue(kernels.stream().noneMatch(k -> k.contains("batch_norm")), "no batch norm of the decomposition: " + kernels);
    }

    /** The simulator's counter of kernel launches (jtsim_get_stats); skips on a real driver. */
    private static long launches() {
        return GemmEpilogueDeviceTest.counts()[0];
    }

    @Test
    void oneLaunchForwardTwoOrThreeBackward() {
        launches(); // skips on a real GPU
        for (long rows : new long[] {64, 300}) {
            Tensor x = Torch.randn(rows, 128).to(CUDA).requiresGrad_(true);
            Tensor w = Torch.randn(128).to(CUDA).requiresGrad_(true), b = Torch.randn(128).to(CUDA).requiresGrad_(true);
            Tensor gy = Torch.randn(rows, 128).to(CUDA);
            Cuda.synchronize(CUDA);
            long before = launches();
            Tensor[] outs = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM, new Tensor[] {x.detach(), w.detach(), b.detach()}, 1, 1e-5);
            Cuda.synchronize(CUDA);
            long forward = launches() - before;
            before = launches();
            Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM_BACKWARD, new Tensor[] {gy, x.detach(), outs[1], outs[2], w.detach(), b.detach()}, 1);
            Cuda.synchronize(CUDA);
            long backward = launches() - before;
            assertEquals(1, forward, "forward launches, " + rows + " rows");
            // the input gradient, the column sums, and with more than 64 rows the finish adding their parts
            assertEquals(rows > LayerNormPlan.MIN_PART_ROWS ? 3 : 2, backward, "backward launches, " + rows + " rows");
        }
    }

    /** A residual add feeding a layer norm, compiled without autograd: one launch (the generated kernel), eager's bits. */
    @Test
    void aCompiledResidualAddAndLayerNormIsOneLaunchWithEagersBits() {
        launches();
        Torch.manualSeed(9);
        Tensor residual = Torch.randn(24, 1000).to(CUDA);
        Tensor w = Torch.randn(1000).to(CUDA), b = Torch.randn(1000).to(CUDA);
        Tensor x = Torch.randn(24, 1000).to(CUDA);
        TensorFunction f = in -> F.layerNorm(in[0].add(residual), new long[] {1000}, w, b, 1e-5);
        try (var off = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            TensorFunction compiled = Jit.trace(f, x);
            assertTrue(Jit.explain(f, x).contains("native_layer_norm of rows"), Jit.explain(f, x));
            compiled.apply(x);
            Cuda.synchronize(CUDA);
            long before = launches();
            Tensor eager = f.apply(x);
            Cuda.synchronize(CUDA);
            long eagerLaunches = launches() - before;
            before = launches();
            Tensor fused = compiled.apply(x);
            Cuda.synchronize(CUDA);
            long fusedLaunches = launches() - before;
            assertEquals(2, eagerLaunches, "eager: the add, then the layer norm");
            assertEquals(1, fusedLaunches, "compiled: the add inside the layer norm's kernel");
            assertArrayEquals(eager.to(CPU).toFloatArray(), fused.to(CPU).toFloatArray());
        }
    }
}
