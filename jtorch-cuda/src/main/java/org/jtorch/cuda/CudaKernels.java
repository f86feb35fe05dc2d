package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.backend.Backends;
import org.jtorch.cuda.driver.CudaDriver;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.ElementwisePlan.Launch;
import org.jtorch.cuda.kernels.ElementwisePlan.Operand;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.MultiTensorPlan;
import org.jtorch.cuda.kernels.RandomPlan;
import org.jtorch.cuda.nvrtc.KernelCache;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;

/**
 * Runs the elementwise, fill and copy kernels on a device: compiles each kernel file with NVRTC for
 * the device's exact architecture (one op at a time with {@code -DJT_SELECT -DJT_SELECT_<op>}; a CUBIN for
 * {@code sm_XY}, or PTX where that NVRTC does not know the device, see {@link KernelSources#target}; cached on
 * disk by {@link KernelCache}), loads one {@code CUmodule} per (file, op, device) and caches
 * the {@code CUfunction}s by name, then launches on the device's current stream. Host-to-device and
 * device-to-host copies go through {@code cuMemcpy*Async} on the current stream and synchronise it
 * before returning (the host memory may be reused or freed right after). The choices (entry point,
 * contiguous or strided, coalesced strides, grid size, argument bytes) are made by the plain classes of
 * {@code org.jtorch.cuda.kernels}, tested without a GPU.
 */
final class CudaKernels {
    private final CudaRuntime rt;
    private final ConcurrentHashMap<String, Long> modules = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Long> functions = new ConcurrentHashMap<>();
    private volatile KernelCache cache;
    /** The real architectures the NVRTC behind {@link #cache} compiles CUBIN for (set with it). */
    private volatile int[] supportedArchs;

    CudaKernels(CudaRuntime rt) {
        this.rt = rt;
    }

    /** The NVRTC options that select one op of {@code elementwise.cu} (none for {@code copy.cu}, which is compiled whole). */
    static List<String> selectOptions(String op) {
        return op == null ? List.of() : List.of("-DJT_SELECT", "-DJT_SELECT_" + op);
    }

    private KernelCache cache() {
        KernelCache c = cache;
        if (c == null) {
            synchronized (this) {
                if (cache == null) {
                    Nvrtc nvrtc = new Nvrtc(rt.libraries().load(CudaLibraries.Kind.NVRTC));
                    supportedArchs = nvrtc.supportedArchs();
                    int[] v = nvrtc.version();
                    cache = new KernelCache(KernelCache.defaultDirectory(System.getenv(), Path.of(System.getProperty("user.home"))),
                            v[0] + "." + v[1], nvrtc::compile);
                }
                c = cache;
            }
        }
        return c;
    }

    /** The function {@code entry} of {@code file} (compiled with {@code op} selected) on device {@code ordinal}, whose context is current. */
    private long function(int ordinal, String file, String op, String entry) {
        return function(ordinal, file, op, entry, () -> KernelSources.read(file));
    }

    /** The same for a source of the backend's own ({@code file} is its unique name, e.g. a generated formula's). */
    private long function(int ordinal, String file, String op, String entry, java.util.function.Supplier<String> source) {
        String moduleKey = file + "/" + op + "@" + ordinal;
        return functions.computeIfAbsent(moduleKey + "#" + entry, k -> {
            long module = modules.computeIfAbsent(moduleKey, mk -> {
                CudaRuntime.DeviceInfo info = rt.devices().get(ordinal);
                KernelCache c = cache();
                KernelSources.Target target = KernelSources.target(info.major(), info.minor(), supportedArchs);
                List<String> options = new ArrayList<>(target.options());
                options.addAll(selectOptions(op));
                byte[] compiled = c.get(file, source.get(), KernelSources.headers(), options, target.output());
                try (Arena arena = Arena.ofConfined()) {
                    // PTX is NUL-terminated for cuModuleLoadData; a CUBIN is an ELF image and ignores the extra byte.
                    MemorySegment image = arena.allocate(compiled.length + 1);
                    image.copyFrom(MemorySegment.ofArray(compiled));
                    return rt.driver().moduleLoadData(image);
                }
            });
            return rt.driver().moduleGetFunction(module, entry);
        });
    }

    private static long address(Tensor t) {
        return t.storage().address() + t.storageOffset() * t.dtype().byteSize();
    }

    private static Operand operand(StridedView v) {
        return new Operand(v.dtype(), v.strides(), v.isContiguous());
    }

    private static Operand operand(Tensor t) {
        return new Operand(t.dtype(), t.strides(), t.isContiguous());
    }

    private long stream(Device device) {
        rt.makeCurrent(device.index());
        return Cuda.currentStream(device).handle();
    }

    private void launch(Device device, long stream, String file, String op, Launch l, int perItem, KernelArgs args) {
        int blocks = LaunchGeometry.blocks(l.n(), perItem, rt.devices().get(device.index()).multiprocessors());
        if (blocks == 0) return;
        launch(function(device.index(), file, op, l.entry()), blocks, stream, args);
    }

    private void launch(long function, int blocks, long stream, KernelArgs args) {
        rt.driver().launchKernel(function, blocks, 1, 1, LaunchGeometry.THREADS, 1, 1, 0, stream, args.build());
    }

    /** A CPU zero-dim operand (allowed next to device tensors, as in PyTorch) copied to {@code device} and broadcast to {@code shape}. */
    private Tensor onDevice(Tensor t, Device device, long[] shape, List<Tensor> temps) {
        if (t.device().equals(device)) return t;
        for (long st : t.strides()) {
            if (st != 0) throw new IllegalArgumentException("expected a zero-dim CPU tensor broadcast to " + java.util.Arrays.toString(shape)
                    + ", got strides " + java.util.Arrays.toString(t.strides()));
        }
        Tensor d = Tensor.empty(new long[0], t.dtype(), device);
        temps.add(d);
        // t is a 0-d tensor broadcast to the op's shape (all strides zero): its one element is at storageOffset.
        try (Tensor scalar = t.asStrided(new long[0], new long[0], t.storageOffset())) {
            hostToDevice(scalar, d);
        }
        return d.broadcastTo(shape);
    }

    // ------------------------------------------------------------------ elementwise

    /**
     * {@code out = op(a[, b])} for an op declared with a formula: its generated source ({@link FormulaKernels}),
     * compiled on first use; {@code b} is null for unary ops, whose scalar parameters are p0, p1 (a binary op's
     * alpha is p0).
     */
    void formula(OpDef op, int ordinal, DType compute, StridedView out, StridedView a, StridedView b, double p0, double p1) {
        Device device = Device.cuda(ordinal);
        String name = op.kernel();
        DType result = op.resultType(compute);
        Launch l = b == null ? ElementwisePlan.unary(name, result, compute, out.shape(), operand(out), operand(a))
                : ElementwisePlan.binary(name, result, compute, out.shape(), operand(out), operand(a), operand(b));
        long s = stream(device);
        int blocks = LaunchGeometry.blocks(l.n(), l.contiguous() ? LaunchGeometry.vectorWidth(compute.byteSize()) : 1,
                rt.devices().get(ordinal).multiprocessors());
        if (blocks == 0) return;
        long fn = function(ordinal, FormulaKernels.fileName(op), null, l.entry(), () -> FormulaKernels.source(op));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = b == null ? KernelArgs.unary(arena, l, a.address(), out.address(), p0, p1)
                    : KernelArgs.binary(arena, l, a.address(), b.address(), out.address(), p0);
            launch(fn, blocks, s, args);
        }
    }

    /**
     * {@code out = formula(inputs)} for a fused formula ({@link FusedKernels}): float32 inputs of any strides over
     * the contiguous float32 output's shape.
     */
    void fused(String source, int ordinal, StridedView out, StridedView[] inputs) {
        long[] shape = out.shape();
        if (out.dtype() != DType.FLOAT32 || !out.isContiguous()) {
            throw new IllegalArgumentException("fused kernel: expected a contiguous float32 output, got " + out.dtype() + " with strides "
                    + java.util.Arrays.toString(out.strides()));
        }
        long n = Shapes.numel(shape);
        Device device = Device.cuda(ordinal);
        int blocks = LaunchGeometry.blocks(n, 1, rt.devices().get(ordinal).multiprocessors());
        if (blocks == 0) return;
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(out.address());
            MemorySegment index = fusedIndex(arena, shape, inputs, args);
            args.i64(n).struct(index);
            launch(fn, blocks, stream(device), args);
        }
    }

    /**
     * {@code out[r] = sum of formula(inputs)} over the elements {@code [r * rowLength, (r + 1) * rowLength)} of the
     * inputs' common shape, for a formula fused into a sum ({@link FusedKernels#sumSource}): one block per output.
     */
    void fusedSum(String source, int ordinal, StridedView out, StridedView[] inputs, long rowLength) {
        if (out.dtype() != DType.FLOAT32 || !out.isContiguous()) {
            throw new IllegalArgumentException("fused sum: expected a contiguous float32 output, got " + out.dtype() + " with strides "
                    + java.util.Arrays.toString(out.strides()));
        }
        long rows = Shapes.numel(out.shape());
        if (rows == 0) return;
        long[] shape = inputs.length > 0 ? inputs[0].shape() : new long[0];
        Device device = Device.cuda(ordinal);
        int blocks = (int) Math.min(rows, (long) LaunchGeometry.BLOCKS_PER_SM * rt.devices().get(ordinal).multiprocessors());
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.SUM_ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(out.address());
            MemorySegment index = fusedIndex(arena, shape, inputs, args);
            args.i64(rows).i64(rowLength).struct(index);
            launch(fn, blocks, stream(device), args);
        }
    }

    private static String fusedFile(String source) {
        return "jit_fused_" + Integer.toHexString(source.hashCode()) + "_" + source.length() + ".cu";
    }

    /**
     * Adds each input's pointer to {@code args} and returns the kernel's {@code FusedIndex} over {@code shape}:
     * {@code struct FusedIndex { jt_i64 ndim; jt_i64 size[MAX_DIMS]; jt_i64 stride[inputs][MAX_DIMS]; }}.
     */
    private static MemorySegment fusedIndex(Arena arena, long[] shape, StridedView[] inputs, KernelArgs args) {
        if (shape.length > KernelStructs.MAX_DIMS) {
            throw new UnsupportedOperationException("fused kernel: at most " + KernelStructs.MAX_DIMS + " dimensions, got shape "
                    + java.util.Arrays.toString(shape));
        }
        int rows = Math.max(inputs.length, 1);
        MemorySegment index = arena.allocate(8L * (1 + KernelStructs.MAX_DIMS * (1 + rows)), 8);
        index.fill((byte) 0);
        index.set(ValueLayout.JAVA_LONG, 0, shape.length);
        for (int d = 0; d < shape.length; d++) index.set(ValueLayout.JAVA_LONG, 8L * (1 + d), shape[d]);
        for (int k = 0; k < inputs.length; k++) {
            StridedView v = inputs[k];
            if (v.dtype() != DType.FLOAT32) throw new IllegalArgumentException("fused kernel: input " + k + " is " + v.dtype() + ", not float32");
            args.pointer(v.address());
            for (int d = 0; d < shape.length; d++) {
                index.set(ValueLayout.JAVA_LONG, 8L * (1 + KernelStructs.MAX_DIMS * (1 + k) + d), v.strides()[d]);
            }
        }
        return index;
    }

    void where(Tensor cond, Tensor a, Tensor b, Tensor out) {
        Device device = out.device();
        long[] shape = out.shape();
        List<Tensor> temps = new ArrayList<>();
        try {
            cond = onDevice(cond, device, shape, temps);
            a = onDevice(a, device, shape, temps);
            b = onDevice(b, device, shape, temps);
            Tensor target = out;
            if (!out.isContiguous()) {
                target = Tensor.empty(shape, out.dtype(), device);
                temps.add(target);
            }
            Launch l = ElementwisePlan.where(shape, operand(cond), operand(a), operand(b));
            long s = stream(device);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = KernelArgs.where(arena, l, address(target), address(cond), address(a), address(b),
                        out.dtype().ordinal());
                launch(device, s, "elementwise.cu", "where", l, 1, args);
            }
            if (target != out) deviceCopy(target, out);
        } finally {
            for (Tensor t : temps) t.close();
        }
    }

    // ------------------------------------------------------------------ reductions (used by CudaReductions)

    /** The function {@code entry} of {@code reduce.cu} (compiled whole) on {@code device}, after making its context current. */
    long reduceFunction(Device device, String entry) {
        return function(device.index(), "reduce.cu", null, entry);
    }

    /** The function {@code entry} of {@code index.cu} (compiled whole) on {@code device}, after making its context current. */
    long indexFunction(Device device, String entry) {
        return function(device.index(), "index.cu", null, entry);
    }

    /** The function {@code entry} of {@code file} (compiled whole, e.g. {@code conv.cu}, {@code pool.cu}, {@code norm.cu}) on {@code device}. */
    long wholeFileFunction(Device device, String file, String entry) {
        return function(device.index(), file, null, entry);
    }

    /** The device's current stream, its context made current. */
    long currentStream(Device device) {
        return stream(device);
    }

    int multiprocessors(Device device) {
        return rt.devices().get(device.index()).multiprocessors();
    }

    void launchRows(long function, int blocks, int threads, long stream, KernelArgs args) {
        if (blocks == 0) return;
        rt.driver().launchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, args.build());
    }

    /** {@code dst = src} on one device, converting dtypes, any strides. */
    void copyOnDevice(Tensor src, Tensor dst) {
        if (dst.numel() != 0) deviceCopy(src, dst);
    }

    static long deviceAddress(Tensor t) {
        return address(t);
    }

    // ------------------------------------------------------------------ fill

    void fill(Tensor dst, double value, long longValue) {
        Device device = dst.device();
        long n = dst.numel();
        if (n == 0) return;
        long s = stream(device);
        if (dst.isContiguous() && Double.doubleToRawLongBits(value) == 0 && longValue == 0) {
            rt.driver().memsetD8Async(address(dst), (byte) 0, n * dst.dtype().byteSize(), s);
            return;
        }
        if (dst.isContiguous()) {
            fillContiguous(device, s, address(dst), n, dst.dtype(), value, longValue);
            return;
        }
        // Non-contiguous: fill one element, then broadcast-copy it (same dtype: exact) into dst.
        try (Tensor one = Tensor.empty(new long[0], dst.dtype(), device)) {
            fillContiguous(device, s, address(one), 1, dst.dtype(), value, longValue);
            deviceCopy(one.broadcastTo(dst.shape()), dst);
        }
    }

    private void fillContiguous(Device device, long s, long address, long n, DType t, double value, long longValue) {
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = KernelArgs.fill(arena, address, n, value, longValue);
            launch(device, s, "copy.cu", null, new Launch(ElementwisePlan.fillEntry(t), true, n, null),
                    LaunchGeometry.vectorWidth(t.byteSize()), args);
        }
    }

    // ------------------------------------------------------------------ copies

    /** {@code dst = src} for same-shaped tensors, at least one of them on a CUDA device. */
    void copy(Tensor src, Tensor dst) {
        copy(src, dst, false);
    }

    /**
     * As {@link #copy(Tensor, Tensor)}; with {@code nonBlocking}, a host-to-device copy from a pinned, contiguous
     * source of the destination's dtype into a contiguous destination is enqueued on the current stream and
     * not waited for ({@link #hostToDeviceAsync}). Every other copy synchronises as before.
     */
    void copy(Tensor src, Tensor dst, boolean nonBlocking) {
        if (dst.numel() == 0) return;
        boolean srcCpu = src.device().isCpu(), dstCpu = dst.device().isCpu();
        if (srcCpu != dstCpu || !src.device().equals(dst.device())) {
            String what = "a copy from " + src.device() + " to " + dst.device() + (dstCpu ? " (item(), toArray(), to(cpu))" : "");
            if (!srcCpu) CudaGraph.refuseDuringCapture(src.device(), what);
            if (!dstCpu) CudaGraph.refuseDuringCapture(dst.device(), what);
        }
        if (srcCpu && !dstCpu && nonBlocking && src.isPinned() && dst.isContiguous() && hostSlice(src, dst.dtype()) != null) {
            hostToDeviceAsync(src, dst);
        } else if (srcCpu && !dstCpu) {
            hostToDevice(src, dst);
        } else if (!srcCpu && dstCpu) {
            deviceToHost(src, dst);
        } else if (src.device().equals(dst.device())) {
            deviceCopy(src, dst);
        } else {
            peerCopy(src, dst);
        }
    }

    /** On one device: {@code cuMemcpyDtoDAsync} for contiguous same-dtype tensors, else the strided cast kernel. */
    private void deviceCopy(Tensor src, Tensor dst) {
        Device device = dst.device();
        long s = stream(device);
        long n = dst.numel();
        if (src.isContiguous() && dst.isContiguous() && src.dtype() == dst.dtype()) {
            rt.driver().memcpyDtoDAsync(address(dst), address(src), n * dst.dtype().byteSize(), s);
            return;
        }
        Launch l = ElementwisePlan.copy(dst.shape(), operand(dst), operand(src));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = KernelArgs.copy(arena, l, address(dst), address(src));
            launch(device, s, "copy.cu", null, l, 1, args);
        }
    }

    /** Host memory of {@code t} when it is contiguous, in native memory and of dtype {@code type}; else null. */
    private static MemorySegment hostSlice(Tensor t, DType type) {
        if (!t.isContiguous() || t.dtype() != type) return null;
        MemorySegment seg = t.storage().segment();
        if (!seg.isNative()) return null;
        return seg.asSlice(t.storageOffset() * type.byteSize(), t.numel() * type.byteSize());
    }

    private void hostToDevice(Tensor src, Tensor dst) {
        Device device = dst.device();
        DType type = dst.dtype();
        long bytes = dst.numel() * type.byteSize();
        Tensor staging = null, devTemp = null;
        try {
            MemorySegment host = hostSlice(src, type);
            if (host == null) {
                // Strided, converting or heap-backed source: the CPU backend lays it out as dst's dtype first.
                staging = Tensor.empty(dst.shape(), type, Device.cpu());
                Backends.of(Device.cpu()).copy(src, staging);
                host = hostSlice(staging, type);
            }
            Tensor target = dst;
            if (!dst.isContiguous()) {
                devTemp = Tensor.empty(dst.shape(), type, device);
                target = devTemp;
            }
            long s = stream(device);
            rt.driver().memcpyHtoDAsync(address(target), host, bytes, s);
            if (target != dst) deviceCopy(target, dst);
            rt.driver().streamSynchronize(s); // the host memory may be written or freed once we return
            IndexCheckLog.streamSynchronized(device, s);
        } finally {
            if (staging != null) staging.close();
            if (devTemp != null) devTemp.close();
        }
    }

    /**
     * {@code cuMemcpyHtoDAsync} from pinned host memory on the current stream, without synchronising: an event
     * recorded after it keeps the pinned block from being reused or released until the copy has read it
     * ({@link PinnedHostAllocator#recordUse}), however soon the source tensor is closed.
     */
    private void hostToDeviceAsync(Tensor src, Tensor dst) {
        long bytes = dst.numel() * dst.dtype().byteSize();
        long s = stream(dst.device());
        rt.driver().memcpyHtoDAsync(address(dst), hostSlice(src, dst.dtype()), bytes, s);
        PinnedMemory.allocator().recordUse(src.storage().address(), s);
    }

    private void deviceToHost(Tensor src, Tensor dst) {
        Device device = src.device();
        DType type = src.dtype();
        long bytes = src.numel() * type.byteSize();
        Tensor staging = null, devTemp = null;
        try {
            Tensor from = src;
            if (!src.isContiguous()) {
                devTemp = Tensor.empty(src.shape(), type, device);
                deviceCopy(src, devTemp);
                from = devTemp;
            }
            MemorySegment host = hostSlice(dst, type);
            if (host == null) {
                staging = Tensor.empty(src.shape(), type, Device.cpu());
                host = hostSlice(staging, type);
            }
            long s = stream(device);
            rt.driver().memcpyDtoHAsync(host, address(from), bytes, s);
            // A host read: the data must have arrived. Into pageable memory the copy itself returns only once it
            // has (CUDA's documented behaviour); into pinned memory it is asynchronous and needs the wait.
            if (staging == null && dst.isPinned()) rt.driver().streamSynchronize(s);
            if (staging != null) Backends.of(Device.cpu()).copy(staging, dst);
            IndexCheckLog.streamSynchronized(device, s);
        } finally {
            if (staging != null) staging.close();
            if (devTemp != null) devTemp.close();
        }
    }

    /** Between two CUDA devices: contiguous on the source device, {@code cuMemcpyDtoDAsync} (unified addressing), then laid out on the destination. */
    private void peerCopy(Tensor src, Tensor dst) {
        Tensor srcTemp = null, dstTemp = null;
        try {
            Tensor from = src;
            if (!src.isContiguous()) {
                srcTemp = Tensor.empty(src.shape(), src.dtype(), src.device());
                deviceCopy(src, srcTemp);
                from = srcTemp;
            }
            long srcStream = stream(src.device());
            rt.driver().streamSynchronize(srcStream);
            IndexCheckLog.streamSynchronized(src.device(), srcStream);
            Tensor target = dst;
            if (!dst.isContiguous() || dst.dtype() != src.dtype()) {
                dstTemp = Tensor.empty(src.shape(), src.dtype(), dst.device());
                target = dstTemp;
            }
            long s = stream(dst.device());
            rt.driver().memcpyDtoDAsync(address(target), address(from), from.numel() * from.dtype().byteSize(), s);
            if (target != dst) deviceCopy(target, dst);
            rt.driver().streamSynchronize(s);
            IndexCheckLog.streamSynchronized(dst.device(), s);
        } finally {
            if (srcTemp != null) srcTemp.close();
            if (dstTemp != null) dstTemp.close();
        }
    }

    // ------------------------------------------------------------------ random (random.cu)

    /**
     * Fills contiguous {@code out} from the Philox blocks {@code firstBlock, firstBlock + 1, ...} of
     * {@code seed}, as the CPU backend does: uniform in [a, b), normal (mean a, std b), randint in
     * [la, lb). One thread per Philox block ({@link RandomPlan}).
     */
    void random(RandomPlan.Fill fill, Tensor out, long seed, long firstBlock, double a, double b, long la, long lb) {
        random(fill, out, seed, firstBlock, a, b, la, lb, 0);
    }

    /** As above on a grid of {@code grid} blocks ({@code 0}: {@link LaunchGeometry#blocks}), to test that the grid does not matter. */
    void random(RandomPlan.Fill fill, Tensor out, long seed, long firstBlock, double a, double b, long la, long lb, int grid) {
        // PyTorch's graph-safe generator advances a device-side offset at each replay; jtorch's passes seed and
        // offset as launch arguments, so a replay would repeat the captured numbers (the same dropout mask) forever.
        CudaGraph.refuseDuringCapture(out.device(), "random sampling (" + RandomPlan.name(fill) + ": dropout, rand, randn,"
                + " randint)", "its seed and offset are launch arguments, so every replay would draw the captured numbers again");
        if (!out.isContiguous()) {
            throw new IllegalArgumentException(RandomPlan.name(fill) + ": the CUDA kernel fills contiguous tensors, got strides "
                    + java.util.Arrays.toString(out.strides()));
        }
        RandomPlan.Launch l = RandomPlan.plan(fill, out.dtype(), out.numel());
        Device device = out.device();
        int blocks = LaunchGeometry.blocks(l.philoxBlocks(), 1, rt.devices().get(device.index()).multiprocessors());
        if (blocks == 0) return;
        if (grid > 0) blocks = grid;
        long s = stream(device);
        long fn = function(device.index(), "random.cu", null, l.entry());
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = fill == RandomPlan.Fill.RANDINT
                    ? KernelArgs.randint(arena, l, address(out), seed, firstBlock, la, lb)
                    : KernelArgs.random(arena, l, address(out), seed, firstBlock, a, b);
            rt.driver().launchKernel(fn, blocks, 1, 1, LaunchGeometry.THREADS, 1, 1, 0, s, args.build());
        }
    }

    // ------------------------------------------------------------------ fused optimizer steps (optim.cu)

    /** The device of a multi-tensor step, after checking every tensor is contiguous float32 on it. */
    private static Device optimizerDevice(String op, List<List<Tensor>> lists) {
        Device device = lists.get(0).get(0).device();
        for (List<Tensor> list : lists) {
            if (list == null) continue;
            for (Tensor t : list) {
                if (t.dtype() != DType.FLOAT32 || !t.isContiguous() || !t.device().equals(device)) {
                    throw new IllegalArgumentException(op + ": the fused CUDA step takes contiguous float32 tensors on " + device
                            + ", got " + t.dtype() + " on " + t.device() + (t.isContiguous() ? "" : " (not contiguous)"));
                }
            }
        }
        return device;
    }

    /** The (list x tensor) device addresses of {@code lists} (null lists stay null) and the tensors' sizes. */
    private static long[][] addresses(List<List<Tensor>> lists) {
        long[][] a = new long[lists.size()][];
        for (int k = 0; k < a.length; k++) {
            List<Tensor> list = lists.get(k);
            if (list == null) continue;
            a[k] = new long[list.size()];
            for (int i = 0; i < a[k].length; i++) a[k][i] = address(list.get(i));
        }
        return a;
    }

    /** Launches {@code entry} of {@code optim.cu} once per {@link MultiTensorPlan} launch over {@code lists}. */
    private void multiTensor(String op, String entry, List<List<Tensor>> lists,
                             java.util.function.BiFunction<Arena, MemorySegment, KernelArgs> args) {
        if (lists.get(0).isEmpty()) return;
        multiTensor(optimizerDevice(op, lists), entry, lists, args);
    }

    /** As above on {@code device}, whose tensors the caller has checked (contiguous, of the entry's dtype). */
    private void multiTensor(Device device, String entry, List<List<Tensor>> lists,
                             java.util.function.BiFunction<Arena, MemorySegment, KernelArgs> args) {
        List<Tensor> params = lists.get(0);
        if (params.isEmpty()) return;
        long[] numels = new long[params.size()];
        for (int i = 0; i < numels.length; i++) numels[i] = params.get(i).numel();
        long[][] addresses = addresses(lists);
        long s = stream(device);
        long fn = function(device.index(), "optim.cu", null, entry);
        for (MultiTensorPlan.Launch l : MultiTensorPlan.plan(numels)) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment chunks = KernelArgs.packTensorChunks(arena, l, addresses, numels);
                rt.driver().launchKernel(fn, l.blocks(), 1, 1, LaunchGeometry.THREADS, 1, 1, 0, s, args.apply(arena, chunks).build());
            }
        }
    }

    void sgd(List<Tensor> params, List<Tensor> grads, List<Tensor> buffers, float negLr, float weightDecay, float momentum,
             float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep) {
        multiTensor("sgd", "jt_sgd_step_f32", java.util.Arrays.asList(params, grads, momentum != 0 ? buffers : null),
                (arena, chunks) -> KernelArgs.sgd(arena, chunks, negLr, weightDecay, momentum, oneMinusDampening, nesterov,
                        maximize, firstStep));
    }

    void adam(List<Tensor> params, List<Tensor> grads, List<Tensor> expAvgs, List<Tensor> expAvgSqs, List<Tensor> maxExpAvgSqs,
              float paramScale, float weightDecay, float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2,
              float bc2Sqrt, float eps, float negStepSize, boolean maximize, boolean amsgrad) {
        multiTensor("adam", "jt_adam_step_f32", java.util.Arrays.asList(params, grads, expAvgs, expAvgSqs, amsgrad ? maxExpAvgSqs : null),
                (arena, chunks) -> KernelArgs.adam(arena, chunks, paramScale, weightDecay, beta1, oneMinusBeta1, beta2,
                        oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad));
    }

    /**
     * GradScaler's unscale: one {@code jt_amp_unscale_<dtype>} multi-tensor sequence per gradient dtype, all
     * writing {@code foundInf}'s one float on the current stream. Gradients must be contiguous on
     * {@code foundInf}'s device, float32, float64 or bfloat16; otherwise {@link IllegalArgumentException}
     * naming the op, dtype, layout and device.
     */
    void ampUnscale(List<Tensor> grads, Tensor foundInf, float invScale) {
        String op = "_amp_foreach_non_finite_check_and_unscale_";
        Device device = foundInf.device();
        if (foundInf.dtype() != DType.FLOAT32 || foundInf.numel() != 1 || !device.isCuda()) {
            throw new IllegalArgumentException(op + ": found_inf must be one float32 element on a CUDA device, got "
                    + foundInf.dtype() + " of " + foundInf.numel() + " elements on " + device);
        }
        java.util.Map<DType, List<Tensor>> byDtype = new java.util.EnumMap<>(DType.class);
        for (Tensor g : grads) {
            if (!g.device().equals(device) || !g.isContiguous() || !MultiTensorPlan.unscaleSupports(g.dtype())) {
                throw new IllegalArgumentException(op + ": the CUDA kernel takes contiguous float32/float64/bfloat16 gradients on "
                        + device + ", got " + g.dtype() + " of shape " + java.util.Arrays.toString(g.shape()) + " on " + g.device()
                        + (g.isContiguous() ? "" : " (not contiguous)"));
            }
            byDtype.computeIfAbsent(g.dtype(), d -> new ArrayList<>()).add(g);
        }
        long flag = address(foundInf);
        for (java.util.Map.Entry<DType, List<Tensor>> e : byDtype.entrySet()) {
            multiTensor(device, MultiTensorPlan.unscaleEntry(e.getKey()), List.of(e.getValue()),
                    (arena, chunks) -> KernelArgs.ampUnscale(arena, chunks, flag, invScale));
        }
    }
}
