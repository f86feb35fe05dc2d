package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.RecurrentKernels;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The fused LSTM and GRU cell steps on the CPU: each batch row is one pass over its gates, reading every
 * input and writing every output once, with no temporary tensors. Rows run as Vector API loops with a scalar
 * tail (computed in double and rounded), except the float32 forward of rows at least one vector wide, whose last
 * window overlaps the one before it (its lanes already done are kept, not stored again): the scalar tail cost the
 * word language model's 200-wide float32 forward cell three quarters of its time alone (8 of 200 lanes, five scalar
 * transcendentals each). time_sequence_prediction's 51-wide float64 cells spent a third of their step in the
 * scalar code before their vector passes. Rows are split between threads.
 */
final class CpuRecurrentKernels implements RecurrentKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final int DL = DS.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** Elements of work below which a step stays on the calling thread (a step is a few µs at most). */
    private static final long GRAIN = 1 << 14;

    /** A contiguous tensor's memory and element size, or none for a null (zero) gradient. */
    private record Rows(MemorySegment seg, long base, boolean f64) {
        static Rows of(StridedView t) {
            if (t == null) return null;
            boolean f64 = t.dtype() == DType.FLOAT64;
            return new Rows(t.memory(), t.offset() * (f64 ? 8 : 4), f64);
        }

        double get(long i) {
            return f64 ? seg.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, base + 8 * i) : seg.get(ValueLayout.JAVA_FLOAT_UNALIGNED, base + 4 * i);
        }

        void set(long i, double v) {
            if (f64) seg.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, base + 8 * i, v);
            else seg.set(ValueLayout.JAVA_FLOAT_UNALIGNED, base + 4 * i, (float) v);
        }

        FloatVector vec(long i) {
            return FloatVector.fromMemorySegment(FS, seg, base + 4 * i, LE);
        }

        void put(long i, FloatVector v) {
            v.intoMemorySegment(seg, base + 4 * i, LE);
        }

        /** Stores {@code v} at {@code i}, leaving the first {@code keep} lanes as they are (a row's last, overlapping window). */
        void put(long i, FloatVector v, int keep) {
            if (keep > 0) v = vec(i).blend(v, IOTA_F.compare(VectorOperators.GE, keep));
            v.intoMemorySegment(seg, base + 4 * i, LE);
        }

        DoubleVector dvec(long i) {
            return DoubleVector.fromMemorySegment(DS, seg, base + 8 * i, LE);
        }

        void dput(long i, DoubleVector v) {
            v.intoMemorySegment(seg, base + 8 * i, LE);
        }
    }

    private static double get(Rows r, long i) {
        return r == null ? 0 : r.get(i);
    }

    private static FloatVector vec(Rows r, long i) {
        return r == null ? FloatVector.zero(FS) : r.vec(i);
    }

    private static double sigmoid(double x) {
        return 1 / (1 + Math.exp(-x));
    }

    private static final FloatVector ONE = FloatVector.broadcast(FS, 1f);
    private static final FloatVector IOTA_F = FloatVector.zero(FS).addIndex(1);

    private static FloatVector sigmoid(FloatVector x) {
        return ONE.div(VectorExp.exp(x.neg()).add(1f));
    }

    private static FloatVector tanh(FloatVector x) {
        return VectorExp.tanh(x);
    }

    private static DoubleVector dvec(Rows r, long i) {
        return r == null ? DoubleVector.zero(DS) : r.dvec(i);
    }

    private static final DoubleVector ONE_D = DoubleVector.broadcast(DS, 1);

    private static DoubleVector sigmoid(DoubleVector x) {
        return ONE_D.div(VectorExp.exp(x.neg()).add(1));
    }

    private static DoubleVector tanh(DoubleVector x) {
        return VectorTanhF64.tanh(x);
    }

    /**
     * The lanes of a row of {@code h} that the forward's vector passes handle: all of a float32 row at least one vector
     * wide (its last window overlaps the one before, see {@link Rows#put}), none of a shorter one (the scalar code runs
     * it); float64 rows' whole vectors (time_sequence_prediction's 51-wide step was not measurably better with the
     * window at the load of its measurement, so its code stays as it was).
     */
    private static long vectorPart(StridedView t, long h) {
        return t.dtype() == DType.FLOAT32 ? (h >= FL ? h : 0) : DS.loopBound(h);
    }

    /**
     * The lanes of a row that whole vectors cover, the rest running the scalar code: the backward passes' form. With the
     * overlapping window (its blended stores) the word LM's float32 backward cell measured 3.6 -> 5.5 ms a step.
     */
    private static long wholeVectors(StridedView t, long h) {
        return t.dtype() == DType.FLOAT32 ? FS.loopBound(h) : DS.loopBound(h);
    }

    private static void rows(long batch, long h, RowBody body) {
        Parallel.forRange(batch, Math.max(1, GRAIN / Math.max(1, h)), (begin, end) -> {
            for (long b = begin; b < end; b++) body.row(b);
        });
    }

    @FunctionalInterface
    private interface RowBody {
        void row(long b);
    }

    /**
     * Rows a batch block keeps at least: the packed hidden products hand {@value GemmDot#MAX_M} or fewer rows to the unpacked
     * GEMM, which sums in another order, so blocks of more rows give every row the one-thread values bit for bit (the packed
     * tiles sum each row alone, in one order).
     */
    private static final int MIN_BLOCK_ROWS = GemmDot.MAX_M + 1;

    /**
     * One block per thread, each at least {@link #MIN_BLOCK_ROWS} rows. The word LM's 20-row layers ran each step's hidden
     * product split by columns between the two threads, then the cell on one: 70 joins a layer's forward and backward, with
     * the cells and the packing of {@code h} serial and each step's gates crossing between the cores.
     */
    @Override
    public void forBatchBlocks(long batch, long work, BatchBlock block) {
        int blocks = (int) Math.min(Parallel.numThreads(), batch / MIN_BLOCK_ROWS);
        if (blocks <= 1 || work < Gemm.PARALLEL_MIN_WORK || Parallel.inParallelRegion()) {
            block.run(0, batch);
            return;
        }
        Parallel.forChunks(blocks, (first, last) -> {
            for (long c = first; c < last; c++) block.run(batch * c / blocks, batch * (c + 1) / blocks);
        });
    }

    // ------------------------------------------------------------------ LSTM

    @Override
    public void lstmCellForward(StridedView inputGates, StridedView hiddenGates, StridedView cx, StridedView hy,
                                StridedView cy, StridedView workspace) {
        long batch = cx.size(0), h = cx.size(1), vh = vectorPart(cx, h);
        Rows ig = Rows.of(inputGates), hg = Rows.of(hiddenGates), c0 = Rows.of(cx), ho = Rows.of(hy), co = Rows.of(cy),
                ws = Rows.of(workspace);
        rows(batch, h, b -> {
            long g0 = b * 4 * h, s0 = b * h;
            long j = 0;
            if (vh > 0 && ws.f64()) {
                for (int k = 0; k < 4; k++) gatesF64(ig, hg, ws, g0 + k * h, vh, k == 2);
                lstmStateF64(ws, g0, h, c0, co, ho, s0, vh);
                j = vh;
            } else if (vh > 0) {
                for (int k = 0; k < 4; k++) gatesF32(ig, hg, ws, g0 + k * h, vh, k == 2);
                lstmStateF32(ws, g0, h, c0, co, ho, s0, vh);
                j = vh;
            }
            for (; j < h; j++) {
                double i = sigmoid(ig.get(g0 + j) + hg.get(g0 + j));
                double f = sigmoid(ig.get(g0 + h + j) + hg.get(g0 + h + j));
                double g = Math.tanh(ig.get(g0 + 2 * h + j) + hg.get(g0 + 2 * h + j));
                double o = sigmoid(ig.get(g0 + 3 * h + j) + hg.get(g0 + 3 * h + j));
                double c = f * c0.get(s0 + j) + i * g;
                co.set(s0 + j, c);
                // hy reads the stored cy, so that float32 rounds as the vector lanes do.
                ho.set(s0 + j, o * Math.tanh(co.get(s0 + j)));
                ws.set(g0 + j, i);
                ws.set(g0 + h + j, f);
                ws.set(g0 + 2 * h + j, g);
                ws.set(g0 + 3 * h + j, o);
            }
        });
    }

    @Override
    public void lstmCellBackward(StridedView gradHy, StridedView gradCy, StridedView cx, StridedView cy,
                                 StridedView workspace, StridedView gradGates,
                                 StridedView gradCx) {
        long batch = cx.size(0), h = cx.size(1), vh = wholeVectors(cx, h);
        Rows ghy = Rows.of(gradHy), gcy = Rows.of(gradCy), c0 = Rows.of(cx), c1 = Rows.of(cy), ws = Rows.of(workspace),
                gg = Rows.of(gradGates), gcx = Rows.of(gradCx);
        rows(batch, h, b -> {
            long g0 = b * 4 * h, s0 = b * h;
            long j = 0;
            if (vh > 0 && ws.f64()) {
                lstmBackwardF64(ghy, gcy, c0, c1, ws, gg, gcx, g0, s0, h, vh);
                j = vh;
            } else if (vh > 0) {
                lstmBackwardF32(ghy, gcy, c0, c1, ws, gg, gcx, g0, s0, h, vh);
                j = vh;
            }
            for (; j < h; j++) {
                double i = ws.get(g0 + j), f = ws.get(g0 + h + j), g = ws.get(g0 + 2 * h + j), o = ws.get(g0 + 3 * h + j);
                double tc = Math.tanh(c1.get(s0 + j));
                double dh = get(ghy, s0 + j);
                double dc = get(gcy, s0 + j) + dh * o * (1 - tc * tc);
                gg.set(g0 + j, dc * g * i * (1 - i));
                gg.set(g0 + h + j, dc * c0.get(s0 + j) * f * (1 - f));
                gg.set(g0 + 2 * h + j, dc * i * (1 - g * g));
                gg.set(g0 + 3 * h + j, dh * tc * o * (1 - o));
                gcx.set(s0 + j, dc * f);
            }
        });
    }

    // ------------------------------------------------------------------ GRU

    @Override
    public void gruCellForward(StridedView inputGates, StridedView hiddenGates, StridedView hx, StridedView hy,
                               StridedView workspace) {
        long batch = hx.size(0), h = hx.size(1), vh = vectorPart(hx, h);
        Rows ig = Rows.of(inputGates), hg = Rows.of(hiddenGates), h0 = Rows.of(hx), ho = Rows.of(hy), ws = Rows.of(workspace);
        rows(batch, h, b -> {
            long g0 = b * 3 * h, w0 = b * 4 * h, s0 = b * h;
            long j = 0;
            if (vh > 0 && ws.f64()) {
                gruForwardF64(ig, hg, h0, ho, ws, g0, w0, s0, h, vh);
                j = vh;
            } else if (vh > 0) {
                gruForwardF32(ig, hg, h0, ho, ws, g0, w0, s0, h, vh);
                j = vh;
            }
            for (; j < h; j++) {
                double r = sigmoid(ig.get(g0 + j) + hg.get(g0 + j));
                double z = sigmoid(ig.get(g0 + h + j) + hg.get(g0 + h + j));
                double hn = hg.get(g0 + 2 * h + j);
                double n = Math.tanh(ig.get(g0 + 2 * h + j) + r * hn);
                ho.set(s0 + j, n + z * (h0.get(s0 + j) - n));
                ws.set(w0 + j, r);
                ws.set(w0 + h + j, z);
                ws.set(w0 + 2 * h + j, n);
                ws.set(w0 + 3 * h + j, hn);
            }
        });
    }

    @Override
    public void gruCellBackward(StridedView gradHy, StridedView hx, StridedView workspace, StridedView gradInputGates,
                                StridedView gradHiddenGates,
                                StridedView gradHx) {
        long batch = hx.size(0), h = hx.size(1), vh = wholeVectors(hx, h);
        Rows ghy = Rows.of(gradHy), h0 = Rows.of(hx), ws = Rows.of(workspace), gi = Rows.of(gradInputGates),
                gh = Rows.of(gradHiddenGates), ghx = Rows.of(gradHx);
        rows(batch, h, b -> {
            long g0 = b * 3 * h, w0 = b * 4 * h, s0 = b * h;
            long j = 0;
            if (vh > 0 && ws.f64()) {
                gruBackwardF64(ghy, h0, ws, gi, gh, ghx, g0, w0, s0, h, vh);
                j = vh;
            } else if (vh > 0) {
                gruBackwardF32(ghy, h0, ws, gi, gh, ghx, g0, w0, s0, h, vh);
                j = vh;
            }
            for (; j < h; j++) {
                double r = ws.get(w0 + j), z = ws.get(w0 + h + j), n = ws.get(w0 + 2 * h + j), hn = ws.get(w0 + 3 * h + j);
                double dh = get(ghy, s0 + j);
                double dn = dh * (1 - z) * (1 - n * n);
                double dz = dh * (h0.get(s0 + j) - n) * z * (1 - z);
                double dr = dn * hn * r * (1 - r);
                gi.set(g0 + j, dr);
                gi.set(g0 + h + j, dz);
                gi.set(g0 + 2 * h + j, dn);
                gh.set(g0 + j, dr);
                gh.set(g0 + h + j, dz);
                gh.set(g0 + 2 * h + j, dn * r);
                ghx.set(s0 + j, dh * z);
            }
        });
    }

    // ------------------------------------------------------------------ float32 vector passes
    // Each step runs as a few short loops over one batch row (a few KiB, in L1 between them) rather than one loop
    // with every gate in its body: C2 intrinsifies the Vector API only in what it inlines, and one long body blows
    // its inlining budget, leaving boxed vectors (measured: slower than the composed ops).

    /** {@code ws[o..o+n) = act(ig + hg)} for one gate block: sigmoid, or tanh for the cell gate. */
    private static void gatesF32(Rows ig, Rows hg, Rows ws, long o, long n, boolean tanh) {
        if (VectorExp.DETERMINISTIC) {
            if (tanh) tanhGateF32(ig, hg, ws, o, n);
            else sigmoidGateF32(ig, hg, ws, o, n);
            return;
        }
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            int keep = (int) (w - j);
            FloatVector x = ig.vec(o + j).add(hg.vec(o + j));
            ws.put(o + j, tanh ? tanh(x) : sigmoid(x), keep);
        }
    }

    /**
     * {@link #gatesF32}'s loop under {@code -Djtorch.cpu.deterministicMath=true}, one function per loop: jtorch's tanh
     * and sigmoid in one loop body passed C2's node-count cutoff and the store after them was refused. The JDK's forms
     * keep the one loop (a loop of their own is a method C2 compiles at other times, and the JDK's tanh can then be
     * the intrinsic in one run and the fallback in another: the seventeenth session's CI failure).
     */
    private static void tanhGateF32(Rows ig, Rows hg, Rows ws, long o, long n) {
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            ws.put(o + j, tanh(ig.vec(o + j).add(hg.vec(o + j))), (int) (w - j));
        }
    }

    private static void sigmoidGateF32(Rows ig, Rows hg, Rows ws, long o, long n) {
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            ws.put(o + j, sigmoid(ig.vec(o + j).add(hg.vec(o + j))), (int) (w - j));
        }
    }

    /** {@code cy = f * cx + i * g}, {@code hy = o * tanh(cy)} from the activated gates at {@code g0}. */
    private static void lstmStateF32(Rows ws, long g0, long h, Rows cx, Rows cy, Rows hy, long s0, long n) {
        if (VectorExp.DETERMINISTIC) {
            cellStateF32(ws, g0, h, cx, cy, s0, n);
            hiddenStateF32(ws, g0, h, cy, hy, s0, n);
            return;
        }
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            int keep = (int) (w - j);
            FloatVector c = ws.vec(g0 + h + j).mul(cx.vec(s0 + j)).add(ws.vec(g0 + j).mul(ws.vec(g0 + 2 * h + j)));
            cy.put(s0 + j, c, keep);
            hy.put(s0 + j, ws.vec(g0 + 3 * h + j).mul(tanh(c)), keep);
        }
    }

    /**
     * {@link #lstmStateF32}'s loop under {@code -Djtorch.cpu.deterministicMath=true}, in two: {@code cy}, then {@code hy}
     * from the stored {@code cy} (the same floats). jtorch's tanh after the five loads of one loop body passed C2's
     * node-count cutoff, and the store of {@code hy} was refused (2x; docs/BENCHMARKS.md, issue 20, eighteenth session).
     */
    private static void cellStateF32(Rows ws, long g0, long h, Rows cx, Rows cy, long s0, long n) {
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            cy.put(s0 + j, ws.vec(g0 + h + j).mul(cx.vec(s0 + j)).add(ws.vec(g0 + j).mul(ws.vec(g0 + 2 * h + j))), (int) (w - j));
        }
    }

    private static void hiddenStateF32(Rows ws, long g0, long h, Rows cy, Rows hy, long s0, long n) {
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            hy.put(s0 + j, ws.vec(g0 + 3 * h + j).mul(tanh(cy.vec(s0 + j))), (int) (w - j));
        }
    }

    private static void lstmBackwardF32(Rows ghy, Rows gcy, Rows cx, Rows cy, Rows ws, Rows gg, Rows gcx, long g0, long s0, long h,
                                        long n) {
        // dc (parked in gcx) and the output gate's gradient.
        for (long j = 0; j < n; j += FL) {
            FloatVector o = ws.vec(g0 + 3 * h + j), tc = tanh(cy.vec(s0 + j)), dh = vec(ghy, s0 + j);
            gcx.put(s0 + j, vec(gcy, s0 + j).add(dh.mul(o).mul(ONE.sub(tc.mul(tc)))));
            gg.put(g0 + 3 * h + j, dh.mul(tc).mul(o).mul(ONE.sub(o)));
        }
        for (long j = 0; j < n; j += FL) {
            FloatVector dc = gcx.vec(s0 + j), i = ws.vec(g0 + j), g = ws.vec(g0 + 2 * h + j);
            gg.put(g0 + j, dc.mul(g).mul(i).mul(ONE.sub(i)));
            gg.put(g0 + 2 * h + j, dc.mul(i).mul(ONE.sub(g.mul(g))));
        }
        for (long j = 0; j < n; j += FL) {
            FloatVector dc = gcx.vec(s0 + j), f = ws.vec(g0 + h + j);
            gg.put(g0 + h + j, dc.mul(cx.vec(s0 + j)).mul(f).mul(ONE.sub(f)));
            gcx.put(s0 + j, dc.mul(f));
        }
    }

    private static void gruForwardF32(Rows ig, Rows hg, Rows hx, Rows hy, Rows ws, long g0, long w0, long s0, long h, long n) {
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            int keep = (int) (w - j);
            ws.put(w0 + j, sigmoid(ig.vec(g0 + j).add(hg.vec(g0 + j))), keep);
            ws.put(w0 + h + j, sigmoid(ig.vec(g0 + h + j).add(hg.vec(g0 + h + j))), keep);
        }
        for (long w = 0; w < n; w += FL) {
            long j = Math.min(w, n - FL);
            int keep = (int) (w - j);
            FloatVector hn = hg.vec(g0 + 2 * h + j);
            FloatVector nv = tanh(ig.vec(g0 + 2 * h + j).add(ws.vec(w0 + j).mul(hn)));
            ws.put(w0 + 2 * h + j, nv, keep);
            ws.put(w0 + 3 * h + j, hn, keep);
            hy.put(s0 + j, nv.add(ws.vec(w0 + h + j).mul(hx.vec(s0 + j).sub(nv))), keep);
        }
    }

    private static void gruBackwardF32(Rows ghy, Rows hx, Rows ws, Rows gi, Rows gh, Rows ghx, long g0, long w0, long s0, long h,
                                       long n) {
        for (long j = 0; j < n; j += FL) {
            FloatVector z = ws.vec(w0 + h + j), nv = ws.vec(w0 + 2 * h + j), dh = vec(ghy, s0 + j);
            FloatVector dn = dh.mul(ONE.sub(z)).mul(ONE.sub(nv.mul(nv)));
            FloatVector dz = dh.mul(hx.vec(s0 + j).sub(nv)).mul(z).mul(ONE.sub(z));
            gi.put(g0 + h + j, dz);
            gh.put(g0 + h + j, dz);
            gi.put(g0 + 2 * h + j, dn);
            ghx.put(s0 + j, dh.mul(z));
        }
        for (long j = 0; j < n; j += FL) {
            FloatVector r = ws.vec(w0 + j), dn = gi.vec(g0 + 2 * h + j);
            FloatVector dr = dn.mul(ws.vec(w0 + 3 * h + j)).mul(r).mul(ONE.sub(r));
            gi.put(g0 + j, dr);
            gh.put(g0 + j, dr);
            gh.put(g0 + 2 * h + j, dn.mul(r));
        }
    }

    // ------------------------------------------------------------------ float64 vector passes
    // The float32 passes' twins over DoubleVector: one set per species keeps every call site monomorphic, which the
    // Vector API needs to stay unboxed. (A masked last vector instead of the scalar tail measured slower: the masked
    // segment loads and stores took the JDK's checked path, JFR's firstTrue and checkValidStateRaw, about a third of the
    // samples. The overlapping last window loads and stores whole vectors and blends in registers.)

    /** {@code ws[o..o+n) = act(ig + hg)} for one gate block: sigmoid, or tanh for the cell gate. */
    private static void gatesF64(Rows ig, Rows hg, Rows ws, long o, long n, boolean tanh) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector x = ig.dvec(o + j).add(hg.dvec(o + j));
            ws.dput(o + j, tanh ? tanh(x) : sigmoid(x));
        }
    }

    private static void lstmStateF64(Rows ws, long g0, long h, Rows cx, Rows cy, Rows hy, long s0, long n) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector c = ws.dvec(g0 + h + j).mul(cx.dvec(s0 + j)).add(ws.dvec(g0 + j).mul(ws.dvec(g0 + 2 * h + j)));
            cy.dput(s0 + j, c);
            hy.dput(s0 + j, ws.dvec(g0 + 3 * h + j).mul(tanh(c)));
        }
    }

    /**
     * One method per loop, and {@code tanh(cy)} in a loop of its own (parked in the output gate's gradient): in one
     * method, the tanh passed C2's NodeCountInliningCutoff and the segment loads and stores after it ran as calls on
     * boxed vectors (PrintInlining), 160-200 µs for time_sequence_prediction's [97, 51] cell on one thread.
     */
    private static void lstmBackwardF64(Rows ghy, Rows gcy, Rows cx, Rows cy, Rows ws, Rows gg, Rows gcx, long g0, long s0, long h,
                                        long n) {
        cellTanhF64(cy, gg, g0 + 3 * h, s0, n);
        cellGradientF64(ghy, gcy, ws, gg, gcx, g0, s0, h, n);
        inputAndCellGateGradientsF64(ws, gg, gcx, g0, s0, h, n);
        forgetGateGradientF64(cx, ws, gg, gcx, g0, s0, h, n);
    }

    private static void cellTanhF64(Rows cy, Rows out, long o, long s0, long n) {
        for (long j = 0; j < n; j += DL) out.dput(o + j, tanh(cy.dvec(s0 + j)));
    }

    /** dc (parked in gcx) and the output gate's gradient, from {@code tanh(cy)} parked in that gradient's place. */
    private static void cellGradientF64(Rows ghy, Rows gcy, Rows ws, Rows gg, Rows gcx, long g0, long s0, long h, long n) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector o = ws.dvec(g0 + 3 * h + j), tc = gg.dvec(g0 + 3 * h + j), dh = dvec(ghy, s0 + j);
            gcx.dput(s0 + j, dvec(gcy, s0 + j).add(dh.mul(o).mul(ONE_D.sub(tc.mul(tc)))));
            gg.dput(g0 + 3 * h + j, dh.mul(tc).mul(o).mul(ONE_D.sub(o)));
        }
    }

    private static void inputAndCellGateGradientsF64(Rows ws, Rows gg, Rows gcx, long g0, long s0, long h, long n) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector dc = gcx.dvec(s0 + j), i = ws.dvec(g0 + j), g = ws.dvec(g0 + 2 * h + j);
            gg.dput(g0 + j, dc.mul(g).mul(i).mul(ONE_D.sub(i)));
            gg.dput(g0 + 2 * h + j, dc.mul(i).mul(ONE_D.sub(g.mul(g))));
        }
    }

    /** The forget gate's gradient and, over dc, the gradient of cx. */
    private static void forgetGateGradientF64(Rows cx, Rows ws, Rows gg, Rows gcx, long g0, long s0, long h, long n) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector dc = gcx.dvec(s0 + j), f = ws.dvec(g0 + h + j);
            gg.dput(g0 + h + j, dc.mul(cx.dvec(s0 + j)).mul(f).mul(ONE_D.sub(f)));
            gcx.dput(s0 + j, dc.mul(f));
        }
    }

    private static void gruForwardF64(Rows ig, Rows hg, Rows hx, Rows hy, Rows ws, long g0, long w0, long s0, long h,
                                      long n) {
        for (long j = 0; j < n; j += DL) {
            ws.dput(w0 + j, sigmoid(ig.dvec(g0 + j).add(hg.dvec(g0 + j))));
            ws.dput(w0 + h + j, sigmoid(ig.dvec(g0 + h + j).add(hg.dvec(g0 + h + j))));
        }
        for (long j = 0; j < n; j += DL) {
            DoubleVector hn = hg.dvec(g0 + 2 * h + j);
            DoubleVector nv = tanh(ig.dvec(g0 + 2 * h + j).add(ws.dvec(w0 + j).mul(hn)));
            ws.dput(w0 + 2 * h + j, nv);
            ws.dput(w0 + 3 * h + j, hn);
            hy.dput(s0 + j, nv.add(ws.dvec(w0 + h + j).mul(hx.dvec(s0 + j).sub(nv))));
        }
    }

    private static void gruBackwardF64(Rows ghy, Rows hx, Rows ws, Rows gi, Rows gh, Rows ghx, long g0, long w0, long s0, long h,
                                      long n) {
        for (long j = 0; j < n; j += DL) {
            DoubleVector z = ws.dvec(w0 + h + j), nv = ws.dvec(w0 + 2 * h + j), dh = dvec(ghy, s0 + j);
            DoubleVector dn = dh.mul(ONE_D.sub(z)).mul(ONE_D.sub(nv.mul(nv)));
            DoubleVector dz = dh.mul(hx.dvec(s0 + j).sub(nv)).mul(z).mul(ONE_D.sub(z));
            gi.dput(g0 + h + j, dz);
            gh.dput(g0 + h + j, dz);
            gi.dput(g0 + 2 * h + j, dn);
            ghx.dput(s0 + j, dh.mul(z));
        }
        for (long j = 0; j < n; j += DL) {
            DoubleVector r = ws.dvec(w0 + j), dn = gi.dvec(g0 + 2 * h + j);
            DoubleVector dr = dn.mul(ws.dvec(w0 + 3 * h + j)).mul(r).mul(ONE_D.sub(r));
            gi.dput(g0 + j, dr);
            gh.dput(g0 + j, dr);
            gh.dput(g0 + 2 * h + j, dn.mul(r));
        }
    }
}
