package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import org.jtorch.DType;
import org.jtorch.op.Expr;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;

/**
 * The CPU kernel of a pointwise formula over any number of inputs. float32 rows whose inputs are contiguous or
 * broadcast run a generated Vector API loop ({@link PointwiseCodegen}); everything else (other dtypes, strided
 * rows, functions without a vector form) runs the reference: a block at a time through double buffers (floating
 * compute, inputs rounded to the compute dtype first) or long buffers (integer compute).
 */
final class CpuFormulaKernel implements FormulaKernel {
    private final Expr formula;
    private final int inputs;
    private final boolean vectorizable;
    private final Expr.ArrayFormula reference;
    private Expr.LongArrayFormula integerReference;
    /** Generated kernels by broadcast pattern (bit k: input k broadcast along the row). */
    private final PointwiseCodegen.RowKernel[] generated;

    CpuFormulaKernel(Expr formula, int inputs) {
        if (!formula.isFormula()) throw new IllegalArgumentException(formula + " is not a pointwise formula");
        this.formula = formula;
        this.inputs = inputs;
        this.vectorizable = inputs <= 16 && PointwiseCodegen.supports(formula);
        this.reference = formula.compileArrays();
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
        int broadcast = vectorPattern(it, compute, operands);
        if (broadcast >= 0) {
            PointwiseCodegen.RowKernel k = generated(broadcast);
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
        if (in.length != inputs) throw new IllegalArgumentException(formula + ": expected " + inputs + " inputs, got " + in.length);
        if (out.dtype() != DType.FLOAT32 || !out.isContiguous() || out.shape().length != 2 || out.shape()[1] != rowLength
                || rowLength > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(formula + ": a softmax over rows goes to a contiguous float32 [rows, " + rowLength
                    + "] output, got " + out.dtype() + Shapes.format(out.shape()));
        }
        long rows = out.shape()[0];
        if (rows == 0 || rowLength == 0) return;
        long block = Math.max(1, SOFTMAX_BLOCK / rowLength);
        MemorySegment os = out.memory();
        Parallel.forRange(rows, Math.max(1, ElementwiseKernels.GRAIN / rowLength), (begin, end) -> {
            for (long r0 = begin; r0 < end; r0 += block) {
                long r1 = Math.min(end, r0 + block);
                StridedView[] rowsIn = new StridedView[inputs];
                for (int k = 0; k < inputs; k++) rowsIn[k] = rowsOf(in[k], r0, r1);
                run(deviceIndex, DType.FLOAT32, rowsOf(out, r0, r1), rowsIn, params);
                for (long r = r0; r < r1; r++) {
                    long at = 4 * (out.offset() + r * rowLength);
                    SoftmaxF32.row(os, at, os, at, (int) rowLength, log);
                }
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
        if (operands[0].dtype() != DType.FLOAT32 || it.innerByteStride(0) != 4) return -1;
        int pattern = 0;
        for (int k = 0; k < inputs; k++) {
            if (operands[k + 1].dtype() != DType.FLOAT32) return -1;
            long stride = it.innerByteStride(k + 1);
            if (stride == 0) pattern |= 1 << k;
            else if (stride != 4) return -1;
        }
        return pattern;
    }

    private PointwiseCodegen.RowKernel generated(int pattern) {
        PointwiseCodegen.RowKernel k = generated[pattern];
        if (k == null) generated[pattern] = k = PointwiseCodegen.kernel(formula, inputs, pattern);
        return k;
    }

    private void floating(ElementwiseIteration it, MemorySegment[] segs, StridedView[] operands, DType compute, double[] params) {
        int block = ElementwiseKernels.BLOCK;
        Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> {
            double[][] buf = new double[inputs + 1][(int) Math.min(block, end - begin)];
            double[] x = new double[inputs];
            it.forEachRow(begin, end, (off, len) -> {
                for (long done = 0; done < len; done += block) {
                    int n = (int) Math.min(block, len - done);
                    for (int k = 1; k <= inputs; k++) {
                        long stride = it.innerByteStride(k);
                        ElementIO.load(operands[k].dtype(), segs[k], off[k] + done * stride, stride, n, buf[k]);
                        if (compute != DType.FLOAT64) ElementwiseKernels.roundTo(compute, buf[k], n);
                    }
                    for (int e = 0; e < n; e++) {
                        for (int k = 0; k < inputs; k++) x[k] = buf[k + 1][e];
                        buf[0][e] = reference.eval(x, params);
                    }
                    long so = it.innerByteStride(0);
                    ElementIO.store(operands[0].dtype(), segs[0], off[0] + done * so, so, n, buf[0]);
                }
            });
        });
    }

    private void integral(ElementwiseIteration it, MemorySegment[] segs, StridedView[] operands, double[] params) {
        if (integerReference == null) integerReference = formula.compileLongArrays();
        Expr.LongArrayFormula f = integerReference;
        long[] p = new long[params.length];
        for (int j = 0; j < p.length; j++) p[j] = (long) params[j];
        int block = ElementwiseKernels.BLOCK;
        Parallel.forRange(it.numel, ElementwiseKernels.GRAIN, (begin, end) -> {
            long[][] buf = new long[inputs + 1][(int) Math.min(block, end - begin)];
            long[] x = new long[inputs];
            it.forEachRow(begin, end, (off, len) -> {
                for (long done = 0; done < len; done += block) {
                    int n = (int) Math.min(block, len - done);
                    for (int k = 1; k <= inputs; k++) {
                        long stride = it.innerByteStride(k);
                        ElementIO.load(operands[k].dtype(), segs[k], off[k] + done * stride, stride, n, buf[k]);
                    }
                    for (int e = 0; e < n; e++) {
                        for (int k = 0; k < inputs; k++) x[k] = buf[k + 1][e];
                        buf[0][e] = f.eval(x, p);
                    }
                    long so = it.innerByteStride(0);
                    ElementIO.store(operands[0].dtype(), segs[0], off[0] + done * so, so, n, buf[0]);
                }
            });
        });
    }
}
