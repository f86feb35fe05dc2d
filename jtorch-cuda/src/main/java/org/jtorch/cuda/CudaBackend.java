package org.jtorch.cuda;

import java.lang.foreign.MemorySegment;
import org.jtorch.backend.Backend;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.IndexKernels;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.backend.RecurrentKernels;
import org.jtorch.backend.RandomKernels;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.backend.SpatialKernels;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.MemoryStats;
import org.jtorch.memory.Storage;
import org.jtorch.memory.StorageCleaner;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The CUDA backend, found by {@link java.util.ServiceLoader} through {@link CudaBackendProvider}.
 * It provides availability, device memory (the caching allocator), the library report, copies between
 * host and devices, fill, and every op family: elementwise ops ({@link CudaKernels}), reductions, indexing,
 * random fills, fused optimizer steps, pooling and batch norm on NVRTC-compiled kernels, the matmul family
 * through cuBLASLt ({@link CudaLinalgKernels}) and convolutions through cuDNN or im2col + cuBLASLt
 * ({@link CudaConvolutionKernels}). None of it has yet run on a GPU (docs/CUDA.md). A dtype a kernel does not
 * serve throws {@link UnsupportedOperationException} naming the op, never computing anything on the host.
 */
public final class CudaBackend implements Backend {
    private static final CudaBackend INSTANCE = new CudaBackend();

    /**
     * The growth of device bytes handed out after which tensors dropped without close are collected (see README's
     * Memory section): by default an eighth of the device's memory.
     */
    public static final String GC_THRESHOLD_VARIABLE = "JTORCH_CUDA_GC_THRESHOLD";
    public static final String GC_THRESHOLD_PROPERTY = "jtorch.cudaGcThreshold";
    private final CudaCachingAllocator[] allocators = new CudaCachingAllocator[64];

    private CudaBackend() {
        CudaOptimizerKernels.register(this::kernels);
        CudaValueCheckKernels.register(this::kernels);
    }

    static {
        registerPointwiseKernels();
    }

    /**
     * A kernel for every declared pointwise op, generated from its formula ({@link FormulaKernels}). Integer division
     * by zero is checked on the device first, by the dispatcher.
     */
    private static void registerPointwiseKernels() {
        // The JIT's fused groups (float32) and the random fills' transformations (float64): generated CUDA C compiled by
        // NVRTC, one source per compute dtype, made on first use; scalar parameters are kernel arguments.
        KernelRegistry.registerFormulaCompiler(Device.Type.CUDA, new FormulaKernel.Compiler() {
            @Override
            public FormulaKernel compile(org.jtorch.op.Expr formula, int inputs) {
                return formulaKernel(formula, inputs);
            }

            @Override
            public boolean drawsInside() {
                return true;
            }

            @Override
            public boolean savesMasks() {
                return true;
            }
        });
        for (OpDef op : OpRegistry.all()) {
            // An alias (floor_divide) runs the kernel its owner registers.
            if (!op.kind().isPointwise() || !op.kernel().equals(op.name())) continue;
            // A compute dtype the op has no entry for is refused naming the op, dtype and shape, before CUDA is needed.
            KernelRegistry.register(Device.Type.CUDA, op.kernel(), (ordinal, compute, out, a, b, p0, p1) -> {
                if (!FormulaKernels.supports(op, compute)) throw ElementwisePlan.unsupported(op.pyName(), compute, out.shape());
                INSTANCE.kernels().formula(op, ordinal, compute, out, a, b, p0, p1);
            });
        }
    }

    /** The kernel of a fused group's formula (or a random fill's transformation) over {@code inputs} inputs. */
    private static FormulaKernel formulaKernel(org.jtorch.op.Expr formula, int inputs) {
        return new FusedFormulaKernel(formula, inputs);
    }

    /**
     * A fused formula's kernels on CUDA: generated CUDA C ({@link FusedKernels}), compiled on first use. The formula and
     * its input count are kept so that a fused softmax's backward can generate one kernel over its gradient formulas.
     */
    private static final class FusedFormulaKernel implements FormulaKernel {
        private final org.jtorch.op.Expr formula;
        private final int inputs;
        private final int scalars;
        /** The drawing kernels' sources, by the inputs drawn and what they do with masks. */
        private final java.util.Map<String, String> drawing = new java.util.concurrent.ConcurrentHashMap<>();
        private final java.util.Map<DType, String> sources = new java.util.concurrent.ConcurrentHashMap<>();
        private final String sumSource;
        private volatile String layerNormSource;
        private volatile String softmaxSource;
        /** The fused softmax backward's sources, by the gradient formulas they evaluate. */
        private final java.util.Map<java.util.List<org.jtorch.op.Expr>, String> softmaxBackwardSources =
                new java.util.concurrent.ConcurrentHashMap<>();

        FusedFormulaKernel(org.jtorch.op.Expr formula, int inputs) {
            this.formula = formula;
            this.inputs = inputs;
            this.scalars = FusedKernels.scalarParameters(formula);
            this.sumSource = FusedKernels.sumSource(formula, inputs);
        }

        @Override
        public void run(int ordinal, DType compute, StridedView out, StridedView[] in, double[] params) {
            if (compute != DType.FLOAT32 && compute != DType.FLOAT64) {
                throw new UnsupportedOperationException("fused CUDA kernels compute in float32 or float64, not " + compute);
            }
            String source = sources.computeIfAbsent(compute, t -> FusedKernels.source(formula, inputs, t));
            INSTANCE.kernels().fused(source, ordinal, compute, out, in, parameters(params));
        }

        @Override
        public boolean drawsInside() {
            return true;
        }

        @Override
        public void runDrawing(int ordinal, StridedView out, StridedView[] in, Draws draws) {
            FusedKernels.Masks masks = draws.readsMasks() ? FusedKernels.Masks.READ
                    : draws.masks() != null ? FusedKernels.Masks.WRITE : FusedKernels.Masks.NONE;
            String source = drawing.computeIfAbsent(java.util.Arrays.toString(draws.inputs()) + masks,
                    k -> FusedKernels.drawingSource(formula, inputs, draws.inputs(), masks));
            // The inputs the kernel reads: all but the drawn ones (a few distinct indices), in order.
            int[] drawn = draws.inputs();
            StridedView[] read = new StridedView[in.length - drawn.length];
            for (int k = 0, r = 0; k < in.length; k++) if (!contains(drawn, k)) read[r++] = in[k];
            INSTANCE.kernels().fusedDrawing(source, ordinal, out, read, draws);
        }

        private static boolean contains(int[] values, int v) {
            for (int x : values) if (x == v) return true;
            return false;
        }

        @Override
        public boolean sumsRows() {
            return true;
        }

        @Override
        public void runRowSums(int ordinal, StridedView out, StridedView[] in, long rowLength, double[] params) {
            INSTANCE.kernels().fusedSum(sumSource, ordinal, out, in, parameters(params), rowLength);
        }

        @Override
        public boolean layerNormsRows() {
            return true;
        }

        @Override
        public void runRowLayerNorm(int ordinal, StridedView out, StridedView[] in, long rowLength, StridedView weight, StridedView bias,
                                    double eps, StridedView mean, StridedView rstd, double[] params) {
            String source = layerNormSource;
            if (source == null) layerNormSource = source = FusedKernels.layerNormSource(formula, inputs);
            INSTANCE.kernels().fusedLayerNorm(source, ordinal, out, in, parameters(params), rowLength, weight, bias, eps, mean, rstd);
        }

        @Override
        public boolean softmaxesRows() {
            return true;
        }

        @Override
        public void runRowSoftmax(int ordinal, StridedView out, StridedView[] in, long rowLength, boolean log, double[] params) {
            checkInputs(in, "a fused softmax");
            String source = softmaxSource;
            if (source == null) softmaxSource = source = FusedKernels.softmaxSource(formula, inputs);
            INSTANCE.kernels().fusedSoftmax(source, ordinal, out, in, parameters(params), rowLength, log);
        }

        /** The kernels index each row through the views' own leading strides: one launch for any broadcast. */
        @Override
        public boolean softmaxesRowsOfAnyStrides() {
            return true;
        }

        @Override
        public boolean softmaxBackwardsRows() {
            return true;
        }

        @Override
        public void runRowSoftmaxBackward(int ordinal, StridedView output, StridedView gradOut, StridedView[] in, long rowLength,
                                          boolean log, FormulaKernel[] gradients, StridedView[] gradientOuts) {
            checkInputs(in, "a fused softmax's backward");
            if (gradientOuts.length != gradients.length) {
                throw new IllegalArgumentException(formula + ": " + gradients.length + " gradient kernels, " + gradientOuts.length + " outputs");
            }
            java.util.List<org.jtorch.op.Expr> formulas = new java.util.ArrayList<>(gradients.length);
            for (FormulaKernel g : gradients) {
                if (!(g instanceof FusedFormulaKernel c) || c.inputs != inputs + 1) {
                    throw new IllegalArgumentException(formula + ": a fused softmax's backward takes CUDA gradient kernels of " + (inputs + 1)
                            + " inputs, got " + g);
                }
                formulas.add(c.formula);
            }
            String source = softmaxBackwardSources.computeIfAbsent(formulas, f -> FusedKernels.softmaxBackwardSource(formula, inputs, f));
            INSTANCE.kernels().fusedSoftmaxBackward(source, ordinal, output, gradOut, in, rowLength, log, gradientOuts);
        }

        private void checkInputs(StridedView[] in, String what) {
            if (in.length != inputs) throw new IllegalArgumentException(formula + ": " + what + " expected " + inputs + " inputs, got " + in.length);
        }

        @Override
        public String toString() {
            return "CUDA kernel of " + formula;
        }

        /** The formula's parameters from the call's scalars (the JIT's fused formulas read none). */
        private double[] parameters(double[] params) {
            if (scalars == 0) return new double[0];
            if (params == null || params.length < scalars) {
                throw new IllegalArgumentException("fused kernel of " + formula + ": expected " + scalars + " scalar parameters, got "
                        + (params == null ? 0 : params.length));
            }
            return java.util.Arrays.copyOf(params, scalars);
        }
    }

    public static CudaBackend get() {
        return INSTANCE;
    }

    @Override
    public Device.Type deviceType() {
        return Device.Type.CUDA;
    }

    @Override
    public boolean isAvailable() {
        return CudaRuntime.system().available();
    }

    @Override
    public String unavailableReason() {
        return CudaRuntime.system().reason();
    }

    /** The devices (when available) and one line per library: version and path, or where it was looked for. */
    @Override
    public String describe() {
        CudaRuntime rt = CudaRuntime.system();
        StringBuilder sb = new StringBuilder("cuda: ");
        if (rt.available()) {
            sb.append(rt.devices().size()).append(" device(s)");
            for (CudaRuntime.DeviceInfo d : rt.devices()) sb.append("\n  ").append(d);
        } else {
            sb.append("unavailable (").append(rt.reason()).append(')');
        }
        for (String line : rt.libraries().describe()) sb.append("\n  ").append(line);
        return sb.toString();
    }

    @Override
    public int deviceCount() {
        return CudaRuntime.system().devices().size();
    }

    @Override
    public synchronized CudaCachingAllocator allocator(Device device) {
        CudaRuntime rt = CudaRuntime.system();
        rt.requireAvailable();
        int index = device.index();
        if (index >= rt.devices().size()) {
            throw new IllegalArgumentException(device + " does not exist: " + rt.devices().size() + " CUDA device(s)");
        }
        if (allocators[index] == null) {
            CudaCachingAllocator a = new CudaCachingAllocator(new DriverDeviceMemory(rt, index),
                    () -> Cuda.currentStream(device).handle(), StorageCleaner::collect);
            a.setCollectionThreshold(MemoryStats.configuredBytes(GC_THRESHOLD_PROPERTY, GC_THRESHOLD_VARIABLE,
                    rt.devices().get(index).totalMemory() / 8));
            allocators[index] = a;
        }
        return allocators[index];
    }

    @Override
    public Storage allocate(Device device, long bytes) {
        CudaCachingAllocator allocator = allocator(device);
        MemoryBlock block = allocator.allocate(bytes);
        // A zero-length host view: the address travels with the storage, and host access throws.
        return Storage.ofBlock(device, bytes, allocator, block, MemorySegment.ofAddress(block.address()));
    }

    /** Host memory from {@link PinnedMemory}'s allocator (page-locked with the driver, cached). */
    @Override
    public Storage allocatePinnedHost(long bytes) {
        return PinnedMemory.allocate(bytes);
    }

    private volatile CudaKernels kernels;

    /** The launcher, once CUDA is known to be available; otherwise {@link IllegalStateException} with the reason. */
    CudaKernels kernels() {
        CudaRuntime rt = CudaRuntime.system();
        rt.requireAvailable();
        CudaKernels k = kernels;
        if (k == null) {
            synchronized (this) {
                if (kernels == null) kernels = new CudaKernels(rt);
                k = kernels;
            }
        }
        return k;
    }

    /** Copies between any pair of devices at least one of which is CUDA (host reads synchronise), converting dtypes. */
    @Override
    public void copy(StridedView src, StridedView dst) {
        kernels().copy(src, dst);
    }

    /** With {@code nonBlocking}, host-to-device copies from pinned memory do not wait for the device. */
    @Override
    public void copy(StridedView src, StridedView dst, boolean nonBlocking) {
        kernels().copy(src, dst, nonBlocking);
    }

    @Override
    public void fill(StridedView dst, double value, long longValue) {
        kernels().fill(dst, value, longValue);
    }

    @Override
    public void where(StridedView cond, StridedView a, StridedView b, StridedView out) {
        kernels().where(cond, a, b, out);
    }

    /** The reduction family of {@code reduce.cu} ({@link CudaReductions}). */
    private final ReductionKernels reductions = new CudaReductions(this::kernels);
    /** The indexing family of {@code index.cu} ({@link CudaIndexKernels}). */
    private final IndexKernels indexing = new CudaIndexKernels(this::kernels);
    /** The matmul family through cuBLASLt ({@link CudaLinalgKernels}). */
    private final LinalgKernels linalg = new CudaLinalgKernels(this::kernels, this);
    private final RandomKernels random = new CudaRandomKernels(this::kernels);
    /** Convolutions through cuDNN, else im2col + cuBLASLt ({@link CudaConvolutionKernels}). */
    private final ConvolutionKernels convolution = new CudaConvolutionKernels(this::kernels, this);
    /** Pooling and its gradients, {@code pool.cu} ({@link CudaSpatialKernels}). */
    private final SpatialKernels spatial = new CudaSpatialKernels(this::kernels);
    /** Batch-norm statistics, apply and backward, {@code norm.cu} ({@link CudaNormalizationKernels}). */
    private final NormalizationKernels normalization = new CudaNormalizationKernels(this::kernels);

    @Override
    public ReductionKernels reductions() {
        return reductions;
    }

    @Override
    public IndexKernels indexing() {
        return indexing;
    }

    @Override
    public LinalgKernels linalg() {
        return linalg;
    }

    @Override
    public RandomKernels random() {
        return random;
    }

    @Override
    public ConvolutionKernels convolution() {
        return convolution;
    }

    @Override
    public SpatialKernels spatial() {
        return spatial;
    }

    @Override
    public NormalizationKernels normalization() {
        return normalization;
    }

    /** The fused LSTM and GRU cell steps of {@code recurrent.cu} ({@link CudaRecurrentKernels}). */
    private final RecurrentKernels recurrent = new CudaRecurrentKernels(this::kernels);

    @Override
    public RecurrentKernels recurrent() {
        return recurrent;
    }

    /** CUDA graphs for the JIT and the optimizers' check ({@link CudaGraph}). */
    @Override
    public org.jtorch.backend.GraphCapture graphCapture() {
        return CudaGraph.CAPTURE;
    }
}
