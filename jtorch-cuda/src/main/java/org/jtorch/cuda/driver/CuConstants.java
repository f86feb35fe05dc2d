package org.jtorch.cuda.driver;

/**
 * The values from {@code cuda.h} that the bindings use, named exactly as in the header so that a test
 * ({@code CudaHeaderConstantsTest}) checks every field here against {@code /usr/local/cuda/include/cuda.h}.
 * Enum values and {@code #define}s of the driver API are stable across CUDA versions (the ABI promise).
 */
public final class CuConstants {
    private CuConstants() {}

    // CUresult
    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_INVALID_VALUE = 1;
    public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    public static final int CUDA_ERROR_NOT_INITIALIZED = 3;
    public static final int CUDA_ERROR_DEINITIALIZED = 4;
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    public static final int CUDA_ERROR_INVALID_DEVICE = 101;
    public static final int CUDA_ERROR_NOT_FOUND = 500;
    public static final int CUDA_ERROR_NOT_READY = 600;
    public static final int CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
    public static final int CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;

    // CUdevice_attribute
    public static final int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
    public static final int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
    public static final int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
    public static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    public static final int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
    public static final int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

    // cuMemHostAlloc flags (#define)
    public static final int CU_MEMHOSTALLOC_PORTABLE = 0x01;
    public static final int CU_MEMHOSTALLOC_DEVICEMAP = 0x02;
    public static final int CU_MEMHOSTALLOC_WRITECOMBINED = 0x04;

    // CUstream_flags
    public static final int CU_STREAM_DEFAULT = 0x0;
    public static final int CU_STREAM_NON_BLOCKING = 0x1;

    // CUstreamCaptureMode
    public static final int CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
    public static final int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
    public static final int CU_STREAM_CAPTURE_MODE_RELAXED = 2;

    // CUstreamCaptureStatus
    public static final int CU_STREAM_CAPTURE_STATUS_NONE = 0;
    public static final int CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
    public static final int CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2;

    // CUevent_flags
    public static final int CU_EVENT_DEFAULT = 0x0;
    public static final int CU_EVENT_BLOCKING_SYNC = 0x1;
    public static final int CU_EVENT_DISABLE_TIMING = 0x2;

    // CUevent_wait_flags
    public static final int CU_EVENT_WAIT_DEFAULT = 0x0;
}
