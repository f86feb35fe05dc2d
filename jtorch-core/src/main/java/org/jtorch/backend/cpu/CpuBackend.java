package org.jtorch.backend.cpu;

import jdk.incubator.vector.FloatVector;
import org.jtorch.backend.AttentionKernels;
import org.jtorch.backend.Backend;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.IndexKernels;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.backend.RandomKernels;
import org.jtorch.backend.RecurrentKernels;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.backend.SpatialKernels;
import org.jtorch.memory.Allocator;
import org.jtorch.memory.CpuCachingAllocator;
import org.jtorch.memory.Storage;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.PointwiseKernel;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/** The pure-Java CPU backend: Vector API kernels over off-heap memory, multi-threaded with {@link Parallel}. */
public final class CpuBackend implements Backend {
    private static final CpuBackend INSTANCE = new CpuBackend();

    private final ReductionKernels reductions = new CpuReductionKernels();
    private final IndexKernels indexing = new CpuIndexKernels();
    private final LinalgKernels linalg = new CpuLinalgKernels();
    private final RandomKernels random = new CpuRandomKernels();
    private final ConvolutionKernels convolution = new CpuConvolutionKernels();
    private final SpatialKernels spatial = new CpuSpatialKernels();
    private final NormalizationKernels normalization = new CpuNormalizationKernels();
    private final RecurrentKernels recurrent = new CpuRecurrentKernels();
    private final AttentionKernels attention = new FlashAttentionF32();

    static {
        loadMemoryAccessClasses();
        registerPointwiseKernels();
        CpuLossKernels.register();
        CpuValueCheckKernels.register();
        LogSoftmaxBackward.register();
        CpuOptimizerKernels.register();
        JvmFlags.checkOnce();
        GemmWarmup.start();
    }

    /**
     * Loads every kind of the JDK's memory session and heap segment before a kernel is compiled. While a JVM has only
     * the global session (every tensor's storage), C2 compiles each memory access assuming it is the only kind; the
     * first {@code Arena.ofAuto()} anywhere (the JDK's own, when the first vector exp, log or erf loads its math
     * library) then invalidates that assumption and deoptimises every compiled kernel at once, which run as boxed
     * vector code until recompiled (measured: clamp 300-490 us instead of 45 us for 8 rounds of 20 calls, in a JVM
     * that had run other ops). With every kind present from the start, no compiled code depends on one kind.
     */
    private static void loadMemoryAccessClasses() {
        java.lang.foreign.Arena.ofAuto().allocate(8);
        try (java.lang.foreign.Arena confined = java.lang.foreign.Arena.ofConfined();
             java.lang.foreign.Arena shared = java.lang.foreign.Arena.ofShared()) {
            confined.allocate(8);
            shared.allocate(8);
        }
        java.lang.foreign.MemorySegment.ofArray(new byte[1]);
        java.lang.foreign.MemorySegment.ofArray(new short[1]);
        java.lang.foreign.MemorySegment.ofArray(new char[1]);
        java.lang.foreign.MemorySegment.ofArray(new int[1]);
        java.lang.foreign.MemorySegment.ofArray(new float[1]);
        java.lang.foreign.MemorySegment.ofArray(new long[1]);
        java.lang.foreign.MemorySegment.ofArray(new double[1]);
    }

    private CpuBackend() {}

    /**
     * One kernel per declared pointwise op, generated from its formula ({@link CpuFormulaKernel}). The same compiler
     * serves the JIT's fused formulas.
     */
    private static void registerPointwiseKernels() {
        KernelRegistry.registerFormulaCompiler(Device.Type.CPU, new org.jtorch.op.FormulaKernel.Compiler() {
            @Override
            public org.jtorch.op.FormulaKernel compile(org.jtorch.op.Expr formula, int inputs) {
                return new CpuFormulaKernel(formula, inputs);
            }

            @Override
            public boolean fitsOneKernel(org.jtorch.op.Expr formula, org.jtorch.types.DType dtype) {
                return C2NodeBudget.fits(formula, dtype == org.jtorch.types.DType.FLOAT64);
            }

            @Override
            public int size(org.jtorch.op.Expr formula, org.jtorch.types.DType dtype) {
                return C2NodeBudget.nodes(formula, dtype == org.jtorch.types.DType.FLOAT64);
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
            CpuFormulaKernel f = new CpuFormulaKernel(op.formula(), op.kind() == OpDef.Kind.UNARY ? 1 : 2);
            PointwiseKernel k = (device, compute, out, a, b, p0, p1) ->
                    f.run(device, compute, out, b == null ? new StridedView[] {a} : new StridedView[] {a, b}, new double[] {p0, p1});
            KernelRegistry.register(Device.Type.CPU, op.kernel(), k);
        }
    }

    public static CpuBackend get() {
        return INSTANCE;
    }

    @Override
    public Device.Type deviceType() {
        return Device.Type.CPU;
    }

    @Override
    public boolean isAvailable() {
        return true;
    }

    @Override
    public String unavailableReason() {
        return "";
    }

    @Override
    public String describe() {
        return "cpu: pure Java, Vector API " + FloatVector.SPECIES_PREFERRED.vectorBitSize() + "-bit ("
                + FloatVector.SPECIES_PREFERRED.length() + " float lanes), " + Parallel.numThreads() + " threads";
    }

    @Override
    public Allocator allocator(Device device) {
        return CpuCachingAllocator.get();
    }

    @Override
    public Storage allocate(Device device, long bytes) {
        return Storage.allocateCpu(bytes);
    }

    @Override
    public void copy(StridedView src, StridedView dst) {
        ElementwiseKernels.copy(src, dst);
    }

    @Override
    public void fill(StridedView dst, double value, long longValue) {
        ElementwiseKernels.fill(dst, value, longValue);
    }

    @Override
    public void where(StridedView cond, StridedView a, StridedView b, StridedView out) {
        ElementwiseKernels.where(cond, a, b, out);
    }

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

    @Override
    public RecurrentKernels recurrent() {
        return recurrent;
    }


    @Override
    public AttentionKernels attention() {
        return attention;
    }
}
