package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.memory.ElementCodec;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * CPU implementation of {@link ReductionKernels}.
 *
 * <p>Every reduction iterates over output elements (in parallel), each reducing its own, possibly
 * strided, set of input elements, so results do not depend on the thread count. Float32 has Vector
 * API paths for the layouts training spends its time in:
 * <ul>
 *   <li>reducing the innermost, contiguous dimension (row sums, row maxima, softmax over the last
 *       dimension): several vector accumulators across the row, one horizontal reduce at the end;
 *   <li>reducing outer dimensions of a tensor whose innermost kept dimension is contiguous (a bias
 *       gradient: sum over dim 0 of [batch, features]): the rows are added in memory order into a
 *       strip of output columns;
 *   <li>a full reduction of a contiguous tensor: fixed 64K-element chunks reduced in parallel, then
 *       combined in order.
 * </ul>
 * Float32 sums are cascaded ({@link ReductionF32}), as accurate as PyTorch's cascade sum; float64 sums, norms and
 * extrema take the same three layouts with double vectors ({@link ReductionF64}). Argmax/argmin of
 * contiguous lines, variance over contiguous runs and softmax along any dimension of contiguous tensors have
 * float32 vector paths too ({@link ReductionF32}, {@link SoftmaxF32}). Everything else takes the generic
 * path: blocks converted to double (floating input) or long (integral input) by {@link ElementIO}.
 */
final class CpuReductionKernels implements ReductionKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per block in the generic path: buffers stay in L1. */
    private static final int BLOCK = 256;
    /** Elements per independently reduced chunk of a full reduction (the partials' order is fixed). */
    private static final long FULL_CHUNK = 1 << 16;
    /** Rows an outer reduction adds into its f32 partial before the partial joins the running total. */
    private static final int OUTER_FLUSH = 128;
    /** Output columns per outer-reduction work item: 8 KiB runs of each input row, an L1-resident partial. */
    private static final int OUTER_STRIP = 2048;
    /** Minimum elements of work per thread before a kernel goes parallel. */
    private static final long GRAIN = 32_768;

    private static long grain(long workPerItem) {
        return Math.max(1, GRAIN / Math.max(1, workPerItem));
    }

    // ---------------------------------------------------------------- accumulating reductions

    @Override
    public void reduce(ReduceOp op, StridedView in, StridedView out, double p) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.memory();
        MemorySegment os = out.memory();
        DType it = in.dtype();
        DType ot = out.dtype();
        // float32, and bfloat16/float16 converted a strip at a time into float32 scratch: float32 accumulation and
        // one rounding of each result, as PyTorch's CPU path.
        boolean vectorIn = it == DType.FLOAT32 || it == DType.FLOAT64 ? ot == it : isHalf(it) && (ot == it || ot == DType.FLOAT32);
        if (vectorIn && g.numRed > 0) {
            boolean vectorOp = op == ReduceOp.SUM || op == ReduceOp.MAX || op == ReduceOp.MIN
                    || (op == ReduceOp.NORM && (p == 1 || p == 2));
            if (vectorOp && g.redShape.length == 1 && g.rowStride == it.byteSize()) {
                if (g.numOut == 1) full(op, p, it, is, g.inOffset(0), g.numRed, ot, os, g.outOffset(0));
                else inner(op, p, g, it, is, ot, os);
                return;
            }
            int last = g.keptShape.length - 1;
            if (op == ReduceOp.SUM && g.keptIn[last] == it.byteSize() && g.keptOut[last] == ot.byteSize()) {
                if (it == DType.FLOAT64) outerSumF64(g, is, os);
                else outerSum(g, it, is, ot, os);
                return;
            }
        }
        boolean floating = it.isFloatingPoint();
        Parallel.forRange(g.numOut, grain(g.numRed), (begin, end) -> {
            ReductionLayout.Cursor c = g.new Cursor(it, is);
            double[] dbuf = floating ? new double[BLOCK] : null;
            long[] lbuf = floating ? null : new long[BLOCK];
            for (long o = begin; o < end; o++) {
                c.reset(g.inOffset(o));
                long oo = g.outOffset(o);
                int n;
                if (floating) {
                    double acc = op.identity(p);
                    while ((n = c.next(dbuf)) > 0) acc = fold(op, acc, dbuf, n, p);
                    ElementCodec.setDouble(ot, os, oo, op.finish(acc, g.numRed, p));
                } else {
                    long acc = op.identityLong();
                    while ((n = c.next(lbuf)) > 0) acc = foldLong(op, acc, lbuf, n);
                    ElementCodec.setLong(ot, os, oo, acc);
                }
            }
        });
    }

    /** Folds a block into an accumulator; the common operators get direct loops (sums are blocked for accuracy). */
    private static double fold(ReduceOp op, double acc, double[] buf, int n, double p) {
        switch (op) {
            case SUM -> {
                double s = 0;
                for (int i = 0; i < n; i++) s += buf[i];
                return acc + s;
            }
            case MAX -> {
                for (int i = 0; i < n; i++) acc = Math.max(acc, buf[i]);
                return acc;
            }
            case MIN -> {
                for (int i = 0; i < n; i++) acc = Math.min(acc, buf[i]);
                return acc;
            }
            default -> {
                for (int i = 0; i < n; i++) acc = op.combine(acc, buf[i], p);
                return acc;
            }
        }
    }

    private static long foldLong(ReduceOp op, long acc, long[] buf, int n) {
        if (op == ReduceOp.SUM) {
            for (int i = 0; i < n; i++) acc += buf[i];
            return acc;
        }
        for (int i = 0; i < n; i++) acc = op.combineLong(acc, buf[i]);
        return acc;
    }

    /** One output per contiguous row: parallel over rows. */
    private static void inner(ReduceOp op, double p, ReductionLayout g, DType it, MemorySegment is, DType ot, MemorySegment os) {
        if (MANY_SHORT_ROWS && g.keptShape.length == 1 && it == DType.FLOAT32 && ot == DType.FLOAT32 && g.numOut >= MANY_ROWS
                && g.numRed >= ReductionF32.FL && g.numRed <= ReductionF32.SHORT_SUM
                && (op == ReduceOp.SUM || op == ReduceOp.NORM && (p == 1 || p == 2))) {
            manyShortRowsF32(op, p, g, is, os);
            return;
        }
        Parallel.forRange(g.numOut, grain(g.numRed), (begin, end) -> {
            for (long o = begin; o < end; o++) {
                double acc = row(op, p, it, is, g.inOffset(o), g.numRed);
                ElementCodec.setDouble(ot, os, g.outOffset(o), op.finish(acc, g.numRed, p));
            }
        });
    }

    /** {@code -Djtorch.reduce.manyShortRows=false} sums many short float32 rows as any other rows, to compare. */
    private static final boolean MANY_SHORT_ROWS = !"false".equals(System.getProperty("jtorch.reduce.manyShortRows"));
    /** Rows a call needs for {@link #manyShortRowsF32}: enough that its vector loop reaches C2 within the first calls. */
    static final long MANY_ROWS = 1024;

    /**
     * Sums (or 1- and 2-norms) of many contiguous float32 rows of {@code FL..SHORT_SUM} values with one kept dimension
     * (a global average pool: ResNet-20's mean over 8x8 maps, 8192 rows of 64 a step), each row by
     * {@link ReductionF32#vectorSum}, which adds the same terms in the same order as {@link ReductionF32#shortSum}
     * (the same bits), and row offsets stepped rather than divided out of the row index. Per row the general loop took
     * 170 cycles: four long divisions for the two offsets and 64 scalar adds.
     */
    private static void manyShortRowsF32(ReduceOp op, double p, ReductionLayout g, MemorySegment is, MemorySegment os) {
        ReductionF32.Term term = op == ReduceOp.SUM ? ReductionF32.Term.VALUE : p == 2 ? ReductionF32.Term.SQUARE : ReductionF32.Term.ABS;
        long n = g.numRed, inStep = g.keptIn[0], outStep = g.keptOut[0];
        Parallel.forRange(g.numOut, grain(n), (begin, end) -> {
            long io = g.inBase + begin * inStep, oo = g.outBase + begin * outStep;
            for (long o = begin; o < end; o++, io += inStep, oo += outStep) {
                double acc = ReductionF32.vectorSum(is, io, n, term);
                os.set(ElementIO.F32, oo, (float) op.finish(acc, n, p));
            }
        });
    }

    /** A full reduction of {@code n} contiguous values: fixed chunks in parallel, partials combined in order. */
    private static void full(ReduceOp op, double p, DType it, MemorySegment is, long io, long n, DType ot, MemorySegment os, long oo) {
        int chunks = (int) ((n + FULL_CHUNK - 1) / FULL_CHUNK);
        double[] partial = new double[chunks];
        Parallel.forRange(chunks, 1, (begin, end) -> {
            for (long c = begin; c < end; c++) {
                long start = c * FULL_CHUNK;
                partial[(int) c] = row(op, p, it, is, io + start * it.byteSize(), Math.min(FULL_CHUNK, n - start));
            }
        });
        // Partials of a p-norm (p = 1, 2) add; of max and min they combine as the operator.
        ReduceOp combineAs = op == ReduceOp.NORM ? ReduceOp.SUM : op;
        double acc = partial[0];
        for (int c = 1; c < chunks; c++) acc = combineAs.combine(acc, partial[c], p);
        ElementCodec.setDouble(ot, os, oo, op.finish(acc, n, p));
    }

    /** The accumulator of {@code op} over {@code n >= 1} contiguous float32, float64 or half-precision values. */
    private static double row(ReduceOp op, double p, DType it, MemorySegment s, long off, long n) {
        if (it == DType.FLOAT64) return rowF64(op, p, s, off, n);
        return it == DType.FLOAT32 ? rowF32(op, p, s, off, n) : rowHalf(op, p, it, s, off, n, SCRATCH.get());
    }

    /** The accumulator of {@code op} over {@code n >= 1} contiguous doubles, before {@link ReduceOp#finish}. */
    private static double rowF64(ReduceOp op, double p, MemorySegment s, long off, long n) {
        return switch (op) {
            case SUM -> ReductionF64.sum(s, off, n, ReductionF32.Term.VALUE);
            case MAX -> ReductionF64.extremum(s, off, n, true);
            case MIN -> ReductionF64.extremum(s, off, n, false);
            case NORM -> ReductionF64.sum(s, off, n, p == 2 ? ReductionF32.Term.SQUARE : ReductionF32.Term.ABS);
            default -> throw new IllegalStateException("no vector form for " + op);
        };
    }

    /** The accumulator of {@code op} over {@code n >= 1} contiguous floats, before {@link ReduceOp#finish}. */
    private static double rowF32(ReduceOp op, double p, MemorySegment s, long off, long n) {
        return switch (op) {
            case SUM -> ReductionF32.sum(s, off, n, ReductionF32.Term.VALUE);
            case MAX -> ReductionF32.extremum(s, off, n, true);
            case MIN -> ReductionF32.extremum(s, off, n, false);
            case NORM -> ReductionF32.sum(s, off, n, p == 2 ? ReductionF32.Term.SQUARE : ReductionF32.Term.ABS);
            default -> throw new IllegalStateException("no vector form for " + op);
        };
    }

    private static boolean isHalf(DType t) {
        return t == DType.BFLOAT16 || t == DType.FLOAT16;
    }

    /**
     * Per-thread off-heap float32 scratch of {@value #OUTER_STRIP} floats for the half-precision paths (the
     * Vector API reads off-heap segments fastest); freed with the thread.
     */
    private static final ThreadLocal<MemorySegment> SCRATCH =
            ThreadLocal.withInitial(() -> java.lang.foreign.Arena.ofAuto().allocate(OUTER_STRIP * 4L, 64));

    /** The accumulator of {@code op} over {@code n >= 1} contiguous half-precision values, a scratch strip at a time. */
    private static double rowHalf(ReduceOp op, double p, DType it, MemorySegment s, long off, long n, MemorySegment scratch) {
        ReduceOp combineAs = op == ReduceOp.NORM ? ReduceOp.SUM : op;
        double acc = 0;
        for (long done = 0; done < n; done += OUTER_STRIP) {
            int len = (int) Math.min(OUTER_STRIP, n - done);
            HalfConversion.convert(it, s, off + 2 * done, DType.FLOAT32, scratch, 0, len);
            double part = rowF32(op, p, scratch, 0, len);
            acc = done == 0 ? part : combineAs.combine(acc, part, p);
        }
        return acc;
    }

    /**
     * Sums over outer dimensions when the innermost kept dimension is contiguous in input and output (a bias
     * gradient, a column sum). Each work item owns a strip of at most {@value #OUTER_STRIP} output columns and
     * walks the reduced rows in memory order, so the input streams in runs of a whole strip; rows are added into
     * a strip-wide f32 partial that joins the strip's running total every {@value #OUTER_FLUSH} rows. Float32 holds
     * the partials and totals of four vectors of columns in registers ({@link ReductionF32#columnSums}); half-precision
     * input rows are converted to float32 scratch first and added through arrays; the total is rounded to the output
     * dtype once.
     */
    private static void outerSum(ReductionLayout g, DType it, MemorySegment is, DType ot, MemorySegment os) {
        long cols = g.keptShape[g.keptShape.length - 1];
        long outer = g.numOut / cols;
        long inSize = it.byteSize();
        long outSize = ot.byteSize();
        // Strips of whole vectors, wide enough to stream, and at least one per thread when the columns allow.
        long strip = Math.min(OUTER_STRIP, Math.max(FL, (cols / Parallel.numThreads() + FL - 1) / FL * FL));
        long strips = (cols + strip - 1) / strip;
        boolean f32 = it == DType.FLOAT32 && ot == DType.FLOAT32;
        Parallel.forRange(outer * strips, grain(g.numRed * strip), (begin, end) -> {
            float[] partial = f32 ? null : new float[(int) strip];
            float[] total = f32 ? null : new float[(int) strip];
            MemorySegment scratch = f32 ? null : SCRATCH.get();
            for (long item = begin; item < end; item++) {
                long o0 = (item / strips) * cols;
                long j = (item % strips) * strip;
                int width = (int) Math.min(strip, cols - j);
                if (f32) {
                    ReductionF32.columnSums(is, g.inOffset(o0) + j * 4, g, OUTER_FLUSH, width, os, g.outOffset(o0) + j * 4);
                    continue;
                }
                sumRowsIntoStrip(g, it, is, g.inOffset(o0) + j * inSize, width, partial, total, scratch);
                long oo = g.outOffset(o0) + j * outSize;
                if (ot == DType.FLOAT32) {
                    MemorySegment.copy(total, 0, os, ElementIO.F32, oo, width);
                } else {
                    MemorySegment.copy(total, 0, scratch, ElementIO.F32, 0, width);
                    HalfConversion.convert(DType.FLOAT32, scratch, 0, ot, os, oo, width);
                }
            }
        });
    }

    /** {@link #outerSum} in float64: each strip of output columns adds the reduced rows in memory order, in double. */
    private static void outerSumF64(ReductionLayout g, MemorySegment is, MemorySegment os) {
        long cols = g.keptShape[g.keptShape.length - 1];
        long outer = g.numOut / cols;
        int lanes = jdk.incubator.vector.DoubleVector.SPECIES_PREFERRED.length();
        long strip = Math.min(OUTER_STRIP, Math.max(lanes, (cols / Parallel.numThreads() + lanes - 1) / lanes * lanes));
        long strips = (cols + strip - 1) / strip;
        boolean evenRows = g.redShape.length == 1;
        Parallel.forRange(outer * strips, grain(g.numRed * strip), (begin, end) -> {
            double[] total = evenRows ? null : new double[(int) strip];
            for (long item = begin; item < end; item++) {
                long o0 = (item / strips) * cols;
                long j = (item % strips) * strip;
                int width = (int) Math.min(strip, cols - j);
                long io = g.inOffset(o0) + j * 8, oo = g.outOffset(o0) + j * 8;
                if (evenRows) {
                    ReductionF64.columnSums(is, io, g.redOffset(1), g.numRed, width, os, oo);
                    continue;
                }
                java.util.Arrays.fill(total, 0, width, 0);
                for (long k = 0; k < g.numRed; k++) ReductionF64.addRow(is, io + g.redOffset(k), width, total);
                MemorySegment.copy(total, 0, os, ElementIO.F64, oo, width);
            }
        });
    }

    private static void sumRowsIntoStrip(ReductionLayout g, DType it, MemorySegment is, long io, int width,
                                         float[] partial, float[] total, MemorySegment scratch) {
        int whole = width - width % FL;
        boolean half = it != DType.FLOAT32;
        // Half-precision rows are read from the scratch they are converted into.
        MemorySegment rows = half ? scratch : is;
        java.util.Arrays.fill(partial, 0, width, 0f);
        java.util.Arrays.fill(total, 0, width, 0f);
        for (long k0 = 0; k0 < g.numRed; k0 += OUTER_FLUSH) {
            long k1 = Math.min(g.numRed, k0 + OUTER_FLUSH);
            for (long k = k0; k < k1; k++) {
                long b = io + g.redOffset(k);
                if (half) {
                    HalfConversion.convert(it, is, b, DType.FLOAT32, scratch, 0, width);
                    b = 0;
                }
                int j = 0;
                for (; j < whole; j += FL) {
                    FloatVector.fromArray(FS, partial, j).add(FloatVector.fromMemorySegment(FS, rows, b + 4L * j, LE))
                            .intoArray(partial, j);
                }
                for (; j < width; j++) partial[j] += rows.get(ElementIO.F32, b + 4L * j);
            }
            int j = 0;
            for (; j < whole; j += FL) {
                FloatVector.fromArray(FS, total, j).add(FloatVector.fromArray(FS, partial, j)).intoArray(total, j);
                FloatVector.zero(FS).intoArray(partial, j);
            }
            for (; j < width; j++) {
                total[j] += partial[j];
                partial[j] = 0;
            }
        }
    }

    // ---------------------------------------------------------------- max/min with indices

    @Override
    public void argReduce(boolean max, StridedView in, StridedView values, StridedView indices, int dim) {
        LineLayout l = values == null ? new LineLayout(dim, in, indices) : new LineLayout(dim, in, indices, values);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.memory();
        MemorySegment xs = indices.memory();
        MemorySegment vs = values == null ? null : values.memory();
        DType it = in.dtype();
        DType vt = values == null ? null : values.dtype();
        boolean floating = it.isFloatingPoint();
        long stride = l.lineStride[0];
        if (it == DType.FLOAT64 && (vt == null || vt == DType.FLOAT64) && (stride == 8 || l.length == 1)) {
            Parallel.forRange(l.lines, grain(l.length), (begin, end) -> {
                double[] v = new double[1];
                for (long line = begin; line < end; line++) {
                    xs.set(ElementIO.I64, l.offset(1, line), ReductionF64.argExtremum(is, l.offset(0, line), l.length, max, v));
                    if (vs != null) vs.set(ElementIO.F64, l.offset(2, line), v[0]);
                }
            });
            return;
        }
        if (it == DType.FLOAT32 && (vt == null || vt == DType.FLOAT32)) {
            if (stride == 4 || l.length == 1) {
                argExtremumF32(max, l, is, xs, vs);
                return;
            }
            if (in.isContiguous() && l.length < Integer.MAX_VALUE) {
                long inner = stride / 4;
                ReductionF32.argExtremumColumns(max, is, in.offset() * 4, l.lines / inner, (int) l.length, inner,
                        (line, index, value) -> {
                            xs.set(ElementIO.I64, l.offset(1, line), index);
                            if (vs != null) vs.set(ElementIO.F32, l.offset(2, line), value);
                        });
                return;
            }
        }
        Parallel.forRange(l.lines, grain(l.length), (begin, end) -> {
            double[] dbuf = floating ? new double[BLOCK] : null;
            long[] lbuf = floating ? null : new long[BLOCK];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                long bestIndex = 0;
                double best = 0;
                long bestLong = 0;
                if (floating) {
                    best = ElementCodec.getDouble(it, is, io);
                    for (long done = 0; done < l.length; done += BLOCK) {
                        int n = (int) Math.min(BLOCK, l.length - done);
                        ElementIO.load(it, is, io + done * stride, stride, n, dbuf);
                        for (int i = 0; i < n; i++) {
                            double x = dbuf[i];
                            // NaN wins over numbers; once best is NaN nothing replaces it (first NaN kept).
                            boolean better = max ? x > best : x < best;
                            if (better || (x != x && best == best)) {
                                best = x;
                                bestIndex = done + i;
                            }
                        }
                    }
                } else {
                    bestLong = ElementCodec.getLong(it, is, io);
                    for (long done = 0; done < l.length; done += BLOCK) {
                        int n = (int) Math.min(BLOCK, l.length - done);
                        ElementIO.load(it, is, io + done * stride, stride, n, lbuf);
                        for (int i = 0; i < n; i++) {
                            long x = lbuf[i];
                            if (max ? x > bestLong : x < bestLong) {
                                bestLong = x;
                                bestIndex = done + i;
                            }
                        }
                    }
                }
                xs.set(ElementIO.I64, l.offset(1, line), bestIndex);
                if (vs != null) {
                    if (floating) ElementCodec.setDouble(vt, vs, l.offset(2, line), best);
                    else ElementCodec.setLong(vt, vs, l.offset(2, line), bestLong);
                }
            }
        });
    }

    /**
     * Arg-reductions of contiguous float lines. A single line (argmax of a whole tensor) splits into fixed chunks
     * reduced in parallel, whose winners are compared in chunk order, so the first occurrence still wins.
     */
    private static void argExtremumF32(boolean max, LineLayout l, MemorySegment is, MemorySegment xs, MemorySegment vs) {
        if (l.lines == 1 && l.length > FULL_CHUNK) {
            long io = l.offset(0, 0);
            int chunks = (int) ((l.length + FULL_CHUNK - 1) / FULL_CHUNK);
            float[] values = new float[chunks];
            long[] indices = new long[chunks];
            Parallel.forRange(chunks, 1, (begin, end) -> {
                float[] v = new float[1];
                for (long c = begin; c < end; c++) {
                    long start = c * FULL_CHUNK;
                    indices[(int) c] = start + ReductionF32.argExtremum(is, io + 4 * start, Math.min(FULL_CHUNK, l.length - start), max, v);
                    values[(int) c] = v[0];
                }
            });
            int winner = 0;
            for (int c = 1; c < chunks; c++) {
                if (ReductionF32.better(values[c], values[winner], max)) winner = c;
            }
            xs.set(ElementIO.I64, l.offset(1, 0), indices[winner]);
            if (vs != null) vs.set(ElementIO.F32, l.offset(2, 0), values[winner]);
            return;
        }
        Parallel.forRange(l.lines, grain(l.length), (begin, end) -> {
            float[] v = new float[1];
            for (long line = begin; line < end; line++) {
                xs.set(ElementIO.I64, l.offset(1, line), ReductionF32.argExtremum(is, l.offset(0, line), l.length, max, v));
                if (vs != null) vs.set(ElementIO.F32, l.offset(2, line), v[0]);
            }
        });
    }

    // ---------------------------------------------------------------- two-pass reductions

    @Override
    public void variance(StridedView in, StridedView out, double correction, boolean sqrt) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.memory();
        MemorySegment os = out.memory();
        DType ot = out.dtype();
        double count = g.numRed;
        double divisor = Math.max(0, count - correction);
        if (in.dtype() == DType.FLOAT32 && g.numRed > 0 && g.redShape.length == 1 && g.rowStride == 4) {
            varianceF32(g, is, os, ot, divisor, sqrt);
            return;
        }
        if (in.dtype() == DType.FLOAT64 && g.numRed > 0 && g.redShape.length == 1 && g.rowStride == 8) {
            // One pass over memory per chunk, as float32's (ReductionF64.moments); the generic path below reads through a buffer twice.
            Parallel.forRange(g.numOut, grain(g.numRed), (begin, end) -> {
                double[] acc = new double[3];
                for (long o = begin; o < end; o++) {
                    acc[0] = acc[1] = acc[2] = 0;
                    ReductionF64.moments(is, g.inOffset(o), g.numRed, acc);
                    double var = acc[2] / divisor;
                    ElementCodec.setDouble(ot, os, g.outOffset(o), sqrt ? Math.sqrt(var) : var);
                }
            });
            return;
        }
        Parallel.forRange(g.numOut, grain(2 * g.numRed), (begin, end) -> {
            ReductionLayout.Cursor c = g.new Cursor(in.dtype(), is);
            double[] buf = new double[BLOCK];
            for (long o = begin; o < end; o++) {
                long io = g.inOffset(o);
                c.reset(io);
                double sum = 0;
                int n;
                while ((n = c.next(buf)) > 0) sum = fold(ReduceOp.SUM, sum, buf, n, 0);
                double mean = sum / count;
                // Second pass over deviations; subtracting (sum d)^2 / N corrects the mean's rounding error.
                c.reset(io);
                double m2 = 0;
                double sd = 0;
                while ((n = c.next(buf)) > 0) {
                    for (int i = 0; i < n; i++) {
                        double d = buf[i] - mean;
                        m2 += d * d;
                        sd += d;
                    }
                }
                double var = (m2 - sd * sd / count) / divisor;
                ElementCodec.setDouble(ot, os, g.outOffset(o), sqrt ? Math.sqrt(var) : var);
            }
        });
    }

    /** Variance of contiguous float runs: one pass over memory ({@link ReductionF32#moments}); a single run in parallel chunks. */
    private static void varianceF32(ReductionLayout g, MemorySegment is, MemorySegment os, DType ot, double divisor, boolean sqrt) {
        if (g.numOut == 1) {
            long io = g.inOffset(0);
            long n = g.numRed;
            int chunks = (int) ((n + FULL_CHUNK - 1) / FULL_CHUNK);
            double[] parts = new double[3 * chunks];
            Parallel.forRange(chunks, 1, (begin, end) -> {
                double[] acc = new double[3];
                for (long c = begin; c < end; c++) {
                    long start = c * FULL_CHUNK;
                    acc[0] = acc[1] = acc[2] = 0;
                    ReductionF32.moments(is, io + 4 * start, Math.min(FULL_CHUNK, n - start), acc);
                    System.arraycopy(acc, 0, parts, 3 * (int) c, 3);
                }
            });
            double[] acc = new double[3];
            for (int c = 0; c < chunks; c++) ReductionF32.merge(acc, parts[3 * c], parts[3 * c + 1], parts[3 * c + 2]);
            double var = acc[2] / divisor;
            ElementCodec.setDouble(ot, os, g.outOffset(0), sqrt ? Math.sqrt(var) : var);
            return;
        }
        Parallel.forRange(g.numOut, grain(g.numRed), (begin, end) -> {
            double[] acc = new double[3];
            for (long o = begin; o < end; o++) {
                acc[0] = acc[1] = acc[2] = 0;
                ReductionF32.moments(is, g.inOffset(o), g.numRed, acc);
                double var = acc[2] / divisor;
                ElementCodec.setDouble(ot, os, g.outOffset(o), sqrt ? Math.sqrt(var) : var);
            }
        });
    }

    @Override
    public void logsumexp(StridedView in, StridedView out) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.memory();
        MemorySegment os = out.memory();
        DType ot = out.dtype();
        Parallel.forRange(g.numOut, grain(2 * g.numRed), (begin, end) -> {
            ReductionLayout.Cursor c = g.new Cursor(in.dtype(), is);
            double[] buf = new double[BLOCK];
            for (long o = begin; o < end; o++) {
                long io = g.inOffset(o);
                c.reset(io);
                double max = Double.NEGATIVE_INFINITY;
                int n;
                while ((n = c.next(buf)) > 0) max = fold(ReduceOp.MAX, max, buf, n, 0);
                // An infinite maximum is not subtracted (inf - inf would be NaN), as PyTorch.
                double shift = Double.isInfinite(max) ? 0 : max;
                c.reset(io);
                double sum = 0;
                while ((n = c.next(buf)) > 0) {
                    for (int i = 0; i < n; i++) sum += Math.exp(buf[i] - shift);
                }
                ElementCodec.setDouble(ot, os, g.outOffset(o), Math.log(sum) + shift);
            }
        });
    }

    // ---------------------------------------------------------------- scans

    @Override
    public void scan(boolean prod, StridedView in, StridedView out, int dim) {
        LineLayout l = new LineLayout(dim, in, out);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.memory();
        MemorySegment os = out.memory();
        DType it = in.dtype();
        DType ot = out.dtype();
        boolean floating = ot.isFloatingPoint();
        long si = l.lineStride[0];
        long so = l.lineStride[1];
        Parallel.forRange(l.lines, grain(l.length), (begin, end) -> {
            double[] dbuf = floating ? new double[BLOCK] : null;
            long[] lbuf = floating ? null : new long[BLOCK];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                long oo = l.offset(1, line);
                double acc = prod ? 1 : 0;
                long lacc = prod ? 1 : 0;
                for (long done = 0; done < l.length; done += BLOCK) {
                    int n = (int) Math.min(BLOCK, l.length - done);
                    if (floating) {
                        ElementIO.load(it, is, io + done * si, si, n, dbuf);
                        for (int i = 0; i < n; i++) dbuf[i] = acc = prod ? acc * dbuf[i] : acc + dbuf[i];
                        ElementIO.store(ot, os, oo + done * so, so, n, dbuf);
                    } else {
                        ElementIO.load(it, is, io + done * si, si, n, lbuf);
                        for (int i = 0; i < n; i++) lbuf[i] = lacc = prod ? lacc * lbuf[i] : lacc + lbuf[i];
                        ElementIO.store(ot, os, oo + done * so, so, n, lbuf);
                    }
                }
            }
        });
    }

    // ---------------------------------------------------------------- sort

    @Override
    public void argsort(StridedView in, StridedView indices, int dim, boolean descending) {
        LineLayout l = new LineLayout(dim, in, indices);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.memory();
        MemorySegment xs = indices.memory();
        DType it = in.dtype();
        boolean floating = it.isFloatingPoint();
        long si = l.lineStride[0];
        long sx = l.lineStride[1];
        int length = Math.toIntExact(l.length);
        int k = Math.toIntExact(in.dim() == 0 ? 1 : indices.size(dim));
        if (k == 0) return;
        long work = Math.max(1, length * (64 - Long.numberOfLeadingZeros(length)));
        boolean packed = it.byteSize() <= 4;
        Parallel.forRange(l.lines, grain(work), (begin, end) -> {
            LineSort sorter = new LineSort();
            double[] dkeys = floating || packed ? new double[length] : null;
            long[] lkeys = floating || packed ? null : new long[length];
            long[] positions = new long[length];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                if (packed) {
                    ElementIO.load(it, is, io, si, length, dkeys);
                    sorter.sortPacked(dkeys, length, k, floating, descending, positions);
                } else if (floating) {
                    ElementIO.load(it, is, io, si, length, dkeys);
                    sorter.sortDoubles(dkeys, length, descending, positions);
                } else {
                    ElementIO.load(it, is, io, si, length, lkeys);
                    sorter.sortLongs(lkeys, length, descending, positions);
                }
                ElementIO.store(DType.INT64, xs, l.offset(1, line), sx, k, positions);
            }
        });
    }

    @Override
    public void searchsorted(StridedView boundaries, StridedView values, StridedView out, boolean right) {
        long rows = values.size(0), m = values.size(1);
        int n = Math.toIntExact(boundaries.size(1));
        if (rows * m == 0) return;
        boolean shared = boundaries.size(0) == 1;
        DType t = values.dtype();
        boolean floating = t.isFloatingPoint();
        long es = t.byteSize();
        MemorySegment bs = boundaries.memory(), vs = values.memory(), os = out.memory();
        long b0 = boundaries.offset() * es, v0 = values.offset() * es, o0 = out.offset() * 8;
        int width = (int) Math.min(m, BLOCK);
        Parallel.forRange(rows, grain(m * Math.max(1, 64 - Long.numberOfLeadingZeros(n))), (begin, end) -> {
            double[] db = floating ? new double[n] : null, dv = floating ? new double[width] : null;
            long[] lb = floating ? null : new long[n], lv = floating ? null : new long[width];
            long[] pos = new long[width];
            long loaded = -1;
            for (long r = begin; r < end; r++) {
                long br = shared ? 0 : r;
                if (br != loaded) {
                    if (floating) ElementIO.load(t, bs, b0 + br * n * es, es, n, db);
                    else ElementIO.load(t, bs, b0 + br * n * es, es, n, lb);
                    loaded = br;
                }
                for (long done = 0; done < m; done += width) {
                    int c = (int) Math.min(width, m - done);
                    long vo = v0 + (r * m + done) * es;
                    if (floating) {
                        ElementIO.load(t, vs, vo, es, c, dv);
                        for (int i = 0; i < c; i++) pos[i] = lowerBound(db, n, dv[i], right);
                    } else {
                        ElementIO.load(t, vs, vo, es, c, lv);
                        for (int i = 0; i < c; i++) pos[i] = lowerBound(lb, n, lv[i], right);
                    }
                    ElementIO.store(DType.INT64, os, o0 + (r * m + done) * 8, 8, c, pos);
                }
            }
        });
    }

    /** PyTorch's search: move right while {@code !(b >= v)} ({@code !(b > v)} when right). */
    private static int lowerBound(double[] b, int n, double v, boolean right) {
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (right ? !(b[mid] > v) : !(b[mid] >= v)) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    private static int lowerBound(long[] b, int n, long v, boolean right) {
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (right ? b[mid] <= v : b[mid] < v) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    // ---------------------------------------------------------------- softmax

    @Override
    public void softmax(StridedView in, StridedView out, int dim, boolean log) {
        LineLayout l = new LineLayout(dim, in, out);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.memory();
        MemorySegment os = out.memory();
        DType it = in.dtype();
        DType ot = out.dtype();
        long si = l.lineStride[0];
        long so = l.lineStride[1];
        boolean f32 = it == DType.FLOAT32 && ot == DType.FLOAT32;
        boolean fast = f32 && (si == 4 || l.length == 1) && (so == 4 || l.length == 1);
        boolean fast64 = it == DType.FLOAT64 && ot == DType.FLOAT64 && (si == 8 || l.length == 1) && (so == 8 || l.length == 1);
        int length = Math.toIntExact(l.length);
        if (f32 && !fast && in.isContiguous() && out.isContiguous() && in.numel() < Integer.MAX_VALUE) {
            long[] shape = in.shape();
            long outer = 1, inner = 1;
            for (int d = 0; d < dim; d++) outer *= shape[d];
            for (int d = dim + 1; d < shape.length; d++) inner *= shape[d];
            SoftmaxF32.inner(is, in.offset() * 4, os, out.offset() * 4, outer, length, (int) inner, log);
            return;
        }
        if (fast && length <= SoftmaxF32.SHORT_ROW && dim == in.shape().length - 1 && in.isContiguous() && out.isContiguous()) {
            long io = in.offset() * 4, oo = out.offset() * 4;
            Parallel.forRange(l.lines, grain(3 * l.length), (begin, end) ->
                    SoftmaxF32.shortRows(is, io + 4 * begin * length, os, oo + 4 * begin * length, end - begin, length, log));
            return;
        }
        Parallel.forRange(l.lines, grain(3 * l.length), (begin, end) -> {
            double[] buf = fast || fast64 ? null : new double[length];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                long oo = l.offset(1, line);
                if (fast) {
                    SoftmaxF32.row(is, io, os, oo, length, log);
                    continue;
                }
                if (fast64) {
                    ReductionF64.softmaxRow(is, io, os, oo, length, log);
                    continue;
                }
                ElementIO.load(it, is, io, si, length, buf);
                double max = Double.NEGATIVE_INFINITY;
                for (int i = 0; i < length; i++) max = Math.max(max, buf[i]);
                double sum = 0;
                for (int i = 0; i < length; i++) sum += Math.exp(buf[i] - max);
                if (log) {
                    double logSum = Math.log(sum);
                    for (int i = 0; i < length; i++) buf[i] = buf[i] - max - logSum;
                } else {
                    for (int i = 0; i < length; i++) buf[i] = Math.exp(buf[i] - max) / sum;
                }
                ElementIO.store(ot, os, oo, so, length, buf);
            }
        });
    }
}
