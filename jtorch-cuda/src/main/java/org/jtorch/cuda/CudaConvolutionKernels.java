package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_CROSS_CORRELATION;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_FMA_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_STATUS_SUCCESS;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_TENSOR_NCHW;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_TENSOR_OP_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_ALGO_OFFSET;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_MATH_TYPE_OFFSET;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_MEMORY_OFFSET;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_SIZE;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_STATUS_OFFSET;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.MatmulSettings;
import org.jtorch.cuda.cudnn.Cudnn;
import org.jtorch.cuda.cudnn.Cudnn.Direction;
import org.jtorch.cuda.cudnn.CudnnConstants;
import org.jtorch.cuda.kernels.ConvPlan;
import org.jtorch.cuda.kernels.ConvPlan.AlgoKey;
import org.jtorch.cuda.kernels.ConvPlan.Chunk;
import org.jtorch.cuda.kernels.ConvPlan.CudnnPlan;
import org.jtorch.cuda.kernels.ConvPlan.Fallback;
import org.jtorch.cuda.kernels.ConvPlan.Gemm;
import org.jtorch.cuda.kernels.ConvPlan.Matrix;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link ConvolutionKernels} on a CUDA device. With cuDNN (found by {@link CudaLibraries}): the legacy
 * convolution API, {@code cudnnConvolutionForward / BackwardData / BackwardFilter / BackwardBias} and
 * {@code cudnnAddTensor} for the bias ({@code conv.cu}'s bias kernels where the library lacks those two
 * deprecated calls), descriptors as {@link ConvPlan#cudnn} says, the heuristic's
 * ({@code cudnnGet*Algorithm_v7}) first usable algorithm cached per {@link AlgoKey}, the workspace taken
 * from the caching allocator, all on the device's current stream. Without cuDNN (or with
 * {@link #forceFallback}): {@link ConvPlan#fallback}, i.e. {@code conv.cu}'s im2col/col2im kernels around
 * cuBLASLt GEMMs of the linalg family, and {@code conv.cu}'s bias kernels. {@code im2col}/{@code col2im}
 * always use {@code conv.cu}.
 *
 * <p>One cuDNN handle per device, whose stream is set before each call: the cuDNN calls hold this
 * object's lock from {@code cudnnSetStream} to the last enqueue, so that threads with different current
 * streams do not race on it (the calls only enqueue work, so the lock is held briefly).
 *
 * <p>Operands are contiguous NCHW float32/float64 (the front end converts 16-bit floats; the kernels also
 * take float16/bfloat16). {@code ConvolutionDeviceConformanceTest} runs both paths on cuda:0: on an H200
 * (2026-12-04) and, in CI, on the CUDA simulator.
 */
final class CudaConvolutionKernels implements ConvolutionKernels {
    /** Tests set this to run the fallback on a machine that has cuDNN. */
    static volatile boolean forceFallback;

    /** The largest workspace an algorithm may ask for; a larger one is passed over for the next result. */
    static final long WORKSPACE_LIMIT_BYTES = 1L << 30;

    private final Supplier<CudaKernels> kernels;
    private final CudaBackend backend;
    private final long[] handles = new long[64];
    private final Map<AlgoKey, Algo> algos = new ConcurrentHashMap<>();
    private volatile Cudnn cudnn;
    private volatile String cudnnMissing;

    private record Algo(int algo, int mathType, long workspaceBytes) {}

    CudaConvolutionKernels(Supplier<CudaKernels> kernels, CudaBackend backend) {
        this.kernels = kernels;
        this.backend = backend;
    }

    /** cuDNN, loaded once; null (and the reason kept) when the library or a symbol is missing. */
    private Cudnn cudnn() {
        if (cudnn != null || cudnnMissing != null) return cudnn;
        synchronized (this) {
            if (cudnn == null && cudnnMissing == null) {
                try {
                    cudnn = new Cudnn(CudaRuntime.system().libraries().load(CudaLibraries.Kind.CUDNN));
                } catch (RuntimeException e) {
                    cudnnMissing = e.getMessage();
                }
            }
            return cudnn;
        }
    }

    /** Whether this convolution goes to cuDNN. */
    private boolean useCudnn(Geometry g) {
        return !forceFallback && ConvPlan.cudnnRefusal(g) == null && cudnn() != null;
    }

    private synchronized long handle(Device device) {
        int i = device.index();
        if (handles[i] == 0) handles[i] = cudnn().create();
        return handles[i];
    }

    private static long address(StridedView t) {
        return t.address();
    }

    private static void requireSupported(String op, StridedView t) {
        if (!ConvPlan.supports(t.dtype())) ConvPlan.entry(op, t.dtype()); // throws, naming op and dtype
    }

    // ------------------------------------------------------------------ the family

    @Override
    public void conv2d(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g) {
        requireSupported("conv2d", out);
        if (g.n() == 0) return;
        if (useCudnn(g)) {
            cudnnConvolve(Direction.FORWARD, g, input, weight, out);
        } else {
            runFallback(Direction.FORWARD, g, input, weight, out);
        }
        if (bias == null) return;
        if (useCudnn(g) && cudnn().hasBiasCalls()) cudnnAddBias(out, bias, g);
        else launchBias("bias_add", out, bias, g.n(), g.cout(), (long) g.oh() * g.ow());
    }

    @Override
    public void conv2dBackwardInput(StridedView gradOut, StridedView weight, StridedView gradInput, Geometry g) {
        requireSupported("conv2d_backward_input", gradInput);
        if (g.n() == 0) return;
        if (useCudnn(g)) cudnnConvolve(Direction.BACKWARD_DATA, g, gradInput, weight, gradOut);
        else runFallback(Direction.BACKWARD_DATA, g, gradInput, weight, gradOut);
    }

    @Override
    public void conv2dBackwardWeight(StridedView gradOut, StridedView input, StridedView gradWeight, Geometry g) {
        requireSupported("conv2d_backward_weight", gradWeight);
        if (g.n() == 0) {
            kernels.get().fill(gradWeight, 0, 0);
            return;
        }
        if (useCudnn(g)) cudnnConvolve(Direction.BACKWARD_FILTER, g, input, gradWeight, gradOut);
        else runFallback(Direction.BACKWARD_FILTER, g, input, gradWeight, gradOut);
    }

    @Override
    public void conv2dBackwardBias(StridedView gradOut, StridedView gradBias) {
        requireSupported("conv2d_backward_bias", gradBias);
        long n = gradOut.size(0), channels = gradOut.size(1), plane = gradOut.size(2) * gradOut.size(3);
        if (channels == 0) return;
        if (!forceFallback && gradOut.numel() <= ConvPlan.CUDNN_MAX_ELEMENTS && n > 0 && plane > 0 && cudnn() != null && cudnn.hasBiasCalls()) {
            cudnnBiasGrad(gradOut, gradBias, (int) n, (int) channels, (int) gradOut.size(2), (int) gradOut.size(3));
            return;
        }
        Device device = gradBias.device();
        CudaKernels k = kernels.get();
        long stream = k.currentStream(device);
        long fn = k.wholeFileFunction(device, "conv.cu", ConvPlan.entry("bias_grad", gradBias.dtype()));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = ConvPlan.bias(arena, address(gradOut), address(gradBias), n, channels, plane);
            k.launchRows(fn, ConvPlan.biasGradBlocks(channels, k.multiprocessors(device)), ConvPlan.BIAS_GRAD_THREADS, stream, args);
        }
    }

    @Override
    public void im2col(StridedView input, StridedView col, Geometry g) {
        requireSupported("im2col", col);
        launchColumns("im2col", address(input), address(col), g.n(), g, col.dtype(), col.device());
    }

    @Override
    public void col2im(StridedView col, StridedView out, Geometry g) {
        requireSupported("col2im", out);
        launchColumns("col2im", address(col), address(out), g.n(), g, out.dtype(), out.device());
    }

    // ------------------------------------------------------------------ conv.cu launches

    /** im2col (from image memory to columns) or col2im (from columns to image memory) of {@code images} images. */
    private void launchColumns(String op, long from, long to, long images, Geometry g, DType dtype, Device device) {
        long items = op.equals("im2col") ? ConvPlan.im2colItems(g, images) : ConvPlan.col2imItems(g, images);
        CudaKernels k = kernels.get();
        int blocks = LaunchGeometry.blocks(items, 1, k.multiprocessors(device));
        if (blocks == 0) return;
        long stream = k.currentStream(device);
        long fn = k.wholeFileFunction(device, "conv.cu", ConvPlan.entry(op, dtype));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = ConvPlan.columns(arena, from, to, images, ConvPlan.packShape(arena, g.cin(), g));
            k.launchRows(fn, blocks, LaunchGeometry.THREADS, stream, args);
        }
    }

    private void launchBias(String op, StridedView out, StridedView bias, long images, long channels, long plane) {
        Device device = out.device();
        CudaKernels k = kernels.get();
        int blocks = LaunchGeometry.blocks(images * channels * plane, 1, k.multiprocessors(device));
        if (blocks == 0) return;
        long stream = k.currentStream(device);
        long fn = k.wholeFileFunction(device, "conv.cu", ConvPlan.entry(op, out.dtype()));
        try (Arena arena = Arena.ofConfined()) {
            k.launchRows(fn, blocks, LaunchGeometry.THREADS, stream, ConvPlan.bias(arena, address(out), address(bias), images, channels, plane));
        }
    }

    // ------------------------------------------------------------------ fallback: im2col + cuBLASLt

    /** Runs {@link ConvPlan#fallback}: {@code x} is the input (or its gradient), {@code w} the weight (or its gradient), {@code y} the output (or its gradient). */
    private void runFallback(Direction direction, Geometry g, StridedView x, StridedView w, StridedView y) {
        DType dtype = x.dtype();
        Fallback plan = ConvPlan.fallback(direction, g, dtype);
        Device device = x.device();
        long inImageBytes = (long) g.cin() * g.h() * g.w() * dtype.byteSize();
        StridedView col = plan.usesCol() ? CudaKernels.scratch(device,
                new long[] {plan.imagesPerChunk() * plan.colElementsPerImage()}, dtype)
                : null;
        try {
            plan.run(new ConvPlan.Steps() {
                @Override
                public void im2col(int first, int count) {
                    launchColumns("im2col", address(x) + first * inImageBytes, address(col), count, g, dtype, device);
                }

                @Override
                public void col2im(int first, int count) {
                    launchColumns("col2im", address(col), address(x) + first * inImageBytes, count, g, dtype, device);
                }

                @Override
                public void gemm(Gemm gemm) {
                    backend.linalg().bmm(view(gemm.a(), gemm.batch(), gemm.m(), gemm.k()), view(gemm.b(), gemm.batch(),
                            gemm.k(), gemm.n()),
                            view(gemm.c(), gemm.batch(), gemm.m(), gemm.n()), 1, gemm.beta());
                }

                private StridedView view(Matrix mat, int batch, long rows, long cols) {
                    StridedView base = switch (mat.buffer()) {
                        case INPUT -> x;
                        case WEIGHT -> w;
                        case OUTPUT -> y;
                        case COL -> col;
                    };
                    return base.restrided(new long[] {batch, rows, cols}, new long[] {mat.batchStride(), mat.rowStride(),
                            mat.colStride()},
                            base.offset() + mat.offset());
                }
            });
        } finally {
            CudaKernels.free(col);
        }
    }

    // ------------------------------------------------------------------ cuDNN

    /** One direction through cuDNN in calls of {@link CudnnPlan#imagesPerCall()} images; backward filter sums the calls with beta = 1. */
    private synchronized void cudnnConvolve(Direction direction, Geometry g, StridedView x, StridedView w, StridedView y) {
        DType dtype = x.dtype();
        Device device = x.device();
        CudnnPlan plan = ConvPlan.cudnn(g, dtype, MatmulSettings.allowTf32());
        Cudnn dnn = cudnn();
        long stream = kernels.get().currentStream(device); // also makes the device's context current
        long handle = handle(device);
        dnn.setStream(handle, stream);
        long esz = dtype.byteSize();
        long inImage = (long) g.cin() * g.h() * g.w() * esz, outImage = (long) g.cout() * g.oh() * g.ow() * esz;
        for (Chunk chunk : ConvPlan.chunks(g.n(), plan.imagesPerCall())) {
            Geometry cg = ConvPlan.chunkGeometry(g, chunk);
            long xDesc = 0, yDesc = 0, wDesc = 0, conv = 0;
            try (Arena arena = Arena.ofConfined()) {
                xDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, plan.dataType(), chunk.count(), g.cin(), g.h(), g.w());
                yDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, plan.dataType(), chunk.count(), g.cout(), g.oh(), g.ow());
                wDesc = dnn.filter4d(plan.dataType(), CUDNN_TENSOR_NCHW, g.cout(), g.cinG(), g.kh(), g.kw());
                conv = dnn.convolution2d(g.ph(), g.pw(), g.sh(), g.sw(), g.dh(), g.dw(), CUDNN_CROSS_CORRELATION, plan.computeType(),
                        g.groups(), plan.mathType());
                checkOutputSize(dnn, conv, xDesc, wDesc, cg);
                // Descriptor order per direction: forward (x, w -> y), data (w, dy -> dx), filter (x, dy -> dw).
                long d1 = direction == Direction.BACKWARD_DATA ? wDesc : xDesc;
                long d2 = direction == Direction.FORWARD ? wDesc : yDesc;
                long d3 = switch (direction) {
                    case FORWARD -> yDesc;
                    case BACKWARD_DATA -> xDesc;
                    case BACKWARD_FILTER -> wDesc;
                };
                long xPtr = address(x) + chunk.first() * inImage, yPtr = address(y) + chunk.first() * outImage, wPtr = address(w);
                long p1 = direction == Direction.BACKWARD_DATA ? wPtr : xPtr;
                long p2 = direction == Direction.FORWARD ? wPtr : yPtr;
                long p3 = switch (direction) {
                    case FORWARD -> yPtr;
                    case BACKWARD_DATA -> xPtr;
                    case BACKWARD_FILTER -> wPtr;
                };
                AlgoKey key = new AlgoKey(device.index(), direction, cg, dtype, plan.mathType());
                Algo algo = algo(dnn, handle, key, d1, d2, conv, d3);
                if (algo.mathType() != plan.mathType()) dnn.setMathType(conv, algo.mathType());
                boolean accumulate = direction == Direction.BACKWARD_FILTER && chunk.first() > 0;
                MemorySegment alpha = scalar(arena, plan.doubleScalars(), 1), beta = scalar(arena, plan.doubleScalars(), accumulate ? 1 : 0);
                CudaCachingAllocator allocator = backend.allocator(device);
                MemoryBlock workspace = algo.workspaceBytes() > 0 ? allocator.allocate(algo.workspaceBytes(), stream) : null;
                try {
                    dnn.convolve(direction, handle, alpha, d1, p1, d2, p2, conv, algo.algo(), workspace == null ? 0 : workspace.address(),
                            algo.workspaceBytes(), beta, d3, p3);
                } finally {
                    // Stream-ordered: a later allocation on this stream runs after the convolution.
                    if (workspace != null) allocator.free(workspace);
                }
            } finally {
                if (conv != 0) dnn.destroyConvolution(conv);
                if (wDesc != 0) dnn.destroyFilter(wDesc);
                if (yDesc != 0) dnn.destroyTensor(yDesc);
                if (xDesc != 0) dnn.destroyTensor(xDesc);
            }
        }
    }

    /** cuDNN's output size must be the front end's: a disagreement would read or write out of bounds. */
    private static void checkOutputSize(Cudnn dnn, long conv, long xDesc, long wDesc, Geometry g) {
        int[] d = dnn.forwardOutputDim(conv, xDesc, wDesc);
        if (d[0] != g.n() || d[1] != g.cout() || d[2] != g.oh() || d[3] != g.ow()) {
            throw new IllegalStateException("conv2d: cuDNN computes an output of [" + d[0] + ", " + d[1] + ", " + d[2] + ", " + d[3]
                    + "] for " + g + " (expected [" + g.n() + ", " + g.cout() + ", " + g.oh() + ", " + g.ow() + "])");
        }
    }

    private static MemorySegment scalar(Arena arena, boolean isDouble, double v) {
        MemorySegment s = arena.allocate(8, 8);
        if (isDouble) s.set(JAVA_DOUBLE, 0, v);
        else s.set(JAVA_FLOAT, 0, (float) v);
        return s;
    }

    /**
     * The heuristic's first result that succeeded, fits {@link #WORKSPACE_LIMIT_BYTES} and, for float32
     * without TF32, does not use tensor ops; asked once per key.
     */
    private Algo algo(Cudnn dnn, long handle, AlgoKey key, long d1, long d2, long conv, long d3) {
        Algo cached = algos.get(key);
        if (cached != null) return cached;
        int requested = switch (key.direction()) {
            case FORWARD -> CudnnConstants.CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
            case BACKWARD_DATA -> CudnnConstants.CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
            case BACKWARD_FILTER -> CudnnConstants.CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
        };
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment results = Cudnn.allocatePerfResults(arena, requested);
            int found = dnn.algorithms(key.direction(), handle, d1, d2, conv, d3, requested, results);
            for (int i = 0; i < found; i++) {
                MemorySegment r = results.asSlice(i * PERF_SIZE, PERF_SIZE);
                int status = r.get(JAVA_INT, PERF_STATUS_OFFSET), math = r.get(JAVA_INT, PERF_MATH_TYPE_OFFSET);
                long memory = r.get(JAVA_LONG, PERF_MEMORY_OFFSET);
                boolean tensorOps = math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
                if (status != CUDNN_STATUS_SUCCESS || memory > WORKSPACE_LIMIT_BYTES || (key.mathType() == CUDNN_FMA_MATH && tensorOps)) {
                    continue;
                }
                int algo = r.get(JAVA_INT, PERF_ALGO_OFFSET);
                // Strict float32 stays FMA whatever the result reports (DEFAULT would let cuDNN use TF32);
                // otherwise the descriptor takes the math type the algorithm was rated with, as PyTorch does.
                int mathType = key.mathType() == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : math;
                if (mathType != key.mathType()) dnn.setMathType(conv, mathType);
                // The heuristic's memory estimate can differ from the query for the chosen algorithm; the query is authoritative.
                long workspace = dnn.workspaceBytes(key.direction(), handle, d1, d2, conv, d3, algo);
                Algo chosen = new Algo(algo, mathType, workspace);
                algos.put(key, chosen);
                return chosen;
            }
            throw new CudaException(key.direction().call() + ": the cuDNN heuristic offered no usable algorithm (" + found + " results) for "
                    + key, null);
        }
    }

    /** {@code out += bias} broadcast over images and positions ({@code cudnnAddTensor}, bias as {@code [1, C, 1, 1]}). */
    private synchronized void cudnnAddBias(StridedView out, StridedView bias, Geometry g) {
        DType dtype = out.dtype();
        Device device = out.device();
        Cudnn dnn = cudnn();
        long stream = kernels.get().currentStream(device);
        long handle = handle(device);
        dnn.setStream(handle, stream);
        CudnnPlan plan = ConvPlan.cudnn(g, dtype, MatmulSettings.allowTf32());
        long esz = dtype.byteSize(), outImage = (long) g.cout() * g.oh() * g.ow() * esz;
        long bDesc = 0;
        try (Arena arena = Arena.ofConfined()) {
            bDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, plan.dataType(), 1, g.cout(), 1, 1);
            MemorySegment one = scalar(arena, plan.doubleScalars(), 1);
            for (Chunk chunk : ConvPlan.chunks(g.n(), plan.imagesPerCall())) {
                long yDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, plan.dataType(), chunk.count(), g.cout(), g.oh(), g.ow());
                try {
                    dnn.addTensor(handle, one, bDesc, address(bias), one, yDesc, address(out) + chunk.first() * outImage);
                } finally {
                    dnn.destroyTensor(yDesc);
                }
            }
        } finally {
            if (bDesc != 0) dnn.destroyTensor(bDesc);
        }
    }

    /** {@code gradBias = sum over n, h, w of gradOut} ({@code cudnnConvolutionBackwardBias}); gradOut below 2^31 elements. */
    private synchronized void cudnnBiasGrad(StridedView gradOut, StridedView gradBias, int n, int channels, int h, int w) {
        DType dtype = gradBias.dtype();
        Device device = gradBias.device();
        Cudnn dnn = cudnn();
        long stream = kernels.get().currentStream(device);
        long handle = handle(device);
        dnn.setStream(handle, stream);
        int data = ConvPlan.cudnnDataType(dtype);
        boolean doubles = dtype == DType.FLOAT64;
        long dyDesc = 0, dbDesc = 0;
        try (Arena arena = Arena.ofConfined()) {
            dyDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, data, n, channels, h, w);
            dbDesc = dnn.tensor4d(CUDNN_TENSOR_NCHW, data, 1, channels, 1, 1);
            dnn.backwardBias(handle, scalar(arena, doubles, 1), dyDesc, address(gradOut), scalar(arena, doubles, 0), dbDesc, address(gradBias));
        } finally {
            if (dbDesc != 0) dnn.destroyTensor(dbDesc);
            if (dyDesc != 0) dnn.destroyTensor(dyDesc);
        }
    }

    /** Whether cuDNN was found, or why not; for messages and tests. */
    String cudnnStatus() {
        return cudnn() != null ? "cuDNN " + cudnn.version() + " (" + cudnn.library() + ")" : "no cuDNN: " + cudnnMissing;
    }

    @Override
    public String toString() {
        return "CUDA ConvolutionKernels (cuDNN, else im2col + cuBLASLt)";
    }
}
