package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU's fused layer norm over the rows of a contiguous {@code [rows, cols]} block of float32 or float64 (every operand
 * of that dtype, contiguous; the caller converts): forward reads each row three times while it sits in L1 (the sum, the
 * centred sum of squares, then {@code (x - mean) * rstd * w + b}); backward twice for the input gradient (the row sums of
 * {@code g * w} and {@code g * w * (x - mean)}, then the gradient), the first of those passes also adding the row's
 * {@code g * xhat} and {@code g} into its part's column sums (the weight and bias gradients). float32 rows run
 * Vector API loops whose f32 lane sums are flushed into doubles every {@value #SUM_BLOCK} elements; float64 rows run
 * plain loops (gradcheck sizes, not a hot path). Rows are split into parts whose count depends on the row count only,
 * each part's column sums kept apart and added in part order, so the weight and bias gradients do not depend on the
 * thread count.
 */
final class CpuLayerNormKernels {
    private CpuLayerNormKernels() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Elements of a row summed in f32 lanes before the partial sums join a double total. */
    private static final int SUM_BLOCK = 2048;
    /** Elements of work per thread before a kernel goes parallel. */
    private static final long GRAIN = 32_768;
    /** The most row parts of the backward's column sums (each holds two {@code cols} float arrays). */
    private static final int MAX_PARTS = 256;
    /** The fewest rows of a backward part. */
    private static final int MIN_PART_ROWS = 16;

    private static long base(StridedView t) {
        return t.offset() * t.dtype().byteSize();
    }

    private static FloatVector ld(MemorySegment s, long off) {
        return FloatVector.fromMemorySegment(FS, s, off, LE);
    }

    static void forward(StridedView x, long rows, long cols, StridedView weight, StridedView bias, double eps, StridedView out,
                        StridedView mean, StridedView rstd) {
        Parallel.forRange(rows, Math.max(1, GRAIN / Math.max(1, cols)), (begin, end) -> forwardRows(x, cols, weight, bias, eps, out,
                mean, rstd, begin, end));
    }

    /**
     * Rows {@code [begin, end)} of {@link #forward}, on the calling thread. Each row is read whole (its statistics) before
     * it is written, so {@code out} may be {@code x} itself: the JIT's fused producer normalises its rows in place.
     */
    static void forwardRows(StridedView x, long cols, StridedView weight, StridedView bias, double eps, StridedView out,
                            StridedView mean, StridedView rstd, long begin, long end) {
        int n = Math.toIntExact(cols);
        boolean f32 = x.dtype() == DType.FLOAT32;
        long es = x.dtype().byteSize();
        MemorySegment xs = x.memory(), os = out.memory();
        long xb = base(x), ob = base(out);
        MemorySegment ws = weight == null ? null : weight.memory(), bs = bias == null ? null : bias.memory();
        long wb = weight == null ? 0 : base(weight), bb = bias == null ? 0 : base(bias);
        MemorySegment ms = mean.memory(), rs = rstd.memory();
        long mb = base(mean), rb = base(rstd);
        for (long i = begin; i < end; i++) {
            long xo = xb + i * n * es, oo = ob + i * n * es;
            if (f32) {
                double m = sumF32(xs, xo, n, 0f, false) / n;
                double v = sumF32(xs, xo, n, (float) m, true) / n;
                double r = 1 / Math.sqrt(v + eps);
                rowF32(xs, xo, n, (float) m, (float) r, ws, wb, bs, bb, os, oo);
                ms.set(ElementIO.F32, mb + 4 * i, (float) m);
                rs.set(ElementIO.F32, rb + 4 * i, (float) r);
            } else {
                double sum = 0;
                for (int j = 0; j < n; j++) sum += xs.get(ElementIO.F64, xo + 8L * j);
                double m = sum / n;
                double q = 0;
                for (int j = 0; j < n; j++) {
                    double d = xs.get(ElementIO.F64, xo + 8L * j) - m;
                    q += d * d;
                }
                double r = 1 / Math.sqrt(q / n + eps);
                for (int j = 0; j < n; j++) {
                    double y = (xs.get(ElementIO.F64, xo + 8L * j) - m) * r;
                    if (ws != null) y *= ws.get(ElementIO.F64, wb + 8L * j);
                    if (bs != null) y += bs.get(ElementIO.F64, bb + 8L * j);
                    os.set(ElementIO.F64, oo + 8L * j, y);
                }
                ms.set(ElementIO.F64, mb + 8 * i, m);
                rs.set(ElementIO.F64, rb + 8 * i, r);
            }
        }
    }

    /** A float32 row's sum, or with {@code squares} its sum of squares about {@code shift} (the mean). */
    private static double sumF32(MemorySegment xs, long xo, int n, float shift, boolean squares) {
        double total = 0;
        for (int j0 = 0; j0 < n; j0 += SUM_BLOCK) {
            int len = Math.min(SUM_BLOCK, n - j0);
            long o = xo + 4L * j0;
            FloatVector a = FloatVector.zero(FS), b = FloatVector.zero(FS);
            int upper2 = len - len % (2 * FL), upper = len - len % FL;
            int j = 0;
            // two chains: one add chain alone is latency-bound
            for (; j < upper2; j += 2 * FL) {
                FloatVector u = ld(xs, o + 4L * j), w = ld(xs, o + 4L * (j + FL));
                if (squares) {
                    u = u.sub(shift);
                    w = w.sub(shift);
                    a = u.fma(u, a);
                    b = w.fma(w, b);
                } else {
                    a = a.add(u);
                    b = b.add(w);
                }
            }
            for (; j < upper; j += FL) {
                FloatVector u = ld(xs, o + 4L * j);
                if (squares) {
                    u = u.sub(shift);
                    a = u.fma(u, a);
                } else {
                    a = a.add(u);
                }
            }
            float t = 0;
            for (; j < len; j++) {
                float u = xs.get(ElementIO.F32, o + 4L * j) - shift;
                t += squares ? u * u : u;
            }
            total += VectorF32.sumLanes(a.add(b)) + (double) t;
        }
        return total;
    }

    /** {@code out = (x - m) * r * w + b} over a float32 row (w and b where given). */
    private static void rowF32(MemorySegment xs, long xo, int n, float m, float r, MemorySegment ws, long wb, MemorySegment bs,
                               long bb, MemorySegment os, long oo) {
        int upper = n - n % FL;
        int j = 0;
        for (; j < upper; j += FL) {
            FloatVector y = ld(xs, xo + 4L * j).sub(m).mul(r);
            if (ws != null) {
                y = bs != null ? y.fma(ld(ws, wb + 4L * j), ld(bs, bb + 4L * j)) : y.mul(ld(ws, wb + 4L * j));
            } else if (bs != null) {
                y = y.add(ld(bs, bb + 4L * j));
            }
            y.intoMemorySegment(os, oo + 4L * j, LE);
        }
        for (; j < n; j++) {
            float y = (xs.get(ElementIO.F32, xo + 4L * j) - m) * r;
            if (ws != null) {
                y = bs != null ? Math.fma(y, ws.get(ElementIO.F32, wb + 4L * j), bs.get(ElementIO.F32, bb + 4L * j))
                        : y * ws.get(ElementIO.F32, wb + 4L * j);
            } else if (bs != null) {
                y += bs.get(ElementIO.F32, bb + 4L * j);
            }
            os.set(ElementIO.F32, oo + 4L * j, y);
        }
    }

    /**
     * Layer norm's three gradients: with {@code xhat = (x - mean) * rstd} and {@code gw = g * w}, {@code gradInput = rstd *
     * (gw - mean(gw) - xhat * mean(gw * xhat))} per row, {@code gradWeight = sum(g * xhat)} and {@code gradBias = sum(g)}
     * per column. Any of the three outputs may be null.
     */
    static void backward(StridedView gradOut, StridedView x, long rows, long cols, StridedView mean, StridedView rstd,
                         StridedView weight, StridedView gradInput, StridedView gradWeight, StridedView gradBias) {
        int n = Math.toIntExact(cols);
        boolean f32 = x.dtype() == DType.FLOAT32;
        long es = x.dtype().byteSize();
        boolean columns = gradWeight != null || gradBias != null;
        int partRows = (int) Math.max(MIN_PART_ROWS, (rows + MAX_PARTS - 1) / MAX_PARTS);
        int parts = (int) Math.max(1, (rows + partRows - 1) / partRows);
        // per part: the column sums of g * xhat, then of g (the calling thread's buffer, kept between calls)
        float[] colsF = columns && f32 ? columnScratch(parts * 2 * n) : null;
        double[] colsD = columns && !f32 ? new double[parts * 2 * n] : null;
        MemorySegment gs = gradOut.memory(), xs = x.memory(), ms = mean.memory(), rs = rstd.memory();
        long gb = base(gradOut), xb = base(x), mb = base(mean), rb = base(rstd);
        MemorySegment ws = weight == null ? null : weight.memory();
        long wb = weight == null ? 0 : base(weight);
        MemorySegment ds = gradInput == null ? null : gradInput.memory();
        long db = gradInput == null ? 0 : base(gradInput);
        Parallel.forRange(parts, Math.max(1, GRAIN / Math.max(1, (long) partRows * n)), (begin, end) -> {
            for (long p = begin; p < end; p++) {
                long r0 = p * partRows, r1 = Math.min(rows, r0 + partRows);
                int at = (int) p * 2 * n;
                if (colsF != null) java.util.Arrays.fill(colsF, at, at + 2 * n, 0f);
                for (long i = r0; i < r1; i++) {
                    long go = gb + i * n * es, xo = xb + i * n * es, dO = db + i * n * es;
                    if (f32) {
                        float m = ms.get(ElementIO.F32, mb + 4 * i), r = rs.get(ElementIO.F32, rb + 4 * i);
                        backwardRowF32(gs, go, xs, xo, n, m, r, ws, wb, ds, dO, colsF, at);
                    } else {
                        double m = ms.get(ElementIO.F64, mb + 8 * i), r = rs.get(ElementIO.F64, rb + 8 * i);
                        backwardRowF64(gs, go, xs, xo, n, m, r, ws, wb, ds, dO, colsD, at);
                    }
                }
            }
        });
        if (columns) writeColumnSums(colsF, colsD, parts, n, gradWeight, gradBias);
    }

    /** The parts' column sums added in part order into the weight and bias gradients (either may be null). */
    private static void writeColumnSums(float[] colsF, double[] colsD, int parts, int n, StridedView gradWeight, StridedView gradBias) {
        boolean f32 = colsF != null;
        // the parts' sums added in part order, each column's on its own (independent adds, not one chain)
        double[] total = new double[2 * n];
        for (int p = 0; p < parts; p++) {
            int at = p * 2 * n;
            if (f32) for (int j = 0; j < 2 * n; j++) total[j] += colsF[at + j];
            else for (int j = 0; j < 2 * n; j++) total[j] += colsD[at + j];
        }
        for (int k = 0; k < 2; k++) {
            StridedView dst = k == 0 ? gradWeight : gradBias;
            if (dst == null) continue;
            MemorySegment s = dst.memory();
            long o = base(dst);
            for (int j = 0; j < n; j++) {
                if (f32) s.set(ElementIO.F32, o + 4L * j, (float) total[k * n + j]);
                else s.set(ElementIO.F64, o + 8L * j, total[k * n + j]);
            }
        }
    }

    /**
     * A float32 row's input gradient (into {@code ds} where given) and its terms of the column sums of {@code g * xhat}
     * and {@code g} (into {@code cols[at..]} where given, each column's row terms added in row order): the first pass
     * reads g and x for the row sums and the column sums together, so that the column sums take no pass of their own.
     */
    private static void backwardRowF32(MemorySegment gs, long go, MemorySegment xs, long xo, int n, float m, float r,
                                       MemorySegment ws, long wb, MemorySegment ds, long dO, float[] cols, int at) {
        int upper = n - n % FL;
        // the row sums of gw and gw * (x - m), each in f32 lanes flushed into a double per SUM_BLOCK
        double sa = 0, sb = 0;
        for (int j0 = 0; j0 < n; j0 += SUM_BLOCK) {
            int end = Math.min(n, j0 + SUM_BLOCK), vend = Math.min(end, upper);
            FloatVector a = FloatVector.zero(FS), b = FloatVector.zero(FS);
            int j = j0;
            for (; j < vend; j += FL) {
                FloatVector g = ld(gs, go + 4L * j);
                FloatVector d = ld(xs, xo + 4L * j).sub(m);
                if (cols != null) {
                    g.fma(d.mul(r), FloatVector.fromArray(FS, cols, at + j)).intoArray(cols, at + j);
                    FloatVector.fromArray(FS, cols, at + n + j).add(g).intoArray(cols, at + n + j);
                }
                if (ws != null) g = g.mul(ld(ws, wb + 4L * j));
                a = a.add(g);
                b = g.fma(d, b);
            }
            float ta = 0, tb = 0;
            for (; j < end; j++) {
                float g = gs.get(ElementIO.F32, go + 4L * j);
                float d = xs.get(ElementIO.F32, xo + 4L * j) - m;
                if (cols != null) {
                    cols[at + j] = Math.fma(g, d * r, cols[at + j]);
                    cols[at + n + j] += g;
                }
                if (ws != null) g *= ws.get(ElementIO.F32, wb + 4L * j);
                ta += g;
                tb += g * d;
            }
            sa += VectorF32.sumLanes(a) + (double) ta;
            sb += VectorF32.sumLanes(b) + (double) tb;
        }
        if (ds == null) return;
        // gradInput = gw * r + xhat * c1 + c0, xhat = (x - m) * r; sb sums gw * (x - m), so mean(gw * xhat) = sb * r / n
        float c1 = (float) (-sb * r * r / n), c0 = (float) (-sa * r / n);
        FloatVector rv = FloatVector.broadcast(FS, r);
        int j = 0;
        for (; j < upper; j += FL) {
            FloatVector g = ld(gs, go + 4L * j);
            FloatVector xhat = ld(xs, xo + 4L * j).sub(m).mul(r);
            FloatVector gw = ws != null ? g.mul(ld(ws, wb + 4L * j)) : g;
            gw.fma(rv, xhat.fma(c1, c0)).intoMemorySegment(ds, dO + 4L * j, LE);
        }
        for (; j < n; j++) {
            float g = gs.get(ElementIO.F32, go + 4L * j);
            float xhat = (xs.get(ElementIO.F32, xo + 4L * j) - m) * r;
            float gw = ws != null ? g * ws.get(ElementIO.F32, wb + 4L * j) : g;
            ds.set(ElementIO.F32, dO + 4L * j, Math.fma(gw, r, Math.fma(xhat, c1, c0)));
        }
    }

    private static void backwardRowF64(MemorySegment gs, long go, MemorySegment xs, long xo, int n, double m, double r,
                                       MemorySegment ws, long wb, MemorySegment ds, long dO, double[] cols, int at) {
        double sa = 0, sb = 0;
        for (int j = 0; j < n; j++) {
            double g = gs.get(ElementIO.F64, go + 8L * j);
            if (ws != null) g *= ws.get(ElementIO.F64, wb + 8L * j);
            sa += g;
            sb += g * (xs.get(ElementIO.F64, xo + 8L * j) - m);
        }
        double c1 = -sb * r * r / n, c0 = -sa * r / n;
        for (int j = 0; j < n; j++) {
            double g = gs.get(ElementIO.F64, go + 8L * j);
            double xhat = (xs.get(ElementIO.F64, xo + 8L * j) - m) * r;
            if (ds != null) {
                double gw = ws != null ? g * ws.get(ElementIO.F64, wb + 8L * j) : g;
                ds.set(ElementIO.F64, dO + 8L * j, gw * r + xhat * c1 + c0);
            }
            if (cols != null) {
                cols[at + j] += g * xhat;
                cols[at + n + j] += g;
            }
        }
    }

    /** Writes the float32 input rows {@code [r0, r1)} of a produced backward, contiguous from offset 0 of {@code rows}. */
    @FunctionalInterface
    interface RowProducer {
        void rows(long r0, long r1, MemorySegment rows);
    }

    /** Takes the input gradient of rows {@code [r0, r1)} of a produced backward, contiguous from byte {@code offset} of {@code rows}. */
    @FunctionalInterface
    interface RowGradients {
        void rows(long r0, long r1, MemorySegment rows, long offset);
    }

    /**
     * {@link #backward} in float32 for an input that is never stored: {@code producer} writes each part's rows of it into
     * per-thread scratch (the JIT's fused producer, recomputed), the part's input gradient goes to per-thread scratch for
     * {@code consumer} (the producer's own gradients), or into {@code gradInput} (contiguous float32 {@code [rows, cols]})
     * where that is not null, and the column sums are taken in the rows' first pass, as in backward. The parts,
     * rows and column sums are {@link #backward}'s, so every gradient is its values to the bit. Returns false, doing
     * nothing, where a part would not fit {@link #MAX_PRODUCED_PART} values of scratch. {@code gradOut}'s rows are
     * contiguous; its row stride is theirs, or 0 for one row read for every row.
     */
    static boolean backwardProduced(StridedView gradOut, long rows, long cols, StridedView mean, StridedView rstd, StridedView weight,
                                    RowProducer producer, StridedView gradInput, RowGradients consumer, StridedView gradWeight,
                                    StridedView gradBias) {
        int n = Math.toIntExact(cols);
        int partRows = (int) Math.max(MIN_PART_ROWS, (rows + MAX_PARTS - 1) / MAX_PARTS);
        if ((long) partRows * n > MAX_PRODUCED_PART) return false;
        int parts = (int) Math.max(1, (rows + partRows - 1) / partRows);
        boolean columns = gradWeight != null || gradBias != null;
        float[] colsF = columns ? columnScratch(parts * 2 * n) : null;
        MemorySegment gs = gradOut.memory(), ms = mean.memory(), rs = rstd.memory();
        long gb = base(gradOut), mb = base(mean), rb = base(rstd);
        // Contiguous rows, or (row stride 0) one row read for every row: a gradient broadcast over the rows.
        long gradRowBytes = 4 * gradOut.strides()[0];
        MemorySegment ws = weight == null ? null : weight.memory();
        long wb = weight == null ? 0 : base(weight);
        // The producer and consumer run over a chunk of whole parts (about PRODUCED_CHUNK values): their per-call setup
        // is paid once a chunk; the row gradients and column sums still go part by part, as in backward.
        int chunkParts = (int) Math.max(1, PRODUCED_CHUNK / ((long) partRows * n));
        long chunks = (parts + chunkParts - 1) / chunkParts, chunkBytes = 4L * chunkParts * partRows * n;
        boolean stored = gradInput != null;
        Parallel.forRange(chunks, Math.max(1, GRAIN / Math.max(1, (long) chunkParts * partRows * n)), (begin, end) -> {
            MemorySegment scratch = producedScratch(stored ? chunkBytes : 2 * chunkBytes);
            MemorySegment xs = scratch.asSlice(0, chunkBytes), ds = stored ? gradInput.memory() : scratch.asSlice(chunkBytes, chunkBytes);
            for (long c = begin; c < end; c++) {
                long p0 = c * chunkParts, p1 = Math.min(parts, p0 + chunkParts);
                long r0 = p0 * partRows, r1 = Math.min(rows, p1 * partRows);
                long first = stored ? base(gradInput) + 4L * r0 * n : 0;
                producer.rows(r0, r1, xs);
                for (long i = r0; i < r1; i++) {
                    long local = (i - r0) * n * 4;
                    float m = ms.get(ElementIO.F32, mb + 4 * i), r = rs.get(ElementIO.F32, rb + 4 * i);
                    // the row's part's column sums, started at its first row (as in backward)
                    int at = (int) (i / partRows) * 2 * n;
                    if (colsF != null && i % partRows == 0) java.util.Arrays.fill(colsF, at, at + 2 * n, 0f);
                    backwardRowF32(gs, gb + i * gradRowBytes, xs, local, n, m, r, ws, wb, ds, first + local, colsF, at);
                }
                consumer.rows(r0, r1, ds, first);
            }
        });
        if (columns) writeColumnSums(colsF, null, parts, n, gradWeight, gradBias);
        return true;
    }

    /** Values of the produced backward's producer and consumer calls (a chunk of parts, 256 KiB of float32). */
    private static final long PRODUCED_CHUNK = 1 << 16;

    /** The most values of a produced backward's part (its input and input-gradient scratch: 2 x 16 MiB). */
    static final long MAX_PRODUCED_PART = 1 << 22;

    /** Per-thread scratch of the produced backward, kept between calls. */
    private static final ThreadLocal<MemorySegment[]> PRODUCED_SCRATCH = ThreadLocal.withInitial(() -> new MemorySegment[1]);

    private static MemorySegment producedScratch(long bytes) {
        MemorySegment[] held = PRODUCED_SCRATCH.get();
        if (held[0] == null || held[0].byteSize() < bytes) held[0] = java.lang.foreign.Arena.ofAuto().allocate(bytes, 64);
        return held[0];
    }

    /** The calling thread's column-sum parts, kept between calls (every element is written before it is read). */
    private static final ThreadLocal<float[][]> COLUMN_SCRATCH = ThreadLocal.withInitial(() -> new float[1][]);

    private static float[] columnScratch(int length) {
        float[][] held = COLUMN_SCRATCH.get();
        if (held[0] == null || held[0].length < length) held[0] = new float[length];
        return held[0];
    }
}
