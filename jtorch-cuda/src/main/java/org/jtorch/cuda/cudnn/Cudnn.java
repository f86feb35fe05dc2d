package org.jtorch.cuda.cudnn;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_STATUS_SUCCESS;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_ALIGNMENT;
import static org.jtorch.cuda.cudnn.CudnnConstants.PERF_SIZE;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.NativeLibrary;

/**
 * Hand-written FFM bindings to cuDNN's legacy convolution API ({@code libcudnn.so}), one method handle
 * per C function, each {@code cudnnStatus_t} checked and turned into a {@link CudaException} naming the
 * call and the library's {@code cudnnGetErrorString}. Handles and descriptors ({@code cudnnHandle_t},
 * {@code cudnnTensorDescriptor_t}, {@code cudnnFilterDescriptor_t}, {@code cudnnConvolutionDescriptor_t}),
 * device pointers and {@code cudaStream_t} travel as {@code long} (LP64); host scalars and result arrays
 * are {@link MemorySegment}s.
 *
 * <p>cuDNN 9 splits the library: {@code libcudnn.so.9} is a shim that exports the whole API and loads
 * {@code libcudnn_graph}, {@code libcudnn_ops} and {@code libcudnn_cnn} on demand; those "legacy"
 * functions are deprecated there but present (cuDNN 9 developer guide, "Legacy API"). A symbol the
 * shim lacks is looked up in those sub-libraries of the same folder.
 *
 * <p>Ran on an H200 with cuDNN 9.19 (2026-12-04, {@code ConvolutionDeviceConformanceTest}); CI runs it
 * against the CUDA simulator's cuDNN. A library that lacks a symbol fails at construction, naming it.
 */
public final class Cudnn {
    private static final FunctionDescriptor I_A = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
    /** {@code (handle, x/w, w/dy, conv, y/dx/dw, int requested, int* returned, perf*)}: the three _v7 heuristics. */
    private static final FunctionDescriptor I_LLLLLIAA = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS);
    /** {@code (handle, d1, d2, conv, d3, int algo, size_t* bytes)}: the three workspace-size queries. */
    private static final FunctionDescriptor I_LLLLLIA = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_INT, ADDRESS);
    /**
     * {@code (handle, const void* alpha, d1, p1, d2, p2, conv, int algo, void* ws, size_t wsBytes,
     * const void* beta, d3, p3)}: cudnnConvolutionForward / BackwardData / BackwardFilter.
     */
    private static final FunctionDescriptor CONVOLVE = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG,
            JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG);
    /** {@code (handle, const void* alpha, aDesc, a, const void* beta, cDesc, c)}: BackwardBias and AddTensor. */
    private static final FunctionDescriptor I_LALLALL = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG,
            ADDRESS, JAVA_LONG, JAVA_LONG);

    private final NativeLibrary library;
    private final List<NativeLibrary> subLibraries = new ArrayList<>();
    private final MethodHandle create, destroy, setStream, getVersion, getErrorString;
    private final MethodHandle createTensor, destroyTensor, setTensor4d;
    private final MethodHandle createFilter, destroyFilter, setFilter4d;
    private final MethodHandle createConv, destroyConv, setConv2d, setGroupCount, setMathType, forwardOutputDim;
    private final MethodHandle forwardAlgos, backwardDataAlgos, backwardFilterAlgos;
    private final MethodHandle forwardWorkspace, backwardDataWorkspace, backwardFilterWorkspace;
    private final MethodHandle forward, backwardData, backwardFilter;
    /** Optional: deprecated helpers whose absence only sends the bias to {@code conv.cu}'s kernels. */
    private final Optional<MethodHandle> backwardBias, addTensor;

    /** Binds every function from {@code library} (the shim) or its sub-libraries; throws {@link CudaException} naming a missing symbol. */
    public Cudnn(NativeLibrary library) {
        this.library = library;
        create = bind(I_A, "cudnnCreate");                                                  // (cudnnHandle_t*)
        destroy = bind(I_L, "cudnnDestroy");                                                // (cudnnHandle_t)
        setStream = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), "cudnnSetStream"); // (handle, cudaStream_t)
        getVersion = bind(FunctionDescriptor.of(JAVA_LONG), "cudnnGetVersion");            // size_t (void)
        getErrorString = bind(FunctionDescriptor.of(ADDRESS, JAVA_INT), "cudnnGetErrorString"); // const char* (cudnnStatus_t)
        createTensor = bind(I_A, "cudnnCreateTensorDescriptor");
        destroyTensor = bind(I_L, "cudnnDestroyTensorDescriptor");
        // (desc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c, int h, int w)
        setTensor4d = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
                "cudnnSetTensor4dDescriptor");
        createFilter = bind(I_A, "cudnnCreateFilterDescriptor");
        destroyFilter = bind(I_L, "cudnnDestroyFilterDescriptor");
        // (desc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c, int h, int w): type before format here
        setFilter4d = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
                "cudnnSetFilter4dDescriptor");
        createConv = bind(I_A, "cudnnCreateConvolutionDescriptor");
        destroyConv = bind(I_L, "cudnnDestroyConvolutionDescriptor");
        // (desc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w, cudnnConvolutionMode_t, cudnnDataType_t computeType)
        setConv2d = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT), "cudnnSetConvolution2dDescriptor");
        setGroupCount = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT), "cudnnSetConvolutionGroupCount");
        setMathType = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT), "cudnnSetConvolutionMathType");
        // (conv, xDesc, wDesc, int* n, int* c, int* h, int* w)
        forwardOutputDim = bind(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                "cudnnGetConvolution2dForwardOutputDim");
        forwardAlgos = bind(I_LLLLLIAA, "cudnnGetConvolutionForwardAlgorithm_v7");            // (handle, x, w, conv, y, ...)
        backwardDataAlgos = bind(I_LLLLLIAA, "cudnnGetConvolutionBackwardDataAlgorithm_v7");  // (handle, w, dy, conv, dx, ...)
        backwardFilterAlgos = bind(I_LLLLLIAA, "cudnnGetConvolutionBackwardFilterAlgorithm_v7"); // (handle, x, dy, conv, dw, ...)
        forwardWorkspace = bind(I_LLLLLIA, "cudnnGetConvolutionForwardWorkspaceSize");         // (handle, x, w, conv, y, algo, size_t*)
        backwardDataWorkspace = bind(I_LLLLLIA, "cudnnGetConvolutionBackwardDataWorkspaceSize"); // (handle, w, dy, conv, dx, algo, size_t*)
        backwardFilterWorkspace = bind(I_LLLLLIA, "cudnnGetConvolutionBackwardFilterWorkspaceSize"); // (handle, x, dy, conv, dw, algo, size_t*)
        forward = bind(CONVOLVE, "cudnnConvolutionForward");               // (handle, alpha, xDesc, x, wDesc, w, conv, algo, ws, wsBytes, beta, yDesc, y)
        backwardData = bind(CONVOLVE, "cudnnConvolutionBackwardData");     // (handle, alpha, wDesc, w, dyDesc, dy, conv, algo, ws, wsBytes, beta, dxDesc, dx)
        backwardFilter = bind(CONVOLVE, "cudnnConvolutionBackwardFilter"); // (handle, alpha, xDesc, x, dyDesc, dy, conv, algo, ws, wsBytes, beta, dwDesc, dw)
        backwardBias = optional(I_LALLALL, "cudnnConvolutionBackwardBias"); // (handle, alpha, dyDesc, dy, beta, dbDesc, db)
        addTensor = optional(I_LALLALL, "cudnnAddTensor");                  // (handle, alpha, aDesc, A, beta, cDesc, C): C = alpha A + beta C, A broadcast
    }

    public NativeLibrary library() {
        return library;
    }

    /** The handle for {@code symbol} from the shim, else from a sub-library beside it ({@code libcudnn_cnn.so.9}, ...). */
    private MethodHandle bind(FunctionDescriptor descriptor, String symbol) {
        return optional(descriptor, symbol).orElseThrow(() ->
                new CudaException(library.path() + " (and its sub-libraries " + subLibraries + ") exports no " + symbol, null));
    }

    private Optional<MethodHandle> optional(FunctionDescriptor descriptor, String symbol) {
        Optional<MethodHandle> h = library.optionalDowncall(descriptor, symbol);
        if (h.isPresent()) return h;
        if (subLibraries.isEmpty()) openSubLibraries();
        for (NativeLibrary sub : subLibraries) {
            h = sub.optionalDowncall(descriptor, symbol);
            if (h.isPresent()) return h;
        }
        return Optional.empty();
    }

    /** Whether {@code cudnnConvolutionBackwardBias} and {@code cudnnAddTensor} are exported (deprecated in cuDNN 9). */
    public boolean hasBiasCalls() {
        return backwardBias.isPresent() && addTensor.isPresent();
    }

    /** cuDNN 9's sub-libraries with the shim's version suffix, where present beside it. */
    private void openSubLibraries() {
        Path shim = library.path();
        String name = shim.getFileName().toString();
        String suffix = name.startsWith("libcudnn.so") ? name.substring("libcudnn".length()) : ".so";
        for (String part : List.of("graph", "ops", "cnn")) {
            Path p = shim.resolveSibling("libcudnn_" + part + suffix);
            if (Files.exists(p)) subLibraries.add(NativeLibrary.open(p));
        }
    }

    // ---- errors ---------------------------------------------------------------------------------

    /** {@code cudnnGetErrorString(status)}, e.g. {@code CUDNN_STATUS_BAD_PARAM}. */
    public String errorString(int status) {
        try {
            MemorySegment s = (MemorySegment) getErrorString.invokeExact(status);
            if (s.address() != 0) return s.reinterpret(256).getString(0);
        } catch (Throwable ignored) {
            // The number alone then.
        }
        return "cudnnStatus_t " + status;
    }

    private void check(String call, int status) {
        if (status != CUDNN_STATUS_SUCCESS) throw new CudaException(call, status, errorString(status), null);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    private long createWith(MethodHandle h, String call) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(call, (int) h.invokeExact(out));
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void callOn(MethodHandle h, String call, long target) {
        try {
            check(call, (int) h.invokeExact(target));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- handle ---------------------------------------------------------------------------------

    /** {@code cudnnGetVersion}: major*10000 + minor*100 + patch in cuDNN 9 (major*1000 + minor*100 + patch before). */
    public long version() {
        try {
            return (long) getVersion.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cudnnCreate}: a handle for the current context's device. */
    public long create() {
        return createWith(create, "cudnnCreate");
    }

    public void destroy(long handle) {
        callOn(destroy, "cudnnDestroy", handle);
    }

    public void setStream(long handle, long stream) {
        try {
            check("cudnnSetStream", (int) setStream.invokeExact(handle, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- descriptors ----------------------------------------------------------------------------

    /** A 4-d tensor descriptor ({@code format} NCHW: fully packed strides). */
    public long tensor4d(int format, int dataType, int n, int c, int h, int w) {
        long desc = createWith(createTensor, "cudnnCreateTensorDescriptor");
        try {
            check("cudnnSetTensor4dDescriptor", (int) setTensor4d.invokeExact(desc, format, dataType, n, c, h, w));
            return desc;
        } catch (Throwable t) {
            destroyTensor(desc);
            throw rethrow(t);
        }
    }

    public void destroyTensor(long desc) {
        callOn(destroyTensor, "cudnnDestroyTensorDescriptor", desc);
    }

    /** A filter descriptor {@code [k, c, h, w]} (output channels, input channels per group, kernel). */
    public long filter4d(int dataType, int format, int k, int c, int h, int w) {
        long desc = createWith(createFilter, "cudnnCreateFilterDescriptor");
        try {
            check("cudnnSetFilter4dDescriptor", (int) setFilter4d.invokeExact(desc, dataType, format, k, c, h, w));
            return desc;
        } catch (Throwable t) {
            destroyFilter(desc);
            throw rethrow(t);
        }
    }

    public void destroyFilter(long desc) {
        callOn(destroyFilter, "cudnnDestroyFilterDescriptor", desc);
    }

    /** A 2-d convolution descriptor with its group count and math type set. */
    public long convolution2d(int padH, int padW, int strideH, int strideW, int dilationH, int dilationW, int mode, int computeType,
            int groups, int mathType) {
        long desc = createWith(createConv, "cudnnCreateConvolutionDescriptor");
        try {
            check("cudnnSetConvolution2dDescriptor", (int) setConv2d.invokeExact(desc, padH, padW, strideH, strideW, dilationH,
                    dilationW, mode, computeType));
            check("cudnnSetConvolutionGroupCount", (int) setGroupCount.invokeExact(desc, groups));
            setMathType(desc, mathType);
            return desc;
        } catch (Throwable t) {
            destroyConvolution(desc);
            throw rethrow(t);
        }
    }

    public void setMathType(long conv, int mathType) {
        try {
            check("cudnnSetConvolutionMathType", (int) setMathType.invokeExact(conv, mathType));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void destroyConvolution(long desc) {
        callOn(destroyConv, "cudnnDestroyConvolutionDescriptor", desc);
    }

    /** {@code cudnnGetConvolution2dForwardOutputDim}: {@code {n, c, h, w}} cuDNN computes for these descriptors. */
    public int[] forwardOutputDim(long conv, long x, long w) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment d = arena.allocate(JAVA_INT, 4);
            check("cudnnGetConvolution2dForwardOutputDim", (int) forwardOutputDim.invokeExact(conv, x, w, d, d.asSlice(4),
                    d.asSlice(8), d.asSlice(12)));
            return d.toArray(JAVA_INT);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- algorithm choice -----------------------------------------------------------------------

    /** A zeroed array of {@code count} perf results (any of the three perf structs: same layout). */
    public static MemorySegment allocatePerfResults(Arena arena, int count) {
        return arena.allocate(PERF_SIZE * count, PERF_ALIGNMENT);
    }

    /** The direction's {@code cudnnGet*Algorithm_v7} heuristic: fills up to {@code requested} results, best first; returns how many. */
    public int algorithms(Direction direction, long handle, long d1, long d2, long conv, long d3, int requested, MemorySegment results) {
        if (results.byteSize() < PERF_SIZE * requested) {
            throw new IllegalArgumentException(direction.heuristic + ": " + results.byteSize() + " bytes cannot hold " + requested + " results");
        }
        MethodHandle h = switch (direction) {
            case FORWARD -> forwardAlgos;
            case BACKWARD_DATA -> backwardDataAlgos;
            case BACKWARD_FILTER -> backwardFilterAlgos;
        };
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            check(direction.heuristic, (int) h.invokeExact(handle, d1, d2, conv, d3, requested, count, results));
            return count.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The direction's {@code cudnnGet*WorkspaceSize} for {@code algo}, in bytes. */
    public long workspaceBytes(Direction direction, long handle, long d1, long d2, long conv, long d3, int algo) {
        MethodHandle h = switch (direction) {
            case FORWARD -> forwardWorkspace;
            case BACKWARD_DATA -> backwardDataWorkspace;
            case BACKWARD_FILTER -> backwardFilterWorkspace;
        };
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(JAVA_LONG);
            check(direction.workspace, (int) h.invokeExact(handle, d1, d2, conv, d3, algo, bytes));
            return bytes.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * The direction's convolution, {@code p3 = alpha * op(p1, p2) + beta * p3} on the handle's stream:
     * forward {@code (x, w) -> y}, backward data {@code (w, dy) -> dx}, backward filter {@code (x, dy) -> dw};
     * {@code alpha}, {@code beta} host scalars (double for double data, float otherwise).
     */
    public void convolve(Direction direction, long handle, MemorySegment alpha, long d1, long p1, long d2, long p2, long conv, int algo,
            long workspace, long workspaceBytes, MemorySegment beta, long d3, long p3) {
        MethodHandle h = switch (direction) {
            case FORWARD -> forward;
            case BACKWARD_DATA -> backwardData;
            case BACKWARD_FILTER -> backwardFilter;
        };
        try {
            check(direction.call, (int) h.invokeExact(handle, alpha, d1, p1, d2, p2, conv, algo, workspace, workspaceBytes, beta, d3, p3));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cudnnConvolutionBackwardBias}: {@code db = alpha * sum over n, h, w of dy + beta * db}. */
    public void backwardBias(long handle, MemorySegment alpha, long dyDesc, long dy, MemorySegment beta, long dbDesc, long db) {
        try {
            check("cudnnConvolutionBackwardBias", (int) present(backwardBias, "cudnnConvolutionBackwardBias")
                    .invokeExact(handle, alpha, dyDesc, dy, beta, dbDesc, db));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cudnnAddTensor}: {@code c = alpha * a + beta * c}, {@code a} broadcast along its size-1 dims (a bias {@code [1, C, 1, 1]}). */
    public void addTensor(long handle, MemorySegment alpha, long aDesc, long a, MemorySegment beta, long cDesc, long c) {
        try {
            check("cudnnAddTensor", (int) present(addTensor, "cudnnAddTensor").invokeExact(handle, alpha, aDesc, a, beta, cDesc, c));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private MethodHandle present(Optional<MethodHandle> h, String symbol) {
        return h.orElseThrow(() -> new CudaException(library.path() + " exports no " + symbol, null));
    }

    /** The three convolutions and the names of their C calls. */
    public enum Direction {
        FORWARD("cudnnConvolutionForward", "cudnnGetConvolutionForwardAlgorithm_v7", "cudnnGetConvolutionForwardWorkspaceSize"),
        BACKWARD_DATA("cudnnConvolutionBackwardData", "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                "cudnnGetConvolutionBackwardDataWorkspaceSize"),
        BACKWARD_FILTER("cudnnConvolutionBackwardFilter", "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                "cudnnGetConvolutionBackwardFilterWorkspaceSize");

        final String call, heuristic, workspace;

        Direction(String call, String heuristic, String workspace) {
            this.call = call;
            this.heuristic = heuristic;
            this.workspace = workspace;
        }

        /** The C function that runs this direction. */
        public String call() {
            return call;
        }
    }
}
