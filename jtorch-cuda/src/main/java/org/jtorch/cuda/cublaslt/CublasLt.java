package org.jtorch.cuda.cublaslt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_STATUS_SUCCESS;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.HEURISTIC_RESULT_ALIGNMENT;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.HEURISTIC_RESULT_SIZE;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Optional;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.NativeLibrary;

/**
 * Hand-written FFM bindings to cuBLASLt ({@code libcublasLt.so}), one method handle per C function of
 * {@code cublasLt.h}, each {@code cublasStatus_t} checked and turned into a {@link CudaException} naming
 * the call and the status ({@code cublasLtGetStatusName} where the library exports it). Opaque handles
 * and descriptors ({@code cublasLtHandle_t}, {@code cublasLtMatmulDesc_t}, {@code cublasLtMatrixLayout_t},
 * {@code cublasLtMatmulPreference_t}), device pointers and {@code cudaStream_t} travel as {@code long}
 * (LP64: a pointer and a 64-bit integer are passed alike); host buffers are {@link MemorySegment}s.
 *
 * <p>Ran on an H200 with cuBLASLt 13.1 (2026-12-04, {@code MatmulDeviceConformanceTest}); CI runs it
 * against the CUDA simulator's cuBLASLt. A library that lacks a symbol fails at construction.
 */
public final class CublasLt {
    private static final FunctionDescriptor I_A = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
    /** {@code (handle, attribute, const void* buf, size_t sizeInBytes)}: the three SetAttribute calls. */
    private static final FunctionDescriptor I_LIAL = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);

    private final NativeLibrary library;
    private final MethodHandle create, destroy, getVersion;
    private final MethodHandle matmulDescCreate, matmulDescDestroy, matmulDescSetAttribute;
    private final MethodHandle matrixLayoutCreate, matrixLayoutDestroy, matrixLayoutSetAttribute;
    private final MethodHandle preferenceCreate, preferenceDestroy, preferenceSetAttribute;
    private final MethodHandle algoGetHeuristic, matmul;
    private final Optional<MethodHandle> getStatusName;

    /** Binds every function of {@code library}; throws {@link CudaException} naming a missing symbol. */
    public CublasLt(NativeLibrary library) {
        this.library = library;
        create = library.downcall(I_A, "cublasLtCreate");                       // (cublasLtHandle_t*)
        destroy = library.downcall(I_L, "cublasLtDestroy");                     // (cublasLtHandle_t)
        getVersion = library.downcall(FunctionDescriptor.of(JAVA_LONG), "cublasLtGetVersion"); // size_t (void)
        // (cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t scaleType)
        matmulDescCreate = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cublasLtMatmulDescCreate");
        matmulDescDestroy = library.downcall(I_L, "cublasLtMatmulDescDestroy");
        matmulDescSetAttribute = library.downcall(I_LIAL, "cublasLtMatmulDescSetAttribute");
        // (cublasLtMatrixLayout_t*, cudaDataType, uint64_t rows, uint64_t cols, int64_t ld)
        matrixLayoutCreate = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                "cublasLtMatrixLayoutCreate");
        matrixLayoutDestroy = library.downcall(I_L, "cublasLtMatrixLayoutDestroy");
        matrixLayoutSetAttribute = library.downcall(I_LIAL, "cublasLtMatrixLayoutSetAttribute");
        preferenceCreate = library.downcall(I_A, "cublasLtMatmulPreferenceCreate");
        preferenceDestroy = library.downcall(I_L, "cublasLtMatmulPreferenceDestroy");
        preferenceSetAttribute = library.downcall(I_LIAL, "cublasLtMatmulPreferenceSetAttribute");
        // (handle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, int requestedAlgoCount,
        //  cublasLtMatmulHeuristicResult_t results[], int* returnAlgoCount)
        algoGetHeuristic = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS), "cublasLtMatmulAlgoGetHeuristic");
        // (handle, computeDesc, const void* alpha, const void* A, Adesc, const void* B, Bdesc, const void* beta,
        //  const void* C, Cdesc, void* D, Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
        //  size_t workspaceSizeInBytes, cudaStream_t stream)
        matmul = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG,
                JAVA_LONG), "cublasLtMatmul");
        // const char* (cublasStatus_t): present since cuBLAS 11.4; the constants' names otherwise.
        getStatusName = library.optionalDowncall(FunctionDescriptor.of(ADDRESS, JAVA_INT), "cublasLtGetStatusName");
    }

    public NativeLibrary library() {
        return library;
    }

    // ---- errors ---------------------------------------------------------------------------------

    /** The status's enumerator name, from the library when it can say. */
    public String statusName(int status) {
        if (getStatusName.isPresent()) {
            try {
                MemorySegment s = (MemorySegment) getStatusName.get().invokeExact(status);
                if (s.address() != 0) return s.reinterpret(256).getString(0);
            } catch (Throwable ignored) {
                // Fall back to the header's names.
            }
        }
        return CublasLtConstants.statusName(status);
    }

    private void check(String call, int status) {
        if (status != CUBLAS_STATUS_SUCCESS) throw new CudaException(call, status, statusName(status), null);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    // ---- handle ---------------------------------------------------------------------------------

    /** {@code cublasLtGetVersion}: major*10000 + minor*100 + patch. */
    public long version() {
        try {
            return (long) getVersion.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cublasLtCreate}: a new handle (for the current context's device). */
    public long create() {
        return createWith(create, "cublasLtCreate");
    }

    public void destroy(long handle) {
        callHandle(destroy, "cublasLtDestroy", handle);
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

    private void callHandle(MethodHandle h, String call, long handle) {
        try {
            check(call, (int) h.invokeExact(handle));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- matmul descriptor ----------------------------------------------------------------------

    /** {@code cublasLtMatmulDescCreate(computeType, scaleType)}. */
    public long matmulDescCreate(int computeType, int scaleType) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("cublasLtMatmulDescCreate", (int) matmulDescCreate.invokeExact(out, computeType, scaleType));
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void matmulDescDestroy(long desc) {
        callHandle(matmulDescDestroy, "cublasLtMatmulDescDestroy", desc);
    }

    /** An {@code int32_t} attribute (compute type, scale type, TRANSA/TRANSB). */
    public void matmulDescSetInt(long desc, int attribute, int value) {
        setInt(matmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", desc, attribute, value);
    }

    /** A 64-bit attribute: a device pointer ({@code BIAS_POINTER}, {@code EPILOGUE_AUX_POINTER}) or an {@code int64_t}. */
    public void matmulDescSetLong(long desc, int attribute, long value) {
        setLong(matmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", desc, attribute, value);
    }

    // ---- matrix layouts -------------------------------------------------------------------------

    /** {@code cublasLtMatrixLayoutCreate(type, rows, cols, ld)} (column-major unless the ORDER attribute says otherwise). */
    public long matrixLayoutCreate(int dataType, long rows, long cols, long ld) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("cublasLtMatrixLayoutCreate", (int) matrixLayoutCreate.invokeExact(out, dataType, rows, cols, ld));
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void matrixLayoutDestroy(long layout) {
        callHandle(matrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", layout);
    }

    /** An {@code int32_t} layout attribute ({@code BATCH_COUNT}). */
    public void matrixLayoutSetInt(long layout, int attribute, int value) {
        setInt(matrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute", layout, attribute, value);
    }

    /** An {@code int64_t} layout attribute ({@code STRIDED_BATCH_OFFSET}, in elements). */
    public void matrixLayoutSetLong(long layout, int attribute, long value) {
        setLong(matrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute", layout, attribute, value);
    }

    // ---- preferences ----------------------------------------------------------------------------

    public long preferenceCreate() {
        return createWith(preferenceCreate, "cublasLtMatmulPreferenceCreate");
    }

    public void preferenceDestroy(long preference) {
        callHandle(preferenceDestroy, "cublasLtMatmulPreferenceDestroy", preference);
    }

    /** A {@code uint32_t} preference attribute ({@code MIN_ALIGNMENT_*_BYTES}). */
    public void preferenceSetInt(long preference, int attribute, int value) {
        setInt(preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute", preference, attribute, value);
    }

    /** A {@code uint64_t} preference attribute ({@code MAX_WORKSPACE_BYTES}). */
    public void preferenceSetLong(long preference, int attribute, long value) {
        setLong(preferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute", preference, attribute, value);
    }

    private void setInt(MethodHandle h, String call, long target, int attribute, int value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(JAVA_INT);
            buf.set(JAVA_INT, 0, value);
            check(call, (int) h.invokeExact(target, attribute, buf, 4L));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void setLong(MethodHandle h, String call, long target, int attribute, long value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(JAVA_LONG);
            buf.set(JAVA_LONG, 0, value);
            check(call, (int) h.invokeExact(target, attribute, buf, 8L));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- heuristic and matmul -------------------------------------------------------------------

    /** A zeroed array of {@code count} {@code cublasLtMatmulHeuristicResult_t}s in {@code arena}. */
    public static MemorySegment allocateHeuristicResults(Arena arena, int count) {
        return arena.allocate(HEURISTIC_RESULT_SIZE * count, HEURISTIC_RESULT_ALIGNMENT);
    }

    /**
     * {@code cublasLtMatmulAlgoGetHeuristic}: fills up to {@code requested} results into {@code results}
     * (from {@link #allocateHeuristicResults}) and returns how many it wrote (0 when none fits).
     */
    public int algoGetHeuristic(long handle, long desc, long aDesc, long bDesc, long cDesc, long dDesc, long preference,
            int requested, MemorySegment results) {
        if (results.byteSize() < HEURISTIC_RESULT_SIZE * requested) {
            throw new IllegalArgumentException("cublasLtMatmulAlgoGetHeuristic: " + results.byteSize()
                    + " bytes cannot hold " + requested + " results");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            check("cublasLtMatmulAlgoGetHeuristic", (int) algoGetHeuristic.invokeExact(handle, desc, aDesc, bDesc, cDesc, dDesc,
                    preference, requested, results, count));
            return count.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cublasLtMatmul}: {@code D = alpha * op(A) op(B) + beta * C} on {@code stream}; {@code alpha} and
     * {@code beta} are host scalars of the descriptor's scale type, {@code algo} a 64-byte
     * {@code cublasLtMatmulAlgo_t} (host memory).
     */
    public void matmul(long handle, long desc, MemorySegment alpha, long a, long aDesc, long b, long bDesc,
            MemorySegment beta, long c, long cDesc, long d, long dDesc, MemorySegment algo, long workspace,
            long workspaceBytes, long stream) {
        try {
            check("cublasLtMatmul", (int) matmul.invokeExact(handle, desc, alpha, a, aDesc, b, bDesc, beta, c, cDesc, d, dDesc,
                    algo, workspace, workspaceBytes, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
