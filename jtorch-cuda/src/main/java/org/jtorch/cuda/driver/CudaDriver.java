package org.jtorch.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.driver.CuConstants.CUDA_ERROR_NOT_READY;
import static org.jtorch.cuda.driver.CuConstants.CUDA_SUCCESS;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import org.jtorch.cuda.CudaException;
import org.jtorch.cuda.NativeLibrary;

/**
 * Hand-written FFM bindings to the CUDA driver API ({@code libcuda.so.1}), one method per C function,
 * each checking the {@code CUresult} and throwing {@link CudaException} naming the call and the error
 * ({@code cuGetErrorName}). Symbol names are the ones {@code cuda.h} maps the API names to
 * ({@code cuMemAlloc} is {@code cuMemAlloc_v2}); the legacy default stream is used (no {@code _ptsz}).
 *
 * <p>Opaque handles ({@code CUcontext}, {@code CUstream}, {@code CUevent}, {@code CUmodule},
 * {@code CUfunction}) and device pointers ({@code CUdeviceptr}) are passed as {@code long}: on x86-64
 * and aarch64 a pointer and a 64-bit integer travel the same way. Host pointers are {@link MemorySegment}s.
 * Thread-safe (the driver is).
 */
public final class CudaDriver {
    private static final FunctionDescriptor I_I = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor I_A = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
    private static final FunctionDescriptor I_AI = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor I_AL = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG);
    private static final FunctionDescriptor I_IA = FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS);

    private final NativeLibrary library;
    private final MethodHandle cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString;
    private final MethodHandle cuDeviceGet, cuDeviceGetCount, cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem;
    private final MethodHandle cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuCtxSynchronize;
    private final MethodHandle cuMemGetInfo, cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemHostAlloc, cuMemFreeHost,
            cuMemHostGetDevicePointer;
    private final MethodHandle cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync, cuMemsetD8Async, cuMemsetD32Async;
    private final MethodHandle cuStreamCreate, cuStreamDestroy, cuStreamSynchronize, cuStreamWaitEvent;
    private final MethodHandle cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventElapsedTime, cuEventQuery, cuEventDestroy;
    private final MethodHandle cuModuleLoadData, cuModuleGetFunction, cuModuleUnload, cuLaunchKernel;
    private final MethodHandle cuStreamBeginCapture, cuStreamEndCapture, cuStreamIsCapturing, cuThreadExchangeStreamCaptureMode;
    private final MethodHandle cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy, cuGraphDestroy;

    /** Binds every function of {@code library}; throws {@link CudaException} naming a missing symbol. */
    public CudaDriver(NativeLibrary library) {
        this.library = library;
        cuInit = library.downcall(I_I, "cuInit");
        cuDriverGetVersion = library.downcall(I_A, "cuDriverGetVersion");
        cuGetErrorName = library.downcall(I_IA, "cuGetErrorName");
        cuGetErrorString = library.downcall(I_IA, "cuGetErrorString");
        cuDeviceGet = library.downcall(I_AI, "cuDeviceGet");
        cuDeviceGetCount = library.downcall(I_A, "cuDeviceGetCount");
        cuDeviceGetName = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetName");
        cuDeviceGetAttribute = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetAttribute");
        cuDeviceTotalMem = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceTotalMem_v2");
        cuDevicePrimaryCtxRetain = library.downcall(I_AI, "cuDevicePrimaryCtxRetain");
        cuDevicePrimaryCtxRelease = library.downcall(I_I, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
        cuCtxSetCurrent = library.downcall(I_L, "cuCtxSetCurrent");
        cuCtxSynchronize = library.downcall(FunctionDescriptor.of(JAVA_INT), "cuCtxSynchronize");
        cuMemGetInfo = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuMemGetInfo_v2");
        cuMemAlloc = library.downcall(I_AL, "cuMemAlloc_v2");
        cuMemFree = library.downcall(I_L, "cuMemFree_v2");
        cuMemAllocHost = library.downcall(I_AL, "cuMemAllocHost_v2");
        cuMemHostAlloc = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), "cuMemHostAlloc");
        cuMemFreeHost = library.downcall(I_A, "cuMemFreeHost");
        cuMemHostGetDevicePointer = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), "cuMemHostGetDevicePointer_v2");
        cuMemcpyHtoDAsync = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG), "cuMemcpyHtoDAsync_v2");
        cuMemcpyDtoHAsync = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoHAsync_v2");
        cuMemcpyDtoDAsync = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoDAsync_v2");
        cuMemsetD8Async = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG), "cuMemsetD8Async");
        cuMemsetD32Async = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_LONG), "cuMemsetD32Async");
        cuStreamCreate = library.downcall(I_AI, "cuStreamCreate");
        cuStreamDestroy = library.downcall(I_L, "cuStreamDestroy_v2");
        cuStreamSynchronize = library.downcall(I_L, "cuStreamSynchronize");
        cuStreamWaitEvent = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT), "cuStreamWaitEvent");
        cuEventCreate = library.downcall(I_AI, "cuEventCreate");
        cuEventRecord = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), "cuEventRecord");
        cuEventSynchronize = library.downcall(I_L, "cuEventSynchronize");
        // cuda.h 12.8+ maps cuEventElapsedTime to _v2; older drivers only export the original (same signature).
        cuEventElapsedTime = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
                "cuEventElapsedTime_v2", "cuEventElapsedTime");
        cuEventQuery = library.downcall(I_L, "cuEventQuery");
        cuEventDestroy = library.downcall(I_L, "cuEventDestroy_v2");
        cuModuleLoadData = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuModuleLoadData");
        cuModuleGetFunction = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS), "cuModuleGetFunction");
        cuModuleUnload = library.downcall(I_L, "cuModuleUnload");
        cuLaunchKernel = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS), "cuLaunchKernel");
        // Stream capture and graphs (CUDA 11.4+ for cuGraphInstantiateWithFlags; cuda.h maps cuStreamBeginCapture to _v2).
        cuStreamBeginCapture = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT), "cuStreamBeginCapture_v2");
        cuStreamEndCapture = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "cuStreamEndCapture");
        cuStreamIsCapturing = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS), "cuStreamIsCapturing");
        cuThreadExchangeStreamCaptureMode = library.downcall(I_A, "cuThreadExchangeStreamCaptureMode");
        cuGraphInstantiateWithFlags = library.downcall(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
                "cuGraphInstantiateWithFlags");
        cuGraphLaunch = library.downcall(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG), "cuGraphLaunch");
        cuGraphExecDestroy = library.downcall(I_L, "cuGraphExecDestroy");
        cuGraphDestroy = library.downcall(I_L, "cuGraphDestroy");
    }

    public NativeLibrary library() {
        return library;
    }

    // ---- errors and versions --------------------------------------------------------------------

    /** {@code cuGetErrorName}: {@code CUDA_ERROR_NO_DEVICE} for 100; "CUresult N" for codes the driver does not know. */
    public String errorName(int code) {
        return errorText(cuGetErrorName, code);
    }

    /** {@code cuGetErrorString}: the driver's description of {@code code}. */
    public String errorString(int code) {
        return errorText(cuGetErrorString, code);
    }

    private static String errorText(MethodHandle h, int code) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) h.invokeExact(code, out);
            MemorySegment str = out.get(ADDRESS, 0);
            if (rc != CUDA_SUCCESS || str.address() == 0) return "CUresult " + code;
            return str.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** The exception for a failed {@code call}; public so that wrappers of other entry points share the message. */
    public CudaException error(String call, int code) {
        return new CudaException(call, code, errorName(code), errorString(code));
    }

    private void check(String call, int rc) {
        if (rc != CUDA_SUCCESS) throw error(call, rc);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) return r;
        if (t instanceof Error e) throw e;
        return new IllegalStateException(t);
    }

    public void init(int flags) {
        try {
            check("cuInit", (int) cuInit.invokeExact(flags));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuDriverGetVersion}: e.g. 13000 for CUDA 13.0 (works before {@link #init}). */
    public int driverGetVersion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("cuDriverGetVersion", (int) cuDriverGetVersion.invokeExact(v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- devices and contexts -------------------------------------------------------------------

    public int deviceGetCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("cuDeviceGetCount", (int) cuDeviceGetCount.invokeExact(v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuDeviceGet}: the {@code CUdevice} handle of ordinal {@code ordinal}. */
    public int deviceGet(int ordinal) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("cuDeviceGet", (int) cuDeviceGet.invokeExact(v, ordinal));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public String deviceGetName(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256);
            check("cuDeviceGetName", (int) cuDeviceGetName.invokeExact(buf, 256, device));
            return buf.getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuDeviceGetAttribute} with a {@code CU_DEVICE_ATTRIBUTE_*} id from {@link CuConstants}. */
    public int deviceGetAttribute(int attribute, int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("cuDeviceGetAttribute", (int) cuDeviceGetAttribute.invokeExact(v, attribute, device));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public long deviceTotalMem(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuDeviceTotalMem_v2", (int) cuDeviceTotalMem.invokeExact(v, device));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuDevicePrimaryCtxRetain}: the device's primary context (shared with every other user in the process). */
    public long devicePrimaryCtxRetain(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuDevicePrimaryCtxRetain", (int) cuDevicePrimaryCtxRetain.invokeExact(v, device));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void devicePrimaryCtxRelease(int device) {
        try {
            check("cuDevicePrimaryCtxRelease_v2", (int) cuDevicePrimaryCtxRelease.invokeExact(device));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuCtxSetCurrent}: binds {@code context} to the calling thread. */
    public void ctxSetCurrent(long context) {
        try {
            check("cuCtxSetCurrent", (int) cuCtxSetCurrent.invokeExact(context));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void ctxSynchronize() {
        try {
            check("cuCtxSynchronize", (int) cuCtxSynchronize.invokeExact());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- memory ---------------------------------------------------------------------------------

    /** {@code cuMemGetInfo_v2}: {free, total} bytes of the current context's device. */
    public long[] memGetInfo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            check("cuMemGetInfo_v2", (int) cuMemGetInfo.invokeExact(free, total));
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemAlloc_v2}: a device pointer to {@code bytes} bytes (256-byte aligned). */
    public long memAlloc(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuMemAlloc_v2", (int) cuMemAlloc.invokeExact(v, bytes));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Like {@link #memAlloc} but returns 0 on {@code CUDA_ERROR_OUT_OF_MEMORY} (the allocator retries after freeing its cache). */
    public long memAllocOrZero(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            int rc = (int) cuMemAlloc.invokeExact(v, bytes);
            if (rc == CuConstants.CUDA_ERROR_OUT_OF_MEMORY) return 0;
            check("cuMemAlloc_v2", rc);
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memFree(long devicePointer) {
        try {
            check("cuMemFree_v2", (int) cuMemFree.invokeExact(devicePointer));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemAllocHost_v2}: page-locked host memory, as a segment of {@code bytes} bytes. */
    public MemorySegment memAllocHost(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(ADDRESS);
            check("cuMemAllocHost_v2", (int) cuMemAllocHost.invokeExact(v, bytes));
            return v.get(ADDRESS, 0).reinterpret(bytes);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemHostAlloc} with {@code CU_MEMHOSTALLOC_*} flags. */
    public MemorySegment memHostAlloc(long bytes, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(ADDRESS);
            check("cuMemHostAlloc", (int) cuMemHostAlloc.invokeExact(v, bytes, flags));
            return v.get(ADDRESS, 0).reinterpret(bytes);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemHostGetDevicePointer}: the device address of mapped pinned host memory ({@code CU_MEMHOSTALLOC_DEVICEMAP}). */
    public long memHostGetDevicePointer(MemorySegment hostPointer) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuMemHostGetDevicePointer_v2", (int) cuMemHostGetDevicePointer.invokeExact(v, hostPointer, 0));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memFreeHost(MemorySegment hostPointer) {
        try {
            check("cuMemFreeHost", (int) cuMemFreeHost.invokeExact(hostPointer));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memcpyHtoDAsync(long dst, MemorySegment src, long bytes, long stream) {
        try {
            check("cuMemcpyHtoDAsync_v2", (int) cuMemcpyHtoDAsync.invokeExact(dst, src, bytes, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memcpyDtoHAsync(MemorySegment dst, long src, long bytes, long stream) {
        try {
            check("cuMemcpyDtoHAsync_v2", (int) cuMemcpyDtoHAsync.invokeExact(dst, src, bytes, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memcpyDtoDAsync(long dst, long src, long bytes, long stream) {
        try {
            check("cuMemcpyDtoDAsync_v2", (int) cuMemcpyDtoDAsync.invokeExact(dst, src, bytes, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memsetD8Async(long dst, byte value, long count, long stream) {
        try {
            check("cuMemsetD8Async", (int) cuMemsetD8Async.invokeExact(dst, value, count, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void memsetD32Async(long dst, int value, long count, long stream) {
        try {
            check("cuMemsetD32Async", (int) cuMemsetD32Async.invokeExact(dst, value, count, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- streams and events ---------------------------------------------------------------------

    /** {@code cuStreamCreate} with {@code CU_STREAM_*} flags. */
    public long streamCreate(int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuStreamCreate", (int) cuStreamCreate.invokeExact(v, flags));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void streamDestroy(long stream) {
        try {
            check("cuStreamDestroy_v2", (int) cuStreamDestroy.invokeExact(stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void streamSynchronize(long stream) {
        try {
            check("cuStreamSynchronize", (int) cuStreamSynchronize.invokeExact(stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void streamWaitEvent(long stream, long event, int flags) {
        try {
            check("cuStreamWaitEvent", (int) cuStreamWaitEvent.invokeExact(stream, event, flags));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuEventCreate} with {@code CU_EVENT_*} flags. */
    public long eventCreate(int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuEventCreate", (int) cuEventCreate.invokeExact(v, flags));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void eventRecord(long event, long stream) {
        try {
            check("cuEventRecord", (int) cuEventRecord.invokeExact(event, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void eventSynchronize(long event) {
        try {
            check("cuEventSynchronize", (int) cuEventSynchronize.invokeExact(event));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuEventQuery}: true when the work before the event has completed, false while it is pending. */
    public boolean eventQuery(long event) {
        try {
            int rc = (int) cuEventQuery.invokeExact(event);
            if (rc == CUDA_ERROR_NOT_READY) return false;
            check("cuEventQuery", rc);
            return true;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Milliseconds between two recorded, completed events (both created with timing enabled). */
    public float eventElapsedTime(long start, long end) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_FLOAT);
            check("cuEventElapsedTime", (int) cuEventElapsedTime.invokeExact(v, start, end));
            return v.get(JAVA_FLOAT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void eventDestroy(long event) {
        try {
            check("cuEventDestroy_v2", (int) cuEventDestroy.invokeExact(event));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- modules and launches -------------------------------------------------------------------

    /** {@code cuModuleLoadData}: loads a PTX (NUL-terminated) or CUBIN image into the current context. */
    public long moduleLoadData(MemorySegment image) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuModuleLoadData", (int) cuModuleLoadData.invokeExact(v, image));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public long moduleGetFunction(long module, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            int rc = (int) cuModuleGetFunction.invokeExact(v, module, arena.allocateFrom(name));
            if (rc != CUDA_SUCCESS) throw new CudaException("cuModuleGetFunction(\"" + name + "\")", rc, errorName(rc), errorString(rc));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void moduleUnload(long module) {
        try {
            check("cuModuleUnload", (int) cuModuleUnload.invokeExact(module));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuLaunchKernel}: enqueues {@code function} on {@code stream}. {@code kernelParams} is an
     * array of pointers, one per kernel parameter, each to that parameter's value.
     */
    public void launchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                             int sharedMemBytes, long stream, MemorySegment kernelParams) {
        try {
            check("cuLaunchKernel", (int) cuLaunchKernel.invokeExact(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                    sharedMemBytes, stream, kernelParams, MemorySegment.NULL));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- stream capture and graphs --------------------------------------------------------------

    /** {@code cuStreamBeginCapture_v2}: work enqueued on {@code stream} is recorded into a graph instead of run. */
    public void streamBeginCapture(long stream, int mode) {
        try {
            check("cuStreamBeginCapture_v2", (int) cuStreamBeginCapture.invokeExact(stream, mode));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuStreamEndCapture}: the captured graph ({@code CUgraph}). Every stream of the capture stops
     * capturing, also when this throws ({@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED} after a refused call).
     */
    public long streamEndCapture(long stream) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuStreamEndCapture", (int) cuStreamEndCapture.invokeExact(stream, v));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuStreamIsCapturing}: a {@code CU_STREAM_CAPTURE_STATUS_*} value. */
    public int streamIsCapturing(long stream) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            check("cuStreamIsCapturing", (int) cuStreamIsCapturing.invokeExact(stream, v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuThreadExchangeStreamCaptureMode}: sets the calling thread's capture interaction mode, returns the previous one. */
    public int threadExchangeStreamCaptureMode(int mode) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT);
            v.set(JAVA_INT, 0, mode);
            check("cuThreadExchangeStreamCaptureMode", (int) cuThreadExchangeStreamCaptureMode.invokeExact(v));
            return v.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuGraphInstantiateWithFlags}: an executable graph ({@code CUgraphExec}) of {@code graph}. */
    public long graphInstantiate(long graph, long flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_LONG);
            check("cuGraphInstantiateWithFlags", (int) cuGraphInstantiateWithFlags.invokeExact(v, graph, flags));
            return v.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuGraphLaunch}: enqueues one replay of {@code exec} on {@code stream}. */
    public void graphLaunch(long exec, long stream) {
        try {
            check("cuGraphLaunch", (int) cuGraphLaunch.invokeExact(exec, stream));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void graphExecDestroy(long exec) {
        try {
            check("cuGraphExecDestroy", (int) cuGraphExecDestroy.invokeExact(exec));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void graphDestroy(long graph) {
        try {
            check("cuGraphDestroy", (int) cuGraphDestroy.invokeExact(graph));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
