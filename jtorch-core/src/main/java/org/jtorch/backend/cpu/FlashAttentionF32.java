package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.AttentionKernels;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * Float32 flash attention on the CPU ({@link AttentionKernels}), in the manner of FlashAttention-2 and ATen's CPU
 * {@code flash_attention_kernel}: the forward runs one task per (batch, block of {@value #BQ} queries), walking the keys
 * in blocks of {@value #BK} with a running maximum and sum per row, and writes the output and each row's log-sum-exp.
 * The backward runs one task per batch entry (its query gradient gathers over all key blocks, so that no two threads
 * write it), recomputing each block's weights from the log-sum-exp: {@code dV += P^T dO}, {@code dP = dO V^T},
 * {@code dS = P (dP - rowsum(dO * O))}, {@code dQ += dS K scale}, {@code dK += dS^T Q scale}. Dropout multiplies the
 * weights by a scale drawn beforehand ({@code 0} or {@code 1 / (1 - p)} per weight, as the composition's dropout).
 *
 * <p>Every product is the one small kernel {@link #gemm}: a scalar of A broadcast against rows of B held in a Java
 * array, four rows and two vectors at a time. Operands are copied into arrays whose rows are padded with zeros to a
 * whole number of vectors, so the kernels have no column tails; padded keys are masked out of the softmax. Causal
 * blocks wholly above the diagonal are skipped.
 */
final class FlashAttentionF32 implements AttentionKernels {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Queries per block: the score block ({@code BQ x BK} floats) and the key block stay in L1/L2. */
    static final int BQ = 64;
    /** Keys per block; a multiple of every vector length, so that block starts are aligned to whole vectors. */
    static final int BK = 64;

    // ------------------------------------------------------------------ operand layout

    /** A view's memory with the element offset of each flattened batch entry and its row stride, in elements. */
    private record Operand(MemorySegment seg, long[] batchOffsets, long rowStride, int rows, int cols) {
        static Operand of(StridedView t, int batchDims) {
            if (t == null) return null;
            if (t.dtype() != DType.FLOAT32) throw new IllegalArgumentException("flash attention: expected float32, got " + t.dtype());
            if (t.size(-1) > 1 && t.stride(-1) != 1) {
                throw new IllegalArgumentException("flash attention: expected unit stride along the last dimension, got strides "
                        + Arrays.toString(t.strides()));
            }
            return new Operand(t.memory(), offsetsOf(t, batchDims), t.stride(-2), (int) t.size(-2), (int) t.size(-1));
        }

        long at(int b, int row) {
            return 4 * (batchOffsets[b] + row * rowStride);
        }

        /** Rows {@code [r0, r0 + n)} of batch entry {@code b} into {@code dst} at rows of {@code ld} floats. */
        void load(int b, int r0, int n, float[] dst, int ld) {
            for (int r = 0; r < n; r++) MemorySegment.copy(seg, F32, at(b, r0 + r), dst, r * ld, cols);
        }

        /** The same rows transposed: column {@code r} of {@code dst}'s rows of {@code ld} floats. */
        void loadTransposed(int b, int r0, int n, float[] dst, int ld, float[] row) {
            for (int r = 0; r < n; r++) {
                MemorySegment.copy(seg, F32, at(b, r0 + r), row, 0, cols);
                for (int c = 0; c < cols; c++) dst[c * ld + r] = row[c];
            }
        }

        void store(int b, int r0, int n, float[] src, int ld) {
            for (int r = 0; r < n; r++) MemorySegment.copy(src, r * ld, seg, F32, at(b, r0 + r), cols);
        }
    }

    private static long[] offsetsOf(StridedView t, int batchDims) {
        int n = 1;
        for (int d = 0; d < batchDims; d++) n *= (int) t.shape()[d];
        long[] offs = new long[n];
        long[] idx = new long[batchDims];
        for (int b = 0; b < n; b++) {
            long off = t.offset();
            for (int d = 0; d < batchDims; d++) off += idx[d] * t.strides()[d];
            offs[b] = off;
            for (int d = batchDims - 1; d >= 0; d--) {
                if (++idx[d] < t.shape()[d]) break;
                idx[d] = 0;
            }
        }
        return offs;
    }

    static int padded(int n) {
        return (n + FL - 1) / FL * FL;
    }

    /** A {@code [batch..., L, S]} float32 operand read a row of keys at a time: the additive mask, the dropout scale. */
    private record ScoreOperand(MemorySegment seg, long[] batchOffsets, long strideL, long strideS) {
        static ScoreOperand of(StridedView m, int batchDims) {
            if (m == null) return null;
            if (m.dtype() != DType.FLOAT32) throw new IllegalArgumentException("flash attention: expected a float32 mask or dropout scale, got " + m.dtype());
            return new ScoreOperand(m.memory(), offsetsOf(m, batchDims), m.stride(-2), m.stride(-1));
        }

        /** Adds row i's values for keys {@code [j0, j0 + n)} to {@code s} from index {@code off}. */
        void add(int b, int i, int j0, int n, float[] s, int off) {
            long base = batchOffsets[b] + i * strideL + j0 * strideS;
            for (int c = 0; c < n; c++) s[off + c] += seg.getAtIndex(F32, base + c * strideS);
        }

        /** Multiplies {@code s} from index {@code off} by row i's values for keys {@code [j0, j0 + n)}. */
        void multiply(int b, int i, int j0, int n, float[] s, int off) {
            long base = batchOffsets[b] + i * strideL + j0 * strideS;
            for (int c = 0; c < n; c++) s[off + c] *= seg.getAtIndex(F32, base + c * strideS);
        }
    }

    // ------------------------------------------------------------------ forward

    @Override
    public void forward(StridedView q, StridedView k, StridedView v, StridedView mask, boolean causal, double scale,
                        StridedView dropoutScale, StridedView out, StridedView logsumexp) {
        int bd = q.dim() - 2;
        Operand oq = Operand.of(q, bd), ok = Operand.of(k, bd), ov = Operand.of(v, bd), oo = Operand.of(out, bd);
        ScoreOperand om = ScoreOperand.of(mask, bd), od = ScoreOperand.of(dropoutScale, bd);
        MemorySegment lse = logsumexp.memory();
        long lseBase = logsumexp.offset();
        int batch = oq.batchOffsets().length, l = oq.rows(), s = ok.rows(), e = oq.cols(), ev = ov.cols();
        int qBlocks = (l + BQ - 1) / BQ;
        // Work is per batch entry; a task is one block of query rows, so a chunk of about 2^18 multiply-adds takes
        // 2^18 * qBlocks / work blocks (the word LM's 40 [35, 35] heads: about 1, where a factor of batch made one chunk).
        long work = (long) l * s * (e + ev);
        long grain = Math.max(1, (1L << 18) * qBlocks / Math.max(1, work));
        Parallel.forRange((long) batch * qBlocks, grain, (begin, end) -> {
            ForwardScratch w = new ForwardScratch(e, ev);
            for (long t = begin; t < end; t++) {
                forwardBlock(w, oq, ok, ov, oo, om, od, causal, (float) scale, lse, lseBase, (int) (t / qBlocks), (int) (t % qBlocks) * BQ);
            }
        });
    }

    /** One task's arrays, reused over its blocks. */
    private static final class ForwardScratch {
        final float[] q, kt, vb, scores, acc, max, sum, row;
        final int ePad, evPad;

        ForwardScratch(int e, int ev) {
            ePad = padded(e);
            evPad = padded(ev);
            q = new float[BQ * e];
            kt = new float[e * BK];
            vb = new float[BK * evPad];
            scores = new float[BQ * BK];
            acc = new float[BQ * evPad];
            max = new float[BQ];
            sum = new float[BQ];
            row = new float[Math.max(e, ev)];
        }
    }

    private static void forwardBlock(ForwardScratch w, Operand oq, Operand ok, Operand ov, Operand oo, ScoreOperand om,
                                     ScoreOperand od, boolean causal, float scale, MemorySegment lse, long lseBase, int b, int i0) {
        int l = oq.rows(), s = ok.rows(), e = oq.cols(), ev = ov.cols(), evPad = w.evPad;
        int mq = Math.min(BQ, l - i0);
        oq.load(b, i0, mq, w.q, e);
        Arrays.fill(w.acc, 0, mq * evPad, 0f);
        Arrays.fill(w.max, 0, mq, Float.NEGATIVE_INFINITY);
        Arrays.fill(w.sum, 0, mq, 0f);
        int keys = causal ? Math.min(s, i0 + mq) : s;
        for (int j0 = 0; j0 < keys; j0 += BK) {
            int nk = Math.min(BK, keys - j0), ld = padded(nk);
            ok.loadTransposed(b, j0, nk, w.kt, ld, w.row);
            if (ld > nk) for (int c = 0; c < e; c++) Arrays.fill(w.kt, c * ld + nk, c * ld + ld, 0f);
            ov.load(b, j0, nk, w.vb, evPad);
            // Causal: row group g's keys end at keysUpTo(diag, g); the products skip the rest (half of a diagonal block).
            int diag = causal ? i0 - j0 : NO_DIAGONAL;
            gemm(mq, ld, e, w.q, 0, e, 1, w.kt, 0, ld, w.scores, 0, ld, false, diag, true);
            for (int r = 0; r < mq; r++) {
                int i = i0 + r, off = r * ld;
                int valid = causal ? Math.min(nk, i - j0 + 1) : nk;
                // Columns from `width` on are -inf, left as the product left them, and not read by the second product.
                int width = Math.min(ld, padded(keysUpTo(diag, r)));
                float m = scaleAndMask(w.scores, off, width, valid, scale, om, b, i, j0);
                float mOld = w.max[r], mNew = Math.max(mOld, m);
                if (mNew == Float.NEGATIVE_INFINITY) {
                    // Every key so far is masked: this block adds nothing to the row.
                    Arrays.fill(w.scores, off, off + ld, 0f);
                    continue;
                }
                float blockSum = expAndSum(w.scores, off, width, mNew);
                float corr = (float) Math.exp(mOld - mNew);
                w.sum[r] = w.sum[r] * corr + blockSum;
                w.max[r] = mNew;
                if (corr != 1f) scaleRow(w.acc, r * evPad, evPad, corr);
                // Dropout applies to the normalised weights: the row sum is of the weights before it.
                if (od != null) od.multiply(b, i, j0, nk, w.scores, off);
            }
            gemm(mq, evPad, nk, w.scores, 0, ld, 1, w.vb, 0, evPad, w.acc, 0, evPad, true, diag, false);
        }
        for (int r = 0; r < mq; r++) {
            float sum = w.sum[r];
            scaleRow(w.acc, r * evPad, evPad, 1f / sum);
            lse.setAtIndex(F32, lseBase + (long) b * l + i0 + r, (float) (w.max[r] + Math.log(sum)));
        }
        oo.store(b, i0, mq, w.acc, evPad);
    }

    /**
     * Scores {@code [off, off + ld)} times {@code scale} plus row i's mask, the keys from {@code valid} on (causally
     * masked, or padding) set to -inf; returns their maximum.
     */
    private static float scaleAndMask(float[] sc, int off, int ld, int valid, float scale, ScoreOperand om, int b, int i, int j0) {
        for (int c = 0; c < ld; c += FL) FloatVector.fromArray(FS, sc, off + c).mul(scale).intoArray(sc, off + c);
        if (om != null && valid > 0) om.add(b, i, j0, valid, sc, off);
        for (int c = Math.max(valid, 0); c < ld; c++) sc[off + c] = Float.NEGATIVE_INFINITY;
        FloatVector m = FloatVector.broadcast(FS, Float.NEGATIVE_INFINITY);
        for (int c = 0; c < ld; c += FL) m = m.max(FloatVector.fromArray(FS, sc, off + c));
        return m.reduceLanes(VectorOperators.MAX);
    }

    /** {@code exp(x - max)} in place over {@code [off, off + ld)}, returning the sum; -inf gives 0. */
    private static float expAndSum(float[] sc, int off, int ld, float max) {
        FloatVector sum = FloatVector.zero(FS);
        for (int c = 0; c < ld; c += FL) {
            FloatVector p = SoftmaxF32.expNonPositive(FloatVector.fromArray(FS, sc, off + c).sub(max));
            p.intoArray(sc, off + c);
            sum = sum.add(p);
        }
        return VectorF32.sumLanes(sum);
    }

    private static void scaleRow(float[] a, int off, int n, float f) {
        for (int c = 0; c < n; c += FL) FloatVector.fromArray(FS, a, off + c).mul(f).intoArray(a, off + c);
    }

    // ------------------------------------------------------------------ backward

    @Override
    public void backward(StridedView gradOut, StridedView q, StridedView k, StridedView v, StridedView mask, boolean causal,
                         double scale, StridedView dropoutScale, StridedView out, StridedView logsumexp, StridedView gradQ, StridedView gradK,
                         StridedView gradV) {
        int bd = q.dim() - 2;
        Operand oq = Operand.of(q, bd), ok = Operand.of(k, bd), ov = Operand.of(v, bd), oo = Operand.of(out, bd);
        Operand ogo = Operand.of(gradOut, bd), ogq = Operand.of(gradQ, bd), ogk = Operand.of(gradK, bd), ogv = Operand.of(gradV, bd);
        ScoreOperand om = ScoreOperand.of(mask, bd), od = ScoreOperand.of(dropoutScale, bd);
        int batch = oq.batchOffsets().length, l = oq.rows(), s = ok.rows(), e = oq.cols(), ev = ov.cols();
        long work = (long) l * s * (e + ev);
        long grain = Math.max(1, (1L << 18) / Math.max(1, work));
        Parallel.forRange(batch, grain, (begin, end) -> {
            BackwardScratch w = new BackwardScratch(l, s, e, ev);
            for (long b = begin; b < end; b++) {
                backwardEntry(w, ogo, oq, ok, ov, oo, om, od, causal, (float) scale, logsumexp, ogq, ogk, ogv, (int) b);
            }
        });
    }

    /** One task's arrays: the whole of one batch entry's operands and gradients, padded to whole vectors. */
    private static final class BackwardScratch {
        final int ePad, evPad, sPad;
        final float[] q, k, kt, vt, dout, delta, lse, dq, dk, dv, p, pd, dp, row;

        BackwardScratch(int l, int s, int e, int ev) {
            ePad = padded(e);
            evPad = padded(ev);
            sPad = padded(s);
            q = new float[l * ePad];
            k = new float[s * ePad];
            kt = new float[e * sPad];
            vt = new float[ev * sPad];
            dout = new float[l * evPad];
            delta = new float[l];
            lse = new float[l];
            dq = new float[l * ePad];
            dk = new float[s * ePad];
            dv = new float[s * evPad];
            p = new float[BQ * BK];
            pd = new float[BQ * BK];
            dp = new float[BQ * BK];
            row = new float[Math.max(e, ev)];
        }
    }

    private static void backwardEntry(BackwardScratch w, Operand ogo, Operand oq, Operand ok, Operand ov, Operand oo, ScoreOperand om,
                                      ScoreOperand od, boolean causal, float scale, StridedView logsumexp, Operand ogq, Operand ogk, Operand ogv,
                                      int b) {
        int l = oq.rows(), s = ok.rows(), e = oq.cols(), ev = ov.cols();
        int ePad = w.ePad, evPad = w.evPad, sPad = w.sPad;
        oq.load(b, 0, l, w.q, ePad);
        ok.load(b, 0, s, w.k, ePad);
        ok.loadTransposed(b, 0, s, w.kt, sPad, w.row);
        ov.loadTransposed(b, 0, s, w.vt, sPad, w.row);
        ogo.load(b, 0, l, w.dout, evPad);
        MemorySegment.copy(logsumexp.memory(), F32, 4 * (logsumexp.offset() + (long) b * l), w.lse, 0, l);
        for (int i = 0; i < l; i++) {
            // delta_i = dO_i . O_i: the softmax backward's row term.
            MemorySegment.copy(oo.seg(), F32, oo.at(b, i), w.row, 0, ev);
            float d = 0;
            for (int c = 0; c < ev; c++) d += w.row[c] * w.dout[i * evPad + c];
            w.delta[i] = d;
        }
        Arrays.fill(w.dq, 0f);
        Arrays.fill(w.dk, 0f);
        Arrays.fill(w.dv, 0f);
        for (int j0 = 0; j0 < s; j0 += BK) {
            int nk = Math.min(BK, s - j0), ld = padded(nk);
            for (int i0 = causal ? j0 / BQ * BQ : 0; i0 < l; i0 += BQ) {
                int mq = Math.min(BQ, l - i0);
                // Causal: as in the forward, the products over queries' keys stop at each row group's last key; the
                // weights and their gradient are whole rows (0 past the keys), which dV's and dK's products read.
                int diag = causal ? i0 - j0 : NO_DIAGONAL;
                gemm(mq, ld, e, w.q, i0 * ePad, ePad, 1, w.kt, j0, sPad, w.p, 0, ld, false, diag, true);
                for (int r = 0; r < mq; r++) {
                    int i = i0 + r, off = r * ld;
                    int valid = causal ? Math.min(nk, i - j0 + 1) : nk;
                    weights(w.p, off, ld, valid, scale, om, b, i, j0, w.lse[i]);
                }
                gemm(mq, ld, ev, w.dout, i0 * evPad, evPad, 1, w.vt, j0, sPad, w.dp, 0, ld, false, diag, true);
                for (int r = 0; r < mq; r++) {
                    int off = r * ld, width = Math.min(ld, padded(keysUpTo(diag, r)));
                    // Past `width` the product left dP unwritten; the weights are 0 there, so is their gradient.
                    Arrays.fill(w.dp, off + width, off + ld, 0f);
                    if (od != null) {
                        // With dropout scale D: out = (P D) V, so dV takes P D and the weights' gradient is (dO V^T) D.
                        od.multiply(b, i0 + r, j0, nk, w.dp, off);
                        System.arraycopy(w.p, off, w.pd, off, ld);
                        od.multiply(b, i0 + r, j0, nk, w.pd, off);
                    }
                    FloatVector delta = FloatVector.broadcast(FS, w.delta[i0 + r]);
                    for (int c = 0; c < width; c += FL) {
                        FloatVector pv = FloatVector.fromArray(FS, w.p, off + c);
                        pv.mul(FloatVector.fromArray(FS, w.dp, off + c).sub(delta)).mul(scale).intoArray(w.dp, off + c);
                    }
                }
                gemm(nk, evPad, mq, od != null ? w.pd : w.p, 0, 1, ld, w.dout, i0 * evPad, evPad, w.dv, j0 * evPad, evPad, true);
                gemm(mq, ePad, nk, w.dp, 0, ld, 1, w.k, j0 * ePad, ePad, w.dq, i0 * ePad, ePad, true, diag, false);
                gemm(nk, ePad, mq, w.dp, 0, 1, ld, w.q, i0 * ePad, ePad, w.dk, j0 * ePad, ePad, true);
            }
        }
        ogq.store(b, 0, l, w.dq, ePad);
        ogk.store(b, 0, s, w.dk, ePad);
        ogv.store(b, 0, s, w.dv, evPad);
    }

    /** Row i's attention weights in place: {@code exp(scale * s + mask - lse)}, 0 from {@code valid} on. */
    private static void weights(float[] sc, int off, int ld, int valid, float scale, ScoreOperand om, int b, int i, int j0, float lse) {
        for (int c = 0; c < ld; c += FL) FloatVector.fromArray(FS, sc, off + c).mul(scale).intoArray(sc, off + c);
        if (om != null && valid > 0) om.add(b, i, j0, valid, sc, off);
        for (int c = Math.max(valid, 0); c < ld; c++) sc[off + c] = Float.NEGATIVE_INFINITY;
        for (int c = 0; c < ld; c += FL) {
            SoftmaxF32.expNonPositive(FloatVector.fromArray(FS, sc, off + c).sub(lse)).intoArray(sc, off + c);
        }
    }

    // ------------------------------------------------------------------ the product kernel

    /**
     * {@code C[i][n] (+)= sum_p A(i, p) * B[p][n]} for {@code i < m}, {@code n < nPad} (a whole number of vectors) and
     * {@code p < kk}, with {@code A(i, p) = a[aOff + i * ai + p * ak]} (either layout, so a transposed block needs no
     * copy), {@code B[p][n] = b[bOff + p * ldb + n]} and {@code C[i][n] = c[cOff + i * ldc + n]}; without
     * {@code accumulate} C is overwritten.
     */
    static void gemm(int m, int nPad, int kk, float[] a, int aOff, int ai, int ak, float[] b, int bOff, int ldb, float[] c, int cOff,
                     int ldc, boolean accumulate) {
        gemm(m, nPad, kk, a, aOff, ai, ak, b, bOff, ldb, c, cOff, ldc, accumulate, NO_DIAGONAL, false);
    }

    /** {@code diag} of a block with no causal limit. */
    static final int NO_DIAGONAL = Integer.MAX_VALUE / 4;

    /**
     * The keys a causal block's row {@code r} and the rest of its group of four need: {@code [0, diag + (r | 3) + 1)},
     * where {@code diag} is the block's first query less its first key (at least 0).
     */
    static int keysUpTo(int diag, int r) {
        return Math.max(0, diag + (r | 3) + 1);
    }

    /**
     * {@link #gemm} in a causal block whose first query less its first key is {@code diag} ({@link #NO_DIAGONAL}: none),
     * rows being queries: each group of four rows stops at the group's last key ({@link #keysUpTo}), as C's columns
     * where they are keys ({@code keyColumns}: scores, {@code nPad} keys; C's columns past the group's limit, rounded up to
     * whole vectors, are left as they were) or else as terms of the sum ({@code kk} keys).
     */
    static void gemm(int m, int nPad, int kk, float[] a, int aOff, int ai, int ak, float[] b, int bOff, int ldb, float[] c, int cOff,
                     int ldc, boolean accumulate, int diag, boolean keyColumns) {
        int i = 0;
        for (; i + 4 <= m; i += 4) {
            int a0 = aOff + i * ai, a1 = a0 + ai, a2 = a1 + ai, a3 = a2 + ai;
            int c0 = cOff + i * ldc, c1 = c0 + ldc, c2 = c1 + ldc, c3 = c2 + ldc;
            int keys = keysUpTo(diag, i);
            int nEnd = keyColumns ? Math.min(nPad, padded(keys)) : nPad, kEnd = keyColumns ? kk : Math.min(kk, keys);
            int n = 0;
            for (; n + 2 * FL <= nEnd; n += 2 * FL) {
                FloatVector x00 = init(c, c0 + n, accumulate), x01 = init(c, c0 + n + FL, accumulate);
                FloatVector x10 = init(c, c1 + n, accumulate), x11 = init(c, c1 + n + FL, accumulate);
                FloatVector x20 = init(c, c2 + n, accumulate), x21 = init(c, c2 + n + FL, accumulate);
                FloatVector x30 = init(c, c3 + n, accumulate), x31 = init(c, c3 + n + FL, accumulate);
                for (int p = 0, bp = bOff + n, ap = 0; p < kEnd; p++, bp += ldb, ap += ak) {
                    FloatVector b0 = FloatVector.fromArray(FS, b, bp), b1 = FloatVector.fromArray(FS, b, bp + FL);
                    FloatVector s0 = FloatVector.broadcast(FS, a[a0 + ap]);
                    x00 = b0.fma(s0, x00);
                    x01 = b1.fma(s0, x01);
                    FloatVector s1 = FloatVector.broadcast(FS, a[a1 + ap]);
                    x10 = b0.fma(s1, x10);
                    x11 = b1.fma(s1, x11);
                    FloatVector s2 = FloatVector.broadcast(FS, a[a2 + ap]);
                    x20 = b0.fma(s2, x20);
                    x21 = b1.fma(s2, x21);
                    FloatVector s3 = FloatVector.broadcast(FS, a[a3 + ap]);
                    x30 = b0.fma(s3, x30);
                    x31 = b1.fma(s3, x31);
                }
                x00.intoArray(c, c0 + n);
                x01.intoArray(c, c0 + n + FL);
                x10.intoArray(c, c1 + n);
                x11.intoArray(c, c1 + n + FL);
                x20.intoArray(c, c2 + n);
                x21.intoArray(c, c2 + n + FL);
                x30.intoArray(c, c3 + n);
                x31.intoArray(c, c3 + n + FL);
            }
            if (n < nEnd) {
                FloatVector x0 = init(c, c0 + n, accumulate), x1 = init(c, c1 + n, accumulate);
                FloatVector x2 = init(c, c2 + n, accumulate), x3 = init(c, c3 + n, accumulate);
                for (int p = 0, bp = bOff + n, ap = 0; p < kEnd; p++, bp += ldb, ap += ak) {
                    FloatVector b0 = FloatVector.fromArray(FS, b, bp);
                    x0 = b0.fma(FloatVector.broadcast(FS, a[a0 + ap]), x0);
                    x1 = b0.fma(FloatVector.broadcast(FS, a[a1 + ap]), x1);
                    x2 = b0.fma(FloatVector.broadcast(FS, a[a2 + ap]), x2);
                    x3 = b0.fma(FloatVector.broadcast(FS, a[a3 + ap]), x3);
                }
                x0.intoArray(c, c0 + n);
                x1.intoArray(c, c1 + n);
                x2.intoArray(c, c2 + n);
                x3.intoArray(c, c3 + n);
            }
        }
        for (; i < m; i++) {
            int a0 = aOff + i * ai, c0 = cOff + i * ldc;
            int keys = keysUpTo(diag, i);
            int nEnd = keyColumns ? Math.min(nPad, padded(keys)) : nPad, kEnd = keyColumns ? kk : Math.min(kk, keys);
            for (int n = 0; n < nEnd; n += FL) {
                FloatVector x = init(c, c0 + n, accumulate);
                for (int p = 0, bp = bOff + n, ap = 0; p < kEnd; p++, bp += ldb, ap += ak) {
                    x = FloatVector.fromArray(FS, b, bp).fma(FloatVector.broadcast(FS, a[a0 + ap]), x);
                }
                x.intoArray(c, c0 + n);
            }
        }
    }

    private static FloatVector init(float[] c, int at, boolean accumulate) {
        return accumulate ? FloatVector.fromArray(FS, c, at) : FloatVector.zero(FS);
    }
}
