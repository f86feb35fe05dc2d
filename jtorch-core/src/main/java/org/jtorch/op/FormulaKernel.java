package org.jtorch.op;

import org.jtorch.types.DType;

/**
 * A backend's kernel for a pointwise formula over any number of inputs: a declared op's formula, or a group of
 * pointwise ops the JIT fused into one formula. {@code out = formula(inputs)} elementwise; every view is of
 * {@code out}'s shape (inputs broadcast with zero strides) and on the backend's device {@code deviceIndex};
 * {@code compute} is the dtype the formula evaluates in; {@code params} are its scalar parameters.
 */
@FunctionalInterface
public interface FormulaKernel {
    void run(int deviceIndex, DType compute, StridedView out, StridedView[] inputs, double[] params);

    /** Whether this kernel implements {@link #runRowSums}: the formula fused into a sum over trailing dimensions. */
    default boolean sumsRows() {
        return false;
    }

    /**
     * {@code out[o] = sum(formula(inputs)[e])} over the elements {@code e} in {@code [o * rowLength, (o + 1) * rowLength)}
     * of the inputs' common shape in row-major order, computed in float32 without storing the formula's values:
     * a pointwise formula fused into a sum over the trailing dimensions (all of them when {@code out} has one element).
     * {@code out} is a contiguous float32 view of {@code numel / rowLength} elements.
     */
    default void runRowSums(int deviceIndex, StridedView out, StridedView[] inputs, long rowLength, double[] params) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse sums");
    }

    /** Whether this kernel implements {@link #runRowSoftmax}: the formula fused into a softmax over rows. */
    default boolean softmaxesRows() {
        return false;
    }

    /**
     * {@code out = softmax(formula(inputs))} (or log-softmax) over each row of {@code rowLength} values: {@code out}
     * and every input are {@code [rows, rowLength]} matrices (inputs broadcast with zero strides), {@code out}
     * contiguous float32. A pointwise producer fused into a softmax over the last dimension: the CPU writes the formula's
     * values into a block of rows of {@code out} and normalises them there while the block is in cache; CUDA evaluates
     * the formula where its row kernel reads the row, never storing the values.
     */
    default void runRowSoftmax(int deviceIndex, StridedView out, StridedView[] inputs, long rowLength, boolean log, double[] params) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse softmax");
    }

    /**
     * Whether {@link #runRowSoftmax} and {@link #runRowSoftmaxBackward} also take views of any rank of at most 8 dimensions
     * instead of {@code [rows, rowLength]} matrices: the last dimension is the row, and the leading dimensions' strides
     * need not merge into one row stride (attention scores {@code [b, h, t, t]} with a broadcast {@code [t, t]} mask), so
     * that one call serves them all. CUDA's kernels index each row through the leading dimensions' own strides; the
     * CPU takes matrices, a slab at a time.
     */
    default boolean softmaxesRowsOfAnyStrides() {
        return false;
    }

    /** Whether this kernel implements {@link #runRowSoftmaxBackward}. */
    default boolean softmaxBackwardsRows() {
        return false;
    }

    /**
     * The backward of {@link #runRowSoftmax} in one pass over blocks of rows: each block's softmax gradient
     * {@code y (g - sum(g y))} (log-softmax: {@code g - exp(y) sum(g)}) from {@code output} {@code y} (contiguous) and
     * {@code gradOut} {@code g} (any strides), kept in cache, goes through each of {@code gradients}, the formula's
     * gradient kernels (inputs: the formula's {@code inputs}, then the gradient), into {@code gradientOuts} (contiguous
     * float32). Every view is a {@code [rows, rowLength]} float32 matrix (inputs broadcast with zero strides); the
     * softmax gradient itself is never stored.
     */
    default void runRowSoftmaxBackward(int deviceIndex, StridedView output, StridedView gradOut, StridedView[] inputs, long rowLength,
                                       boolean log, FormulaKernel[] gradients, StridedView[] gradientOuts) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse softmax's backward");
    }

    /** Whether this kernel implements {@link #runRowLayerNorm}: the formula fused into a layer norm over rows. */
    default boolean layerNormsRows() {
        return false;
    }

    /**
     * {@code out = layer_norm(formula(inputs))} over each row of {@code rowLength} values, with {@code weight} and
     * {@code bias} (contiguous rows of {@code rowLength}, either may be null) and {@code eps}, writing each row's mean and
     * reciprocal standard deviation into {@code mean} and {@code rstd} (contiguous, one element a row) as
     * {@code native_layer_norm} does. {@code out} and every input are {@code [rows, rowLength]} matrices (inputs broadcast
     * with zero strides), all float32, {@code out} contiguous. A pointwise producer fused into a layer norm: the CPU writes
     * the formula's values into a block of rows of {@code out} and normalises them there while the block is in cache; CUDA
     * evaluates the formula where its row kernel reads the row, never storing the values.
     */
    default void runRowLayerNorm(int deviceIndex, StridedView out, StridedView[] inputs, long rowLength, StridedView weight, StridedView bias,
                                 double eps, StridedView mean, StridedView rstd, double[] params) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse layer norm");
    }

    /** Whether this kernel implements {@link #runRowLayerNormKeeping}. */
    default boolean layerNormsRowsKeeping() {
        return false;
    }

    /**
     * {@link #runRowLayerNorm} (or {@link #runRowLayerNormDrawing} where {@code draws} is not null) that also writes the
     * formula's values into {@code values}, a contiguous float32 {@code [rows, rowLength]} matrix: a producer read by the
     * layer norm and by another consumer (a transformer block's residual sum) computed once, written once, and normalised
     * from the block of rows just written.
     */
    default void runRowLayerNormKeeping(int deviceIndex, StridedView values, StridedView out, StridedView[] inputs, long rowLength,
                                        StridedView weight, StridedView bias, double eps, StridedView mean, StridedView rstd, Draws draws) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse layer norm keeping the formula's values");
    }

    /** Whether this kernel implements {@link #runRowLayerNormBackward}. */
    default boolean layerNormBackwardsRows() {
        return false;
    }

    /**
     * The backward of {@link #runRowLayerNorm} without the formula's values stored: each block of rows of the formula
     * is computed again from {@code inputs} (as {@link #runRowLayerNorm} takes them; {@code draws}, where not null, read
     * back from the forward's masks), goes through the layer norm's backward ({@code native_layer_norm_backward}'s
     * values for {@code gradOut}, the saved {@code mean} and {@code rstd}, and {@code weight}), and the block's input
     * gradient through each of {@code gradients}, the formula's gradient kernels (inputs: the formula's inputs, then the
     * gradient, then {@code gradientDraws}' masks), into {@code gradientOuts} (contiguous float32 {@code [rows, rowLength]}).
     * {@code gradInput}, where not null (contiguous float32 {@code [rows, rowLength]}), receives the block's input gradient
     * itself: the gradient of a group input that is the incoming gradient (a residual add's). {@code gradWeight} and
     * {@code gradBias} (either may be null) receive the column sums. {@code gradOut} is contiguous.
     * Returns false, having written nothing, where the backend declines this call's size; the caller then stores the
     * formula's values and runs the layer norm's backward on them.
     */
    default boolean runRowLayerNormBackward(int deviceIndex, StridedView gradOut, StridedView[] inputs, Draws draws, long rowLength,
                                            StridedView mean, StridedView rstd, StridedView weight, StridedView gradInput,
                                            FormulaKernel[] gradients, StridedView[] gradientOuts, Draws gradientDraws, StridedView gradWeight,
                                            StridedView gradBias) {
        throw new UnsupportedOperationException("this backend's formula kernels do not fuse layer norm's backward");
    }

    /**
     * Inputs of a formula that are drawn inside the kernel, not read from memory: dropout's factors. Input
     * {@code inputs[j]} at element {@code e} (row-major in the output's shape) is {@code scales[j]} where {@code u <
     * keepBelow[j]}, else 0, {@code u} the float32 uniform in [0, 1) of word {@code e % 4} of Philox block
     * {@code firstBlocks[j] + e / 4} under {@code seeds[j]}: the values {@code RandomKernels#uniform} writes for a
     * float32 tensor of the output's shape, so the factor is eager dropout's ({@code u < 1 - p}, {@code 1 / (1 - p)}
     * rounded to float32). The formula multiplies by the factor: the comparison and selection stay out of the formula's
     * code (on the CPU a GELU formula with them inlined exceeded C2's inlining budget, and the calls left out boxed their
     * vectors).
     *
     * <p>Where {@code masks} is not null, {@code masks[j]} (a contiguous bool view of the output's shape) receives draw
     * j's keep decisions, 1 where kept: the mask a backward reads ({@link #fromMasks}).
     *
     * <p>{@link #fromMasks} reads such masks back instead of drawing ({@code seeds}, {@code firstBlocks} and
     * {@code keepBelow} null): input {@code inputs[j]} is {@code scales[j]} where {@code masks[j]} is set, else 0
     * (dropout's backward, {@code grad} times it).
     */
    record Draws(int[] inputs, long[] seeds, long[] firstBlocks, float[] keepBelow, float[] scales, StridedView[] masks) {
        public Draws {
            int n = inputs.length;
            boolean drawn = seeds != null && firstBlocks != null && keepBelow != null
                    && seeds.length == n && firstBlocks.length == n && keepBelow.length == n;
            boolean read = seeds == null && firstBlocks == null && keepBelow == null && masks != null;
            if (!(drawn || read) || scales == null || scales.length != n || (masks != null && masks.length != n)) {
                throw new IllegalArgumentException("Draws: " + n + " inputs, " + (seeds == null ? "no" : seeds.length) + " seeds, "
                        + (keepBelow == null ? "no" : keepBelow.length) + " thresholds, " + (scales == null ? "no" : scales.length) + " scales, "
                        + (masks == null ? "no" : masks.length) + " masks");
            }
        }

        /** Masks written by a drawing forward, read back as the factors they stand for. */
        public static Draws fromMasks(int[] inputs, float[] scales, StridedView[] masks) {
            return new Draws(inputs, null, null, null, scales, masks);
        }

        /** Whether the factors are read from saved masks, not drawn. */
        public boolean readsMasks() {
            return seeds == null;
        }

        /** Whether the kernel writes the draws' keep masks. */
        public boolean writesMasks() {
            return seeds != null && masks != null;
        }
    }

    /** Whether this kernel implements {@link #runDrawing}. */
    default boolean drawsInside() {
        return false;
    }

    /** Whether this kernel implements {@link #runRowLayerNormDrawing}. */
    default boolean layerNormsRowsDrawing() {
        return false;
    }

    /**
     * {@link #run} in float32 where the inputs {@code draws} names are drawn in the kernel ({@code inputs[k]} is null
     * there): no draw reaches memory.
     */
    default void runDrawing(int deviceIndex, StridedView out, StridedView[] inputs, Draws draws) {
        throw new UnsupportedOperationException("this backend's formula kernels do not draw random numbers");
    }

    /** {@link #runRowLayerNorm} with {@code draws} as in {@link #runDrawing}. */
    default void runRowLayerNormDrawing(int deviceIndex, StridedView out, StridedView[] inputs, long rowLength, StridedView weight,
                                        StridedView bias, double eps, StridedView mean, StridedView rstd, Draws draws) {
        throw new UnsupportedOperationException("this backend's formula kernels do not draw random numbers");
    }

    /** Compiles formulas into kernels: one per backend ({@link KernelRegistry#formulaCompiler}). */
    @FunctionalInterface
    interface Compiler {
        /** The kernel of {@code formula} (an {@link Expr#isFormula} tree) over {@code inputs} tensor inputs. */
        FormulaKernel compile(Expr formula, int inputs);

        /**
         * Whether one kernel runs {@code formula} over {@code dtype} values at full speed. False where this backend's kernel of a formula this
         * large runs slower than two kernels of its parts (on the CPU: past C2's inlining cutoff, every step boxes its
         * vectors); the JIT then splits the group.
         */
        default boolean fitsOneKernel(Expr formula, org.jtorch.types.DType dtype) {
            return true;
        }

        /** {@code formula}'s size in one kernel, in this backend's units: where the JIT splits a group that does not fit. */
        default int size(Expr formula, org.jtorch.types.DType dtype) {
            return 0;
        }

        /** Whether the kernels this compiles draw inputs inside ({@link FormulaKernel#drawsInside}). */
        default boolean drawsInside() {
            return false;
        }

        /**
         * Whether those kernels also write and read back keep masks ({@link Draws#masks}): a drawing group in a program
         * with autograd saves its masks for its backward.
         */
        default boolean savesMasks() {
            return false;
        }
    }
}
