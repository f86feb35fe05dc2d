package org.jtorch.backend;

import java.util.List;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.memory.Allocator;
import org.jtorch.memory.Storage;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.Shapes;

/**
 * A backend whose every kernel call holds a reference on each operand's {@link Storage} until the kernel
 * returns, as a running ATen op holds its operands' storages: a tensor closed (or an allocator cache emptied)
 * by another thread mid-kernel keeps its memory until the kernel is done, and a kernel that starts after the
 * last reference was dropped fails with the closed-tensor error instead of reading freed memory.
 * {@link Backends#of} hands out only such backends, so every kernel, on every device, is covered.
 *
 * <p>Why here: this is the one point every kernel call passes through, and it sees plain tensors. The hold
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
    private final OptimizerKernels optimizers;

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
        optimizers = new Optimizers(b.optimizers());
    }

    // ------------------------------------------------------------------ holding operands

    /**
     * Takes a reference on {@code t}'s storage; throws the closed-tensor error if it was already released.
     * Nothing for null, nor for storages whose memory a release does not free (heap, file mappings).
     */
    static void hold(String op, Tensor t) {
        if (needsHold(t) && !t.storage().tryRetain()) {
            throw new IllegalStateException(op + ": tensor of shape " + Shapes.format(t.shape()) + " and dtype "
                    + t.dtype() + " was used after close()");
        }
    }

    static void drop(Tensor t) {
        if (needsHold(t)) t.storage().release();
    }

    private static boolean needsHold(Tensor t) {
        return t != null && t.storage().ownsMemory();
    }

    /** Whether {@code t} views the same storage as {@code other} (an in-place op's input and output): held once. */
    private static boolean shares(Tensor t, Tensor other) {
        return t != null && other != null && t.storage() == other.storage();
    }

    static void hold(String op, Tensor a, Tensor b) {
        hold(op, a);
        if (shares(b, a)) return;
        try {
            hold(op, b);
        } catch (RuntimeException e) {
            drop(a);
            throw e;
        }
    }

    static void drop(Tensor a, Tensor b) {
        drop(a);
        if (!shares(b, a)) drop(b);
    }

    static void hold(String op, Tensor a, Tensor b, Tensor c) {
        hold(op, a, b);
        if (shares(c, a) || shares(c, b)) return;
        try {
            hold(op, c);
        } catch (RuntimeException e) {
            drop(a, b);
            throw e;
        }
    }

    static void drop(Tensor a, Tensor b, Tensor c) {
        drop(a, b);
        if (!shares(c, a) && !shares(c, b)) drop(c);
    }

    /** Four or more operands (rarer, larger kernels): every non-null one, or none if one was released. */
    static void hold(String op, Tensor... ts) {
        for (int i = 0; i < ts.length; i++) {
            try {
                hold(op, ts[i]);
            } catch (RuntimeException e) {
                for (int j = 0; j < i; j++) drop(ts[j]);
                throw e;
            }
        }
    }

    static void drop(Tensor... ts) {
        for (Tensor t : ts) drop(t);
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
    public void copy(Tensor src, Tensor dst) {
        hold("copy_", src, dst);
        try {
            b.copy(src, dst);
        } finally {
            drop(src, dst);
        }
    }

    @Override
    public void copy(Tensor src, Tensor dst, boolean nonBlocking) {
        hold("copy_", src, dst);
        try {
            b.copy(src, dst, nonBlocking);
        } finally {
            drop(src, dst);
        }
    }

    @Override
    public void fill(Tensor dst, double value, long longValue) {
        hold("fill_", dst);
        try {
            b.fill(dst, value, longValue);
        } finally {
            drop(dst);
        }
    }

    @Override
    public void where(Tensor cond, Tensor a, Tensor bt, Tensor out) {
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
    public OptimizerKernels optimizers() {
        return optimizers;
    }

    // ------------------------------------------------------------------ op families

    private record Reductions(ReductionKernels k) implements ReductionKernels {
        @Override
        public void reduce(ReduceOp op, Tensor in, Tensor out, double p) {
            hold(op.pyName(), in, out);
            try {
                k.reduce(op, in, out, p);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void argReduce(boolean max, Tensor in, Tensor values, Tensor indices, int dim) {
            hold(max ? "max" : "min", in, values, indices);
            try {
                k.argReduce(max, in, values, indices, dim);
            } finally {
                drop(in, values, indices);
            }
        }

        @Override
        public void variance(Tensor in, Tensor out, double correction, boolean sqrt) {
            hold(sqrt ? "std" : "var", in, out);
            try {
                k.variance(in, out, correction, sqrt);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void logsumexp(Tensor in, Tensor out) {
            hold("logsumexp", in, out);
            try {
                k.logsumexp(in, out);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void scan(boolean prod, Tensor in, Tensor out, int dim) {
            hold(prod ? "cumprod" : "cumsum", in, out);
            try {
                k.scan(prod, in, out, dim);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void argsort(Tensor in, Tensor indices, int dim, boolean descending) {
            hold("sort", in, indices);
            try {
                k.argsort(in, indices, dim, descending);
            } finally {
                drop(in, indices);
            }
        }

        @Override
        public void searchsorted(Tensor boundaries, Tensor values, Tensor out, boolean right) {
            hold("searchsorted", boundaries, values, out);
            try {
                k.searchsorted(boundaries, values, out, right);
            } finally {
                drop(boundaries, values, out);
            }
        }

        @Override
        public void softmax(Tensor in, Tensor out, int dim, boolean log) {
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
        public void indexSelect(Tensor self, int dim, Tensor index, Tensor out) {
            hold("index_select", self, index, out);
            try {
                k.indexSelect(self, dim, index, out);
            } finally {
                drop(self, index, out);
            }
        }

        @Override
        public void gather(Tensor self, int dim, Tensor index, Tensor out) {
            hold("gather", self, index, out);
            try {
                k.gather(self, dim, index, out);
            } finally {
                drop(self, index, out);
            }
        }

        @Override
        public void scatter(String op, Tensor self, int dim, Tensor index, Tensor src, boolean accumulate) {
            hold(op, self, index, src);
            try {
                k.scatter(op, self, dim, index, src, accumulate);
            } finally {
                drop(self, index, src);
            }
        }

        @Override
        public void indexAccumulate(String op, Tensor self, int dim, Tensor index, Tensor source, boolean accumulate,
                                    double alpha, boolean wrapNegative) {
            hold(op, self, index, source);
            try {
                k.indexAccumulate(op, self, dim, index, source, accumulate, alpha, wrapNegative);
            } finally {
                drop(self, index, source);
            }
        }

        @Override
        public long countNonzero(Tensor t) {
            hold("count_nonzero", t);
            try {
                return k.countNonzero(t);
            } finally {
                drop(t);
            }
        }

        @Override
        public void nonzero(Tensor t, Tensor out) {
            hold("nonzero", t, out);
            try {
                k.nonzero(t, out);
            } finally {
                drop(t, out);
            }
        }

        @Override
        public void maskedSelect(Tensor self, Tensor mask, Tensor out) {
            hold("masked_select", self, mask, out);
            try {
                k.maskedSelect(self, mask, out);
            } finally {
                drop(self, mask, out);
            }
        }

        @Override
        public void advancedIndex(Tensor src, Tensor[] indices, long[] sizes, long[] strides, Tensor out) {
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
        public void indexPut(Tensor dst, Tensor[] indices, long[] sizes, long[] strides, Tensor values, boolean accumulate) {
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
        public void bmm(Tensor a, Tensor b, Tensor out, double alpha, double beta) {
            hold("bmm", a, b, out);
            try {
                k.bmm(a, b, out, alpha, beta);
            } finally {
                drop(a, b, out);
            }
        }

        @Override
        public void mmWithEpilogue(Tensor a, Tensor b, Tensor out, double alpha, double beta, Epilogue epilogue) {
            hold("bmm", a, b, out);
            try {
                k.mmWithEpilogue(a, b, out, alpha, beta, epilogue);
            } finally {
                drop(a, b, out);
            }
        }
    }

    private record Random(RandomKernels k) implements RandomKernels {
        @Override
        public void uniform(Tensor out, double low, double high, long seed, long firstBlock) {
            hold("uniform_", out);
            try {
                k.uniform(out, low, high, seed, firstBlock);
            } finally {
                drop(out);
            }
        }

        @Override
        public void normal(Tensor out, double mean, double std, long seed, long firstBlock) {
            hold("normal_", out);
            try {
                k.normal(out, mean, std, seed, firstBlock);
            } finally {
                drop(out);
            }
        }

        @Override
        public void randint(Tensor out, long low, long high, long seed, long firstBlock) {
            hold("random_", out);
            try {
                k.randint(out, low, high, seed, firstBlock);
            } finally {
                drop(out);
            }
        }
    }

    private record Convolution(ConvolutionKernels k) implements ConvolutionKernels {
        @Override
        public void conv2d(Tensor input, Tensor weight, Tensor bias, Tensor out, Geometry g) {
            hold("conv2d", input, weight, bias, out);
            try {
                k.conv2d(input, weight, bias, out, g);
            } finally {
                drop(input, weight, bias, out);
            }
        }

        @Override
        public void conv2dBackwardInput(Tensor gradOut, Tensor weight, Tensor gradInput, Geometry g) {
            hold("conv2d_backward", gradOut, weight, gradInput);
            try {
                k.conv2dBackwardInput(gradOut, weight, gradInput, g);
            } finally {
                drop(gradOut, weight, gradInput);
            }
        }

        @Override
        public void conv2dBackwardWeight(Tensor gradOut, Tensor input, Tensor gradWeight, Geometry g) {
            hold("conv2d_backward", gradOut, input, gradWeight);
            try {
                k.conv2dBackwardWeight(gradOut, input, gradWeight, g);
            } finally {
                drop(gradOut, input, gradWeight);
            }
        }

        @Override
        public void conv2dBackwardBias(Tensor gradOut, Tensor gradBias) {
            hold("conv2d_backward", gradOut, gradBias);
            try {
                k.conv2dBackwardBias(gradOut, gradBias);
            } finally {
                drop(gradOut, gradBias);
            }
        }

        @Override
        public void im2col(Tensor input, Tensor col, Geometry g) {
            hold("im2col", input, col);
            try {
                k.im2col(input, col, g);
            } finally {
                drop(input, col);
            }
        }

        @Override
        public void col2im(Tensor col, Tensor out, Geometry g) {
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
        public void maxPool2d(Tensor in, Tensor out, Tensor indices, Pool2d g) {
            hold("max_pool2d", in, out, indices);
            try {
                k.maxPool2d(in, out, indices, g);
            } finally {
                drop(in, out, indices);
            }
        }

        @Override
        public void maxPoolBackward(Tensor gradOut, Tensor indices, Tensor gradIn) {
            hold("max_pool2d_backward", gradOut, indices, gradIn);
            try {
                k.maxPoolBackward(gradOut, indices, gradIn);
            } finally {
                drop(gradOut, indices, gradIn);
            }
        }

        @Override
        public void avgPool2d(Tensor in, Tensor out, Pool2d g, boolean countIncludePad, long divisorOverride) {
            hold("avg_pool2d", in, out);
            try {
                k.avgPool2d(in, out, g, countIncludePad, divisorOverride);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void avgPool2dBackward(Tensor gradOut, Tensor gradIn, Pool2d g, boolean countIncludePad, long divisorOverride) {
            hold("avg_pool2d_backward", gradOut, gradIn);
            try {
                k.avgPool2dBackward(gradOut, gradIn, g, countIncludePad, divisorOverride);
            } finally {
                drop(gradOut, gradIn);
            }
        }

        @Override
        public void adaptiveAvgPool2d(Tensor in, Tensor out) {
            hold("adaptive_avg_pool2d", in, out);
            try {
                k.adaptiveAvgPool2d(in, out);
            } finally {
                drop(in, out);
            }
        }

        @Override
        public void adaptiveAvgPool2dBackward(Tensor gradOut, Tensor gradIn) {
            hold("adaptive_avg_pool2d_backward", gradOut, gradIn);
            try {
                k.adaptiveAvgPool2dBackward(gradOut, gradIn);
            } finally {
                drop(gradOut, gradIn);
            }
        }

        @Override
        public void adaptiveMaxPool2d(Tensor in, Tensor out, Tensor indices) {
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
        public void batchNormStats(Tensor x, long n, long c, long s, Tensor mean, Tensor var) {
            hold("batch_norm", x, mean, var);
            try {
                k.batchNormStats(x, n, c, s, mean, var);
            } finally {
                drop(x, mean, var);
            }
        }

        @Override
        public void batchNormApply(Tensor x, long n, long c, long s, Tensor mean, Tensor invstd, Tensor weight,
                                   Tensor bias, Tensor out) {
            Tensor[] operands = {x, mean, invstd, weight, bias, out};
            hold("batch_norm", operands);
            try {
                k.batchNormApply(x, n, c, s, mean, invstd, weight, bias, out);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void batchNormBackward(Tensor gradOut, Tensor x, long n, long c, long s, Tensor mean, Tensor invstd,
                                      Tensor weight, boolean train, Tensor gradInput, Tensor gradWeight, Tensor gradBias) {
            Tensor[] operands = {gradOut, x, mean, invstd, weight, gradInput, gradWeight, gradBias};
            hold("batch_norm_backward", operands);
            try {
                k.batchNormBackward(gradOut, x, n, c, s, mean, invstd, weight, train, gradInput, gradWeight, gradBias);
            } finally {
                drop(operands);
            }
        }
    }

    private record Recurrent(RecurrentKernels k) implements RecurrentKernels {
        @Override
        public void lstmCellForward(Tensor inputGates, Tensor hiddenGates, Tensor cx, Tensor hy, Tensor cy, Tensor workspace) {
            Tensor[] operands = {inputGates, hiddenGates, cx, hy, cy, workspace};
            hold("lstm_cell", operands);
            try {
                k.lstmCellForward(inputGates, hiddenGates, cx, hy, cy, workspace);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void lstmCellBackward(Tensor gradHy, Tensor gradCy, Tensor cx, Tensor cy, Tensor workspace, Tensor gradGates,
                                     Tensor gradCx) {
            Tensor[] operands = {gradHy, gradCy, cx, cy, workspace, gradGates, gradCx};
            hold("lstm_cell_backward", operands);
            try {
                k.lstmCellBackward(gradHy, gradCy, cx, cy, workspace, gradGates, gradCx);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void gruCellForward(Tensor inputGates, Tensor hiddenGates, Tensor hx, Tensor hy, Tensor workspace) {
            Tensor[] operands = {inputGates, hiddenGates, hx, hy, workspace};
            hold("gru_cell", operands);
            try {
                k.gruCellForward(inputGates, hiddenGates, hx, hy, workspace);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void gruCellBackward(Tensor gradHy, Tensor hx, Tensor workspace, Tensor gradInputGates, Tensor gradHiddenGates,
                                    Tensor gradHx) {
            Tensor[] operands = {gradHy, hx, workspace, gradInputGates, gradHiddenGates, gradHx};
            hold("gru_cell_backward", operands);
            try {
                k.gruCellBackward(gradHy, hx, workspace, gradInputGates, gradHiddenGates, gradHx);
            } finally {
                drop(operands);
            }
        }
    }

    private record Optimizers(OptimizerKernels k) implements OptimizerKernels {
        @Override
        public void sgd(List<Tensor> params, List<Tensor> grads, List<Tensor> momentumBuffers, float negLr,
                        float weightDecay, float momentum, float oneMinusDampening, boolean nesterov, boolean maximize,
                        boolean firstStep) {
            Tensor[] operands = concat(params, grads, momentumBuffers);
            hold("sgd", operands);
            try {
                k.sgd(params, grads, momentumBuffers, negLr, weightDecay, momentum, oneMinusDampening, nesterov,
                        maximize, firstStep);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void adam(List<Tensor> params, List<Tensor> grads, List<Tensor> expAvgs, List<Tensor> expAvgSqs,
                         List<Tensor> maxExpAvgSqs, float paramScale, float weightDecay, float beta1, float oneMinusBeta1,
                         float beta2, float oneMinusBeta2, float bc2Sqrt, float eps, float negStepSize, boolean maximize,
                         boolean amsgrad) {
            Tensor[] operands = concat(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs);
            hold("adam", operands);
            try {
                k.adam(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, paramScale, weightDecay, beta1, oneMinusBeta1,
                        beta2, oneMinusBeta2, bc2Sqrt, eps, negStepSize, maximize, amsgrad);
            } finally {
                drop(operands);
            }
        }

        @Override
        public void unscaleAndCheckFinite(List<Tensor> grads, Tensor foundInf, float invScale) {
            Tensor[] operands = concat(grads, List.of(foundInf));
            hold("unscale_", operands);
            try {
                k.unscaleAndCheckFinite(grads, foundInf, invScale);
            } finally {
                drop(operands);
            }
        }

        /**
         * The tensors of several lists (null lists and null elements allowed) in one array: a snapshot, so that
         * exactly the storages held are dropped.
         */
        @SafeVarargs
        private static Tensor[] concat(List<Tensor>... lists) {
            int n = 0;
            for (List<Tensor> l : lists) if (l != null) n += l.size();
            Tensor[] all = new Tensor[n];
            int i = 0;
            for (List<Tensor> l : lists) {
                if (l != null) for (Tensor t : l) all[i++] = t;
            }
            return all;
        }
    }
}
