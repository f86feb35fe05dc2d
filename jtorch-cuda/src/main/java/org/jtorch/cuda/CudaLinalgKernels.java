package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.ALGO_SIZE;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_STATUS_NOT_SUPPORTED;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_BIAS;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_DEFAULT;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_GELU;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_GELU_AUX;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_GELU_BIAS;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_RELU;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_EPILOGUE_RELU_BIAS;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_BIAS_POINTER;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_EPILOGUE;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_TRANSA;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_DESC_TRANSB;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUDA_R_64F;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.HEURISTIC_ALGO_OFFSET;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.HEURISTIC_WORKSPACE_SIZE_OFFSET;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.backend.MatmulSettings;
import org.jtorch.cuda.cublaslt.CublasLt;
import org.jtorch.cuda.kernels.MatmulPlan;
import org.jtorch.cuda.kernels.MatmulPlan.Operand;
import org.jtorch.cuda.kernels.MatmulPlan.Plan;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link LinalgKernels} on a CUDA device through cuBLASLt: one strided-batched {@code cublasLtMatmul} per
 * {@code bmm}, planned by {@link MatmulPlan} (column-major {@code C^T = B^T A^T}, transposed views passed
 * as {@code CUBLAS_OP_T}, other layouts made contiguous first), on the device's current stream, with a
 * workspace from the caching allocator and the heuristic's first algorithm cached per plan and device.
 * {@link #mmBiasActivation} adds a bias and applies ReLU or tanh-GELU in the same call (cuBLASLt's
 * {@code BIAS}, {@code RELU_BIAS}, {@code GELU_BIAS} and {@code GELU_AUX_BIAS} epilogues).
 *
 * <p>{@code MatmulDeviceConformanceTest} checks it on cuda:0: on an H200 (2026-12-04) and, in CI, on the
 * CUDA simulator.
 */
final class CudaLinalgKernels implements LinalgKernels {
    /** Workspace offered to the heuristic (PyTorch offers 1 MiB to 32 MiB depending on the architecture). */
    static final long WORKSPACE_BYTES = 8L << 20;

    private final Supplier<CudaKernels> kernels;
    private final CudaBackend backend;
    private volatile CublasLt lt;
    private final long[] handles = new long[64];
    private final Map<Key, Algo> algos = new ConcurrentHashMap<>();
    /** Plans and epilogues the library refused (alignments 0): their products take the unfused way. */
    private final java.util.Set<Key> unsupported = ConcurrentHashMap.newKeySet();

    private record Key(int device, Plan plan, int alignA, int alignB, int alignD, int epilogue) {}

    /** A {@code cublasLtEpilogue_t} and its operands: a bias vector and the aux matrix (0 where unused). */
    private record Epilogue(int code, long bias, long aux, long auxLd) {
        static final Epilogue NONE = new Epilogue(CUBLASLT_EPILOGUE_DEFAULT, 0, 0, 0);
    }

    private record Algo(byte[] bytes, long workspaceBytes) {}

    CudaLinalgKernels(Supplier<CudaKernels> kernels, CudaBackend backend) {
        this.kernels = kernels;
        this.backend = backend;
    }

    private CublasLt lt() {
        CublasLt l = lt;
        if (l == null) {
            synchronized (this) {
                if (lt == null) lt = new CublasLt(CudaRuntime.system().libraries().load(CudaLibraries.Kind.CUBLASLT));
                l = lt;
            }
        }
        return l;
    }

    /** The device's handle, created with the device's context current. */
    private synchronized long handle(Device device) {
        int i = device.index();
        if (handles[i] == 0) handles[i] = lt().create();
        return handles[i];
    }

    @Override
    public void bmm(StridedView a, StridedView b, StridedView out, double alpha, double beta) {
        DType dtype = out.dtype();
        if (!MatmulPlan.supports(dtype)) MatmulPlan.dataType(dtype); // throws, naming the dtype
        long batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
        if (batch == 0 || m == 0 || n == 0) return;
        if (k == 0) { // an empty sum: out = beta * out
            if (beta != 1) kernels.get().scale(out, beta);
            return;
        }
        Plan plan = MatmulPlan.plan(dtype, a.shape(), a.strides(), b.shape(), b.strides(), out.shape(), out.strides(),
                MatmulSettings.allowTf32());
        if (plan.needsCopy()) {
            // cuBLASLt "A" is the core's b, "B" the core's a.
            StridedView ac = plan.b().needsCopy() ? kernels.get().contiguousCopy(a) : null;
            StridedView bc = plan.a().needsCopy() ? kernels.get().contiguousCopy(b) : null;
            try {
                bmm(ac != null ? ac : a, bc != null ? bc : b, out, alpha, beta);
            } finally {
                CudaKernels.free(ac, bc);
            }
            return;
        }
        if (plan.outputNeedsTemp()) {
            CudaKernels cuda = kernels.get();
            StridedView tmp = CudaKernels.scratch(out.device(), out.shape(), dtype);
            try {
                if (beta != 0) cuda.copyOnDevice(out, tmp);
                bmm(a, b, tmp, alpha, beta);
                cuda.copyOnDevice(tmp, out);
            } finally {
                CudaKernels.free(tmp);
            }
            return;
        }
        run(out.device(), plan, b.address(), a.address(), out.address(), alpha, beta, Epilogue.NONE);
    }

    /**
     * One cuBLASLt call with an epilogue, where the operands allow it: one product (no batch), nothing to copy first,
     * a contiguous bias of {@code out}'s dtype and length N, and a pre-activation matrix (GELU only: cuBLASLt's
     * ReLU aux is a bit mask) laid out as {@code out} with a row stride that is a multiple of 8 elements.
     */
    @Override
    public boolean mmBiasActivation(StridedView a, StridedView b, StridedView out, StridedView bias, Activation activation,
                                    StridedView preActivation) {
        long n = out.size(2);
        long auxLd = 0;
        if (preActivation != null) {
            auxLd = out.size(1) > 1 ? preActivation.stride(1) : n;
            if (preActivation.dtype() != out.dtype() || !java.util.Arrays.equals(preActivation.shape(), out.shape())
                    || (n > 1 && preActivation.stride(2) != 1)) {
                return false;
            }
        }
        Fusable fused = fusable(out.device().index(), a, b, out.shape(), out.strides(), out.dtype(), bias, activation,
                preActivation != null, auxLd);
        if (fused == null) return false;
        Plan plan = fused.plan();
        Epilogue epilogue = new Epilogue(fused.code(), bias == null ? 0 : bias.address(),
                preActivation == null ? 0 : preActivation.address(), auxLd);
        Key refused = fused.refused();
        try {
            if (run(out.device(), plan, b.address(), a.address(), out.address(), 1, 0, epilogue)) return true;
        } catch (CudaException e) {
            if (e.code() != CUBLAS_STATUS_NOT_SUPPORTED) throw e;
        }
        // The library has no algorithm for this epilogue here (a GPU or type without it): the unfused way, from now on.
        unsupported.add(refused);
        return false;
    }

    /** Answered as {@link #mmBiasActivation} would be for a fresh contiguous {@code out} (and pre-activation matrix), short of running. */
    @Override
    public boolean takesBiasActivation(StridedView a, StridedView b, StridedView bias, Activation activation, boolean preActivation) {
        if (a.dim() != 3 || b.dim() != 3) return false;
        long m = a.size(1), n = b.size(2);
        return fusable(a.device().index(), a, b, new long[] {1, m, n}, new long[] {m * n, n, 1}, a.dtype(), bias, activation,
                preActivation, n) != null;
    }

    /** An epilogue cuBLASLt is asked to run: its code, the product's plan, and the key under which a refusal is remembered. */
    private record Fusable(int code, Plan plan, Key refused) {}

    /**
     * The epilogue for {@code out = activation(a @ b + bias)} with {@code out} of {@code shape}, {@code strides} and
     * {@code dtype} (and a pre-activation matrix of leading dimension {@code auxLd}), or null where cuBLASLt is not asked:
     * one product (no batch), nothing to copy first, a contiguous bias of {@code out}'s dtype and length N, and a
     * pre-activation matrix (GELU only: cuBLASLt's ReLU aux is a bit mask) with a row stride that is a multiple of 8
     * elements; or the library refused this epilogue here before.
     */
    private Fusable fusable(int device, StridedView a, StridedView b, long[] shape, long[] strides, DType dtype, StridedView bias,
                            Activation activation, boolean preActivation, long auxLd) {
        long m = shape[1], n = shape[2], k = a.size(2);
        if (!MatmulPlan.supports(dtype) || a.dtype() != dtype || b.dtype() != dtype || shape[0] != 1 || m == 0 || n == 0 || k == 0) {
            return null;
        }
        if (bias != null && (bias.dtype() != dtype || bias.dim() != 1 || bias.size(0) != n || (n > 1 && bias.stride(0) != 1))) {
            return null;
        }
        if (preActivation && (activation != Activation.GELU_TANH || auxLd < n || auxLd % 8 != 0)) return null;
        int code = switch (activation) {
            case NONE -> bias != null ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
            case RELU -> bias != null ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
            case GELU_TANH -> preActivation ? (bias != null ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                    : bias != null ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
        };
        if (code == CUBLASLT_EPILOGUE_DEFAULT) return null;
        Plan plan = epiloguePlan(dtype, a, b, shape, strides, MatmulSettings.allowTf32());
        if (plan.needsCopy() || plan.outputNeedsTemp()) return null;
        Key refused = new Key(device, plan, 0, 0, 0, code);
        return unsupported.contains(refused) ? null : new Fusable(code, plan, refused);
    }

    /** Epilogue products planned ({@link MatmulPlan#plan} calls by {@link #epiloguePlan}): for the tests. */
    static final LongAdder EPILOGUE_PLANS = new LongAdder();

    /** The geometry of the last epilogue product this thread planned, and its plan. */
    private record Planned(DType dtype, long[] aShape, long[] aStrides, long[] bShape, long[] bStrides, long[] shape, long[] strides,
                           boolean allowTf32, Plan plan) {
        boolean plans(DType dtype, StridedView a, StridedView b, long[] shape, long[] strides, boolean allowTf32) {
            return dtype == this.dtype && allowTf32 == this.allowTf32 && Arrays.equals(shape, this.shape)
                    && Arrays.equals(strides, this.strides) && Arrays.equals(a.shape(), aShape) && Arrays.equals(a.strides(), aStrides)
                    && Arrays.equals(b.shape(), bShape) && Arrays.equals(b.strides(), bStrides);
        }
    }

    private static final ThreadLocal<Planned> LAST_EPILOGUE_PLAN = new ThreadLocal<>();

    /**
     * The plan of an epilogue product: the dispatcher's test ({@link #takesBiasActivation}) plans it, and the run that
     * follows on the same thread ({@link #mmBiasActivation}, for the fresh output the test assumed) finds it here instead of
     * planning again. A plan depends on the geometry alone, so a remembered one is never stale.
     */
    private static Plan epiloguePlan(DType dtype, StridedView a, StridedView b, long[] shape, long[] strides, boolean allowTf32) {
        Planned last = LAST_EPILOGUE_PLAN.get();
        if (last != null && last.plans(dtype, a, b, shape, strides, allowTf32)) return last.plan();
        Plan plan = MatmulPlan.plan(dtype, a.shape(), a.strides(), b.shape(), b.strides(), shape, strides, allowTf32);
        EPILOGUE_PLANS.increment();
        LAST_EPILOGUE_PLAN.set(new Planned(dtype, a.shape(), a.strides(), b.shape(), b.strides(), shape, strides, allowTf32, plan));
        return plan;
    }

    /** The product; false, having done nothing, where the heuristic has no algorithm for an epilogue (an error without one). */
    private boolean run(Device device, Plan plan, long aPtr, long bPtr, long dPtr, double alpha, double beta, Epilogue epilogue) {
        long stream = kernels.get().currentStream(device); // also makes the device's context current
        CublasLt l = lt();
        long handle = handle(device);
        long desc = 0, aDesc = 0, bDesc = 0, dDesc = 0;
        try (Arena arena = Arena.ofConfined()) {
            desc = l.matmulDescCreate(plan.computeType(), plan.scaleType());
            l.matmulDescSetInt(desc, CUBLASLT_MATMUL_DESC_TRANSA, plan.a().op());
            l.matmulDescSetInt(desc, CUBLASLT_MATMUL_DESC_TRANSB, plan.b().op());
            if (epilogue != Epilogue.NONE) {
                l.matmulDescSetInt(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue.code());
                if (epilogue.bias() != 0) l.matmulDescSetLong(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, epilogue.bias());
                if (epilogue.aux() != 0) {
                    l.matmulDescSetLong(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, epilogue.aux());
                    l.matmulDescSetLong(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, epilogue.auxLd());
                }
            }
            aDesc = layout(l, plan.dataType(), plan.a(), plan.batch());
            bDesc = layout(l, plan.dataType(), plan.b(), plan.batch());
            dDesc = layout(l, plan.dataType(), new Operand(false, 0, plan.rows(), plan.cols(), plan.ldd(), plan.batchStrideD()),
                    plan.batch());
            Key key = new Key(device.index(), plan, MatmulPlan.alignment(aPtr), MatmulPlan.alignment(bPtr),
                    MatmulPlan.alignment(dPtr), epilogue.code());
            Algo algo = algo(l, handle, key, desc, aDesc, bDesc, dDesc);
            if (algo == null) {
                if (epilogue != Epilogue.NONE) return false;
                throw new CudaException("cublasLtMatmulAlgoGetHeuristic found no algorithm for bmm " + key, null);
            }
            MemorySegment algoSeg = arena.allocate(ALGO_SIZE, 8);
            MemorySegment.copy(MemorySegment.ofArray(algo.bytes()), 0, algoSeg, 0, ALGO_SIZE);
            ValueLayout scale = plan.scaleType() == CUDA_R_64F ? JAVA_DOUBLE : JAVA_FLOAT;
            MemorySegment alphaSeg = arena.allocate(scale);
            MemorySegment betaSeg = arena.allocate(scale);
            if (scale == JAVA_DOUBLE) {
                alphaSeg.set(JAVA_DOUBLE, 0, alpha);
                betaSeg.set(JAVA_DOUBLE, 0, beta);
            } else {
                alphaSeg.set(JAVA_FLOAT, 0, (float) alpha);
                betaSeg.set(JAVA_FLOAT, 0, (float) beta);
            }
            CudaCachingAllocator allocator = backend.allocator(device);
            MemoryBlock workspace = algo.workspaceBytes() > 0 ? allocator.allocate(algo.workspaceBytes(), stream) : null;
            try {
                l.matmul(handle, desc, alphaSeg, aPtr, aDesc, bPtr, bDesc, betaSeg, dPtr, dDesc, dPtr, dDesc, algoSeg,
                        workspace == null ? 0 : workspace.address(), algo.workspaceBytes(), stream);
            } finally {
                // Stream-ordered: a later allocation on this stream runs after the matmul.
                if (workspace != null) allocator.free(workspace);
            }
            return true;
        } finally {
            if (dDesc != 0) l.matrixLayoutDestroy(dDesc);
            if (bDesc != 0) l.matrixLayoutDestroy(bDesc);
            if (aDesc != 0) l.matrixLayoutDestroy(aDesc);
            if (desc != 0) l.matmulDescDestroy(desc);
        }
    }

    private static long layout(CublasLt l, int dataType, Operand o, int batch) {
        long desc = l.matrixLayoutCreate(dataType, o.rows(), o.cols(), o.ld());
        try {
            l.matrixLayoutSetInt(desc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
            l.matrixLayoutSetLong(desc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, o.batchStride());
            return desc;
        } catch (RuntimeException e) {
            l.matrixLayoutDestroy(desc);
            throw e;
        }
    }

    /** The heuristic's first algorithm for this plan on this device, asked once and cached; null where it has none. */
    private Algo algo(CublasLt l, long handle, Key key, long desc, long aDesc, long bDesc, long dDesc) {
        Algo cached = algos.get(key);
        if (cached != null) return cached;
        long pref = l.preferenceCreate();
        try (Arena arena = Arena.ofConfined()) {
            l.preferenceSetLong(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, WORKSPACE_BYTES);
            l.preferenceSetInt(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignA());
            l.preferenceSetInt(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignB());
            l.preferenceSetInt(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignD());
            l.preferenceSetInt(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignD());
            MemorySegment results = CublasLt.allocateHeuristicResults(arena, 1);
            int found = l.algoGetHeuristic(handle, desc, aDesc, bDesc, dDesc, dDesc, pref, 1, results);
            if (found < 1) return null;
            byte[] bytes = results.asSlice(HEURISTIC_ALGO_OFFSET, ALGO_SIZE).toArray(ValueLayout.JAVA_BYTE);
            long ws = results.get(ValueLayout.JAVA_LONG, HEURISTIC_WORKSPACE_SIZE_OFFSET);
            Algo algo = new Algo(bytes, ws);
            algos.put(key, algo);
            return algo;
        } finally {
            l.preferenceDestroy(pref);
        }
    }

    @Override
    public String toString() {
        return "CUDA LinalgKernels (cuBLASLt)";
    }
}
