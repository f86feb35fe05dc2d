package org.jtorch.cuda.cublaslt;

/**
 * The enum values and struct layout the cuBLASLt bindings need, copied as numbers from NVIDIA's public
 * headers: {@code cublasLt.h}, {@code cublas_api.h} and {@code library_types.h} of the CUDA toolkit
 * (CUDA 12.x; the GitHub repository {@code zspace/system.cuda-12.6} vendors them under {@code include/};
 * the values were read from a vendored copy of NVIDIA's {@code cublasLt.h} and cross-checked against
 * several independent bindings found by code search). These values are part of cuBLAS's stable ABI.
 */
public final class CublasLtConstants {
    private CublasLtConstants() {}

    // ---- cublasStatus_t (cublas_api.h) --------------------------------------------------------------
    public static final int CUBLAS_STATUS_SUCCESS = 0;            // cublas_api.h
    public static final int CUBLAS_STATUS_NOT_INITIALIZED = 1;    // cublas_api.h
    public static final int CUBLAS_STATUS_ALLOC_FAILED = 3;       // cublas_api.h
    public static final int CUBLAS_STATUS_INVALID_VALUE = 7;      // cublas_api.h
    public static final int CUBLAS_STATUS_ARCH_MISMATCH = 8;      // cublas_api.h
    public static final int CUBLAS_STATUS_MAPPING_ERROR = 11;     // cublas_api.h
    public static final int CUBLAS_STATUS_EXECUTION_FAILED = 13;  // cublas_api.h
    public static final int CUBLAS_STATUS_INTERNAL_ERROR = 14;    // cublas_api.h
    public static final int CUBLAS_STATUS_NOT_SUPPORTED = 15;     // cublas_api.h
    public static final int CUBLAS_STATUS_LICENSE_ERROR = 16;     // cublas_api.h

    /** The enumerator's name for a {@code cublasStatus_t}, for messages when {@code cublasLtGetStatusName} is absent. */
    public static String statusName(int status) {
        return switch (status) {
            case CUBLAS_STATUS_SUCCESS -> "CUBLAS_STATUS_SUCCESS";
            case CUBLAS_STATUS_NOT_INITIALIZED -> "CUBLAS_STATUS_NOT_INITIALIZED";
            case CUBLAS_STATUS_ALLOC_FAILED -> "CUBLAS_STATUS_ALLOC_FAILED";
            case CUBLAS_STATUS_INVALID_VALUE -> "CUBLAS_STATUS_INVALID_VALUE";
            case CUBLAS_STATUS_ARCH_MISMATCH -> "CUBLAS_STATUS_ARCH_MISMATCH";
            case CUBLAS_STATUS_MAPPING_ERROR -> "CUBLAS_STATUS_MAPPING_ERROR";
            case CUBLAS_STATUS_EXECUTION_FAILED -> "CUBLAS_STATUS_EXECUTION_FAILED";
            case CUBLAS_STATUS_INTERNAL_ERROR -> "CUBLAS_STATUS_INTERNAL_ERROR";
            case CUBLAS_STATUS_NOT_SUPPORTED -> "CUBLAS_STATUS_NOT_SUPPORTED";
            case CUBLAS_STATUS_LICENSE_ERROR -> "CUBLAS_STATUS_LICENSE_ERROR";
            default -> "cublasStatus_t " + status;
        };
    }

    // ---- cublasComputeType_t (cublas_api.h) ---------------------------------------------------------
    public static final int CUBLAS_COMPUTE_16F = 64;           // cublas_api.h
    public static final int CUBLAS_COMPUTE_32F = 68;           // cublas_api.h
    public static final int CUBLAS_COMPUTE_32F_PEDANTIC = 69;  // cublas_api.h
    public static final int CUBLAS_COMPUTE_64F = 70;           // cublas_api.h
    public static final int CUBLAS_COMPUTE_32F_FAST_TF32 = 77; // cublas_api.h

    // ---- cudaDataType_t (library_types.h) -----------------------------------------------------------
    public static final int CUDA_R_32F = 0;   // library_types.h
    public static final int CUDA_R_64F = 1;   // library_types.h
    public static final int CUDA_R_16F = 2;   // library_types.h
    public static final int CUDA_R_16BF = 14; // library_types.h

    // ---- cublasOperation_t (cublas_api.h) -----------------------------------------------------------
    public static final int CUBLAS_OP_N = 0; // cublas_api.h
    public static final int CUBLAS_OP_T = 1; // cublas_api.h

    // ---- cublasLtMatmulDescAttributes_t (cublasLt.h) ------------------------------------------------
    public static final int CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0; // cublasLt.h, int32_t
    public static final int CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1;   // cublasLt.h, int32_t (cudaDataType_t)
    public static final int CUBLASLT_MATMUL_DESC_POINTER_MODE = 2; // cublasLt.h, int32_t
    public static final int CUBLASLT_MATMUL_DESC_TRANSA = 3;       // cublasLt.h, int32_t (cublasOperation_t)
    public static final int CUBLASLT_MATMUL_DESC_TRANSB = 4;       // cublasLt.h, int32_t (cublasOperation_t)
    public static final int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;     // cublasLt.h, uint32_t (cublasLtEpilogue_t)
    /** A device vector of D's type (for these types), one element per row of D. */
    public static final int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;          // cublasLt.h, void*
    public static final int CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10;    // cublasLt.h, int64_t (elements)
    /** GELU_AUX: the activation's input, D's type, column-major. */
    public static final int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11; // cublasLt.h, void*
    /** In elements: a multiple of 8 (GELU input matrix) and at least D's rows. */
    public static final int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12;      // cublasLt.h, int64_t
    public static final int CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13; // cublasLt.h, int64_t

    // ---- cublasLtEpilogue_t (cublasLt.h) --------------------------------------------------------------
    public static final int CUBLASLT_EPILOGUE_DEFAULT = 1;        // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_RELU = 2;           // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_BIAS = 4;           // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_RELU_BIAS = 6;      // cublasLt.h
    /** cuBLASLt's GELU is the tanh approximation. */
    public static final int CUBLASLT_EPILOGUE_GELU = 32;          // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_GELU_BIAS = 36;     // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_GELU_AUX = 160;     // cublasLt.h
    public static final int CUBLASLT_EPILOGUE_GELU_AUX_BIAS = 164; // cublasLt.h

    // ---- cublasLtMatrixLayoutAttribute_t (cublasLt.h) -----------------------------------------------
    public static final int CUBLASLT_MATRIX_LAYOUT_TYPE = 0;                  // cublasLt.h, uint32_t
    public static final int CUBLASLT_MATRIX_LAYOUT_ORDER = 1;                 // cublasLt.h, int32_t
    public static final int CUBLASLT_MATRIX_LAYOUT_ROWS = 2;                  // cublasLt.h, uint64_t
    public static final int CUBLASLT_MATRIX_LAYOUT_COLS = 3;                  // cublasLt.h, uint64_t
    public static final int CUBLASLT_MATRIX_LAYOUT_LD = 4;                    // cublasLt.h, int64_t
    public static final int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;           // cublasLt.h, int32_t
    public static final int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;  // cublasLt.h, int64_t (elements)

    // ---- cublasLtMatmulPreferenceAttributes_t (cublasLt.h) ------------------------------------------
    public static final int CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0;        // cublasLt.h, uint32_t
    public static final int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1; // cublasLt.h, uint64_t
    /** Minimum alignments (bytes) of the A, B, C, D buffers the chosen algorithm may assume; uint32_t, default 256. */
    public static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5; // cublasLt.h, uint32_t
    public static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6; // cublasLt.h, uint32_t
    public static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7; // cublasLt.h, uint32_t
    public static final int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8; // cublasLt.h, uint32_t

    // ---- struct layouts (cublasLt.h; x86-64 / aarch64 LP64 ABI) -------------------------------------
    /** {@code cublasLtMatmulAlgo_t} is {@code struct { uint64_t data[8]; }}. */
    public static final long ALGO_SIZE = 64;
    /**
     * {@code cublasLtMatmulHeuristicResult_t} is {@code struct { cublasLtMatmulAlgo_t algo; size_t
     * workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; }}: offsets 0, 64, 72, 76,
     * 80, size 96, alignment 8 (of the uint64_t / size_t members).
     */
    public static final long HEURISTIC_ALGO_OFFSET = 0;
    public static final long HEURISTIC_WORKSPACE_SIZE_OFFSET = 64;
    public static final long HEURISTIC_STATE_OFFSET = 72;
    public static final long HEURISTIC_WAVES_COUNT_OFFSET = 76;
    public static final long HEURISTIC_RESERVED_OFFSET = 80;
    public static final long HEURISTIC_RESERVED_INTS = 4;
    public static final long HEURISTIC_RESULT_SIZE = 96;
    public static final long HEURISTIC_RESULT_ALIGNMENT = 8;
}
