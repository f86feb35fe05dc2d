package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
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
import org.jtorch.memory.Storage;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

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

    private static Operand operand(StridedView v) {
        return new Operand(v.dtype(), v.strides(), v.isContiguous());
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
    private StridedView onDevice(StridedView t, Device device, long[] shape, List<StridedView> temps) {
        if (t.device().equals(device)) return t;
        for (long st : t.strides()) {
            if (st != 0) throw new IllegalArgumentException("expected a zero-dim CPU tensor broadcast to " + java.util.Arrays.toString(shape)
                    + ", got strides " + java.util.Arrays.toString(t.strides()));
        }
        StridedView d = scratch(device, new long[0], t.dtype());
        temps.add(d);
        // t is a 0-d tensor broadcast to the op's shape (all strides zero): its one element is at its offset.
        hostToDevice(t.restrided(new long[0], new long[0], t.offset()), d);
        return broadcast(d, shape);
    }

    /** {@code v} (one element) seen with {@code shape}, every stride zero. */
    private static StridedView broadcast(StridedView v, long[] shape) {
        return v.restrided(shape, new long[shape.length], v.offset());
    }

    /** Uninitialised contiguous host scratch from the CPU allocator (staging for copies); give it back with {@link #free}. */
    private static StridedView hostScratch(long[] shape, DType dtype) {
        return StridedView.contiguous(Storage.allocateCpu(Shapes.numel(shape) * dtype.byteSize()), shape, dtype);
    }

    private static boolean isPinned(StridedView v) {
        return v.storage() != null && v.storage().isPinned();
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
     * {@code out = formula(inputs)} for a fused formula ({@link FusedKernels}): inputs of dtype {@code compute} (float32
     * or float64) and any strides over the contiguous output's shape, of that dtype too; {@code params} are the
     * formula's scalar parameters, as many as its kernel takes ({@link FusedKernels#scalarParameters}).
     */
    void fused(String source, int ordinal, DType compute, StridedView out, StridedView[] inputs, double[] params) {
        fused(source, ordinal, compute, out, inputs, args -> {
            for (double p : params) args.f64(p);
        });
    }

    /**
     * A float32 formula whose inputs {@code draws} names are drawn in the kernel ({@link FusedKernels#drawingSource}),
     * or read from the masks a drawing kernel wrote: {@code inputs} holds the others, in order. Masks are contiguous
     * bool tensors of the output's shape.
     */
    void fusedDrawing(String source, int ordinal, StridedView out, StridedView[] inputs, org.jtorch.op.FormulaKernel.Draws draws) {
        if (draws.masks() != null) {
            for (StridedView m : draws.masks()) {
                if (m.dtype() != DType.BOOL || !m.isContiguous() || !java.util.Arrays.equals(m.shape(), out.shape())) {
                    throw new IllegalArgumentException("fused kernel: a dropout mask must be a contiguous bool tensor of the output's shape "
                            + java.util.Arrays.toString(out.shape()) + ", got " + m.dtype() + " " + java.util.Arrays.toString(m.shape()));
                }
            }
        }
        fused(source, ordinal, DType.FLOAT32, out, inputs, args -> {
            for (int j = 0; j < draws.inputs().length; j++) {
                if (!draws.readsMasks()) args.i64(draws.seeds()[j]).i64(draws.firstBlocks()[j]).f32(draws.keepBelow()[j]);
                args.f32(draws.scales()[j]);
                if (draws.masks() != null) args.pointer(draws.masks()[j].address());
            }
        });
    }

    /** Launches {@link FusedKernels#ENTRY}: the output, the inputs, the arguments {@code extra} adds, the count and the index. */
    private void fused(String source, int ordinal, DType compute, StridedView out, StridedView[] inputs,
                       java.util.function.Consumer<KernelArgs> extra) {
        long[] shape = out.shape();
        if (out.dtype() != compute || !out.isContiguous()) {
            throw new IllegalArgumentException("fused kernel: expected a contiguous " + compute + " output, got " + out.dtype() + " with strides "
                    + java.util.Arrays.toString(out.strides()));
        }
        long n = Shapes.numel(shape);
        Device device = Device.cuda(ordinal);
        int blocks = LaunchGeometry.blocks(n, 1, rt.devices().get(ordinal).multiprocessors());
        if (blocks == 0) return;
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(out.address());
            MemorySegment index = fusedIndex(arena, shape, inputs, compute, args);
            extra.accept(args);
            args.i64(n).struct(index);
            launch(fn, blocks, stream(device), args);
        }
    }

    /**
     * {@code out[r] = sum of formula(inputs)} over the elements {@code [r * rowLength, (r + 1) * rowLength)} of the
     * inputs' common shape, for a formula fused into a sum ({@link FusedKernels#sumSource}): one block per output.
     */
    void fusedSum(String source, int ordinal, StridedView out, StridedView[] inputs, double[] params, long rowLength) {
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
            MemorySegment index = fusedIndex(arena, shape, inputs, DType.FLOAT32, args);
            for (double p : params) args.f64(p);
            args.i64(rows).i64(rowLength).struct(index);
            launch(fn, blocks, stream(device), args);
        }
    }

    /**
     * {@code out = layer_norm(formula(inputs))} over rows of {@code cols} values, for a formula fused into a layer norm
     * ({@link FusedKernels#layerNormSource}): {@code out} a contiguous float32 {@code [rows, cols]} matrix, every input a
     * float32 {@code [rows, cols]} matrix of any strides, {@code weight} and {@code bias} contiguous float32 rows or null,
     * {@code mean} and {@code rstd} contiguous float32, one element a row. One launch, a block a row.
     */
    void fusedLayerNorm(String source, int ordinal, StridedView out, StridedView[] inputs, double[] params, long cols, StridedView weight,
                        StridedView bias, double eps, StridedView mean, StridedView rstd) {
        String what = "fused layer norm";
        for (StridedView v : new StridedView[] {out, weight, bias, mean, rstd}) {
            if (v != null && (v.dtype() != DType.FLOAT32 || !v.isContiguous())) {
                throw new IllegalArgumentException(what + ": expected contiguous float32 output, weight, bias and statistics, got " + v.dtype()
                        + " " + java.util.Arrays.toString(v.shape()) + " with strides " + java.util.Arrays.toString(v.strides()));
            }
        }
        long rows = cols == 0 ? 0 : out.numel() / cols;
        if (rows == 0) return;
        Device device = Device.cuda(ordinal);
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.LAYER_NORM_ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(out.address());
            MemorySegment strides = rowIndex(arena, what, new long[] {rows, cols}, inputs, args);
            for (double p : params) args.f64(p);
            args.pointer(weight == null ? 0 : weight.address()).pointer(bias == null ? 0 : bias.address()).pointer(mean.address())
                    .pointer(rstd.address()).i64(rows).i64(cols).f64(eps).struct(strides);
            rt.driver().launchKernel(fn, org.jtorch.cuda.kernels.LayerNormPlan.rowBlocks(rows, rt.devices().get(ordinal).multiprocessors()),
                    1, 1, org.jtorch.cuda.kernels.LayerNormPlan.rowThreads(cols), 1, 1, 0, stream(device), args.build());
        }
    }

    /**
     * The kernel's {@code RowIndex} ({@link FusedKernels}) over {@code shape} (the row its last dimension): the leading
     * dimensions' sizes, each view's strides along them, then each view's stride along the row. Every view must be a
     * float32 view of {@code shape}; {@code args}, where not null, receives each one's pointer.
     */
    private static MemorySegment rowIndex(Arena arena, String what, long[] shape, StridedView[] views, KernelArgs args) {
        int lead = shape.length - 1, n = Math.max(views.length, 1), max = KernelStructs.MAX_DIMS;
        if (lead < 0 || lead > max) throw new IllegalArgumentException(what + ": rows of a shape of 1 to " + max + " dimensions, got " + Shapes.format(shape));
        MemorySegment index = arena.allocate(8L * (1 + max + max * n + n), 8);
        index.fill((byte) 0);
        index.set(ValueLayout.JAVA_LONG, 0, lead);
        for (int d = 0; d < lead; d++) index.set(ValueLayout.JAVA_LONG, 8L * (1 + d), shape[d]);
        for (int k = 0; k < views.length; k++) {
            StridedView v = views[k];
            if (v.dtype() != DType.FLOAT32 || !java.util.Arrays.equals(v.shape(), shape)) {
                throw new IllegalArgumentException(what + ": operand " + k + " must be float32 of shape " + Shapes.format(shape) + ", got " + v.dtype()
                        + Shapes.format(v.shape()));
            }
            if (args != null) args.pointer(v.address());
            for (int d = 0; d < lead; d++) index.set(ValueLayout.JAVA_LONG, 8L * (1 + max + max * k + d), v.stride(d));
            index.set(ValueLayout.JAVA_LONG, 8L * (1 + max + max * n + k), v.stride(lead));
        }
        return index;
    }

    /** Throws naming {@code what} unless {@code v} is a contiguous float32 view whose last dimension is {@code cols}. */
    private static void requireContiguousRows(String what, String name, StridedView v, long cols) {
        if (v.dtype() != DType.FLOAT32 || v.dim() < 1 || v.size(v.dim() - 1) != cols || !v.isContiguous()) {
            throw new IllegalArgumentException(what + ": " + name + " must be a contiguous float32 view of rows of " + cols + ", got " + v.dtype()
                    + Shapes.format(v.shape()) + " with strides " + java.util.Arrays.toString(v.strides()));
        }
    }

    /**
     * {@code out = softmax(formula(inputs))} (or log-softmax) over rows of {@code cols} values, for a formula fused into a
     * softmax ({@link FusedKernels#softmaxSource}): {@code out} contiguous float32, its last dimension the row, every
     * input a float32 view of its shape with any strides. One launch, a block a row, as many threads as the eager
     * softmax's.
     */
    void fusedSoftmax(String source, int ordinal, StridedView out, StridedView[] inputs, double[] params, long cols, boolean log) {
        String what = "fused softmax";
        requireContiguousRows(what, "the output", out, cols);
        long rows = cols == 0 ? 0 : out.numel() / cols;
        if (rows == 0) return;
        Device device = Device.cuda(ordinal);
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.SOFTMAX_ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(out.address());
            MemorySegment index = rowIndex(arena, what, out.shape(), inputs, args);
            for (double p : params) args.f64(p);
            args.i64(rows).i64(cols).i32(log ? 1 : 0).struct(index);
            launchSoftmaxRows(fn, rows, cols, device, args);
        }
    }

    /**
     * The backward of {@link #fusedSoftmax} ({@link FusedKernels#softmaxBackwardSource}): from the softmax's output
     * {@code y} (contiguous) and the incoming gradient {@code gradOut} (any strides), each gradient formula's values into
     * {@code gradientOuts} (contiguous), every view float32 of {@code y}'s shape, its last dimension the row. One launch, a
     * block a row.
     */
    void fusedSoftmaxBackward(String source, int ordinal, StridedView y, StridedView gradOut, StridedView[] inputs, long cols, boolean log,
                              StridedView[] gradientOuts) {
        String what = "fused softmax backward";
        requireContiguousRows(what, "the output", y, cols);
        for (StridedView v : gradientOuts) {
            requireContiguousRows(what, "a gradient", v, cols);
            if (!java.util.Arrays.equals(v.shape(), y.shape())) {
                throw new IllegalArgumentException(what + ": a gradient of shape " + Shapes.format(v.shape()) + " for an output of " + Shapes.format(y.shape()));
            }
        }
        long rows = cols == 0 ? 0 : y.numel() / cols;
        if (rows == 0) return;
        Device device = Device.cuda(ordinal);
        long fn = function(ordinal, fusedFile(source), null, FusedKernels.SOFTMAX_BACKWARD_ENTRY, () -> source);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(y.address()).pointer(gradOut.address());
            StridedView[] indexed = java.util.Arrays.copyOf(inputs, inputs.length + 1);
            indexed[inputs.length] = gradOut;
            MemorySegment index = rowIndex(arena, what, y.shape(), indexed, null);
            for (StridedView v : inputs) args.pointer(v.address());
            for (StridedView v : gradientOuts) args.pointer(v.address());
            args.i64(rows).i64(cols).i32(log ? 1 : 0).struct(index);
            launchSoftmaxRows(fn, rows, cols, device, args);
        }
    }

    /** A block a row, as many threads as the eager softmax's ({@code ReductionPlan.threads}), so both add a row in one order. */
    private void launchSoftmaxRows(long fn, long rows, long cols, Device device, KernelArgs args) {
        int threads = org.jtorch.cuda.kernels.ReductionPlan.threads(cols);
        launchRows(fn, org.jtorch.cuda.kernels.ReductionPlan.blocks(rows, threads, multiprocessors(device)), threads, stream(device), args);
    }

    private static String fusedFile(String source) {
        return "jit_fused_" + Integer.toHexString(source.hashCode()) + "_" + source.length() + ".cu";
    }

    /**
     * Adds each input's pointer to {@code args} and returns the kernel's {@code FusedIndex} over {@code shape}:
     * {@code struct FusedIndex { jt_i64 ndim; jt_i64 size[MAX_DIMS]; jt_i64 stride[inputs][MAX_DIMS]; }}.
     */
    private static MemorySegment fusedIndex(Arena arena, long[] shape, StridedView[] inputs, DType compute, KernelArgs args) {
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
            if (v.dtype() != compute) throw new IllegalArgumentException("fused kernel: input " + k + " is " + v.dtype() + ", not " + compute);
            args.pointer(v.address());
            for (int d = 0; d < shape.length; d++) {
                index.set(ValueLayout.JAVA_LONG, 8L * (1 + KernelStructs.MAX_DIMS * (1 + k) + d), v.strides()[d]);
            }
        }
        return index;
    }

    void where(StridedView cond, StridedView a, StridedView b, StridedView out) {
        Device device = out.device();
        long[] shape = out.shape();
        List<StridedView> temps = new ArrayList<>();
        try {
            cond = onDevice(cond, device, shape, temps);
            a = onDevice(a, device, shape, temps);
            b = onDevice(b, device, shape, temps);
            StridedView target = out;
            if (!out.isContiguous()) {
                target = scratch(device, shape, out.dtype());
                temps.add(target);
            }
            Launch l = ElementwisePlan.where(shape, operand(cond), operand(a), operand(b));
            long s = stream(device);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = KernelArgs.where(arena, l, target.address(), cond.address(), a.address(), b.address(),
                        out.dtype().ordinal());
                launch(device, s, "elementwise.cu", "where", l, 1, args);
            }
            if (target != out) deviceCopy(target, out);
        } finally {
            for (StridedView t : temps) free(t);
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
    void copyOnDevice(StridedView src, StridedView dst) {
        if (dst.numel() != 0) deviceCopy(src, dst);
    }

    /**
     * Uninitialised contiguous scratch on {@code device} from its caching allocator (stream-ordered, so it may be
     * freed as soon as the kernels using it are enqueued); give it back with {@link #free}.
     */
    static StridedView scratch(Device device, long[] shape, DType dtype) {
        Storage s = CudaBackend.get().allocate(device, Shapes.numel(shape) * dtype.byteSize());
        return StridedView.contiguous(s, shape, dtype);
    }

    /** Gives back {@link #scratch} views; nulls are skipped. */
    static void free(StridedView... scratch) {
        for (StridedView v : scratch) if (v != null) v.storage().release();
    }

    // ------------------------------------------------------------------ fill

    void fill(StridedView dst, double value, long longValue) {
        Device device = dst.device();
        long n = dst.numel();
        if (n == 0) return;
        long s = stream(device);
        if (dst.isContiguous() && Double.doubleToRawLongBits(value) == 0 && longValue == 0) {
            rt.driver().memsetD8Async(dst.address(), (byte) 0, n * dst.dtype().byteSize(), s);
            return;
        }
        if (dst.isContiguous()) {
            fillContiguous(device, s, dst.address(), n, dst.dtype(), value, longValue);
            return;
        }
        // Non-contiguous: fill one element, then broadcast-copy it (same dtype: exact) into dst.
        StridedView one = scratch(device, new long[0], dst.dtype());
        try {
            fillContiguous(device, s, one.address(), 1, dst.dtype(), value, longValue);
            deviceCopy(broadcast(one, dst.shape()), dst);
        } finally {
            free(one);
        }
    }

    /** {@code out *= factor} in place (out's dtype, any strides), as {@code mul_} by a number. */
    void scale(StridedView out, double factor) {
        if (factor == 0) {
            fill(out, 0, 0);
            return;
        }
        StridedView f = scratch(out.device(), new long[0], out.dtype());
        try {
            fillContiguous(out.device(), stream(out.device()), f.address(), 1, out.dtype(), factor, (long) factor);
            KernelRegistry.pointwise(PointwiseOps.MUL, Device.Type.CUDA).run(out.device().index(), out.dtype(), out, out,
                    broadcast(f, out.shape()), 0, 0);
        } finally {
            free(f);
        }
    }

    /**
     * The int64 values of contiguous device memory {@code v}, read to the host: a synchronisation, refused during
     * graph capture as any device-to-host read.
     */
    long[] toLongArray(StridedView v) {
        Device device = v.device();
        CudaGraph.refuseDuringCapture(device, "a copy from " + device + " to cpu (item(), toArray(), to(cpu))");
        long bytes = v.numel() * 8;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(Math.max(bytes, 8), 8);
            long s = stream(device);
            // Into pageable memory the copy returns once the data has arrived (CUDA's documented behaviour).
            rt.driver().memcpyDtoHAsync(host, v.address(), bytes, s);
            IndexCheckLog.streamSynchronized(device, s);
            return host.asSlice(0, bytes).toArray(ValueLayout.JAVA_LONG);
        }
    }

    /** A contiguous copy of {@code v} in scratch (give it back with {@link #free}). */
    StridedView contiguousCopy(StridedView v) {
        StridedView c = scratch(v.device(), v.shape(), v.dtype());
        copyOnDevice(v, c);
        return c;
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
    void copy(StridedView src, StridedView dst) {
        copy(src, dst, false);
    }

    /**
     * As {@link #copy(StridedView, StridedView)}; with {@code nonBlocking}, a host-to-device copy from a pinned, contiguous
     * source of the destination's dtype into a contiguous destination is enqueued on the current stream and
     * not waited for ({@link #hostToDeviceAsync}). Every other copy synchronises as before.
     */
    void copy(StridedView src, StridedView dst, boolean nonBlocking) {
        if (dst.numel() == 0) return;
        boolean srcCpu = src.device().isCpu(), dstCpu = dst.device().isCpu();
        if (srcCpu != dstCpu || !src.device().equals(dst.device())) {
            String what = "a copy from " + src.device() + " to " + dst.device() + (dstCpu ? " (item(), toArray(), to(cpu))" : "");
            if (!srcCpu) CudaGraph.refuseDuringCapture(src.device(), what);
            if (!dstCpu) CudaGraph.refuseDuringCapture(dst.device(), what);
        }
        if (srcCpu && !dstCpu && nonBlocking && isPinned(src) && dst.isContiguous() && hostSlice(src, dst.dtype()) != null) {
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
    private void deviceCopy(StridedView src, StridedView dst) {
        Device device = dst.device();
        long s = stream(device);
        long n = dst.numel();
        if (src.isContiguous() && dst.isContiguous() && src.dtype() == dst.dtype()) {
            rt.driver().memcpyDtoDAsync(dst.address(), src.address(), n * dst.dtype().byteSize(), s);
            return;
        }
        Launch l = ElementwisePlan.copy(dst.shape(), operand(dst), operand(src));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = KernelArgs.copy(arena, l, dst.address(), src.address());
            launch(device, s, "copy.cu", null, l, 1, args);
        }
    }

    /** Host memory of {@code t} when it is contiguous, in native memory and of dtype {@code type}; else null. */
    private static MemorySegment hostSlice(StridedView t, DType type) {
        if (!t.isContiguous() || t.dtype() != type) return null;
        MemorySegment seg = t.memory();
        if (!seg.isNative()) return null;
        return seg.asSlice(t.offset() * type.byteSize(), t.numel() * type.byteSize());
    }

    private void hostToDevice(StridedView src, StridedView dst) {
        Device device = dst.device();
        DType type = dst.dtype();
        long bytes = dst.numel() * type.byteSize();
        StridedView staging = null, devTemp = null;
        try {
            MemorySegment host = hostSlice(src, type);
            if (host == null) {
                // Strided, converting or heap-backed source: the CPU backend lays it out as dst's dtype first.
                staging = hostScratch(dst.shape(), type);
                Backends.of(Device.cpu()).copy(src, staging);
                host = hostSlice(staging, type);
            }
            StridedView target = dst;
            if (!dst.isContiguous()) {
                devTemp = scratch(device, dst.shape(), type);
                target = devTemp;
            }
            long s = stream(device);
            rt.driver().memcpyHtoDAsync(target.address(), host, bytes, s);
            if (target != dst) deviceCopy(target, dst);
            rt.driver().streamSynchronize(s); // the host memory may be written or freed once we return
            IndexCheckLog.streamSynchronized(device, s);
        } finally {
            free(staging);
            free(devTemp);
        }
    }

    /**
     * {@code cuMemcpyHtoDAsync} from pinned host memory on the current stream, without synchronising: an event
     * recorded after it keeps the pinned block from being reused or released until the copy has read it
     * ({@link PinnedHostAllocator#recordUse}), however soon the source tensor is closed.
     */
    private void hostToDeviceAsync(StridedView src, StridedView dst) {
        long bytes = dst.numel() * dst.dtype().byteSize();
        long s = stream(dst.device());
        rt.driver().memcpyHtoDAsync(dst.address(), hostSlice(src, dst.dtype()), bytes, s);
        PinnedMemory.allocator().recordUse(src.storage().address(), s);
    }

    private void deviceToHost(StridedView src, StridedView dst) {
        Device device = src.device();
        DType type = src.dtype();
        long bytes = src.numel() * type.byteSize();
        StridedView staging = null, devTemp = null;
        try {
            StridedView from = src;
            if (!src.isContiguous()) {
                devTemp = scratch(device, src.shape(), type);
                deviceCopy(src, devTemp);
                from = devTemp;
            }
            MemorySegment host = hostSlice(dst, type);
            if (host == null) {
                staging = hostScratch(src.shape(), type);
                host = hostSlice(staging, type);
            }
            long s = stream(device);
            rt.driver().memcpyDtoHAsync(host, from.address(), bytes, s);
            // A host read: the data must have arrived. Into pageable memory the copy itself returns only once it
            // has (CUDA's documented behaviour); into pinned memory it is asynchronous and needs the wait.
            if (staging == null && isPinned(dst)) rt.driver().streamSynchronize(s);
            if (staging != null) Backends.of(Device.cpu()).copy(staging, dst);
            IndexCheckLog.streamSynchronized(device, s);
        } finally {
            free(staging);
            free(devTemp);
        }
    }

    /** Between two CUDA devices: contiguous on the source device, {@code cuMemcpyDtoDAsync} (unified addressing), then laid out on the destination. */
    private void peerCopy(StridedView src, StridedView dst) {
        StridedView srcTemp = null, dstTemp = null;
        try {
            StridedView from = src;
            if (!src.isContiguous()) {
                srcTemp = scratch(src.device(), src.shape(), src.dtype());
                deviceCopy(src, srcTemp);
                from = srcTemp;
            }
            long srcStream = stream(src.device());
            rt.driver().streamSynchronize(srcStream);
            IndexCheckLog.streamSynchronized(src.device(), srcStream);
            StridedView target = dst;
            if (!dst.isContiguous() || dst.dtype() != src.dtype()) {
                dstTemp = scratch(dst.device(), src.shape(), src.dtype());
                target = dstTemp;
            }
            long s = stream(dst.device());
            rt.driver().memcpyDtoDAsync(target.address(), from.address(), from.numel() * from.dtype().byteSize(), s);
            if (target != dst) deviceCopy(target, dst);
            rt.driver().streamSynchronize(s);
            IndexCheckLog.streamSynchronized(dst.device(), s);
        } finally {
            free(srcTemp);
            free(dstTemp);
        }
    }

    // ------------------------------------------------------------------ random (random.cu)

    /**
     * Fills contiguous {@code out} from the Philox blocks {@code firstBlock, firstBlock + 1, ...} of
     * {@code seed}, as the CPU backend does: uniform in [a, b), normal (mean a, std b), randint in
     * [la, lb). One thread per Philox block ({@link RandomPlan}).
     */
    void random(RandomPlan.Fill fill, StridedView out, long seed, long firstBlock, double a, double b, long la, long lb) {
        random(fill, out, seed, firstBlock, a, b, la, lb, 0);
    }

    /** As above on a grid of {@code grid} blocks ({@code 0}: {@link LaunchGeometry#blocks}), to test that the grid does not matter. */
    void random(RandomPlan.Fill fill, StridedView out, long seed, long firstBlock, double a, double b, long la, long lb,
                int grid) {
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
                    ? KernelArgs.randint(arena, l, out.address(), seed, firstBlock, la, lb)
                    : KernelArgs.random(arena, l, out.address(), seed, firstBlock, a, b);
            rt.driver().launchKernel(fn, blocks, 1, 1, LaunchGeometry.THREADS, 1, 1, 0, s, args.build());
        }
    }

    // ------------------------------------------------------------------ fused optimizer steps (optim.cu)

    /** The device of a multi-tensor step, after checking every tensor is contiguous float32 on it. */
    private static Device optimizerDevice(String op, List<List<StridedView>> lists) {
        Device device = lists.get(0).get(0).device();
        for (List<StridedView> list : lists) {
            if (list == null) continue;
            for (StridedView t : list) {
                if (t.dtype() != DType.FLOAT32 || !t.isContiguous() || !t.device().equals(device)) {
                    throw new IllegalArgumentException(op + ": the fused CUDA step takes contiguous float32 tensors on " + device
                            + ", got " + t.dtype() + " on " + t.device() + (t.isContiguous() ? "" : " (not contiguous)"));
                }
            }
        }
        return device;
    }

    /** The (list x tensor) device addresses of {@code lists} (null lists stay null) and the tensors' sizes. */
    private static long[][] addresses(List<List<StridedView>> lists) {
        long[][] a = new long[lists.size()][];
        for (int k = 0; k < a.length; k++) {
            List<StridedView> list = lists.get(k);
            if (list == null) continue;
            a[k] = new long[list.size()];
            for (int i = 0; i < a[k].length; i++) a[k][i] = list.get(i).address();
        }
        return a;
    }

    /** Launches {@code entry} of {@code optim.cu} once per {@link MultiTensorPlan} launch over {@code lists}. */
    private void multiTensor(String op, String entry, List<List<StridedView>> lists,
                             java.util.function.BiFunction<Arena, MemorySegment, KernelArgs> args) {
        if (lists.get(0).isEmpty()) return;
        multiTensor(optimizerDevice(op, lists), entry, lists, args);
    }

    /** As above on {@code device}, whose tensors the caller has checked (contiguous, of the entry's dtype). */
    private void multiTensor(Device device, String entry, List<List<StridedView>> lists,
                             java.util.function.BiFunction<Arena, MemorySegment, KernelArgs> args) {
        List<StridedView> params = lists.get(0);
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

    void sgd(List<StridedView> params, List<StridedView> grads, List<StridedView> buffers, float negLr, float weightDecay,
             float momentum,
             float oneMinusDampening, boolean nesterov, boolean maximize, boolean firstStep) {
        multiTensor("sgd", "jt_sgd_step_f32", java.util.Arrays.asList(params, grads, momentum != 0 ? buffers : null),
                (arena, chunks) -> KernelArgs.sgd(arena, chunks, negLr, weightDecay, momentum, oneMinusDampening, nesterov,
                        maximize, firstStep));
    }

    void adam(List<StridedView> params, List<StridedView> grads, List<StridedView> expAvgs, List<StridedView> expAvgSqs,
              List<StridedView> maxExpAvgSqs,
              float paramScale, float weightDecay, float beta1, float oneMinusBeta1, float beta2, float oneMinusBeta2,
              float bc2Sqrt, float eps, float negStepSize, boolean maximize, boolean amsgrad) {
        multiTensor("adam", "jt_adam_step_f32", java.util.Arrays.asList(params, grads, expAvgs, expAvgSqs, amsgrad ? maxExpAvgSqs : null),
                (arena, chunks) -> KernelArgs.adam(arena, chunks, paramScale, weightDecay, beta1, oneMinusBeta1, beta2,
                        oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad));
    }

    void adadelta(List<StridedView> params, List<StridedView> grads, List<StridedView> squareAvgs, List<StridedView> accDeltas,
                  float negLr, float rho, float oneMinusRho, float eps, float weightDecay, boolean maximize) {
        multiTensor("adadelta", "jt_adadelta_step_f32", java.util.Arrays.asList(params, grads, squareAvgs, accDeltas),
                (arena, chunks) -> KernelArgs.adadelta(arena, chunks, negLr, rho, oneMinusRho, eps, weightDecay, maximize));
    }

    /**
     * GradScaler's unscale: one {@code jt_amp_unscale_<dtype>} multi-tensor sequence per gradient dtype, all
     * writing {@code foundInf}'s one float on the current stream. Gradients must be contiguous on
     * {@code foundInf}'s device, float32, float64 or bfloat16; otherwise {@link IllegalArgumentException}
     * naming the op, dtype, layout and device.
     */
    void ampUnscale(List<StridedView> grads, StridedView foundInf, float invScale) {
        String op = "_amp_foreach_non_finite_check_and_unscale_";
        Device device = foundInf.device();
        if (foundInf.dtype() != DType.FLOAT32 || foundInf.numel() != 1 || !device.isCuda()) {
            throw new IllegalArgumentException(op + ": found_inf must be one float32 element on a CUDA device, got "
                    + foundInf.dtype() + " of " + foundInf.numel() + " elements on " + device);
        }
        java.util.Map<DType, List<StridedView>> byDtype = new java.util.EnumMap<>(DType.class);
        for (StridedView g : grads) {
            if (!g.device().equals(device) || !g.isContiguous() || !MultiTensorPlan.unscaleSupports(g.dtype())) {
                throw new IllegalArgumentException(op + ": the CUDA kernel takes contiguous float32/float64/bfloat16 gradients on "
                        + device + ", got " + g.dtype() + " of shape " + java.util.Arrays.toString(g.shape()) + " on " + g.device()
                        + (g.isContiguous() ? "" : " (not contiguous)"));
            }
            byDtype.computeIfAbsent(g.dtype(), d -> new ArrayList<>()).add(g);
        }
        long flag = foundInf.address();
        for (java.util.Map.Entry<DType, List<StridedView>> e : byDtype.entrySet()) {
            multiTensor(device, MultiTensorPlan.unscaleEntry(e.getKey()), List.of(e.getValue()),
                    (arena, chunks) -> KernelArgs.ampUnscale(arena, chunks, flag, invScale));
        }
    }
}
