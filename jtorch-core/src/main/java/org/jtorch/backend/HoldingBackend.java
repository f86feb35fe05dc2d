package org.jtorch.backend;

import org.jtorch.memory.Allocator;
import org.jtorch.memory.Storage;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * A backend whose every kernel call holds a reference on each operand's {@link Storage} until the kernel
 * returns, as a running ATen op holds its operands' storages: a tensor closed (or an allocator cache emptied)
 * by another thread mid-kernel keeps its memory until the kernel is done, and a kernel that starts after the
 * last reference was dropped fails with the closed-tensor error instead of reading freed memory.
 * {@link Backends#of} hands out only such backends, so every kernel, on every device, is covered.
 *
 * <p>Why here: this is the one point every kernel call passes through, and each operand's view carries the
 * storage that owns its memory (a view is taken before the hold: a tensor closed in between fails here). The hold
 * costs one uncontended compare-and-set and one decrement per distinct operand storage (an in-place op's
 * input and output are held once; heap-backed scalars, which no release frees, not at all). It covers a CPU
 * kernel's parallel tasks, since {@code Parallel} returns only when they have all finished. A CUDA kernel has
 * only been enqueued when the call returns; from then on the device's caching allocator makes reuse safe: it
 * is stream-ordered (a freed block is reused on its stream only by later work, on another stream only after
 * an event recorded at the free has completed), {@code emptyCache} waits for those events and {@code cuMemFree}
 * synchronises, and pinned host blocks read by asynchronous copies wait for the copies' events.
 */
final class HoldingBackend implements Backend {
    private final Backend b;
    private final ReductionKernels reductions;
    private final IndexKernels indexing;
    private final LinalgKernels linalg;
    private final RandomKernels random;
    private final ConvolutionKernels convolution;
    private final SpatialKernels spatial;
    private final NormalizationKernels normalization;
    private final RecurrentKernels recurrent;
    private final AttentionKernels attention;

    HoldingBackend(Backend b) {
        this.b = b;
        reductions = new Reductions(b.reductions());
        indexing = new Indexing(b.indexing());
        linalg = new Linalg(b.linalg());
        random = new Random(b.random());
        convolution = new Convolution(b.convolution());
        spatial = new Spatial(b.spatial());
        normalization = new Normalization(b.normalization());
        recurrent = new Recurrent(b.recurrent());
        attention = b.attention() == null ? null : new Attention(b.attention());
    }

    // ------------------------------------------------------------------ holding operands

    /**
     * Takes a reference on each distinct storage of up to three operands (an in-place op's input and output share
     * one: held once; null storages, and those whose memory a release does not free, such as heap and file
     * mappings, need none), without allocating. Returns the position (0, 1, 2) of an operand that cannot be held,
     * having dropped what it took, or -1. {@code xLive} is false for an operand known to be closed already.
     */
    private static int retain(Storage a, boolean aLive, Storage b, boolean bLive, Storage c, boolean cLive) {
        if (!aLive || !retain(a)) return 0;
        boolean bNew = !sharesEarlier(b, a, null);
        if (!bLive || (bNew && !retain(b))) {
            release(a);
            return 1;
        }
        if (!cLive || (!sharesEarlier(c, a, b) && !retain(c))) {
            release(a);
            if (bNew) release(b);
            return 2;
        }
        return -1;
    }

    /** Drops what {@link #retain(Storage, boolean, Storage, boolean, Storage, boolean)} took. */
    private static void release(Storage a, Storage b, Storage c) {
        release(a);
        if (!sharesEarlier(b, a, null)) release(b);
        if (!sharesEarlier(c, a, b)) release(c);
    }

    private static boolean retain(Storage s) {
        return s == null || !s.ownsMemory() || s.tryRetain();
    }

    private static void release(Storage s) {
        if (s != null && s.ownsMemory()) s.release();
    }

    /** Whether {@code s} is the storage of an earlier operand. */
    private static boolean sharesEarlier(Storage s, Storage a, Storage b) {
        return s != null && (s == a || s == b);
    }

    private static IllegalStateException closed(String op, long[] shape, DType dtype) {
        return new IllegalStateException(op + ": tensor of shape " + Shapes.format(shape) + " and dtype " + dtype
                + " was used after close()");
    }

    private static Storage storage(StridedView v) {
        return v == null ? null : v.storage();
    }

    /** A view without memory is of a tensor closed before the view was taken. */
    private static boolean live(StridedView v) {
        return v == null || v.memory() != null;
    }

    /**
     * Holds the storages the views carry (a closed tensor's view has no memory: the closed-tensor error names the op).
     */
    static void hold(String op, StridedView a, StridedView b, StridedView c) {
        int bad = retain(storage(a), live(a), storage(b), live(b), storage(c), live(c));
        if (bad < 0) return;
        StridedView v = bad == 0 ? a : bad == 1 ? b : c;
        throw closed(op, v.shape(), v.dtype());
    }

    static void drop(StridedView a, StridedView b, StridedView c) {
        release(storage(a), storage(b), storage(c));
    }

    static void hold(String op, StridedView a) {
        hold(op, a, null, null);
    }

    static void drop(StridedView a) {
        drop(a, null, null);
    }

    static void hold(String op, StridedView a, StridedView b) {
        hold(op, a, b, null);
    }

    static void drop(StridedView a, StridedView b) {
        drop(a, b, null);
    }

    /** Four or more operands (rarer, larger kernels): every non-null one, or none if one was released. */
    static void hold(String op, StridedView... vs) {
        for (int i = 0; i < vs.length; i++) {
            try {
                hold(op, vs[i]);
            } catch (RuntimeException e) {
                for (int j = 0; j < i; j++) drop(vs[j]);
                throw e;
            }
        }
    }

    static void drop(StridedView... vs) {
        for (StridedView v : vs) drop(v);
    }

    // ------------------------------------------------------------------ Backend

    @Override
    public Device.Type deviceType() {
        return b.deviceType();
    }

    @Override
    public boolean isAvailable() {
        return b.isAvailable();
    }

    @Override
    public String unavailableReason() {
        return b.unavailableReason();
    }

    @Override
    public String describe() {
        return b.describe();
    }

    @Override
    public Allocator allocator(Device device) {
        return b.allocator(device);
    }

    @Override
    public Storage allocate(Device device, long bytes) {
        return b.allocate(device, bytes);
    }

    @Override
    public void copy(StridedView src, StridedView dst) {
        hold("copy_", src, dst);
        try {
            b.copy(src, dst);
        } finally {
            drop(src, dst);
        }
    }

    @Override
    public void copy(StridedView src, StridedView dst, boolean nonBlocking) {
        hold("copy_", src, dst);
        try {
            b.copy(src, dst, nonBlocking);
        } finally {
            drop(src, dst);
        }
    }

    @Override
    public void fill(StridedView dst, double value, long longValue) {
        hold("fill_", dst);
        try {
            b.fill(dst, value, longValue);
        } finally {
            drop(dst);
        }
    }

    @Override
    public void where(StridedView cond, StridedView a, StridedView bt, StridedView out) {
        hold("where", cond, a, bt, out);
        try {
            b.where(cond, a, bt, out);
        } finally {
            drop(cond, a, bt, out);
        }
    }

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

    @Override
    public RecurrentKernels recurrent() {
        return recurrent;
    }

    @Override
    public GraphCapture graphCapture() {
        return b.graphCapture();
    }


    @Override
    public AttentionKernels attention() {
        return attention;
    }

    // ------------------------------------------------------------------ op families

    private record Reductions(ReductionKernels k) implements ReductionKernels {
        @Override
        public void reduce(ReduceOp op, StridedView in, StridedView out, double p) {
            hold(op.pyName(), in, out);
            try {
                k.reduce(op, in, out, p);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void argReduce(boolean max, StridedView in, StridedView values, StridedView indices, int dim) {
            hold(max ? "max" : "min", in, values, indices);
            try {
                k.argReduce(max, in, values, indices, dim);
            } finally {
                drop(in, values, indices);
            }
        }

        @Override
        public void variance(StridedView in, StridedView out, double correction, boolean sqrt) {
            hold(sqrt ? "std" : "var", in, out);
            try {
                k.variance(in, out, correction, sqrt);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void logsumexp(StridedView in, StridedView out) {
            hold("logsumexp", in, out);
            try {
                k.logsumexp(in, out);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void scan(boolean prod, StridedView in, StridedView out, int dim) {
            hold(prod ? "cumprod" : "cumsum", in, out);
            try {
                k.scan(prod, in, out, dim);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void argsort(StridedView in, StridedView indices, int dim, boolean descending) {
            hold("sort", in, indices);
            try {
                k.argsort(in, indices, dim, descending);
            } finally {
                drop(in, indices);
            }
        }

        @Override
        public void searchsorted(StridedView boundaries, StridedView values, StridedView out, boolean right) {
            hold("searchsorted", boundaries, values, out);
            try {
                k.searchsorted(boundaries, values, out, right);
            } finally {
                drop(boundaries, values, out);
            }
        }

        @Override
        public void softmax(StridedView in, StridedView out, int dim, boolean log) {
            hold(log ? "log_softmax" : "softmax", in, out);
            try {
                k.softmax(in, out, dim, log);
            } finally {
                drop(in, out);
            }
        }
    }

    private record Indexing(IndexKernels k) implements IndexKernels {
        @Override
        public void indexSelect(StridedView self, int dim, StridedView index, StridedView out) {
            hold("index_select", self, index, out);
            try {
                k.indexSelect(self, dim, index, out);
            } finally {
                drop(self, index, out);
            }
        }

        @Override
        public void gather(StridedView self, int dim, StridedView index, StridedView out) {
            hold("gather", self, index, out);
            try {
                k.gather(self, dim, index, out);
            } finally {
                drop(self, index, out);
            }
        }

        @Override
        public void scatter(String op, StridedView self, int dim, StridedView index, StridedView src, boolean accumulate) {
            hold(op, self, index, src);
            try {
                k.scatter(op, self, dim, index, src, accumulate);
            } finally {
                drop(self, index, src);
            }
        }

        @Override
        public void indexAccumulate(String op, StridedView self, int dim, StridedView index, StridedView source,
                                    boolean accumulate, double alpha, boolean wrapNegative) {
            hold(op, self, index, source);
            try {
                k.indexAccumulate(op, self, dim, index, source, accumulate, alpha, wrapNegative);
            } finally {
                drop(self, index, source);
            }
        }

        @Override
        public long countNonzero(StridedView t) {
            hold("count_nonzero", t);
            try {
                return k.countNonzero(t);
            } finally {
                drop(t);
            }
        }

        @Override
        public void nonzero(StridedView t, StridedView out) {
            hold("nonzero", t, out);
            try {
                k.nonzero(t, out);
            } finally {
                drop(t, out);
            }
        }

        @Override
        public void maskedSelect(StridedView self, StridedView mask, StridedView out) {
            hold("masked_select", self, mask, out);
            try {
                k.maskedSelect(self, mask, out);
            } finally {
                drop(self, mask, out);
            }
        }

        @Override
        public void advancedIndex(StridedView src, StridedView[] indices, long[] sizes, long[] strides, StridedView out) {
            hold("index", src, out);
            try {
                hold("index", indices);
            } catch (RuntimeException e) {
                drop(src, out);
                throw e;
            }
            try {
                k.advancedIndex(src, indices, sizes, strides, out);
            } finally {
                drop(src, out);
                drop(indices);
            }
        }

        @Override
        public void indexPut(StridedView dst, StridedView[] indices, long[] sizes, long[] strides, StridedView values,
                             boolean accumulate) {
            hold("index_put_", dst, values);
            try {
                hold("index_put_", indices);
            } catch (RuntimeException e) {
                drop(dst, values);
                throw e;
            }
            try {
                k.indexPut(dst, indices, sizes, strides, values, accumulate);
            } finally {
                drop(dst, values);
                drop(indices);
            }
        }
    }

    private record Linalg(LinalgKernels k) implements LinalgKernels {
        @Override
        public void bmm(StridedView a, StridedView b, StridedView out, double alpha, double beta) {
            hold("bmm", a, b, out);
            try {
                k.bmm(a, b, out, alpha, beta);
            } finally {
                drop(a, b, out);
            }
        }

        @Override
        public void mmWithEpilogue(StridedView a, StridedView b, StridedView out, double alpha, double beta, Epilogue epilogue) {
            hold("bmm", a, b, out);
            try {
                k.mmWithEpilogue(a, b, out, alpha, beta, epilogue);
            } finally {
                drop(a, b, out);
            }
        }

        @Override
        public boolean mmBiasActivation(StridedView a, StridedView b, StridedView out, StridedView bias, Activation activation,
                                        StridedView preActivation) {
            hold("linear", a, b, out, bias, preActivation);
            try {
                return k.mmBiasActivation(a, b, out, bias, activation, preActivation);
            } finally {
                drop(a, b, out, bias, preActivation);
            }
        }

        @Override
        public boolean takesBiasActivation(StridedView a, StridedView b, StridedView bias, Activation activation, boolean preActivation) {
            return k.takesBiasActivation(a, b, bias, activation, preActivation);
        }

        /** The packing holds {@code b}; each product holds its operands and {@code b}, which short products read in place. */
        @Override
        public PackedRight packRight(StridedView b) {
            hold("mm", b);
            PackedRight packed;
            try {
                packed = k.packRight(b);
            } finally {
                drop(b);
            }
            if (packed == null) return null;
            return new PackedRight() {
                @Override
                public void multiply(StridedView a, StridedView out, double alpha, double beta) {
                    hold("mm", a, b, out);
                    try {
                        packed.multiply(a, out, alpha, beta);
                    } finally {
                        drop(a, b, out);
                    }
                }

                @Override
                public void close() {
                    packed.close();
                }
            };
        }
    }

    private record Random(RandomKernels k) implements RandomKernels {
        @Override
        public void uniform(StridedView out, double low, double high, long seed, long firstBlock) {
            hold("uniform_", out);
            try {
                k.uniform(out, low, high, seed, firstBlock);
            } finally {
                drop(out);
            }
        }

        @Override
        public void normal(StridedView out, double mean, double std, long seed, long firstBlock) {
            hold("normal_", out);
            try {
                k.normal(out, mean, std, seed, firstBlock);
            } finally {
                drop(out);
            }
        }

        @Override
        public void randint(StridedView out, long low, long high, long seed, long firstBlock) {
            hold("random_", out);
            try {
                k.randint(out, low, high, seed, firstBlock);
            } finally {
                drop(out);
            }
        }

        @Override
        public boolean multinomial(StridedView buffer, long rows, long c, long k, boolean replacement, long[] shape, StridedView out) {
            hold("multinomial", buffer, out);
            try {
                return this.k.multinomial(buffer, rows, c, k, replacement, shape, out);
            } finally {
                drop(buffer, out);
            }
        }
    }

    private record Convolution(ConvolutionKernels k) implements ConvolutionKernels {
        @Override
        public void conv2d(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g) {
            hold("conv2d", input, weight, bias, out);
            try {
                k.conv2d(input, weight, bias, out, g);
            } finally {
                drop(input, weight, bias, out);
            }
        }

        @Override
        public void conv2dWithEpilogue(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g,
                                       Epilogue epilogue) {
            hold("conv2d", input, weight, bias, out);
            try {
                k.conv2dWithEpilogue(input, weight, bias, out, g, epilogue);
            } finally {
                drop(input, weight, bias, out);
            }
        }

        @Override
        public boolean convReadsBf16Input(Geometry g) {
            return k.convReadsBf16Input(g);
        }

        @Override
        public boolean inputGradReadsBf16GradOut(Geometry g) {
            return k.inputGradReadsBf16GradOut(g);
        }

        @Override
        public boolean weightGradReadsBf16(Geometry g) {
            return k.weightGradReadsBf16(g);
        }

        @Override
        public void conv2dBackwardInput(StridedView gradOut, StridedView weight, StridedView gradInput, Geometry g) {
            hold("conv2d_backward", gradOut, weight, gradInput);
            try {
                k.conv2dBackwardInput(gradOut, weight, gradInput, g);
            } finally {
                drop(gradOut, weight, gradInput);
            }
        }

        @Override
        public void conv2dBackwardWeight(StridedView gradOut, StridedView input, StridedView gradWeight, Geometry g) {
            hold("conv2d_backward", gradOut, input, gradWeight);
            try {
                k.conv2dBackwardWeight(gradOut, input, gradWeight, g);
            } finally {
                drop(gradOut, input, gradWeight);
            }
        }

        @Override
        public void conv2dBackwardBias(StridedView gradOut, StridedView gradBias) {
            hold("conv2d_backward", gradOut, gradBias);
            try {
                k.conv2dBackwardBias(gradOut, gradBias);
            } finally {
                drop(gradOut, gradBias);
            }
        }

        @Override
        public void im2col(StridedView input, StridedView col, Geometry g) {
            hold("im2col", input, col);
            try {
                k.im2col(input, col, g);
            } finally {
                drop(input, col);
            }
        }

        @Override
        public void col2im(StridedView col, StridedView out, Geometry g) {
            hold("col2im", col, out);
            try {
                k.col2im(col, out, g);
            } finally {
                drop(col, out);
            }
        }
    }

    private record Spatial(SpatialKernels k) implements SpatialKernels {
        @Override
        public void maxPool2d(StridedView in, StridedView out, StridedView indices, Pool2d g) {
            hold("max_pool2d", in, out, indices);
            try {
                k.maxPool2d(in, out, indices, g);
            } finally {
                drop(in, out, indices);
            }
        }

        @Override
        public void maxPoolBackward(StridedView gradOut, StridedView indices, StridedView gradIn) {
            hold("max_pool2d_backward", gradOut, indices, gradIn);
            try {
                k.maxPoolBackward(gradOut, indices, gradIn);
            } finally {
                drop(gradOut, indices, gradIn);
            }
        }

        @Override
        public void avgPool2d(StridedView in, StridedView out, Pool2d g, boolean countIncludePad, long divisorOverride) {
            hold("avg_pool2d", in, out);
            try {
                k.avgPool2d(in, out, g, countIncludePad, divisorOverride);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void avgPool2dBackward(StridedView gradOut, StridedView gradIn, Pool2d g, boolean countIncludePad,
                                      long divisorOverride) {
            hold("avg_pool2d_backward", gradOut, gradIn);
            try {
                k.avgPool2dBackward(gradOut, gradIn, g, countIncludePad, divisorOverride);
            } finally {
                drop(gradOut, gradIn);
            }
        }

        @Override
        public void adaptiveAvgPool2d(StridedView in, StridedView out) {
            hold("adaptive_avg_pool2d", in, out);
            try {
                k.adaptiveAvgPool2d(in, out);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void adaptiveAvgPool2dBackward(StridedView gradOut, StridedView gradIn) {
            hold("adaptive_avg_pool2d_backward", gradOut, gradIn);
            try {
                k.adaptiveAvgPool2dBackward(gradOut, gradIn);
            } finally {
                drop(gradOut, gradIn);
            }
        }

        @Override
        public void adaptiveMaxPool2d(StridedView in, StridedView out, StridedView indices) {
            hold("adaptive_max_pool2d", in, out, indices);
            try {
                k.adaptiveMaxPool2d(in, out, indices);
            } finally {
                drop(in, out, indices);
            }
        }
    }

    private record Normalization(NormalizationKernels k) implements NormalizationKernels {
        @Override
        public boolean blockMoments(StridedView block, double[] mean, double[] m2) {
            hold("batch_norm", block, null, null);
            try {
                return k.blockMoments(block, mean, m2);
            } finally {
                drop(block, null, null);
            }
        }

        @Override
        public void batchNormStats(StridedView x, long n, long c, long s, StridedView mean, StridedView var) {
            hold("batch_norm", x, mean, var);
            try {
                k.batchNormStats(x, n, c, s, mean, var);
            } finally {
                drop(x, mean, var);
            }
        }

        @Override
        public void batchNormApply(StridedView x, long n, long c, long s, StridedView mean, StridedView invstd,
                                   StridedView weight,
                                   StridedView bias, StridedView out) {
            StridedView[] operands = {x, mean, invstd, weight, bias, out};
            hold("batch_norm", operands);
            try {
                k.batchNormApply(x, n, c, s, mean, invstd, weight, bias, out);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void batchNormBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean,
                                      StridedView invstd, StridedView weight, boolean train, StridedView gradInput,
                                      StridedView gradWeight, StridedView gradBias) {
            StridedView[] operands = {gradOut, x, mean, invstd, weight, gradInput, gradWeight, gradBias};
            hold("batch_norm_backward", operands);
            try {
                k.batchNormBackward(gradOut, x, n, c, s, mean, invstd, weight, train, gradInput, gradWeight, gradBias);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void batchNormGradInput(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean, StridedView coef,
                                       StridedView gradInput) {
            StridedView[] operands = {gradOut, x, mean, coef, gradInput};
            hold("batch_norm_backward_elemt", operands);
            try {
                k.batchNormGradInput(gradOut, x, n, c, s, mean, coef, gradInput);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean fusesLayerNorm() {
            return k.fusesLayerNorm();
        }

        @Override
        public org.jtorch.types.DType layerNormBlockType(org.jtorch.types.DType input, org.jtorch.types.DType statistics) {
            return k.layerNormBlockType(input, statistics);
        }

        @Override
        public boolean batchNormUpdateStats(StridedView mean, StridedView var, StridedView runningMean, StridedView runningVar,
                                            double momentum, double meanAlpha, double varAlpha, double eps, StridedView invstd) {
            StridedView[] operands = {mean, var, runningMean, runningVar, invstd};
            hold("native_batch_norm", operands);
            try {
                return k.batchNormUpdateStats(mean, var, runningMean, runningVar, momentum, meanAlpha, varAlpha, eps, invstd);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean batchNormReluBackward(StridedView gradOut, StridedView x, long n, long c, long s, StridedView mean,
                                             StridedView invstd, StridedView weight, StridedView bias, StridedView gradInput,
                                             StridedView gradWeight, StridedView gradBias) {
            StridedView[] operands = {gradOut, x, mean, invstd, weight, bias, gradInput, gradWeight, gradBias};
            hold("batch_norm_backward", operands);
            try {
                return k.batchNormReluBackward(gradOut, x, n, c, s, mean, invstd, weight, bias, gradInput, gradWeight, gradBias);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean batchNormAddReluBackward(StridedView gradOut, StridedView x, StridedView residual, long n, long c, long s,
                                                StridedView mean, StridedView invstd, StridedView weight, StridedView bias,
                                                StridedView masked, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
            StridedView[] operands = {gradOut, x, residual, mean, invstd, weight, bias, masked, gradInput, gradWeight, gradBias};
            hold("batch_norm_backward", operands);
            try {
                return k.batchNormAddReluBackward(gradOut, x, residual, n, c, s, mean, invstd, weight, bias, masked, gradInput, gradWeight,
                        gradBias);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean layerNorm(StridedView x, long rows, long cols, StridedView weight, StridedView bias, double eps,
                                 StridedView out, StridedView mean, StridedView rstd) {
            StridedView[] operands = {x, weight, bias, out, mean, rstd};
            hold("layer_norm", operands);
            try {
                return k.layerNorm(x, rows, cols, weight, bias, eps, out, mean, rstd);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean layerNormBackward(StridedView gradOut, StridedView x, long rows, long cols, StridedView mean,
                                         StridedView rstd, StridedView weight, StridedView gradInput, StridedView gradWeight,
                                         StridedView gradBias) {
            StridedView[] operands = {gradOut, x, mean, rstd, weight, gradInput, gradWeight, gradBias};
            hold("layer_norm_backward", operands);
            try {
                return k.layerNormBackward(gradOut, x, rows, cols, mean, rstd, weight, gradInput, gradWeight, gradBias);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean syncBatchNormGather(StridedView mean, StridedView invstd, StridedView counts, StridedView runningMean,
                                           StridedView runningVar, double momentum, double eps, StridedView meanOut, StridedView invstdOut) {
            StridedView[] operands = {mean, invstd, counts, runningMean, runningVar, meanOut, invstdOut};
            hold("batch_norm_gather_stats_with_counts", operands);
            try {
                return k.syncBatchNormGather(mean, invstd, counts, runningMean, runningVar, momentum, eps, meanOut, invstdOut);
            } finally {
                drop(operands);
            }
        }

        @Override
        public boolean syncBatchNormCoefficients(StridedView invstd, StridedView weight, StridedView sumDy, StridedView sumDyXmu,
                                                 StridedView counts, StridedView coef) {
            StridedView[] operands = {invstd, weight, sumDy, sumDyXmu, counts, coef};
            hold("batch_norm_backward_elemt", operands);
            try {
                return k.syncBatchNormCoefficients(invstd, weight, sumDy, sumDyXmu, counts, coef);
            } finally {
                drop(operands);
            }
        }
    }

    private record Attention(AttentionKernels k) implements AttentionKernels {
        @Override
        public void forward(StridedView q, StridedView kk, StridedView v, StridedView mask, boolean causal, double scale,
                            StridedView dropoutScale, StridedView out, StridedView logsumexp) {
            StridedView[] operands = {q, kk, v, mask, dropoutScale, out, logsumexp};
            hold("scaled_dot_product_attention", operands);
            try {
                k.forward(q, kk, v, mask, causal, scale, dropoutScale, out, logsumexp);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void backward(StridedView gradOut, StridedView q, StridedView kk, StridedView v, StridedView mask, boolean causal,
                             double scale, StridedView dropoutScale, StridedView out, StridedView logsumexp, StridedView gradQ,
                             StridedView gradK, StridedView gradV) {
            StridedView[] operands = {gradOut, q, kk, v, mask, dropoutScale, out, logsumexp, gradQ, gradK, gradV};
            hold("scaled_dot_product_attention_backward", operands);
            try {
                k.backward(gradOut, q, kk, v, mask, causal, scale, dropoutScale, out, logsumexp, gradQ, gradK, gradV);
            } finally {
                drop(operands);
            }
        }
    }

    private record Recurrent(RecurrentKernels k) implements RecurrentKernels {
        @Override
        public void lstmCellForward(StridedView inputGates, StridedView hiddenGates, StridedView cx, StridedView hy,
                                    StridedView cy, StridedView workspace) {
            StridedView[] operands = {inputGates, hiddenGates, cx, hy, cy, workspace};
            hold("lstm_cell", operands);
            try {
                k.lstmCellForward(inputGates, hiddenGates, cx, hy, cy, workspace);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void lstmCellBackward(StridedView gradHy, StridedView gradCy, StridedView cx, StridedView cy,
                                     StridedView workspace, StridedView gradGates,
                                     StridedView gradCx) {
            StridedView[] operands = {gradHy, gradCy, cx, cy, workspace, gradGates, gradCx};
            hold("lstm_cell_backward", operands);
            try {
                k.lstmCellBackward(gradHy, gradCy, cx, cy, workspace, gradGates, gradCx);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void gruCellForward(StridedView inputGates, StridedView hiddenGates, StridedView hx, StridedView hy,
                                   StridedView workspace) {
            StridedView[] operands = {inputGates, hiddenGates, hx, hy, workspace};
            hold("gru_cell", operands);
            try {
                k.gruCellForward(inputGates, hiddenGates, hx, hy, workspace);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void gruCellBackward(StridedView gradHy, StridedView hx, StridedView workspace, StridedView gradInputGates,
                                    StridedView gradHiddenGates,
                                    StridedView gradHx) {
            StridedView[] operands = {gradHy, hx, workspace, gradInputGates, gradHiddenGates, gradHx};
            hold("gru_cell_backward", operands);
            try {
                k.gruCellBackward(gradHy, hx, workspace, gradInputGates, gradHiddenGates, gradHx);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void forBatchBlocks(long batch, long work, BatchBlock block) {
            k.forBatchBlocks(batch, work, block);
        }
    }
}
