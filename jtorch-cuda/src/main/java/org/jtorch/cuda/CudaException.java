package org.jtorch.cuda;

/**
 * A CUDA library call returned an error. The message names the call and the library's name for the
 * error code (e.g. {@code cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)}).
 */
public class CudaException extends RuntimeException {
    private final String call;
    private final int code;
    private final String errorName;

    public CudaException(String call, int code, String errorName, String description) {
        super(call + " failed: " + errorName + (description == null || description.isEmpty() ? "" : " (" + description + ")"));
        this.call = call;
        this.code = code;
        this.errorName = errorName;
    }

    /** A failure that is not a library return code (missing library or symbol). */
    public CudaException(String message, Throwable cause) {
        super(message, cause);
        this.call = "";
        this.code = -1;
        this.errorName = "";
    }

    /** The C function that failed, e.g. {@code cuLaunchKernel}. */
    public String call() {
        return call;
    }

    /** The numeric return code ({@code CUresult}, {@code nvrtcResult}), or -1 when no call returned one. */
    public int code() {
        return code;
    }

    /** The library's name for {@link #code()}, e.g. {@code CUDA_ERROR_NO_DEVICE}. */
    public String errorName() {
        return errorName;
    }
}
