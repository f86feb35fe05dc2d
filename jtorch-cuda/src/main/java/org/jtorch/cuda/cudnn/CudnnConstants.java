package org.jtorch.cuda.cudnn;

/**
 * The enum values and struct layout the cuDNN bindings need, copied as numbers from NVIDIA's public
 * headers of the legacy ("v7") API. None of cuDNN's headers is installed on the build machine; each
 * value below was read from the header text found by code search: cuDNN 8's {@code cudnn_ops_infer.h} /
 * {@code cudnn_cnn_infer.h} and cuDNN 9's {@code cudnn_graph.h} / {@code cudnn_ops.h} /
 * {@code cudnn_cnn.h} (which keep the same numbers: they are part of cuDNN's ABI), and cross-checked
 * against independent bindings (Julia's CUDA.jl {@code libcudnn.jl}, Rust {@code cudnn-sys} crates).
 * The comment on each line names the header and cuDNN 9 type it comes from.
 */
public final class CudnnConstants {
    private CudnnConstants() {}

    // ---- cudnnStatus_t (cudnn_graph.h in 9; cudnn_ops_infer.h in 8) --------------------------------
    /**
     * Success is 0 in every version. The error codes were renumbered in cuDNN 9 (e.g. BAD_PARAM became
     * 2000), so messages take their names from {@code cudnnGetErrorString} rather than from a table here.
     */
    public static final int CUDNN_STATUS_SUCCESS = 0;

    // ---- cudnnDataType_t (cudnn_graph.h) ------------------------------------------------------------
    public static final int CUDNN_DATA_FLOAT = 0;    // cudnn_graph.h, cudnnDataType_t
    public static final int CUDNN_DATA_DOUBLE = 1;   // cudnn_graph.h, cudnnDataType_t
    public static final int CUDNN_DATA_HALF = 2;     // cudnn_graph.h, cudnnDataType_t
    public static final int CUDNN_DATA_BFLOAT16 = 9; // cudnn_graph.h, cudnnDataType_t (since cuDNN 8.1)

    // ---- cudnnTensorFormat_t (cudnn_graph.h) --------------------------------------------------------
    public static final int CUDNN_TENSOR_NCHW = 0; // cudnn_graph.h, cudnnTensorFormat_t
    public static final int CUDNN_TENSOR_NHWC = 1; // cudnn_graph.h, cudnnTensorFormat_t

    // ---- cudnnMathType_t (cudnn_graph.h) ------------------------------------------------------------
    /** Tensor cores allowed; for float32 data on Ampere and newer that includes TF32 (cuDNN 8 and later). */
    public static final int CUDNN_DEFAULT_MATH = 0;                    // cudnn_graph.h, cudnnMathType_t
    public static final int CUDNN_TENSOR_OP_MATH = 1;                  // cudnn_graph.h, cudnnMathType_t
    public static final int CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2; // cudnn_graph.h, cudnnMathType_t
    /** FMA only: no tensor cores, so no TF32 rounding of float32 inputs (what PyTorch sets when TF32 is off). */
    public static final int CUDNN_FMA_MATH = 3;                        // cudnn_graph.h, cudnnMathType_t

    // ---- cudnnConvolutionMode_t (cudnn_cnn.h) -------------------------------------------------------
    public static final int CUDNN_CONVOLUTION = 0;       // cudnn_cnn.h, cudnnConvolutionMode_t (kernel flipped)
    /** What deep-learning frameworks call convolution: no kernel flip. */
    public static final int CUDNN_CROSS_CORRELATION = 1; // cudnn_cnn.h, cudnnConvolutionMode_t

    // ---- algorithm counts (cudnn_cnn.h: the *_ALGO_COUNT enumerators) ---------------------------------
    public static final int CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8;        // cudnn_cnn.h, cudnnConvolutionFwdAlgo_t
    public static final int CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT = 6;   // cudnn_cnn.h, cudnnConvolutionBwdDataAlgo_t
    public static final int CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT = 7; // cudnn_cnn.h, cudnnConvolutionBwdFilterAlgo_t

    // ---- struct layout (cudnn_cnn.h; x86-64 / aarch64 LP64 ABI) --------------------------------------
    /**
     * {@code cudnnConvolutionFwdAlgoPerf_t}, {@code ...BwdDataAlgoPerf_t} and {@code ...BwdFilterAlgoPerf_t}
     * are all {@code struct { <algo enum> algo; cudnnStatus_t status; float time; size_t memory;
     * cudnnDeterminism_t determinism; cudnnMathType_t mathType; int reserved[3]; }}: offsets 0, 4, 8, 16,
     * 24, 28, 32, size 48, alignment 8 (of {@code size_t}). Checked against FFM's C layout by
     * {@code CudnnConstantsTest}.
     */
    public static final long PERF_ALGO_OFFSET = 0;
    public static final long PERF_STATUS_OFFSET = 4;
    public static final long PERF_TIME_OFFSET = 8;
    public static final long PERF_MEMORY_OFFSET = 16;
    public static final long PERF_DETERMINISM_OFFSET = 24;
    public static final long PERF_MATH_TYPE_OFFSET = 28;
    public static final long PERF_RESERVED_OFFSET = 32;
    public static final long PERF_RESERVED_INTS = 3;
    public static final long PERF_SIZE = 48;
    public static final long PERF_ALIGNMENT = 8;
}
