package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.backend.RecurrentKernels;

/**
 * The fused LSTM and GRU cell steps on the CPU: each batch row is one pass over its gates, reading every
 * input and writing every output once, with no temporary tensors. Float32 rows run as Vector API loops
 * with a scalar tail (computed in double and rounded); float64 rows run the scalar code. Rows are split
 * between threads.
 */
final class CpuRecurrentKernels implements RecurrentKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** Elements of work below which a step stays on the calling thread (a step is a few µs at most). */
    private static final long GRAIN = 1 << 14;

    /** A contiguous tensor's memory and element size, or none for a null (zero) gradient. */
    private record Rows(MemorySegment seg, long base, boolean f64) {
        static Rows of(Tensor t) {
            if (t == null) return null;
            boolean f64 = t.dtype() == DType.FLOAT64;
            return new Rows(t.storage().segment(), t.storageOffset() * (f64 ? 8 : 4), f64);
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

    private static FloatVector sigmoid(FloatVector x) {
        return ONE.div(x.neg().lanewise(VectorOperators.EXP).add(1f));
    }

    private static FloatVector tanh(FloatVector x) {
        return x.lanewise(VectorOperators.TANH);
    }

    /** The number of float32 lanes of a row of {@code h} handled by vectors ({@code 0} for float64). */
    private static long vectorPart(Tensor t, long h) {
        return t.dtype() == DType.FLOAT32 ? FS.loopBound(h) : 0;
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

    // ------------------------------------------------------------------ LSTM

    @Override
    public void lstmCellForward(Tensor inputGates, Tensor hiddenGates, Tensor cx, Tensor hy, Tensor cy, Tensor workspace) {
        long batch = cx.size(0), h = cx.size(1), vh = vectorPart(cx, h);
        Rows ig = Rows.of(inputGates), hg = Rows.of(hiddenGates), c0 = Rows.of(cx), ho = Rows.of(hy), co = Rows.of(cy),
                ws = Rows.of(workspace);
        rows(batch, h, b -> {
            long g0 = b * 4 * h, s0 = b * h;
            long j = 0;
            for (; j < vh; j += FL) {
                FloatVector i = sigmoid(ig.vec(g0 + j).add(hg.vec(g0 + j)));
                FloatVector f = sigmoid(ig.vec(g0 + h + j).add(hg.vec(g0 + h + j)));
                FloatVector g = tanh(ig.vec(g0 + 2 * h + j).add(hg.vec(g0 + 2 * h + j)));
                FloatVector o = sigmoid(ig.vec(g0 + 3 * h + j).add(hg.vec(g0 + 3 * h + j)));
                FloatVector c = f.mul(c0.vec(s0 + j)).add(i.mul(g));
                co.put(s0 + j, c);
                ho.put(s0 + j, o.mul(tanh(c)));
                ws.put(g0 + j, i);
                ws.put(g0 + h + j, f);
                ws.put(g0 + 2 * h + j, g);
                ws.put(g0 + 3 * h + j, o);
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
    public void lstmCellBackward(Tensor gradHy, Tensor gradCy, Tensor cx, Tensor cy, Tensor workspace, Tensor gradGates,
                                 Tensor gradCx) {
        long batch = cx.size(0), h = cx.size(1), vh = vectorPart(cx, h);
        Rows ghy = Rows.of(gradHy), gcy = Rows.of(gradCy), c0 = Rows.of(cx), c1 = Rows.of(cy), ws = Rows.of(workspace),
                gg = Rows.of(gradGates), gcx = Rows.of(gradCx);
        rows(batch, h, b -> {
            long g0 = b * 4 * h, s0 = b * h;
            long j = 0;
            for (; j < vh; j += FL) {
                FloatVector i = ws.vec(g0 + j), f = ws.vec(g0 + h + j), g = ws.vec(g0 + 2 * h + j), o = ws.vec(g0 + 3 * h + j);
                FloatVector tc = tanh(c1.vec(s0 + j));
                FloatVector dh = vec(ghy, s0 + j);
                FloatVector dc = vec(gcy, s0 + j).add(dh.mul(o).mul(tc.mul(tc).neg().add(1f)));
                gg.put(g0 + j, dc.mul(g).mul(i).mul(i.neg().add(1f)));
                gg.put(g0 + h + j, dc.mul(c0.vec(s0 + j)).mul(f).mul(f.neg().add(1f)));
                gg.put(g0 + 2 * h + j, dc.mul(i).mul(g.mul(g).neg().add(1f)));
                gg.put(g0 + 3 * h + j, dh.mul(tc).mul(o).mul(o.neg().add(1f)));
                gcx.put(s0 + j, dc.mul(f));
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
    public void gruCellForward(Tensor inputGates, Tensor hiddenGates, Tensor hx, Tensor hy, Tensor workspace) {
        long batch = hx.size(0), h = hx.size(1), vh = vectorPart(hx, h);
        Rows ig = Rows.of(inputGates), hg = Rows.of(hiddenGates), h0 = Rows.of(hx), ho = Rows.of(hy), ws = Rows.of(workspace);
        rows(batch, h, b -> {
            long g0 = b * 3 * h, w0 = b * 4 * h, s0 = b * h;
            long j = 0;
            for (; j < vh; j += FL) {
                FloatVector r = sigmoid(ig.vec(g0 + j).add(hg.vec(g0 + j)));
                FloatVector z = sigmoid(ig.vec(g0 + h + j).add(hg.vec(g0 + h + j)));
                FloatVector hn = hg.vec(g0 + 2 * h + j);
                FloatVector n = tanh(ig.vec(g0 + 2 * h + j).add(r.mul(hn)));
                ho.put(s0 + j, n.add(z.mul(h0.vec(s0 + j).sub(n))));
                ws.put(w0 + j, r);
                ws.put(w0 + h + j, z);
                ws.put(w0 + 2 * h + j, n);
                ws.put(w0 + 3 * h + j, hn);
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
    public void gruCellBackward(Tensor gradHy, Tensor hx, Tensor workspace, Tensor gradInputGates, Tensor gradHiddenGates,
                                Tensor gradHx) {
        long batch = hx.size(0), h = hx.size(1), vh = vectorPart(hx, h);
        Rows ghy = Rows.of(gradHy), h0 = Rows.of(hx), ws = Rows.of(workspace), gi = Rows.of(gradInputGates),
                gh = Rows.of(gradHiddenGates), ghx = Rows.of(gradHx);
        rows(batch, h, b -> {
            long g0 = b * 3 * h, w0 = b * 4 * h, s0 = b * h;
            long j = 0;
            for (; j < vh; j += FL) {
                FloatVector r = ws.vec(w0 + j), z = ws.vec(w0 + h + j), n = ws.vec(w0 + 2 * h + j), hn = ws.vec(w0 + 3 * h + j);
                FloatVector dh = vec(ghy, s0 + j);
                FloatVector dn = dh.mul(z.neg().add(1f)).mul(n.mul(n).neg().add(1f));
                FloatVector dz = dh.mul(h0.vec(s0 + j).sub(n)).mul(z).mul(z.neg().add(1f));
                FloatVector dr = dn.mul(hn).mul(r).mul(r.neg().add(1f));
                gi.put(g0 + j, dr);
                gi.put(g0 + h + j, dz);
                gi.put(g0 + 2 * h + j, dn);
                gh.put(g0 + j, dr);
                gh.put(g0 + h + j, dz);
                gh.put(g0 + 2 * h + j, dn.mul(r));
                ghx.put(s0 + j, dh.mul(z));
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
}
