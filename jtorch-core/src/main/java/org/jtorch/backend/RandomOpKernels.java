package org.jtorch.backend;

import static org.jtorch.op.RandomOps.exact;
import static org.jtorch.op.RandomOps.firstBlock;
import static org.jtorch.op.RandomOps.seed;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.jtorch.memory.ElementCodec;
import org.jtorch.memory.ScalarCells;
import org.jtorch.memory.Storage;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.RandomOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The kernels of {@link RandomOps} for one backend, from its {@link RandomKernels} (Philox fills of contiguous memory)
 * and its pointwise kernels: bernoulli and dropout draw their uniforms into scratch memory and compare and scale them with
 * the backend's {@code lt}, {@code mul}, {@code where} and strided copy, in the dtypes and with the numbers the
 * composition of tensor ops they replace used, so that results stay bit for bit. The generator's state comes after the call's scalars
 * ({@link RandomOps#seed}, {@link RandomOps#firstBlock}).
 */
public final class RandomOpKernels {
    private RandomOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        RandomKernels random = backend.random();
        KernelRegistry.register(type, RandomOps.UNIFORM.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.uniform(c, g[0], g[1], seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.NORMAL.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.normal(c, g[0], g[1], seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.RANDOM.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.randint(c, exact(g, 3), exact(g, 5), seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.BERNOULLI.kernel(), (out, in, g) -> {
            ValueCheckKernels.checkUnitInterval(backend, in[0], position -> bernoulliRangeError(in[0], position));
            bernoulli(backend, out, in[0], 0, g);
        });
        KernelRegistry.register(type, RandomOps.BERNOULLI_P.kernel(), (out, in, g) -> bernoulli(backend, out, null, g[0], g));
        KernelRegistry.registerMulti(type, RandomOps.NATIVE_DROPOUT.kernel(), (outs, in, g) -> dropout(backend, outs[0], outs[1], in[0], g));
        KernelRegistry.register(type, RandomOps.NATIVE_DROPOUT_BACKWARD.kernel(), (out, in, g) -> dropoutBackward(backend, out, in[0], in[1], g[0]));
        KernelRegistry.register(type, RandomOps.BERNOULLI_TENSOR.kernel(), (out, in, g) -> {
            StridedView p = in[1].expand("bernoulli_", out.shape());
            if (p.device().isCpu()) checkProbabilities(p, out);
            bernoulli(backend, out, p, 0, g);
        });
        // Each backend compiles each op's formula once, with the call's scalars as parameters, and computes it in float64
        // over float64 draws, so that a device's samples are the CPU's up to its double log/tan/exp.
        Map<OpDef, FormulaKernel> samples = new ConcurrentHashMap<>();
        for (OpDef op : List.of(RandomOps.EXPONENTIAL, RandomOps.GEOMETRIC, RandomOps.LOG_NORMAL, RandomOps.CAUCHY)) {
            KernelRegistry.register(type, op.kernel(), (out, in, g) -> contiguous(backend, out, c -> {
                FormulaKernel k = samples.computeIfAbsent(op, x -> KernelRegistry.formulaCompiler(type).compile(RandomOps.sample(op), 1));
                transformed(op.pyName() + "_", backend, k, c, op == RandomOps.LOG_NORMAL, g);
            }));
        }
        KernelRegistry.register(type, RandomOps.RANDPERM_OUT.kernel(), (out, in, g) -> randperm(backend, out, g));
        KernelRegistry.register(type, RandomOps.MULTINOMIAL.kernel(), (out, in, g) -> multinomial(backend, out, in[0], g));
    }

    /**
     * {@code out = sample(d)} for float64 draws d of out's shape, uniform in [0, 1) (normal of mean {@code g[0]} and std
     * {@code g[1]} for log_normal_), by the backend's kernel of the op's formula in float64, with the call's scalars as
     * its parameters. The CPU's kernel writes any dtype; a device's writes its compute dtype, so other dtypes go through
     * float64 scratch, rounded once by the copy.
     */
    private static void transformed(String name, Backend backend, FormulaKernel sample, StridedView out, boolean normal, double[] g) {
        Device device = out.device();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView d = scratch.allocate(device, out.shape(), DType.FLOAT64);
            if (normal) backend.random().normal(d, g[0], g[1], seed(g), firstBlock(g));
            else backend.random().uniform(d, 0, 1, seed(g), firstBlock(g));
            StridedView r = device.isCpu() || out.dtype() == DType.FLOAT64 ? out : scratch.allocate(device, out.shape(), DType.FLOAT64);
            Backends.hold(name, r, d, null);
            try {
                sample.run(device.index(), DType.FLOAT64, r, new StridedView[] {d}, g);
            } finally {
                Backends.drop(r, d, null);
            }
            if (r != out) backend.copy(r, out);
        }
    }

    /**
     * PyTorch 1.13's error for bernoulli's probabilities {@code p} whose element at row-major {@code position} is outside
     * [0, 1] or NaN, naming the shape, dtype and element.
     */
    public static IllegalArgumentException bernoulliRangeError(StridedView p, long position) {
        return new IllegalArgumentException("bernoulli(): Expected p_in >= 0 && p_in <= 1 to be true, but got false (element "
                + Arrays.toString(Shapes.unravel(position, p.shape())) + " of the probabilities of shape " + Shapes.format(p.shape())
                + ", " + p.dtype() + ", is outside [0, 1] or NaN)");
    }

    /** PyTorch's check of bernoulli_'s tensor of probabilities (its CPU kernel's; on a device the draws simply saturate). */
    private static void checkProbabilities(StridedView p, StridedView self) {
        long n = p.numel();
        long[] index = new long[p.shape().length];
        for (long e = 0; e < n; e++) {
            double v = ElementCodec.getDouble(p.dtype(), p.memory(), offsetOf(p, index) * p.dtype().byteSize());
            if (!(v >= 0 && v <= 1)) {
                throw new IllegalArgumentException("bernoulli_: Expected p_in >= 0 && p_in <= 1 to be true, but got false (p = " + v
                        + " at " + Arrays.toString(index) + ", self of shape " + Shapes.format(self.shape()) + ", " + self.dtype() + ")");
            }
            for (int d = index.length - 1; d >= 0 && ++index[d] == p.shape()[d]; d--) index[d] = 0;
        }
    }

    private static long offsetOf(StridedView v, long[] index) {
        long o = v.offset();
        for (int d = 0; d < index.length; d++) o += index[d] * v.strides()[d];
        return o;
    }

    // ------------------------------------------------------------------ randperm

    /**
     * A Fisher-Yates shuffle into {@code out}: in place where out is int64 host memory, else into int64 host scratch then
     * copied (converting the dtype; on a device, one host-to-device copy and no read back).
     */
    private static void randperm(Backend backend, StridedView out, double[] g) {
        long n = out.shape()[0];
        if (out.device().isCpu() && out.dtype() == DType.INT64 && out.isContiguous()) {
            shuffle(out.memory(), out.offset() * Long.BYTES, n, seed(g), firstBlock(g));
            return;
        }
        try (ConvolutionOpKernels.Scratch host = hostScratch()) {
            StridedView perm = host.allocate(Device.cpu(), out.shape(), DType.INT64);
            shuffle(perm.memory(), 0, n, seed(g), firstBlock(g));
            backend.copy(perm, out);
        }
    }

    /** {@code 0..n-1} at byte {@code base} of {@code perm}, shuffled: step i swaps i with j = (64 bits of half of block i/2) mod (i + 1). */
    static void shuffle(MemorySegment perm, long base, long n, long seed, long firstBlock) {
        ValueLayout.OfLong l = ValueLayout.JAVA_LONG_UNALIGNED;
        for (long i = 0; i < n; i++) perm.set(l, base + i * Long.BYTES, i);
        Generator.Bits64 bits = new Generator.Bits64(seed, firstBlock);
        for (long i = n - 1; i > 0; i--) {
            long j = Long.remainderUnsigned(bits.at(i), i + 1);
            long at = base + i * Long.BYTES, to = base + j * Long.BYTES;
            long tmp = perm.get(l, at);
            perm.set(l, at, perm.get(l, to));
            perm.set(l, to, tmp);
        }
    }

    // ------------------------------------------------------------------ multinomial

    /**
     * multinomial's kernel: the weights as float64 and the float64 uniforms drawn on the device (for draws without
     * replacement, {@code log(1 - u)} by the device's own sub and log kernels, as the composition this replaced computed
     * them), side by side in one buffer. A device with its own kernel ({@link RandomKernels#multinomial}: CUDA) draws from
     * that buffer where it lies, with the host's results, and reports bad rows at the next synchronisation: nothing is
     * read back (PyTorch 1.13 synchronises twice, its {@code item()} checks, without replacement or for one sample, and
     * asserts on the device with replacement). Otherwise the buffer comes to the host in one copy (the one
     * synchronisation), the host checks the rows and draws, and on a device the indices go back in one copy.
     */
    private static void multinomial(Backend backend, StridedView out, StridedView probs, double[] g) {
        long k = (long) g[0];
        boolean replacement = g[1] != 0;
        long[] shape = probs.shape();
        boolean matrix = shape.length == 2;
        long rows = matrix ? shape[0] : 1, c = shape[shape.length - 1];
        long drawn = replacement ? rows * k : rows * c;
        Device device = probs.device();
        boolean host = device.isCpu();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend);
             ConvolutionOpKernels.Scratch hostScratch = host ? null : hostScratch()) {
            StridedView buf = scratch.allocate(device, new long[] {rows * c + drawn}, DType.FLOAT64);
            StridedView p = buf.restrided(new long[] {rows, c}, new long[] {c, 1}, 0);
            StridedView u = buf.restrided(new long[] {drawn}, new long[] {1}, rows * c);
            StridedView weights = matrix ? probs : probs.restrided(new long[] {1, c}, new long[] {0, probs.strides()[0]}, probs.offset());
            backend.copy(weights, p);
            backend.random().uniform(u, 0, 1, seed(g), firstBlock(g));
            if (!replacement) {
                pointwise(PointwiseOps.SUB, DType.FLOAT64, u, number(backend, scratch, device, DType.FLOAT64, 1, u.shape()), u);
                unary(PointwiseOps.LOG, u);
            }
            if (!host && drawsOnDevice(backend, scratch, buf, rows, c, k, replacement, shape, out)) return;
            StridedView values = buf;
            if (!host) {
                values = hostScratch.allocate(Device.cpu(), buf.shape(), DType.FLOAT64);
                backend.copy(buf, values);
            }
            boolean direct = host && out.isContiguous();
            StridedView result = direct ? out : (host ? scratch : hostScratch).allocate(Device.cpu(), out.shape(), DType.INT64);
            Sampler sampler = new Sampler(values.memory(), values.offset(), rows, c, shape);
            long base = result.offset();
            for (long r = 0; r < rows; r++) {
                sampler.check(r, !replacement || k == 1);
            }
            for (long r = 0; r < rows; r++) {
                if (replacement) sampler.withReplacement(r, k, rows * c + r * k, result.memory(), base + r * k);
                else sampler.withoutReplacement(r, k, rows * c + r * c, result.memory(), base + r * k);
            }
            if (!direct) backend.copy(result, out);
        }
    }

    /**
     * The chunk length of multinomial's cumulative weights over {@code c} categories (with replacement): up to 1,024
     * categories one chunk (one running sum, in index order); above, at most 256 chunks ({@code multinomial.cu}'s threads
     * a block) of at least 1,024, each summed on its own and offset by the sum of the chunks before it, on every device.
     */
    public static long multinomialScanChunk(long c) {
        return Math.max(1024, (c + 255) / 256);
    }

    /**
     * PyTorch 1.13's error for a bad row {@code r} of multinomial's {@code prob_dist} of {@code shape} (a negative weight, an
     * infinite or NaN one, a sum that is not positive; its fast path's message without replacement or for one sample),
     * naming the shape and row; null for a good row. Also the message of a device's deferred check.
     */
    public static IllegalArgumentException multinomialRowError(long[] shape, long r, boolean negative, boolean nonFinite,
                                                               boolean sumNotPositive, boolean fastPathMessages) {
        String where = " (prob_dist of shape " + Shapes.format(shape) + (shape.length == 2 ? ", row " + r : "") + ")";
        if (fastPathMessages && (negative || nonFinite)) {
            return new IllegalArgumentException("multinomial(): probability tensor contains either `inf`, `nan` or element < 0" + where);
        }
        if (negative) return new IllegalArgumentException("multinomial(): invalid multinomial distribution (encountering probability entry < 0)" + where);
        if (nonFinite) {
            return new IllegalArgumentException("multinomial(): invalid multinomial distribution (encountering probability entry = infinity or NaN)"
                    + where);
        }
        if (sumNotPositive) return new IllegalArgumentException("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)" + where);
        return null;
    }

    /**
     * The draws by the device's own kernel where it has one ({@link RandomKernels#multinomial}: no read back, bad rows
     * reported at the next synchronisation), into {@code out} or a contiguous int64 scratch copied into it.
     */
    private static boolean drawsOnDevice(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView buf, long rows, long c, long k,
                                         boolean replacement, long[] shape, StridedView out) {
        StridedView indices = out.isContiguous() ? out : scratch.allocate(out.device(), out.shape(), DType.INT64);
        if (!backend.random().multinomial(buf, rows, c, k, replacement, shape, indices)) return false;
        if (indices != out) backend.copy(indices, out);
        return true;
    }

    /** Scratch in host memory, for the host side of a kernel on any backend. */
    private static ConvolutionOpKernels.Scratch hostScratch() {
        return new ConvolutionOpKernels.Scratch(Backends.of(Device.cpu()));
    }

    /** multinomial's host side over contiguous float64 weights ({@code rows x c} from element {@code offset}) and draws after them. */
    private static final class Sampler {
        private static final ValueLayout.OfDouble D = ValueLayout.JAVA_DOUBLE_UNALIGNED;
        private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
        private final MemorySegment m;
        private final long offset, rows, c;
        private final long[] shape;
        private double[] cdf;

        Sampler(MemorySegment m, long offset, long rows, long c, long[] shape) {
            this.m = m;
            this.offset = offset;
            this.rows = rows;
            this.c = c;
            this.shape = shape;
        }

        private double at(long element) {
            return m.get(D, (offset + element) * Double.BYTES);
        }

        /** PyTorch 1.13's checks of row {@code r} (its fast path's message without replacement or for one sample), naming the shape. */
        void check(long r, boolean fastPathMessages) {
            boolean negative = false, nonFinite = false;
            double sum = 0;
            for (long j = 0; j < c; j++) {
                double v = at(r * c + j);
                negative |= v < 0;
                nonFinite |= !Double.isFinite(v);
                sum += v;
            }
            IllegalArgumentException e = multinomialRowError(shape, r, negative, nonFinite, !(sum > 0), fastPathMessages);
            if (e != null) throw e;
        }

        /**
         * Category = the count of cumulative weights at or below {@code u * total} (so a zero weight, whose interval is
         * empty, is never drawn), capped at the last positive category against {@code u * total} rounding up to the total.
         */
        void withReplacement(long r, long k, long draws, MemorySegment out, long outAt) {
            if (cdf == null) cdf = new double[(int) c];
            // The cumulative weights in chunks ({@link #multinomialScanChunk}): each chunk's own running sum, then the
            // chunks' offsets in order, so that a device's block forms the same sums with a thread a chunk.
            int chunk = (int) multinomialScanChunk(c);
            double offset = 0;
            for (int from = 0; from < c; from += chunk) {
                int to = (int) Math.min(c, (long) from + chunk);
                double acc = 0;
                for (int j = from; j < to; j++) cdf[j] = acc += at(r * c + j);
                if (from > 0) for (int j = from; j < to; j++) cdf[j] = offset + cdf[j];
                offset = cdf[to - 1];
            }
            double total = cdf[(int) c - 1];
            int lastPositive = 0;
            while (lastPositive < c && cdf[lastPositive] < total) lastPositive++;
            for (long s = 0; s < k; s++) {
                double target = at(draws + s) * total;
                int lo = 0, hi = (int) c; // first index whose cdf exceeds the target
                while (lo < hi) {
                    int mid = (lo + hi) >>> 1;
                    if (cdf[mid] <= target) lo = mid + 1;
                    else hi = mid;
                }
                out.set(L, (outAt + s) * Long.BYTES, Math.min(lo, lastPositive));
            }
        }

        /**
         * The {@code k} largest keys {@code p / -log(1 - u)} in descending order, ties to the lower index; a zero weight's
         * key is -1, so zero categories come after every positive one.
         */
        void withoutReplacement(long r, long k, long logs, MemorySegment out, long outAt) {
            if (cdf == null) cdf = new double[(int) c];
            double[] keys = cdf;
            for (int j = 0; j < c; j++) {
                double p = at(r * c + j);
                keys[j] = p > 0 ? p / -at(logs + j) : -1;
            }
            if (k <= 64) {
                int[] top = new int[(int) k];
                int held = 0;
                for (int j = 0; j < c; j++) {
                    double key = keys[j];
                    if (held == k && !(key > keys[top[held - 1]])) continue;
                    int at = held == k ? held - 1 : held++;
                    while (at > 0 && key > keys[top[at - 1]]) {
                        top[at] = top[at - 1];
                        at--;
                    }
                    top[at] = j;
                }
                for (int s = 0; s < k; s++) out.set(L, (outAt + s) * Long.BYTES, top[s]);
                return;
            }
            Integer[] order = new Integer[(int) c];
            for (int j = 0; j < c; j++) order[j] = j;
            Arrays.sort(order, (a, b) -> keys[a] != keys[b] ? Double.compare(keys[b], keys[a]) : Integer.compare(a, b));
            for (int s = 0; s < k; s++) out.set(L, (outAt + s) * Long.BYTES, order[s]);
        }
    }

    /** Runs a fill on {@code out}, or on a contiguous scratch copied into it (element i of the fill lands at logical index i). */
    private static void contiguous(Backend backend, StridedView out, Consumer<StridedView> fill) {
        if (out.isContiguous()) {
            fill.accept(out);
            return;
        }
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView c = scratch.allocate(out.device(), out.shape(), out.dtype());
            fill.accept(c);
            backend.copy(c, out);
        }
    }

    /** {@code (u < p).to(out.dtype)} for float64 uniforms u: against the tensor {@code probs}, or the number {@code p}. */
    private static void bernoulli(Backend backend, StridedView out, StridedView probs, double p, double[] g) {
        Device device = out.device();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView u = scratch.allocate(device, out.shape(), DType.FLOAT64);
            backend.random().uniform(u, 0, 1, seed(g), firstBlock(g));
            StridedView hit = scratch.allocate(device, out.shape(), DType.BOOL);
            StridedView bound = probs != null ? probs : number(backend, scratch, device, DType.FLOAT64, p, out.shape());
            pointwise(PointwiseOps.LT, DType.FLOAT64, hit, u, bound);
            backend.copy(hit, out);
        }
    }

    /**
     * Dropout as {@code x * ((u < 1 - p).to(dtype) * scale)} for uniforms u of x's dtype, the mask written into
     * {@code mask} (or scratch when the caller reads none); out of training, a copy of x and an all-true mask.
     */
    private static void dropout(Backend backend, StridedView out, StridedView mask, StridedView x, double[] g) {
        double p = g[0];
        if (g[1] == 0) {
            backend.copy(x, out);
            if (mask != null) backend.fill(mask, 1, 1);
            return;
        }
        Device device = out.device();
        DType t = out.dtype();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView u = scratch.allocate(device, out.shape(), t);
            backend.random().uniform(u, 0, 1, seed(g), firstBlock(g));
            StridedView keep = mask != null ? mask : scratch.allocate(device, out.shape(), DType.BOOL);
            pointwise(PointwiseOps.LT, t, keep, u, number(backend, scratch, device, scalarType(t), 1 - p, out.shape()));
            StridedView scale = scaled(backend, scratch, keep, t, p == 1 ? 0 : 1.0 / (1 - p));
            pointwise(PointwiseOps.MUL, t, out, x, scale);
        }
    }

    /** {@code grad * (mask.to(dtype) * scale)}; an infinite scale counts as zero. */
    private static void dropoutBackward(Backend backend, StridedView out, StridedView grad, StridedView mask, double scale) {
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView s = scaled(backend, scratch, mask, out.dtype(), Double.isInfinite(scale) ? 0 : scale);
            pointwise(PointwiseOps.MUL, out.dtype(), out, grad, s);
        }
    }

    /**
     * {@code mask.to(t) * scale} in scratch, in one pass: {@code mask ? scale : 0} with the kept value rounded as that
     * product rounds it ({@code t}'s multiplication computes in float32 for float16/bfloat16, with the number unrounded).
     */
    private static StridedView scaled(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView mask, DType t, double scale) {
        Device device = mask.device();
        StridedView s = scratch.allocate(device, mask.shape(), t);
        double kept = t == DType.FLOAT64 ? scale : (float) scale;
        backend.where(mask, number(backend, scratch, device, t, kept, mask.shape()), number(backend, scratch, device, t, 0, mask.shape()), s);
        return s;
    }

    /**
     * A Java number as a binary op's operand next to a tensor of dtype {@code t}: float32 for float16/bfloat16 (their ops
     * compute in float32 with the number unrounded), else {@code t}, as the front end's wrapped numbers.
     */
    private static DType scalarType(DType t) {
        return t == DType.FLOAT16 || t == DType.BFLOAT16 ? DType.FLOAT32 : t;
    }

    /** {@code value} in {@code dtype} broadcast to {@code shape}: a {@link ScalarCells} cell for the CPU (as its wrapped numbers), else scratch. */
    private static StridedView number(Backend backend, ConvolutionOpKernels.Scratch scratch, Device device, DType dtype, double value,
                                      long[] shape) {
        if (device.isCpu()) {
            MemorySegment seg = ScalarCells.allocate();
            ElementCodec.setDouble(dtype, seg, 0, value);
            return new StridedView(seg, 0, shape, new long[shape.length], dtype, Storage.wrapConstant(seg));
        }
        StridedView v = scratch.allocate(device, new long[0], dtype);
        backend.fill(v, value, (long) value);
        return v.restrided(shape, new long[shape.length], 0);
    }

    /** {@code x = op(x)} in place for a float64 unary pointwise op. */
    private static void unary(OpDef op, StridedView x) {
        pointwise(op, DType.FLOAT64, x, x, null);
    }

    /** {@code out = op(a, b)} by the backend's pointwise kernel computing in {@code compute} (a binary op's alpha is 1). */
    private static void pointwise(OpDef op, DType compute, StridedView out, StridedView a, StridedView b) {
        Device device = out.device();
        Backends.hold(op.pyName(), out, a, b);
        try {
            KernelRegistry.pointwise(op, device.type()).run(device.index(), op.computeType(compute, DType.FLOAT32), out, a, b, 1, 0);
        } finally {
            Backends.drop(out, a, b);
        }
    }
}
