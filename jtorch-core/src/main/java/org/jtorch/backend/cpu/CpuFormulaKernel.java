package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import org.jtorch.op.Expr;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU kernel of a pointwise formula over any number of inputs. Rows whose inputs are contiguous or broadcast run
 * a generated Vector API loop ({@link PointwiseCodegen}): float32, bfloat16 and float16 rows in float lanes (halves
 * widened on load, rounded on store), float64 rows in double lanes, int64/int32/int16/int8/uint8 rows in integer
 * lanes of their width (wrapping around as PyTorch's kernels; where narrow lanes would not store what the long
 * reference stores, see {@link PointwiseCodegen#integerForm}, or a parameter does not fit them, the reference
 * serves), into a row of the compute dtype or of bool. Everything else (bool compute, mixed input dtypes in integer
 * compute, strided rows, functions without a vector form such as integer division, which raises on zero) runs the
 * reference: a block at a time through double buffers (floating compute, inputs rounded to the compute dtype first)
 * or long buffers (integer compute).
 */
final class CpuFormulaKernel implements FormulaKernel {
    private final Expr formula;
    private final int inputs;
    private final boolean vectorizable;
    private final boolean vectorizableF64;
    /** Whether the formula calls erf or GELU (or its derivative), whose double vector form is dear for a short row. */
    private final boolean erfInFormula;
    /** By {@link PointwiseCodegen.Compute} ordinal: the formula's form in those integer lanes, null where not generated. */
    private final PointwiseCodegen.IntegerForm[] integerForms;
    private final Expr.ArrayFormula reference;
    /** The reference a block at a time (floating and integer compute). */
    private final BlockFormula blocks;
    /** Generated float32 kernels by broadcast pattern (bit k: input k broadcast along the row). */
    private final PointwiseCodegen.RowKernel[] generated;
    /** Generated kernels of the other layouts, by {@link #layoutCode}; the last one used first. */
    private final java.util.concurrent.ConcurrentHashMap<Long, PointwiseCodegen.RowKernel> otherLayouts = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile Generated lastOther;

    private record Generated(long code, PointwiseCodegen.RowKernel kernel) {}

    CpuFormulaKernel(Expr formula, int inputs) {
        if (!formula.isFormula()) throw new IllegalArgumentException(formula + " is not a pointwise formula");
        this.formula = formula;
        this.inputs = inputs;
        this.vectorizable = inputs <= 16 && PointwiseCodegen.supports(formula);
        this.vectorizableF64 = inputs <= MAX_LAID_OUT && PointwiseCodegen.supports(formula, true);
        this.erfInFormula = calls(formula, org.jtorch.op.Fn.ERF) || calls(formula, org.jtorch.op.Fn.GELU)
                || calls(formula, org.jtorch.op.Fn.GELU_BACKWARD);
        this.integerForms = new PointwiseCodegen.IntegerForm[PointwiseCodegen.Compute.values().length];
        for (PointwiseCodegen.Compute c : PointwiseCodegen.Compute.values()) {
            if (c.integral()) integerForms[c.ordinal()] = PointwiseCodegen.integerForm(formula, c);
        }
        this.reference = formula.compileArrays();
        this.blocks = new BlockFormula(formula, inputs);
        this.generated = new PointwiseCodegen.RowKernel[vectorizable ? 1 << inputs : 0];
    }

    @Override
    public void run(int deviceIndex, DType compute, StridedView out, StridedView[] in, double[] params) {
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        StridedView[] operands = new StridedView[inputs + 1];
        operands[0] = out;
        System.arraycopy(in, 0, operands, 1, inputs);
        ElementwiseIteration it = new ElementwiseIteration(operands);
        if (it.numel == 0) return;
        MemorySegment[] segs = new MemorySegment[inputs + 1];
        for (int k = 0; k <= inputs; k++) segs[k] = operands[k].memory();
        PointwiseCodegen.RowKernel k = vectorKernel(it, compute, operands, params);
        if (k != null) {
            Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> it.forEachRow(begin, end, (off, len) -> k.row(segs, off, len, params)));
        } else if (compute.isFloatingPoint()) {
            floating(it, segs, operands, compute, params);
        } else {
            integral(it, segs, operands, params);
        }
    }

    @Override
    public boolean sumsRows() {
        return true;
    }

    /**
     * Each output's row is computed a block at a time into L1-resident scratch (the generated loop) or a double buffer
     * (the reference), and summed from there as the float32 reductions sum ({@link ReductionF32}): the formula's values
     * never reach memory. Outputs are split over threads whole, so results do not depend on the thread count.
     */
    @Override
    public void runRowSums(int deviceIndex, StridedView out, StridedView[] in, long rowLength, double[] params) {
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        if (out.dtype() != DType.FLOAT32 || !out.isContiguous()) {
            throw new IllegalArgumentException(formula + ": row sums go to a contiguous float32 output, got " + out.dtype());
        }
        long[] shape = in.length > 0 ? in[0].shape() : new long[0];
        // Operand 0 stands for the formula's values: contiguous over the inputs' shape, never read or written.
        StridedView[] operands = new StridedView[inputs + 1];
        operands[0] = new StridedView(null, 0, shape, Shapes.contiguousStrides(shape), DType.FLOAT32);
        System.arraycopy(in, 0, operands, 1, inputs);
        ElementwiseIteration it = new ElementwiseIteration(operands);
        MemorySegment os = out.memory();
        long outs = Shapes.numel(out.shape());
        if (rowLength == 0) {
            for (long o = 0; o < outs; o++) os.set(ElementIO.F32, 4 * (out.offset() + o), 0f);
            return;
        }
        MemorySegment[] segs = new MemorySegment[inputs + 1];
        for (int k = 1; k <= inputs; k++) segs[k] = operands[k].memory();
        int broadcast = vectorPattern(it, DType.FLOAT32, operands);
        PointwiseCodegen.RowKernel k = broadcast >= 0 ? generated(broadcast) : null;
        // Rows split into fixed chunks, so that one long row (a full sum) uses every thread; each chunk's partial sum is
        // computed by one task and the partials of a row are added in order: results do not depend on the thread count.
        long chunks = (rowLength + ROW_CHUNK - 1) / ROW_CHUNK;
        double[] partial = new double[Math.toIntExact(outs * chunks)];
        Parallel.forRange(outs * chunks, Math.max(1, ElementwiseKernels.GRAIN / Math.min(rowLength, ROW_CHUNK)), (begin, end) -> {
            MemorySegment scratch = k != null ? ROW_SCRATCH.get() : null;
            MemorySegment[] rowSegs = segs.clone();
            rowSegs[0] = scratch;
            long[] blockOffs = new long[inputs + 1];
            double[][] buf = k == null ? new double[inputs][ROW_BLOCK] : null;
            double[] x = new double[inputs];
            for (long task = begin; task < end; task++) {
                long o = task / chunks;
                long from = o * rowLength + (task % chunks) * ROW_CHUNK;
                long to = Math.min((o + 1) * rowLength, from + ROW_CHUNK);
                double[] total = {0};
                it.forEachRow(from, to, (off, len) -> {
                    for (long done = 0; done < len; done += ROW_BLOCK) {
                        int n = (int) Math.min(ROW_BLOCK, len - done);
                        if (k != null) {
                            for (int q = 1; q <= inputs; q++) blockOffs[q] = off[q] + done * it.innerByteStride(q);
                            k.row(rowSegs, blockOffs, n, params);
                            total[0] += ReductionF32.sum(scratch, 0, n, ReductionF32.Term.VALUE);
                        } else {
                            for (int q = 1; q <= inputs; q++) {
                                long stride = it.innerByteStride(q);
                                ElementIO.load(operands[q].dtype(), segs[q], off[q] + done * stride, stride, n, buf[q - 1]);
                            }
                            double sum = 0;
                            for (int e = 0; e < n; e++) {
                                for (int q = 0; q < inputs; q++) x[q] = (float) buf[q][e];
                                sum += (float) reference.eval(x, params);
                            }
                            total[0] += sum;
                        }
                    }
                });
                partial[(int) task] = total[0];
            }
        });
        for (long o = 0; o < outs; o++) {
            double sum = 0;
            for (long c = 0; c < chunks; c++) sum += partial[(int) (o * chunks + c)];
            os.set(ElementIO.F32, 4 * (out.offset() + o), (float) sum);
        }
    }

    @Override
    public boolean softmaxesRows() {
        return true;
    }

    /**
     * Blocks of whole rows (about {@link #SOFTMAX_BLOCK} values) are computed into {@code out} and normalised in place
     * right after, each by one thread.
     */
    @Override
    public void runRowSoftmax(int deviceIndex, StridedView out, StridedView[] in, long rowLength, boolean log, double[] params) {
        MemorySegment os = out.memory();
        normalisedRowBlocks("a softmax", deviceIndex, out, in, rowLength, params, null, (r0, r1) -> {
            for (long r = r0; r < r1; r++) {
                long at = 4 * (out.offset() + r * rowLength);
                SoftmaxF32.row(os, at, os, at, (int) rowLength, log);
            }
        });
    }

    @Override
    public boolean softmaxBackwardsRows() {
        return true;
    }

    /**
     * Blocks of whole rows (about {@link #SOFTMAX_BLOCK} values), each by one thread: the block's softmax gradient into
     * the thread's scratch ({@link SoftmaxBackwardF32#row}, or {@link LogSoftmaxBackward#rowF32}: eager's log-softmax
     * backward row), then each gradient kernel over the block while the scratch is in cache.
     */
    @Override
    public void runRowSoftmaxBackward(int deviceIndex, StridedView output, StridedView gradOut, StridedView[] in, long rowLength, boolean log,
                                      FormulaKernel[] gradients, StridedView[] gradientOuts) {
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        if (gradientOuts.length != gradients.length) {
            throw new IllegalArgumentException(formula + ": " + gradients.length + " gradient kernels, " + gradientOuts.length + " outputs");
        }
        CpuFormulaKernel[] kernels = gradientKernels(gradients, "a fused softmax's backward");
        checkSoftmaxRows(output, rowLength, true);
        checkSoftmaxRows(gradOut, rowLength, false);
        for (StridedView v : gradientOuts) checkSoftmaxRows(v, rowLength, true);
        long rows = output.shape()[0];
        if (rows == 0 || rowLength == 0) return;
        int n = (int) rowLength;
        long block = Math.max(1, SOFTMAX_BLOCK / rowLength);
        long[] blockStrides = {rowLength, 1};
        MemorySegment ys = output.memory(), gs = gradOut.memory();
        long gRowStride = gradOut.strides()[0], gColStride = gradOut.strides()[1];
        Parallel.forRange(rows, Math.max(1, ElementwiseKernels.GRAIN / rowLength), (begin, end) -> {
            MemorySegment scratch = softmaxScratch(block * rowLength);
            StridedView[] gradIn = new StridedView[inputs + 1];
            for (long r0 = begin; r0 < end; r0 += block) {
                long r1 = Math.min(end, r0 + block);
                for (long r = r0; r < r1; r++) {
                    long so = 4 * (r - r0) * rowLength, yo = 4 * (output.offset() + r * rowLength);
                    MemorySegment g = gs;
                    long go = 4 * (gradOut.offset() + r * gRowStride);
                    if (gColStride != 1) {
                        // A broadcast or strided gradient (sum's backward expands one value) is gathered into the scratch first.
                        if (gColStride == 0) SpatialF32.fill(scratch, so / 4, n, gs.get(ElementIO.F32, go));
                        else for (int c = 0; c < n; c++) scratch.set(ElementIO.F32, so + 4L * c, gs.get(ElementIO.F32, go + 4L * c * gColStride));
                        g = scratch;
                        go = so;
                    }
                    if (log) LogSoftmaxBackward.rowF32(g, go, ys, yo, scratch, so, n);
                    else SoftmaxBackwardF32.row(g, go, ys, yo, scratch, so, n);
                }
                for (int k = 0; k < inputs; k++) gradIn[k] = rowsOf(in[k], r0, r1);
                gradIn[inputs] = new StridedView(scratch, 0, new long[] {r1 - r0, rowLength}, blockStrides, DType.FLOAT32);
                for (int k = 0; k < kernels.length; k++) kernels[k].run(deviceIndex, DType.FLOAT32, rowsOf(gradientOuts[k], r0, r1), gradIn, NO_PARAMS);
            }
        });
    }

    /** {@code gradients} as this backend's kernels of this formula's inputs and the gradient, for {@code what}. */
    private CpuFormulaKernel[] gradientKernels(FormulaKernel[] gradients, String what) {
        CpuFormulaKernel[] kernels = new CpuFormulaKernel[gradients.length];
        for (int k = 0; k < kernels.length; k++) {
            if (!(gradients[k] instanceof CpuFormulaKernel c) || c.inputs != inputs + 1) {
                throw new IllegalArgumentException(formula + ": " + what + " takes this backend's gradient kernels of " + (inputs + 1)
                        + " inputs, got " + gradients[k]);
            }
            kernels[k] = c;
        }
        return kernels;
    }

    /** A {@code [rows, rowLength]} float32 matrix, contiguous where {@code contiguous}, for a fused softmax's backward. */
    private void checkSoftmaxRows(StridedView v, long rowLength, boolean contiguous) {
        if (v.dtype() != DType.FLOAT32 || v.shape().length != 2 || v.shape()[1] != rowLength || rowLength > Integer.MAX_VALUE
                || contiguous && !v.isContiguous()) {
            throw new IllegalArgumentException(formula + ": a fused softmax's backward takes " + (contiguous ? "contiguous " : "")
                    + "float32 [rows, " + rowLength + "] matrices, got " + v.dtype() + Shapes.format(v.shape()));
        }
    }

    /** Per-thread off-heap float32 scratch for a fused softmax backward's block of rows, grown as needed and kept. */
    private static final ThreadLocal<MemorySegment[]> SOFTMAX_SCRATCH = ThreadLocal.withInitial(() -> new MemorySegment[1]);

    private static MemorySegment softmaxScratch(long values) {
        MemorySegment[] held = SOFTMAX_SCRATCH.get();
        if (held[0] == null || held[0].byteSize() < 4 * values) held[0] = java.lang.foreign.Arena.ofAuto().allocate(4 * values, 64);
        return held[0];
    }

    @Override
    public boolean layerNormsRows() {
        return true;
    }

    /**
     * As {@link #runRowSoftmax}, normalised by the layer norm's own row kernel ({@link CpuLayerNormKernels#forwardRows}),
     * so the values and statistics are eager's.
     */
    @Override
    public void runRowLayerNorm(int deviceIndex, StridedView out, StridedView[] in, long rowLength, StridedView weight, StridedView bias,
                                double eps, StridedView mean, StridedView rstd, double[] params) {
        checkLayerNormOperands(weight, bias, mean, rstd);
        normalisedRowBlocks("a layer norm", deviceIndex, out, in, rowLength, params, null,
                (r0, r1) -> CpuLayerNormKernels.forwardRows(out, rowLength, weight, bias, eps, out, mean, rstd, r0, r1));
    }

    @Override
    public boolean layerNormsRowsKeeping() {
        return true;
    }

    /** The formula's rows written into {@code values}, then normalised from there into {@code out} while in cache. */
    @Override
    public void runRowLayerNormKeeping(int deviceIndex, StridedView values, StridedView out, StridedView[] in, long rowLength, StridedView weight,
                                       StridedView bias, double eps, StridedView mean, StridedView rstd, Draws draws) {
        checkLayerNormOperands(out, weight, bias, mean, rstd);
        if (!java.util.Arrays.equals(out.shape(), values.shape())) {
            throw new IllegalArgumentException(formula + ": a fused layer norm keeping its values takes output and values of one shape, got "
                    + Shapes.format(out.shape()) + " and " + Shapes.format(values.shape()));
        }
        normalisedRowBlocks("a layer norm", deviceIndex, values, in, rowLength, NO_PARAMS, draws,
                (r0, r1) -> CpuLayerNormKernels.forwardRows(values, rowLength, weight, bias, eps, out, mean, rstd, r0, r1));
    }

    @Override
    public boolean layerNormBackwardsRows() {
        return true;
    }

    /**
     * Parts of rows as {@link CpuLayerNormKernels#backwardProduced} splits them: the formula's rows into its scratch
     * (this kernel's loop, the masks read back), the layer norm's backward from there, and each gradient kernel over the
     * part's input gradient while it is in L2.
     */
    @Override
    public boolean runRowLayerNormBackward(int deviceIndex, StridedView gradOut, StridedView[] in, Draws draws, long rowLength,
                                           StridedView mean, StridedView rstd, StridedView weight, StridedView gradInput,
                                           FormulaKernel[] gradients, StridedView[] gradientOuts, Draws gradientDraws, StridedView gradWeight,
                                           StridedView gradBias) {
        checkLayerNormOperands(mean, rstd, weight, gradInput, gradWeight, gradBias);
        checkLayerNormOperands(gradientOuts);
        long[] gradStrides = gradOut.strides();
        if (gradOut.dtype() != DType.FLOAT32 || gradOut.shape().length != 2 || gradStrides[1] != 1
                || (gradStrides[0] != 0 && gradStrides[0] != gradOut.shape()[1])) {
            throw new IllegalArgumentException(formula + ": a fused layer norm's backward reads float32 [rows, cols] gradient rows, contiguous or one"
                    + " row for all, got " + gradOut.dtype() + Shapes.format(gradOut.shape()) + " with strides " + java.util.Arrays.toString(gradStrides));
        }
        // This kernel's inputs are the group's, then the drawn factors (null in {@code in}); its gradient kernels' are the
        // group's, the incoming gradient, then the factors.
        int drawn = draws == null ? 0 : draws.inputs().length, group = inputs - drawn;
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        CpuFormulaKernel[] kernels = gradientKernels(gradients, "a fused layer norm's backward");
        long rows = gradOut.shape()[0];
        if (rows == 0 || rowLength == 0) return true;
        long[] blockStrides = {rowLength, 1};
        return CpuLayerNormKernels.backwardProduced(gradOut, rows, rowLength, mean, rstd, weight, (r0, r1, xs) -> {
            StridedView x = new StridedView(xs, 0, new long[] {r1 - r0, rowLength}, blockStrides, DType.FLOAT32);
            StridedView[] rowsIn = new StridedView[inputs];
            for (int k = 0; k < group; k++) rowsIn[k] = rowsOf(in[k], r0, r1);
            if (draws != null) runDrawing(x, rowsIn, draws, r0 * rowLength);
            else run(deviceIndex, DType.FLOAT32, x, rowsIn, NO_PARAMS);
        }, gradInput, (r0, r1, ds, offset) -> {
            StridedView[] gradIn = new StridedView[inputs + 1];
            for (int k = 0; k < group; k++) gradIn[k] = rowsOf(in[k], r0, r1);
            gradIn[group] = new StridedView(ds, offset / 4, new long[] {r1 - r0, rowLength}, blockStrides, DType.FLOAT32);
            for (int k = 0; k < kernels.length; k++) {
                StridedView out = rowsOf(gradientOuts[k], r0, r1);
                if (gradientDraws != null) kernels[k].runDrawing(out, gradIn, gradientDraws, r0 * rowLength);
                else kernels[k].run(deviceIndex, DType.FLOAT32, out, gradIn, NO_PARAMS);
            }
        }, gradWeight, gradBias);
    }

    @Override
    public boolean drawsInside() {
        return true;
    }

    @Override
    public boolean layerNormsRowsDrawing() {
        return true;
    }

    @Override
    public void runDrawing(int deviceIndex, StridedView out, StridedView[] in, Draws draws) {
        runDrawing(out, in, draws, 0);
    }

    @Override
    public void runRowLayerNormDrawing(int deviceIndex, StridedView out, StridedView[] in, long rowLength, StridedView weight, StridedView bias,
                                       double eps, StridedView mean, StridedView rstd, Draws draws) {
        checkLayerNormOperands(weight, bias, mean, rstd);
        normalisedRowBlocks("a layer norm", deviceIndex, out, in, rowLength, NO_PARAMS, draws,
                (r0, r1) -> CpuLayerNormKernels.forwardRows(out, rowLength, weight, bias, eps, out, mean, rstd, r0, r1));
    }

    private static final double[] NO_PARAMS = new double[0];

    /**
     * {@link #runDrawing} for an output whose element 0 is element {@code firstIndex} of the draws' row-major order (a
     * block of rows of a fused layer norm). Each block of a row gets its dropout factors into per-thread scratch
     * (L1-resident, as {@link #runRowSums}'s values): drawn and compared there, the keep mask written where asked, or read
     * back from a saved mask; the generated loop reads the scratch as a contiguous input, so the draws never reach memory.
     * A drawn input is iterated as a virtual contiguous operand whose byte offsets give each element's index.
     */
    private void runDrawing(StridedView out, StridedView[] in, Draws draws, long firstIndex) {
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        if (out.dtype() != DType.FLOAT32) throw new IllegalArgumentException(formula + ": draws go to a float32 output, got " + out.dtype());
        long[] shape = out.shape();
        int[] drawOf = new int[inputs];
        java.util.Arrays.fill(drawOf, -1);
        for (int j = 0; j < draws.inputs().length; j++) drawOf[draws.inputs()[j]] = j;
        StridedView[] operands = new StridedView[inputs + 1];
        operands[0] = out;
        for (int k = 0; k < inputs; k++) {
            operands[k + 1] = drawOf[k] >= 0 ? new StridedView(null, firstIndex, shape, Shapes.contiguousStrides(shape), DType.FLOAT32) : in[k];
            if (operands[k + 1] == null) throw new IllegalArgumentException(formula + ": input " + k + " is neither given nor drawn");
        }
        ElementwiseIteration it = new ElementwiseIteration(operands);
        if (it.numel == 0) return;
        MemorySegment[] segs = new MemorySegment[inputs + 1];
        for (int k = 0; k <= inputs; k++) segs[k] = operands[k].memory();
        int pattern = vectorPattern(it, DType.FLOAT32, operands);
        PointwiseCodegen.RowKernel k = pattern >= 0 ? generated(pattern) : null;
        int drawn = draws.inputs().length;
        Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> {
            MemorySegment scratch = drawScratch(drawn);
            MemorySegment[] rowSegs = segs.clone();
            long[] blockOffs = new long[inputs + 1];
            double[][] buf = k == null ? new double[inputs][ROW_BLOCK] : null;
            double[][] rows = k == null ? new double[blocks.scratchRows()][ROW_BLOCK] : null;
            double[][] values = k == null ? new double[blocks.values()][] : null;
            for (int q = 0; q < inputs; q++) if (drawOf[q] >= 0) rowSegs[q + 1] = scratch;
            it.forEachRow(begin, end, (off, len) -> {
                for (long done = 0; done < len; done += ROW_BLOCK) {
                    int n = (int) Math.min(ROW_BLOCK, len - done);
                    for (int q = 1; q <= inputs; q++) {
                        long stride = it.innerByteStride(q);
                        int j = drawOf[q - 1];
                        if (j >= 0) {
                            blockOffs[q] = 4L * ROW_BLOCK * j;
                            long first = (off[q] + done * stride) / 4, step = stride / 4;
                            if (draws.readsMasks()) {
                                readMask(draws.masks()[j], draws.scales()[j], scratch, blockOffs[q], first, step, n);
                            } else {
                                drawFactors(scratch, blockOffs[q], first, step, n, draws.seeds()[j], draws.firstBlocks()[j], draws.keepBelow()[j],
                                        draws.scales()[j], draws.writesMasks() ? draws.masks()[j] : null);
                            }
                        } else {
                            blockOffs[q] = off[q] + done * stride;
                        }
                    }
                    long so = it.innerByteStride(0);
                    if (k != null) {
                        blockOffs[0] = off[0] + done * so;
                        k.row(rowSegs, blockOffs, n, NO_PARAMS);
                        continue;
                    }
                    for (int q = 1; q <= inputs; q++) {
                        boolean isDraw = drawOf[q - 1] >= 0;
                        ElementIO.load(DType.FLOAT32, rowSegs[q], blockOffs[q], isDraw ? 4 : it.innerByteStride(q), n, buf[q - 1]);
                    }
                    double[] r = blocks.eval(buf, NO_PARAMS, n, rows, values);
                    ElementIO.store(DType.FLOAT32, segs[0], off[0] + done * so, so, n, r);
                }
            });
        });
    }

    /**
     * Dropout's factors of elements {@code first, first + step, ...} ({@code n}) into {@code scratch} from byte {@code at},
     * and the keep mask where not null: {@link #draw} then {@link #toFactors}, or for contiguous whole blocks the same
     * factors straight from Philox's words ({@link VectorPhilox#dropoutFactors}: no uniform floats in between).
     */
    private static void drawFactors(MemorySegment scratch, long at, long first, long step, int n, long seed, long firstBlock, float keepBelow,
                                    float scale, StridedView mask) {
        int done = 0;
        if (step == 1 && FACTORS_FROM_WORDS && VectorPhilox.supported()) {
            int head = (int) Math.min(n, ((first + 3) & ~3L) - first);
            long end = VectorPhilox.dropoutFactors(scratch, at - 4 * first, mask == null ? null : mask.memory(), mask == null ? 0 : mask.offset(),
                    first + head, first + n, keepBelow, scale, seed, firstBlock);
            if (end > first + head) {
                if (head > 0) {
                    draw(scratch, at, first, 1, head, seed, firstBlock);
                    toFactors(scratch, at, keepBelow, scale, mask, first, 1, head);
                }
                done = (int) (end - first);
            }
        }
        if (done == n) return;
        draw(scratch, at + 4L * done, first + done, step, n - done, seed, firstBlock);
        toFactors(scratch, at + 4L * done, keepBelow, scale, mask, first + done, step, n - done);
    }

    /** {@code -Djtorch.cpu.dropoutFactorsFromWords=false}: fused dropouts make uniform floats first, then their factors. */
    private static final boolean FACTORS_FROM_WORDS = !"false".equals(System.getProperty("jtorch.cpu.dropoutFactorsFromWords"));

    /**
     * Float32 uniforms of elements {@code first, first + step, ...} ({@code n} of them) into {@code scratch} from byte
     * {@code at}: the values {@link CpuRandomKernels#uniform} writes at those elements of a float32 fill.
     */
    private static void draw(MemorySegment scratch, long at, long first, long step, int n, long seed, long firstBlock) {
        if (step == 1 && VectorPhilox.supported()) {
            VectorPhilox.uniformFloats(scratch, at - 4 * first, first, first + n, 0, 1, seed, firstBlock);
            return;
        }
        int[] w = new int[4];
        long loaded = -1;
        for (int t = 0; t < n; t++) {
            long e = first + t * step;
            if (e / 4 != loaded) {
                loaded = e / 4;
                org.jtorch.types.Generator.philox(seed, firstBlock + loaded, w);
            }
            scratch.set(ElementIO.F32, at + 4L * t, (float) ((w[(int) (e & 3)] >>> 8) * TWO_POW_M24));
        }
    }

    private static final double TWO_POW_M24 = 1.0 / (1 << 24);

    /**
     * The {@code n} uniforms in {@code scratch} from byte {@code at} turned in place into dropout's factors, {@code scale}
     * where {@code u < keepBelow} and 0 elsewhere, the keep decisions (1 kept, 0 dropped) written into the bool
     * {@code mask} (where not null) at elements {@code first, first + step, ...}: eager dropout's mask.
     */
    private static void toFactors(MemorySegment scratch, long at, float keepBelow, float scale, StridedView mask, long first, long step, int n) {
        MemorySegment m = mask == null ? null : mask.memory();
        long base = mask == null ? 0 : mask.offset() + first;
        int t = 0;
        if (step == 1) {
            FloatVector zero = FloatVector.zero(VectorMath.FS);
            for (int upper = n - n % VectorMath.FS.length(); t < upper; t += VectorMath.FS.length()) {
                var keep = FloatVector.fromMemorySegment(VectorMath.FS, scratch, at + 4L * t, ByteOrder.LITTLE_ENDIAN).compare(VectorOperators.LT, keepBelow);
                zero.blend(scale, keep).intoMemorySegment(scratch, at + 4L * t, ByteOrder.LITTLE_ENDIAN);
                if (m != null) ByteVector.zero(VectorMath.BS).blend((byte) 1, keep.cast(VectorMath.BS)).intoMemorySegment(m, base + t, ByteOrder.LITTLE_ENDIAN);
            }
        }
        for (; t < n; t++) {
            boolean keep = scratch.get(ElementIO.F32, at + 4L * t) < keepBelow;
            scratch.set(ElementIO.F32, at + 4L * t, keep ? scale : 0f);
            if (m != null) m.set(ValueLayout.JAVA_BYTE, base + t * step, keep ? (byte) 1 : 0);
        }
    }

    /**
     * The bool {@code mask} at elements {@code first, first + step, ...} ({@code n}) into {@code scratch} from byte
     * {@code at} as dropout's factors: {@code scale} where set, else 0.
     */
    private static void readMask(StridedView mask, float scale, MemorySegment scratch, long at, long first, long step, int n) {
        MemorySegment m = mask.memory();
        long base = mask.offset() + first;
        int t = 0;
        if (step == 1) {
            FloatVector zero = FloatVector.zero(VectorMath.FS);
            for (int upper = n - n % VectorMath.FS.length(); t < upper; t += VectorMath.FS.length()) {
                var kept = ByteVector.fromMemorySegment(VectorMath.BS, m, base + t, ByteOrder.LITTLE_ENDIAN)
                        .compare(VectorOperators.NE, (byte) 0).cast(VectorMath.FS);
                zero.blend(scale, kept).intoMemorySegment(scratch, at + 4L * t, ByteOrder.LITTLE_ENDIAN);
            }
        }
        for (; t < n; t++) scratch.set(ElementIO.F32, at + 4L * t, m.get(ValueLayout.JAVA_BYTE, base + t * step) != 0 ? scale : 0f);
    }

    /** Per-thread off-heap float32 scratch for one block of each draw of a row. */
    private static final ThreadLocal<MemorySegment[]> DRAW_SCRATCH = ThreadLocal.withInitial(() -> new MemorySegment[1]);

    private static MemorySegment drawScratch(int draws) {
        MemorySegment[] held = DRAW_SCRATCH.get();
        long bytes = 4L * ROW_BLOCK * Math.max(1, draws);
        if (held[0] == null || held[0].byteSize() < bytes) held[0] = java.lang.foreign.Arena.ofAuto().allocate(bytes, 64);
        return held[0];
    }

    private void checkLayerNormOperands(StridedView... operands) {
        for (StridedView v : operands) {
            if (v != null && (v.dtype() != DType.FLOAT32 || !v.isContiguous())) {
                throw new IllegalArgumentException(formula + ": a fused layer norm takes contiguous float32 weight, bias and statistics, got "
                        + v.dtype() + Shapes.format(v.shape()));
            }
        }
    }

    /** Normalises rows {@code [r0, r1)} of the output in place. */
    @FunctionalInterface
    private interface RowNormalisation {
        void rows(long r0, long r1);
    }

    /**
     * The formula computed into {@code out} ({@code [rows, rowLength]}, contiguous float32) a block of whole rows at a
     * time, each block handed to {@code normalise} while it is in cache; blocks split over the pool's threads.
     */
    private void normalisedRowBlocks(String what, int deviceIndex, StridedView out, StridedView[] in, long rowLength, double[] params,
                                     Draws draws, RowNormalisation normalise) {
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        if (out.dtype() != DType.FLOAT32 || !out.isContiguous() || out.shape().length != 2 || out.shape()[1] != rowLength
                || rowLength > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(formula + ": " + what + " over rows goes to a contiguous float32 [rows, " + rowLength
                    + "] output, got " + out.dtype() + Shapes.format(out.shape()));
        }
        long rows = out.shape()[0];
        if (rows == 0 || rowLength == 0) return;
        long block = Math.max(1, SOFTMAX_BLOCK / rowLength);
        Parallel.forRange(rows, Math.max(1, ElementwiseKernels.GRAIN / rowLength), (begin, end) -> {
            for (long r0 = begin; r0 < end; r0 += block) {
                long r1 = Math.min(end, r0 + block);
                StridedView[] rowsIn = new StridedView[inputs];
                for (int k = 0; k < inputs; k++) rowsIn[k] = in[k] == null ? null : rowsOf(in[k], r0, r1);
                if (draws != null) runDrawing(rowsOf(out, r0, r1), rowsIn, draws, r0 * rowLength);
                else run(deviceIndex, DType.FLOAT32, rowsOf(out, r0, r1), rowsIn, params);
                normalise.rows(r0, r1);
            }
        });
    }

    /** Rows {@code [r0, r1)} of a matrix view. */
    private static StridedView rowsOf(StridedView m, long r0, long r1) {
        return new StridedView(m.memory(), m.offset() + r0 * m.strides()[0], new long[] {r1 - r0, m.shape()[1]}, m.strides(), m.dtype());
    }

    /** Values per block of rows fused into a softmax: 32 KiB, resident in L1/L2 between the formula and the softmax. */
    private static final long SOFTMAX_BLOCK = 8192;

    /** Values per block of a summed row: 8 KiB of scratch, resident in L1. */
    private static final int ROW_BLOCK = 2048;
    /** Values per independently summed chunk of a row (the chunks' partials are added in order). */
    private static final long ROW_CHUNK = 1 << 16;

    /** Per-thread off-heap float32 scratch for one block of a row's values. */
    private static final ThreadLocal<MemorySegment> ROW_SCRATCH =
            ThreadLocal.withInitial(() -> java.lang.foreign.Arena.ofAuto().allocate(4L * ROW_BLOCK, 64));

    /** The broadcast pattern when the generated float32 loop serves this call, else -1. */
    private int vectorPattern(ElementwiseIteration it, DType compute, StridedView[] operands) {
        if (!vectorizable || compute != DType.FLOAT32) return -1;
        if (operands[0].dtype() != DType.FLOAT32 || !outputRow(it, 4)) return -1;
        int pattern = 0;
        for (int k = 0; k < inputs; k++) {
            if (operands[k + 1].dtype() != DType.FLOAT32) return -1;
            long stride = it.innerByteStride(k + 1);
            if (stride == 0) pattern |= 1 << k;
            else if (stride != 4) return -1;
        }
        return pattern;
    }

    /**
     * Whether the output is a contiguous row of {@code bytes}-sized elements. A single element counts (the iteration
     * gives it stride 0): the generated loop serves it with one masked step, cheaper than the reference's buffers.
     */
    private static boolean outputRow(ElementwiseIteration it, long bytes) {
        long stride = it.innerByteStride(0);
        return stride == bytes || (stride == 0 && it.innerLength() == 1);
    }

    private static boolean calls(Expr e, org.jtorch.op.Fn fn) {
        return e instanceof Expr.Math m && (m.fn() == fn || m.args().stream().anyMatch(a -> calls(a, fn)));
    }

    /** Inputs up to which a layout other than all-float32 is generated ({@link #layoutCode} packs it into a long). */
    private static final int MAX_LAID_OUT = 12;

    /** The generated kernel that serves this call, or null where the reference does. */
    private PointwiseCodegen.RowKernel vectorKernel(ElementwiseIteration it, DType compute, StridedView[] operands, double[] params) {
        int pattern = vectorPattern(it, compute, operands);
        if (pattern >= 0) return generated(pattern);
        if (inputs > MAX_LAID_OUT) return null;
        PointwiseCodegen.Compute lanes = lanes(compute);
        if (lanes == null) return null;
        long code;
        if (lanes.integral()) {
            PointwiseCodegen.IntegerForm form = integerForms[lanes.ordinal()];
            if (form == null || !paramsFit(params, lanes)) return null;
            code = integerLayoutCode(it, compute, operands, form);
        } else {
            if (lanes == PointwiseCodegen.Compute.F64 ? !vectorizableF64 : !vectorizable) return null;
            // A whole vector of erf pieces costs more than the reference's scalar erf for a few elements.
            if (lanes == PointwiseCodegen.Compute.F64 && erfInFormula && it.numel < VectorMathF64.LANES) return null;
            code = layoutCode(it, compute, operands);
        }
        if (code < 0) return null;
        Generated last = lastOther;
        if (last != null && last.code() == code) return last.kernel();
        PointwiseCodegen.RowKernel k = otherLayouts.computeIfAbsent(code, c -> PointwiseCodegen.kernel(formula, inputs, (int) (c & 0xffff),
                layoutOf(c)));
        lastOther = new Generated(code, k);
        return k;
    }

    /** The lanes {@code compute} runs in; null for bool. */
    static PointwiseCodegen.Compute lanes(DType compute) {
        return switch (compute) {
            case FLOAT32, BFLOAT16, FLOAT16 -> PointwiseCodegen.Compute.F32;
            case FLOAT64 -> PointwiseCodegen.Compute.F64;
            case INT64 -> PointwiseCodegen.Compute.I64;
            case INT32 -> PointwiseCodegen.Compute.I32;
            case INT16 -> PointwiseCodegen.Compute.I16;
            case INT8 -> PointwiseCodegen.Compute.I8;
            case UINT8 -> PointwiseCodegen.Compute.U8;
            case BOOL -> null;
        };
    }

    /** Whether every parameter, as the reference takes it ({@code (long)}), fits the integer lanes. */
    private static boolean paramsFit(double[] params, PointwiseCodegen.Compute lanes) {
        if (lanes.wide()) return true;
        for (double p : params) {
            long v = (long) p;
            if (v < lanes.min || v > lanes.max) return false;
        }
        return true;
    }

    // A layout packed as bits: the broadcast pattern (low 16), the lanes' Compute ordinal (3 bits from 16), then for
    // float lanes each operand's Storage ordinal (a float or bool storage: under 8) in 3 bits from bit 19, the output
    // first (13 operands at most: 58 bits); for integer lanes bit 19 alone: a bool output (the inputs are rows of the
    // compute dtype).
    private static final int LANES_SHIFT = 16;
    private static final int OPERANDS_SHIFT = 19;

    /**
     * The generated float or double layout of this call, or -1 where no generated loop serves it. float32 compute
     * reads float32 or half rows; bfloat16/float16 compute reads rows of its dtype or a broadcast float32 (a wrapped
     * Java number, kept unrounded, as the float32 lanes compute); float64 compute reads float64 rows. The output is
     * a contiguous row of the compute dtype or of bool.
     */
    private long layoutCode(ElementwiseIteration it, DType compute, StridedView[] operands) {
        PointwiseCodegen.Compute lanes = lanes(compute);
        long code = (long) lanes.ordinal() << LANES_SHIFT;
        for (int k = 0; k <= inputs; k++) {
            DType t = operands[k].dtype();
            long stride = it.innerByteStride(k);
            PointwiseCodegen.Storage st = storage(t);
            if (st == null) return -1;
            boolean ok;
            if (k == 0) {
                ok = (t == compute || t == DType.BOOL) && outputRow(it, st.bytes);
            } else if (stride == 0 || stride == st.bytes) {
                ok = switch (compute) {
                    case FLOAT64 -> t == DType.FLOAT64;
                    case FLOAT32 -> t == DType.FLOAT32 || t == DType.BFLOAT16 || t == DType.FLOAT16;
                    default -> t == compute || (t == DType.FLOAT32 && stride == 0);
                };
                if (stride == 0) code |= 1L << (k - 1);
            } else {
                ok = false;
            }
            if (!ok) return -1;
            code |= (long) st.ordinal() << (OPERANDS_SHIFT + 3 * k);
        }
        return code;
    }

    /**
     * The generated integer layout of this call, or -1: every input a contiguous or broadcast row of the compute
     * dtype, the output a contiguous row of it, or of bool where the formula's lanes hold its exact value.
     */
    private long integerLayoutCode(ElementwiseIteration it, DType compute, StridedView[] operands, PointwiseCodegen.IntegerForm form) {
        long code = (long) lanes(compute).ordinal() << LANES_SHIFT;
        DType out = operands[0].dtype();
        if (out == DType.BOOL) {
            if (form != PointwiseCodegen.IntegerForm.EXACT) return -1;
            code |= 1L << OPERANDS_SHIFT;
        } else if (out != compute) {
            return -1;
        }
        if (!outputRow(it, out.byteSize())) return -1;
        for (int k = 1; k <= inputs; k++) {
            long stride = it.innerByteStride(k);
            if (operands[k].dtype() != compute || (stride != 0 && stride != compute.byteSize())) return -1;
            if (stride == 0) code |= 1L << (k - 1);
        }
        return code;
    }

    private static PointwiseCodegen.Storage storage(DType t) {
        return switch (t) {
            case FLOAT32 -> PointwiseCodegen.Storage.F32;
            case FLOAT64 -> PointwiseCodegen.Storage.F64;
            case BFLOAT16 -> PointwiseCodegen.Storage.BF16;
            case FLOAT16 -> PointwiseCodegen.Storage.F16;
            case BOOL -> PointwiseCodegen.Storage.BOOL;
            default -> null;
        };
    }

    private PointwiseCodegen.Layout layoutOf(long code) {
        PointwiseCodegen.Compute lanes = PointwiseCodegen.Compute.values()[(int) ((code >>> LANES_SHIFT) & 7)];
        PointwiseCodegen.Storage[] st = new PointwiseCodegen.Storage[inputs + 1];
        if (lanes.integral()) {
            java.util.Arrays.fill(st, lanes.storage);
            if ((code & (1L << OPERANDS_SHIFT)) != 0) st[0] = PointwiseCodegen.Storage.BOOL;
        } else {
            PointwiseCodegen.Storage[] all = PointwiseCodegen.Storage.values();
            for (int k = 0; k <= inputs; k++) st[k] = all[(int) ((code >>> (OPERANDS_SHIFT + 3 * k)) & 7)];
        }
        return new PointwiseCodegen.Layout(lanes, java.util.List.of(st));
    }

    private PointwiseCodegen.RowKernel generated(int pattern) {
        PointwiseCodegen.RowKernel k = generated[pattern];
        if (k == null) generated[pattern] = k = PointwiseCodegen.kernel(formula, inputs, pattern);
        return k;
    }

    private void floating(ElementwiseIteration it, MemorySegment[] segs, StridedView[] operands, DType compute, double[] params) {
        int block = ElementwiseKernels.BLOCK;
        Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> {
            int cap = (int) Math.min(block, end - begin);
            double[][] in = new double[inputs][cap];
            double[][] scratch = new double[blocks.scratchRows()][cap];
            double[][] values = new double[blocks.values()][];
            it.forEachRow(begin, end, (off, len) -> {
                for (long done = 0; done < len; done += block) {
                    int n = (int) Math.min(block, len - done);
                    for (int k = 1; k <= inputs; k++) {
                        long stride = it.innerByteStride(k);
                        ElementIO.load(operands[k].dtype(), segs[k], off[k] + done * stride, stride, n, in[k - 1]);
                        if (compute != DType.FLOAT64) ElementwiseKernels.roundTo(compute, in[k - 1], n);
                    }
                    double[] r = blocks.eval(in, params, n, scratch, values);
                    long so = it.innerByteStride(0);
                    ElementIO.store(operands[0].dtype(), segs[0], off[0] + done * so, so, n, r);
                }
            });
        });
    }

    private void integral(ElementwiseIteration it, MemorySegment[] segs, StridedView[] operands, double[] params) {
        long[] p = new long[params.length];
        for (int j = 0; j < p.length; j++) p[j] = (long) params[j];
        int block = ElementwiseKernels.BLOCK;
        Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> {
            int cap = (int) Math.min(block, end - begin);
            long[][] in = new long[inputs][cap];
            long[][] scratch = new long[blocks.scratchRows()][cap];
            long[][] values = new long[blocks.values()][];
            it.forEachRow(begin, end, (off, len) -> {
                for (long done = 0; done < len; done += block) {
                    int n = (int) Math.min(block, len - done);
                    for (int k = 1; k <= inputs; k++) {
                        long stride = it.innerByteStride(k);
                        ElementIO.load(operands[k].dtype(), segs[k], off[k] + done * stride, stride, n, in[k - 1]);
                    }
                    long[] r = blocks.eval(in, p, n, scratch, values);
                    long so = it.innerByteStride(0);
                    ElementIO.store(operands[0].dtype(), segs[0], off[0] + done * so, so, n, r);
                }
            });
        });
    }
}
