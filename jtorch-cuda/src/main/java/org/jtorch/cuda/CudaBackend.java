package org.jtorch.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.Proxy;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.backend.Backend;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.IndexKernels;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.backend.NormalizationKernels;
import org.jtorch.backend.RandomKernels;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.backend.SpatialKernels;
import org.jtorch.memory.MemoryBlock;
import org.jtorch.memory.Storage;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.UnaryOp;

/**
 * The CUDA backend, found by {@link java.util.ServiceLoader} through {@link CudaBackendProvider}.
 * Today it provides availability, device memory (the caching allocator) and the library report; the
 * op kernels exist as CUDA sources (resources {@code org/jtorch/cuda/kernels}) but are not yet wired
 * to the op families, so every kernel entry point throws {@link UnsupportedOperationException} naming
 * the op and device rather than computing anything on the host.
 */
public final class CudaBackend implements Backend {
    private static final CudaBackend INSTANCE = new CudaBackend();

    private final CudaCachingAllocator[] allocators = new CudaCachingAllocator[64];

    private CudaBackend() {}

    public static CudaBackend get() {
        return INSTANCE;
    }

    @Override
    public Device.Type deviceType() {
        return Device.Type.CUDA;
    }

    @Override
    public boolean isAvailable() {
        return CudaRuntime.system().available();
    }

    @Override
    public String unavailableReason() {
        return CudaRuntime.system().reason();
    }

    /** The devices (when available) and one line per library: version and path, or where it was looked for. */
    @Override
    public String describe() {
        CudaRuntime rt = CudaRuntime.system();
        StringBuilder sb = new StringBuilder("cuda: ");
        if (rt.available()) {
            sb.append(rt.devices().size()).append(" device(s)");
            for (CudaRuntime.DeviceInfo d : rt.devices()) sb.append("\n  ").append(d);
        } else {
            sb.append("unavailable (").append(rt.reason()).append(')');
        }
        for (String line : rt.libraries().describe()) sb.append("\n  ").append(line);
        return sb.toString();
    }

    @Override
    public synchronized CudaCachingAllocator allocator(Device device) {
        CudaRuntime rt = CudaRuntime.system();
        rt.requireAvailable();
        int index = device.index();
        if (index >= rt.devices().size()) {
            throw new IllegalArgumentException(device + " does not exist: " + rt.devices().size() + " CUDA device(s)");
        }
        if (allocators[index] == null) {
            allocators[index] = new CudaCachingAllocator(new DriverDeviceMemory(rt, index),
                    () -> Cuda.currentStream(device).handle(), CudaBackend::collectGarbage);
        }
        return allocators[index];
    }

    /** Lets the Cleaners of unreachable tensors return their device blocks before an out-of-memory retry. */
    private static void collectGarbage() {
        System.gc();
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public Storage allocate(Device device, long bytes) {
        CudaCachingAllocator allocator = allocator(device);
        MemoryBlock block = allocator.allocate(bytes);
        // A zero-length host view: the address travels with the storage, and host access throws.
        return Storage.ofBlock(device, bytes, allocator, block, MemorySegment.ofAddress(block.address()));
    }

    private static UnsupportedOperationException missing(String op) {
        return new UnsupportedOperationException(op + ": no CUDA kernel is wired to this op yet (device cuda)");
    }

    @Override
    public void copy(Tensor src, Tensor dst) {
        throw missing("copy");
    }

    @Override
    public void fill(Tensor dst, double value, long longValue) {
        throw missing("fill");
    }

    @Override
    public void unary(UnaryOp op, Tensor x, Tensor out, DType compute, double p0, double p1) {
        throw missing(op.name().toLowerCase());
    }

    @Override
    public void binary(BinaryOp op, Tensor a, Tensor b, Tensor out, DType compute, double alpha) {
        throw missing(op.name().toLowerCase());
    }

    @Override
    public void where(Tensor cond, Tensor a, Tensor b, Tensor out) {
        throw missing("where");
    }

    /** A family whose every method throws {@link UnsupportedOperationException} naming the method and device. */
    private static <T> T missingFamily(Class<T> family) {
        return family.cast(Proxy.newProxyInstance(family.getClassLoader(), new Class<?>[] {family}, (proxy, method, args) -> {
            switch (method.getName()) {
                case "toString" -> { return "CUDA " + family.getSimpleName() + " (no kernels wired yet)"; }
                case "hashCode" -> { return System.identityHashCode(proxy); }
                case "equals" -> { return proxy == args[0]; }
                default -> throw missing(method.getName());
            }
        }));
    }

    private final ReductionKernels reductions = missingFamily(ReductionKernels.class);
    private final IndexKernels indexing = missingFamily(IndexKernels.class);
    private final LinalgKernels linalg = missingFamily(LinalgKernels.class);
    private final RandomKernels random = missingFamily(RandomKernels.class);
    private final ConvolutionKernels convolution = missingFamily(ConvolutionKernels.class);
    private final SpatialKernels spatial = missingFamily(SpatialKernels.class);
    private final NormalizationKernels normalization = missingFamily(NormalizationKernels.class);

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
}
