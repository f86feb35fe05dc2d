package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.op.ReduceOp;

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
 *       gradient: sum over dim 0 of [batch, features]): whole rows are accumulated into a register
 *       tile of output columns;
 *   <li>a full reduction of a contiguous tensor: fixed 64K-element chunks reduced in parallel, then
 *       combined in order.
 * </ul>
 * Float32 sums are blocked: a lane accumulates at most {@value #SUM_BLOCK}/{@code lanes} elements in
 * f32 before the block's sum joins a double total, which keeps 1M-element sums within ~1e-7 relative
 * of the exact value (PyTorch's cascade summation is as accurate). Everything else takes the generic
 * path: blocks converted to double (floating input) or long (integral input) by {@link ElementIO}.
 */
final class CpuReductionKernels implements ReductionKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements per block in the generic path: buffers stay in L1. */
    private static final int BLOCK = 256;
    /** Elements per f32 partial sum before it is added to a double total. */
    private static final int SUM_BLOCK = 2048;
    /** Elements per independently reduced chunk of a full reduction (the partials' order is fixed). */
    private static final long FULL_CHUNK = 1 << 16;
    /** Rows an outer-reduction register tile accumulates before flushing into its running total. */
    private static final int OUTER_FLUSH = 128;
    /** Minimum elements of work per thread before a kernel goes parallel. */
    private static final long GRAIN = 32_768;

    private static long grain(long workPerItem) {
        return Math.max(1, GRAIN / Math.max(1, workPerItem));
    }

    // ---------------------------------------------------------------- accumulating reductions

    @Override
    public void reduce(ReduceOp op, Tensor in, Tensor out, double p) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment os = out.storage().segment();
        DType it = in.dtype();
        DType ot = out.dtype();
        if (it == DType.FLOAT32 && ot == DType.FLOAT32 && g.numRed > 0) {
            boolean vectorOp = op == ReduceOp.SUM || op == ReduceOp.MAX || op == ReduceOp.MIN;
            if (vectorOp && g.redShape.length == 1 && g.rowStride == 4) {
                if (g.numOut == 1) fullF32(op, is, g.inOffset(0), g.numRed, os, g.outOffset(0));
                else innerF32(op, g, is, os);
                return;
            }
            int last = g.keptShape.length - 1;
            if (op == ReduceOp.SUM && g.keptIn[last] == 4 && g.keptOut[last] == 4) {
                outerSumF32(g, is, os);
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
                    ElementIO.setDouble(ot, os, oo, op.finish(acc, g.numRed, p));
                } else {
                    long acc = op.identityLong();
                    while ((n = c.next(lbuf)) > 0) acc = foldLong(op, acc, lbuf, n);
                    ElementIO.setLong(ot, os, oo, acc);
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
    private static void innerF32(ReduceOp op, ReductionLayout g, MemorySegment is, MemorySegment os) {
        Parallel.forRange(g.numOut, grain(g.numRed), (begin, end) -> {
            for (long o = begin; o < end; o++) {
                os.set(ElementIO.F32, g.outOffset(o), (float) rowF32(op, is, g.inOffset(o), g.numRed));
            }
        });
    }

    /** A full reduction of {@code n} contiguous floats: fixed chunks in parallel, partials combined in order. */
    private static void fullF32(ReduceOp op, MemorySegment is, long io, long n, MemorySegment os, long oo) {
        int chunks = (int) ((n + FULL_CHUNK - 1) / FULL_CHUNK);
        double[] partial = new double[chunks];
        Parallel.forRange(chunks, 1, (begin, end) -> {
            for (long c = begin; c < end; c++) {
                long start = c * FULL_CHUNK;
                partial[(int) c] = rowF32(op, is, io + start * 4, Math.min(FULL_CHUNK, n - start));
            }
        });
        double acc = op.identity(0);
        for (double v : partial) acc = op.combine(acc, v, 0);
        os.set(ElementIO.F32, oo, (float) acc);
    }

    private static double rowF32(ReduceOp op, MemorySegment s, long off, long n) {
        return switch (op) {
            case SUM -> sumF32(s, off, n);
            case MAX -> extremumF32(s, off, n, true);
            case MIN -> extremumF32(s, off, n, false);
            default -> throw new IllegalStateException("no vector form for " + op);
        };
    }

    /** Sum of {@code n} contiguous floats: four vector accumulators per block of {@value #SUM_BLOCK}, blocks added in double. */
    static double sumF32(MemorySegment s, long off, long n) {
        double total = 0;
        long i = 0;
        while (i < n) {
            long blockEnd = Math.min(n, i + SUM_BLOCK);
            FloatVector a0 = FloatVector.zero(FS);
            FloatVector a1 = FloatVector.zero(FS);
            FloatVector a2 = FloatVector.zero(FS);
            FloatVector a3 = FloatVector.zero(FS);
            for (long upper = blockEnd - 4L * FL; i <= upper; i += 4L * FL) {
                long b = off + i * 4;
                a0 = a0.add(FloatVector.fromMemorySegment(FS, s, b, LE));
                a1 = a1.add(FloatVector.fromMemorySegment(FS, s, b + FL * 4L, LE));
                a2 = a2.add(FloatVector.fromMemorySegment(FS, s, b + FL * 8L, LE));
                a3 = a3.add(FloatVector.fromMemorySegment(FS, s, b + FL * 12L, LE));
            }
            for (long upper = blockEnd - FL; i <= upper; i += FL) {
                a0 = a0.add(FloatVector.fromMemorySegment(FS, s, off + i * 4, LE));
            }
            if (i < blockEnd) {
                VectorMask<Float> m = FS.indexInRange(0, blockEnd - i);
                a1 = a1.add(FloatVector.fromMemorySegment(FS, s, off + i * 4, LE, m));
                i = blockEnd;
            }
            total += VectorF32.sumLanes(a0.add(a1).add(a2.add(a3)));
        }
        return total;
    }

    /** Maximum (or minimum) of {@code n >= 1} contiguous floats; NaN propagates, as {@link Math#max}. */
    private static double extremumF32(MemorySegment s, long off, long n, boolean max) {
        float first = s.get(ElementIO.F32, off);
        FloatVector a0 = FloatVector.broadcast(FS, first);
        FloatVector a1 = a0;
        long i = 0;
        for (long upper = n - 2L * FL; i <= upper; i += 2L * FL) {
            FloatVector x0 = FloatVector.fromMemorySegment(FS, s, off + i * 4, LE);
            FloatVector x1 = FloatVector.fromMemorySegment(FS, s, off + (i + FL) * 4, LE);
            a0 = max ? a0.max(x0) : a0.min(x0);
            a1 = max ? a1.max(x1) : a1.min(x1);
        }
        FloatVector a = max ? a0.max(a1) : a0.min(a1);
        float r = a.reduceLanes(max ? VectorOperators.MAX : VectorOperators.MIN);
        for (; i < n; i++) {
            float x = s.get(ElementIO.F32, off + i * 4);
            r = max ? Math.max(r, x) : Math.min(r, x);
        }
        return r;
    }

    /**
     * Sums over outer dimensions when the innermost kept dimension is contiguous in input and output:
     * each work item owns a tile of {@code 4 * lanes} output columns and adds every reduced row into it.
     */
    private static void outerSumF32(ReductionLayout g, MemorySegment is, MemorySegment os) {
        long cols = g.keptShape[g.keptShape.length - 1];
        long outer = g.numOut / cols;
        long tile = 4L * FL;
        long tiles = (cols + tile - 1) / tile;
        Parallel.forRange(outer * tiles, grain(g.numRed * tile), (begin, end) -> {
            for (long item = begin; item < end; item++) {
                long o0 = (item / tiles) * cols;
                long j = (item % tiles) * tile;
                long io = g.inOffset(o0) + j * 4;
                long oo = g.outOffset(o0) + j * 4;
                long width = Math.min(tile, cols - j);
                if (width == tile) {
                    sumColumnsTileF32(g, is, io, os, oo);
                } else {
                    for (long jj = 0; jj < width; jj += FL) {
                        sumColumnsF32(g, is, io + jj * 4, os, oo + jj * 4, FS.indexInRange(0, width - jj));
                    }
                }
            }
        });
    }

    private static void sumColumnsTileF32(ReductionLayout g, MemorySegment is, long io, MemorySegment os, long oo) {
        FloatVector t0 = FloatVector.zero(FS), t1 = t0, t2 = t0, t3 = t0;
        FloatVector a0 = t0, a1 = t0, a2 = t0, a3 = t0;
        int pending = 0;
        for (long k = 0; k < g.numRed; k++) {
            long b = io + g.redOffset(k);
            a0 = a0.add(FloatVector.fromMemorySegment(FS, is, b, LE));
            a1 = a1.add(FloatVector.fromMemorySegment(FS, is, b + FL * 4L, LE));
            a2 = a2.add(FloatVector.fromMemorySegment(FS, is, b + FL * 8L, LE));
            a3 = a3.add(FloatVector.fromMemorySegment(FS, is, b + FL * 12L, LE));
            if (++pending == OUTER_FLUSH) {
                t0 = t0.add(a0);
                t1 = t1.add(a1);
                t2 = t2.add(a2);
                t3 = t3.add(a3);
                a0 = a1 = a2 = a3 = FloatVector.zero(FS);
                pending = 0;
            }
        }
        t0.add(a0).intoMemorySegment(os, oo, LE);
        t1.add(a1).intoMemorySegment(os, oo + FL * 4L, LE);
        t2.add(a2).intoMemorySegment(os, oo + FL * 8L, LE);
        t3.add(a3).intoMemorySegment(os, oo + FL * 12L, LE);
    }

    private static void sumColumnsF32(ReductionLayout g, MemorySegment is, long io, MemorySegment os, long oo,
                                      VectorMask<Float> m) {
        FloatVector t = FloatVector.zero(FS);
        FloatVector a = t;
        int pending = 0;
        for (long k = 0; k < g.numRed; k++) {
            a = a.add(FloatVector.fromMemorySegment(FS, is, io + g.redOffset(k), LE, m));
            if (++pending == OUTER_FLUSH) {
                t = t.add(a);
                a = FloatVector.zero(FS);
                pending = 0;
            }
        }
        t.add(a).intoMemorySegment(os, oo, LE, m);
    }

    // ---------------------------------------------------------------- max/min with indices

    @Override
    public void argReduce(boolean max, Tensor in, Tensor values, Tensor indices, int dim) {
        LineLayout l = values == null ? new LineLayout(dim, in, indices) : new LineLayout(dim, in, indices, values);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment xs = indices.storage().segment();
        MemorySegment vs = values == null ? null : values.storage().segment();
        DType it = in.dtype();
        DType vt = values == null ? null : values.dtype();
        boolean floating = it.isFloatingPoint();
        long stride = l.lineStride[0];
        Parallel.forRange(l.lines, grain(l.length), (begin, end) -> {
            double[] dbuf = floating ? new double[BLOCK] : null;
            long[] lbuf = floating ? null : new long[BLOCK];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                long bestIndex = 0;
                double best = 0;
                long bestLong = 0;
                if (floating) {
                    best = ElementIO.getDouble(it, is, io);
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
                    bestLong = ElementIO.getLong(it, is, io);
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
                    if (floating) ElementIO.setDouble(vt, vs, l.offset(2, line), best);
                    else ElementIO.setLong(vt, vs, l.offset(2, line), bestLong);
                }
            }
        });
    }

    // ---------------------------------------------------------------- two-pass reductions

    @Override
    public void variance(Tensor in, Tensor out, double correction, boolean sqrt) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment os = out.storage().segment();
        DType ot = out.dtype();
        double count = g.numRed;
        double divisor = Math.max(0, count - correction);
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
                ElementIO.setDouble(ot, os, g.outOffset(o), sqrt ? Math.sqrt(var) : var);
            }
        });
    }

    @Override
    public void logsumexp(Tensor in, Tensor out) {
        ReductionLayout g = new ReductionLayout(in, out);
        if (g.numOut == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment os = out.storage().segment();
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
                ElementIO.setDouble(ot, os, g.outOffset(o), Math.log(sum) + shift);
            }
        });
    }

    // ---------------------------------------------------------------- scans

    @Override
    public void scan(boolean prod, Tensor in, Tensor out, int dim) {
        LineLayout l = new LineLayout(dim, in, out);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment os = out.storage().segment();
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
    public void argsort(Tensor in, Tensor indices, int dim, boolean descending) {
        LineLayout l = new LineLayout(dim, in, indices);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment xs = indices.storage().segment();
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
    public void searchsorted(Tensor boundaries, Tensor values, Tensor out, boolean right) {
        long rows = values.size(0), m = values.size(1);
        int n = Math.toIntExact(boundaries.size(1));
        if (rows * m == 0) return;
        boolean shared = boundaries.size(0) == 1;
        DType t = values.dtype();
        boolean floating = t.isFloatingPoint();
        long es = t.byteSize();
        MemorySegment bs = boundaries.storage().segment(), vs = values.storage().segment(), os = out.storage().segment();
        long b0 = boundaries.storageOffset() * es, v0 = values.storageOffset() * es, o0 = out.storageOffset() * 8;
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
    public void softmax(Tensor in, Tensor out, int dim, boolean log) {
        LineLayout l = new LineLayout(dim, in, out);
        if (l.lines == 0 || l.length == 0) return;
        MemorySegment is = in.storage().segment();
        MemorySegment os = out.storage().segment();
        DType it = in.dtype();
        DType ot = out.dtype();
        long si = l.lineStride[0];
        long so = l.lineStride[1];
        boolean fast = it == DType.FLOAT32 && ot == DType.FLOAT32 && (si == 4 || l.length == 1) && (so == 4 || l.length == 1);
        int length = Math.toIntExact(l.length);
        Parallel.forRange(l.lines, grain(3 * l.length), (begin, end) -> {
            double[] buf = fast ? null : new double[length];
            for (long line = begin; line < end; line++) {
                long io = l.offset(0, line);
                long oo = l.offset(1, line);
                if (fast) {
                    softmaxRowF32(is, io, os, oo, length, log);
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

    /**
     * Softmax of one contiguous f32 row: max, then exp(x - max) and its sum, then a scale (or a log shift).
     * Each pass is its own small method: one large method made C1 give up ("out of virtual registers"),
     * which kept the row in slow non-intrinsic code under some JIT schedules.
     */
    private static void softmaxRowF32(MemorySegment is, long io, MemorySegment os, long oo, int n, boolean log) {
        float max = (float) extremumF32(is, io, n, true);
        float sum = log ? expSumF32(is, io, n, max) : expStoreSumF32(is, io, os, oo, n, max);
        if (log) shiftF32(is, io, os, oo, n, max + (float) Math.log(sum));
        else scaleF32(os, oo, n, 1f / sum);
    }

    /** sum(exp(x - max)), also storing the exponentials. */
    private static float expStoreSumF32(MemorySegment is, long io, MemorySegment os, long oo, int n, float max) {
        FloatVector vmax = FloatVector.broadcast(FS, max);
        FloatVector acc = FloatVector.zero(FS);
        int i = 0;
        for (int upper = n - n % FL; i < upper; i += FL) {
            FloatVector e = FloatVector.fromMemorySegment(FS, is, io + i * 4L, LE).sub(vmax).lanewise(VectorOperators.EXP);
            e.intoMemorySegment(os, oo + i * 4L, LE);
            acc = acc.add(e);
        }
        float sum = VectorF32.sumLanes(acc);
        for (; i < n; i++) {
            float e = (float) Math.exp(is.get(ElementIO.F32, io + i * 4L) - max);
            os.set(ElementIO.F32, oo + i * 4L, e);
            sum += e;
        }
        return sum;
    }

    /** sum(exp(x - max)) without storing. */
    private static float expSumF32(MemorySegment is, long io, int n, float max) {
        FloatVector vmax = FloatVector.broadcast(FS, max);
        FloatVector acc = FloatVector.zero(FS);
        int i = 0;
        for (int upper = n - n % FL; i < upper; i += FL) {
            acc = acc.add(FloatVector.fromMemorySegment(FS, is, io + i * 4L, LE).sub(vmax).lanewise(VectorOperators.EXP));
        }
        float sum = VectorF32.sumLanes(acc);
        for (; i < n; i++) sum += (float) Math.exp(is.get(ElementIO.F32, io + i * 4L) - max);
        return sum;
    }

    /** out = out * scale, in place. */
    private static void scaleF32(MemorySegment os, long oo, int n, float scale) {
        int i = 0;
        for (int upper = n - n % FL; i < upper; i += FL) {
            FloatVector.fromMemorySegment(FS, os, oo + i * 4L, LE).mul(scale).intoMemorySegment(os, oo + i * 4L, LE);
        }
        for (; i < n; i++) os.set(ElementIO.F32, oo + i * 4L, os.get(ElementIO.F32, oo + i * 4L) * scale);
    }

    /** out = x - shift (log-softmax: shift = max + log(sum)). */
    private static void shiftF32(MemorySegment is, long io, MemorySegment os, long oo, int n, float shift) {
        int i = 0;
        for (int upper = n - n % FL; i < upper; i += FL) {
            FloatVector.fromMemorySegment(FS, is, io + i * 4L, LE).sub(shift).intoMemorySegment(os, oo + i * 4L, LE);
        }
        for (; i < n; i++) os.set(ElementIO.F32, oo + i * 4L, is.get(ElementIO.F32, io + i * 4L) - shift);
    }
}
