package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.memory.ElementCodec;

/**
 * float32 convolution as an implicit GEMM: {@code out[n] (cout x pixels) = W (cout x cin*kh*kw) @ col(x[n])}
 * without materialising the column matrix. The weight is packed once per call into {@link Gemm}'s
 * MR-row strips (shared read-only by every thread); each thread copies one image into a zero-padded
 * heap buffer (so the packing needs no bounds checks) and packs the columns of NR output pixels at a
 * time straight into Gemm's NR-wide B-strip format, then runs Gemm's register-blocked micro-kernel over
 * every MR-row strip of the weight, writing the output tile in place and adding the bias while the tile
 * is still in L1. Compared with im2col + GEMM this skips writing and re-reading the column matrix
 * (9x the image for a 3x3 kernel), which on these cores costs as much as the arithmetic.
 *
 * <p>Work is split over images (and over pixel strips when there are fewer images than threads); each
 * output element is written by one thread, so results do not depend on the thread count.
 */
final class ConvF32 {
    private static final int MR = Gemm.MR;
    private static final int NR = Gemm.NR;
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final VectorSpecies<Float> FS8 = FloatVector.SPECIES_256;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Deepest packed block (as Gemm's KC): deeper reductions are split into balanced blocks. */
    private static final int KMAX = 1024;

    private ConvF32() {}

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] pad = new float[0];
        float[] bp = new float[0];
        float[] weights = new float[0];
        float[] scratch = new float[0];
        final float[] tile = new float[MR * NR];
        /**
         * {@link #rowTile}'s tile when it has fewer than MR rows to store, native like the tensors it otherwise
         * stores into: a vector access site that sees both heap and native segments loses its intrinsics.
         */
        final MemorySegment rowTile = java.lang.foreign.Arena.ofAuto().allocate(MR * NR * Float.BYTES, 64);
        int[] runSrc = new int[0];
        int[] runDst = new int[0];
        int[] runLen = new int[0];
        float[] ap = new float[0];
        /** The pitched forward's virtual outputs (see {@link Pitch}). */
        float[] vout = new float[0];
        /** One 16x16 block of {@link #padChannelsLast}'s transposes. */
        final float[] block = new float[16 * 16];
        /** One image's packed gy when {@link #weightGradImages} packs several. */
        float[] imageA = new float[0];
        /** Which (image, group) {@link #pad} holds, to skip re-padding; -1 when none. */
        long padded = -1;
        /** The zero border {@link #pad} already holds (null when unknown), so that padding the next image copies only the interior. */
        Border border;
    }

    /**
     * A padded-image layout: its zero border (and pitched tail) stays valid while images of this layout are
     * copied in. Equal when every component is ({@code buffer} by identity, as records compare arrays).
     */
    private record Border(float[] buffer, int channels, int hp, int wpad, int ph, int pw, int h, int w, int tail) {}

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);
    /**
     * The calling thread's per-chunk weight-gradient sums, which the GEMM tiles update: native
     * ({@link CpuConvolutionKernels.Scratch} says why).
     */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch[]> NATIVE_CHUNK_SUMS = ThreadLocal.withInitial(() -> new CpuConvolutionKernels.Scratch[0]);

    /** Whether this path applies: 512-bit vectors (Gemm's 8x32 tile) and a kernel larger than 1x1 or a stride/padding. */
    static boolean handles(Geometry g) {
        return Gemm.L == 16 && !g.isPointwise();
    }

    /**
     * {@code out = conv(x, w) + bias} for contiguous float32 tensors given as segments and element offsets
     * ({@code bias} may be null).
     */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        if (ConvDirectF32.handles(g)) {
            ConvDirectF32.forward(x, xOff, w, wOff, bias, bOff, out, oOff, g, epilogue);
            return;
        }
        int kg = g.kg();
        int coutG = g.coutG();
        int mPad = roundUp(coutG, MR);
        int blocks = (kg + KMAX - 1) / KMAX;
        int kc0 = (kg + blocks - 1) / blocks;
        // Weights: group gi, depth block kb packed at gi * mPad * kg + mPad * kb * kc0, as Gemm's A strips.
        Work caller = WORK.get();
        float[] wp = caller.weights = grow(caller.weights, g.groups() * mPad * kg);
        float[] tmp = new float[mPad * kc0];
        float[] scratch = new float[MR * kc0];
        for (int gi = 0; gi < g.groups(); gi++) {
            for (int kb = 0; kb < blocks; kb++) {
                int k0 = kb * kc0, kc = Math.min(kc0, kg - k0);
                Gemm.packA(w, wOff + (long) gi * coutG * kg + k0, kg, 1, coutG, kc, tmp, scratch);
                System.arraycopy(tmp, 0, wp, gi * mPad * kg + mPad * k0, mPad * kc);
            }
        }
        long pixels = (long) g.oh() * g.ow();
        Rows rows = rowTiled(g) ? new Rows(g) : null;
        Pitch pitch = rows == null && pitched(g) ? new Pitch(g) : null;
        int strips = pitch != null ? pitch.strips : (int) ((pixels + NR - 1) / NR);
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        // Few images: split each image's strips too, so every thread has work.
        int split = g.n() >= 2L * threads ? 1 : Math.min(strips, 2 * threads);
        long tasks = (long) g.n() * g.groups() * split;
        Parallel.forRangeBalanced(tasks, 1, (t0, t1) -> {
            Work wk = WORK.get();
            wk.padded = -1;
            for (long t = t0; t < t1; t++) {
                long image = t / split;
                int part = (int) (t % split);
                int n = (int) (image / g.groups());
                int gi = (int) (image % g.groups());
                int s0 = (int) ((long) part * strips / split), s1 = (int) ((long) (part + 1) * strips / split);
                if (wk.padded != image) {
                    long xImage = xOff + ((long) n * g.cin() + (long) gi * g.cinG()) * g.h() * g.w();
                    if (rows != null) pad(x, xImage, g.cinG(), g, wk, rows.pitch, 0);
                    else if (pitch != null) padPitched(x, xImage, g.cinG(), g, wk);
                    else pad(x, xImage, g.cinG(), g, wk);
                    wk.padded = image;
                }
                long outBase = oOff + ((long) n * g.cout() + (long) gi * coutG) * pixels;
                long bGroup = bOff + (long) gi * coutG;
                if (rows != null) rows.strips(wp, gi * mPad * kg, g, wk, s0, s1, bias, bGroup, out, outBase);
                else if (pitch != null) pitch.strips(wp, gi * mPad * kg, mPad, kc0, blocks, g, wk, s0, s1, bias, bGroup, out, outBase);
                else strips(wp, gi * mPad * kg, mPad, kc0, blocks, g, wk, s0, s1, bias, bGroup, out, outBase);
                // A task of a whole image has finished its group's channels; split images end together, below.
                if (epilogue != null && split == 1) epilogue.block(n, n + 1, gi * coutG, (gi + 1) * coutG, 0, pixels);
            }
        });
        if (epilogue != null && split > 1) epilogue.block(0, g.n(), 0, g.cout(), 0, pixels);
    }

    // ------------------------------------------------------------------ stride 1, 3 taps wide, whole 32-pixel rows

    /**
     * Stride-1 convolutions with 3-tap kernel rows and output rows of whole 32-pixel strips (ResNet's 3x3
     * layers at 32 px, and their input gradients): each strip is one output row piece, and tap
     * {@code (c, ki, kj)} reads padded row {@code oy + ki} of channel c from column {@code ox0 + kj}. The
     * micro-kernel loads the three consecutive vectors covering that window once per {@code (c, ki)} and makes
     * the two shifted ones with lane slices, so nothing is packed and no output is computed twice.
     * Measured against packing each strip (16 channels, 32 px, one thread): the kernel alone 188 against
     * the packed kernel's 220 GFLOP/s, but without the packing that cost 30% of that path's time.
     */
    private static final class Rows {
        /** Floats per padded row: the widest window read (32 outputs + 2) rounded up to whole vectors. */
        final int pitch;
        /** Offset of each (c, ki) tap row in the padded image, from the strip's output row. */
        final int[] rowOff;

        Rows(Geometry g) {
            pitch = roundUp(g.ow(), 16) + 16;
            int chan = paddedHeight(g) * pitch;
            rowOff = new int[g.cinG() * g.kh()];
            for (int c = 0; c < g.cinG(); c++) {
                for (int ki = 0; ki < g.kh(); ki++) rowOff[c * g.kh() + ki] = c * chan + ki * g.dh() * pitch;
            }
        }

        /** Strips {@code [s0, s1)} (32-pixel pieces of output rows) of the image in {@code wk.pad}. */
        void strips(float[] wp, int wBase, Geometry g, Work wk, int s0, int s1, MemorySegment bias, long bOff,
                    MemorySegment out, long outBase) {
            int kg = g.kg(), coutG = g.coutG(), perRow = g.ow() / NR;
            long pixels = (long) g.oh() * g.ow();
            long ldcBytes = pixels * Float.BYTES;
            for (int s = s0; s < s1; s++) {
                int oy = s / perRow, ox0 = (s % perRow) * NR;
                int r0 = oy * pitch + ox0;
                long j0 = (long) oy * g.ow() + ox0;
                for (int ir = 0; ir < coutG; ir += MR) {
                    int mr = Math.min(MR, coutG - ir);
                    long cByte = (outBase + ir * pixels + j0) * Float.BYTES;
                    if (mr == MR) {
                        rowTile(rowOff.length, wp, wBase + ir * kg, wk.pad, rowOff, r0, out, cByte, ldcBytes);
                    } else {
                        rowTile(rowOff.length, wp, wBase + ir * kg, wk.pad, rowOff, r0, wk.rowTile, 0, NR * Float.BYTES);
                        for (int r = 0; r < mr; r++) {
                            long from = (long) r * NR * Float.BYTES, to = cByte + r * ldcBytes;
                            FloatVector.fromMemorySegment(FS, wk.rowTile, from, NO).intoMemorySegment(out, to, NO);
                            FloatVector.fromMemorySegment(FS, wk.rowTile, from + 64, NO).intoMemorySegment(out, to + 64, NO);
                        }
                    }
                }
                if (bias != null) addBias(bias, bOff, out, outBase + j0, pixels, coutG, NR);
            }
        }
    }

    /** Whether the forward runs on {@link Rows}: stride 1, 3-tap kernel rows, whole 32-pixel strips, one packed depth block. */
    static boolean rowTiled(Geometry g) {
        return handles(g) && g.sh() == 1 && g.sw() == 1 && g.kw() == 3 && g.dw() == 1 && g.ow() % NR == 0 && g.pw() <= 2
                && g.kg() <= KMAX && g.pw() + g.w() <= roundUp(g.ow(), 16) + 16;
    }

    /**
     * 8 rows of 32 floats, {@code ldBytes} apart in {@code dst} from {@code dstByte} = the MR-row weight strip
     * at {@code aBase} times the window of {@code groups} (channel, kernel row) pairs, three taps each, of the
     * 32 outputs whose first window column is {@code pad[r0 + rowOff[group]]}. Stored straight into the
     * output rather than copied there from a tile buffer (isolated forwards at 32 px: the 3-channel stem,
     * 27 taps, 0.72 -> 0.57 ms; 16 channels 2.80 -> 2.73 ms). The FMA block is {@link Gemm#kernel}'s,
     * repeated rather than shared for the reason {@link #pitchedTile} gives.
     */
    private static void rowTile(int groups, float[] ap, int aBase, float[] pad, int[] rowOff, int r0, MemorySegment dst,
                                long dstByte, long ldBytes) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        int ai = aBase;
        for (int q = 0; q < groups; q++) {
            int r = r0 + rowOff[q];
            FloatVector a0 = FloatVector.fromArray(FS, pad, r);
            FloatVector a1 = FloatVector.fromArray(FS, pad, r + 16);
            FloatVector a2 = FloatVector.fromArray(FS, pad, r + 32);
            for (int kj = 0; kj < 3; kj++) {
                FloatVector b0 = kj == 0 ? a0 : a0.slice(kj, a1);
                FloatVector b1 = kj == 0 ? a1 : a1.slice(kj, a2);
                FloatVector av = FloatVector.broadcast(FS, ap[ai]);
                c00 = b0.fma(av, c00);
                c01 = b1.fma(av, c01);
                av = FloatVector.broadcast(FS, ap[ai + 1]);
                c10 = b0.fma(av, c10);
                c11 = b1.fma(av, c11);
                av = FloatVector.broadcast(FS, ap[ai + 2]);
                c20 = b0.fma(av, c20);
                c21 = b1.fma(av, c21);
                av = FloatVector.broadcast(FS, ap[ai + 3]);
                c30 = b0.fma(av, c30);
                c31 = b1.fma(av, c31);
                av = FloatVector.broadcast(FS, ap[ai + 4]);
                c40 = b0.fma(av, c40);
                c41 = b1.fma(av, c41);
                av = FloatVector.broadcast(FS, ap[ai + 5]);
                c50 = b0.fma(av, c50);
                c51 = b1.fma(av, c51);
                av = FloatVector.broadcast(FS, ap[ai + 6]);
                c60 = b0.fma(av, c60);
                c61 = b1.fma(av, c61);
                av = FloatVector.broadcast(FS, ap[ai + 7]);
                c70 = b0.fma(av, c70);
                c71 = b1.fma(av, c71);
                ai += MR;
            }
        }
        c00.intoMemorySegment(dst, dstByte, NO);
        c01.intoMemorySegment(dst, dstByte + 64, NO);
        c10.intoMemorySegment(dst, dstByte + ldBytes, NO);
        c11.intoMemorySegment(dst, dstByte + ldBytes + 64, NO);
        c20.intoMemorySegment(dst, dstByte + 2 * ldBytes, NO);
        c21.intoMemorySegment(dst, dstByte + 2 * ldBytes + 64, NO);
        c30.intoMemorySegment(dst, dstByte + 3 * ldBytes, NO);
        c31.intoMemorySegment(dst, dstByte + 3 * ldBytes + 64, NO);
        c40.intoMemorySegment(dst, dstByte + 4 * ldBytes, NO);
        c41.intoMemorySegment(dst, dstByte + 4 * ldBytes + 64, NO);
        c50.intoMemorySegment(dst, dstByte + 5 * ldBytes, NO);
        c51.intoMemorySegment(dst, dstByte + 5 * ldBytes + 64, NO);
        c60.intoMemorySegment(dst, dstByte + 6 * ldBytes, NO);
        c61.intoMemorySegment(dst, dstByte + 6 * ldBytes + 64, NO);
        c70.intoMemorySegment(dst, dstByte + 7 * ldBytes, NO);
        c71.intoMemorySegment(dst, dstByte + 7 * ldBytes + 64, NO);
    }

    // ------------------------------------------------------------------ stride 1: pitched implicit GEMM

    /**
     * Stride 1 needs no packing of the image at all. Number the outputs by their position in the padded
     * image's rows, {@code q = oy * wpad + ox} ("virtual" outputs: the {@code wpad - ow} at the end of each
     * row are junk and discarded); then tap {@code (c, ki, kj)} of output q reads the padded image at
     * {@code q + offset(c, ki, kj)}, so 16 consecutive virtual outputs read 16 consecutive floats and the
     * micro-kernel loads its B vectors straight from the padded image.
     *
     * <p>Used where packing costs more than the junk outputs: rows that are not whole 32-pixel strips (the
     * packed path then copies runs of a row piece by piece) and at least {@link #MIN_PITCHED_USE} of the
     * computed outputs real. Measured on ResNet-20 and LeNet-5 training steps (2026-12-02, quiet machine,
     * alternating in one JVM): LeNet-5 from 6.2-6.4 to 4.2-4.3 ms a step; ResNet-20 (its 16 px and 8 px
     * layers) from no change to 7% faster, the runs differing more than that.
     */
    private static boolean pitched(Geometry g) {
        if (g.sh() != 1 || g.sw() != 1 || g.ow() % NR == 0) return false;
        long virtual = (long) g.oh() * paddedWidth(g);
        long computed = (virtual + NR - 1) / NR * NR;
        return (double) g.oh() * g.ow() / computed >= MIN_PITCHED_USE;
    }

    /** The least fraction of real outputs among those computed for {@link #pitched} to pay. */
    private static final double MIN_PITCHED_USE = 0.6;

    /** One call's pitched layout: each tap's offset in the padded image, and the virtual outputs' extent. */
    private static final class Pitch {
        final int wpad;
        final int[] offs;
        final int virtual;
        final int strips;
        /** Row stride of the virtual outputs buffer (whole strips). */
        final int ldv;

        Pitch(Geometry g) {
            wpad = paddedWidth(g);
            int chan = paddedHeight(g) * wpad;
            int kk = g.kh() * g.kw();
            offs = new int[g.kg()];
            for (int k = 0; k < offs.length; k++) {
                int c = k / kk, ki = (k / g.kw()) % g.kh(), kj = k % g.kw();
                offs[k] = c * chan + ki * g.dh() * wpad + kj * g.dw();
            }
            virtual = g.oh() * wpad;
            strips = (virtual + NR - 1) / NR;
            ldv = strips * NR;
        }

        /** Virtual-output strips {@code [s0, s1)} of the image in {@code wk.pad}, then their real outputs into {@code out}. */
        void strips(float[] wp, int wBase, int mPad, int kc0, int blocks, Geometry g, Work wk, int s0, int s1,
                    MemorySegment bias, long bOff, MemorySegment out, long outBase) {
            float[] vout = wk.vout = grow(wk.vout, mPad * ldv);
            int kg = g.kg();
            for (int s = s0; s < s1; s++) {
                int q0 = s * NR;
                for (int kb = 0; kb < blocks; kb++) {
                    int k0 = kb * kc0, kc = Math.min(kc0, kg - k0);
                    int aBase = wBase + mPad * k0;
                    for (int ir = 0; ir < g.coutG(); ir += MR) {
                        pitchedTile(kc, wp, aBase + ir * kc, wk.pad, offs, k0, q0, vout, ir * ldv + q0, ldv, kb > 0);
                    }
                }
            }
            compact(vout, ldv, wpad, s0 * NR, Math.min(s1 * NR, virtual), g, bias, bOff, out, outBase);
        }
    }

    /**
     * {@code vout[8 rows at vBase, ldv apart][32]} (=, or += when {@code accumulate}) the product of the
     * MR-row weight strip at {@code aBase} and the taps {@code [k0, k0 + kc)} of virtual outputs
     * {@code [q0, q0 + 32)}, read from the padded image at {@code offs[k] + q}. This is Gemm's 8x32
     * micro-kernel with the B rows addressed through {@code offs} instead of a packed panel; one kernel for
     * both would take the row addressing as a call, and a vector passed through a call C2 does not inline
     * is boxed (see {@link VectorF32}).
     */
    private static void pitchedTile(int kc, float[] ap, int aBase, float[] pad, int[] offs, int k0, int q0,
                                    float[] vout, int vBase, int ldv, boolean accumulate) {
        FloatVector c00 = FloatVector.zero(FS), c01 = FloatVector.zero(FS);
        FloatVector c10 = FloatVector.zero(FS), c11 = FloatVector.zero(FS);
        FloatVector c20 = FloatVector.zero(FS), c21 = FloatVector.zero(FS);
        FloatVector c30 = FloatVector.zero(FS), c31 = FloatVector.zero(FS);
        FloatVector c40 = FloatVector.zero(FS), c41 = FloatVector.zero(FS);
        FloatVector c50 = FloatVector.zero(FS), c51 = FloatVector.zero(FS);
        FloatVector c60 = FloatVector.zero(FS), c61 = FloatVector.zero(FS);
        FloatVector c70 = FloatVector.zero(FS), c71 = FloatVector.zero(FS);
        for (int p = 0; p < kc; p++) {
            int bi = offs[k0 + p] + q0;
            int ai = aBase + p * MR;
            FloatVector b0 = FloatVector.fromArray(FS, pad, bi);
            FloatVector b1 = FloatVector.fromArray(FS, pad, bi + 16);
            FloatVector av = FloatVector.broadcast(FS, ap[ai]);
            c00 = b0.fma(av, c00);
            c01 = b1.fma(av, c01);
            av = FloatVector.broadcast(FS, ap[ai + 1]);
            c10 = b0.fma(av, c10);
            c11 = b1.fma(av, c11);
            av = FloatVector.broadcast(FS, ap[ai + 2]);
            c20 = b0.fma(av, c20);
            c21 = b1.fma(av, c21);
            av = FloatVector.broadcast(FS, ap[ai + 3]);
            c30 = b0.fma(av, c30);
            c31 = b1.fma(av, c31);
            av = FloatVector.broadcast(FS, ap[ai + 4]);
            c40 = b0.fma(av, c40);
            c41 = b1.fma(av, c41);
            av = FloatVector.broadcast(FS, ap[ai + 5]);
            c50 = b0.fma(av, c50);
            c51 = b1.fma(av, c51);
            av = FloatVector.broadcast(FS, ap[ai + 6]);
            c60 = b0.fma(av, c60);
            c61 = b1.fma(av, c61);
            av = FloatVector.broadcast(FS, ap[ai + 7]);
            c70 = b0.fma(av, c70);
            c71 = b1.fma(av, c71);
        }
        if (accumulate) {
            c00 = c00.add(FloatVector.fromArray(FS, vout, vBase));
            c01 = c01.add(FloatVector.fromArray(FS, vout, vBase + 16));
            c10 = c10.add(FloatVector.fromArray(FS, vout, vBase + ldv));
            c11 = c11.add(FloatVector.fromArray(FS, vout, vBase + ldv + 16));
            c20 = c20.add(FloatVector.fromArray(FS, vout, vBase + 2 * ldv));
            c21 = c21.add(FloatVector.fromArray(FS, vout, vBase + 2 * ldv + 16));
            c30 = c30.add(FloatVector.fromArray(FS, vout, vBase + 3 * ldv));
            c31 = c31.add(FloatVector.fromArray(FS, vout, vBase + 3 * ldv + 16));
            c40 = c40.add(FloatVector.fromArray(FS, vout, vBase + 4 * ldv));
            c41 = c41.add(FloatVector.fromArray(FS, vout, vBase + 4 * ldv + 16));
            c50 = c50.add(FloatVector.fromArray(FS, vout, vBase + 5 * ldv));
            c51 = c51.add(FloatVector.fromArray(FS, vout, vBase + 5 * ldv + 16));
            c60 = c60.add(FloatVector.fromArray(FS, vout, vBase + 6 * ldv));
            c61 = c61.add(FloatVector.fromArray(FS, vout, vBase + 6 * ldv + 16));
            c70 = c70.add(FloatVector.fromArray(FS, vout, vBase + 7 * ldv));
            c71 = c71.add(FloatVector.fromArray(FS, vout, vBase + 7 * ldv + 16));
        }
        c00.intoArray(vout, vBase);
        c01.intoArray(vout, vBase + 16);
        c10.intoArray(vout, vBase + ldv);
        c11.intoArray(vout, vBase + ldv + 16);
        c20.intoArray(vout, vBase + 2 * ldv);
        c21.intoArray(vout, vBase + 2 * ldv + 16);
        c30.intoArray(vout, vBase + 3 * ldv);
        c31.intoArray(vout, vBase + 3 * ldv + 16);
        c40.intoArray(vout, vBase + 4 * ldv);
        c41.intoArray(vout, vBase + 4 * ldv + 16);
        c50.intoArray(vout, vBase + 5 * ldv);
        c51.intoArray(vout, vBase + 5 * ldv + 16);
        c60.intoArray(vout, vBase + 6 * ldv);
        c61.intoArray(vout, vBase + 6 * ldv + 16);
        c70.intoArray(vout, vBase + 7 * ldv);
        c71.intoArray(vout, vBase + 7 * ldv + 16);
    }

    /**
     * Copies the real outputs among virtual outputs {@code [q0, q1)} of {@code vout} (rows: output channels
     * of the group) into the NCHW output, adding the bias.
     */
    private static void compact(float[] vout, int ldv, int wpad, int q0, int q1, Geometry g, MemorySegment bias, long bOff,
                                MemorySegment out, long outBase) {
        int ow = g.ow();
        int y0 = q0 / wpad, y1 = (q1 - 1) / wpad;
        for (int co = 0; co < g.coutG(); co++) {
            float b = bias == null ? 0f : bias.get(F32, (bOff + co) * Float.BYTES);
            FloatVector bv = FloatVector.broadcast(FS, b);
            long rowBase = outBase + (long) co * g.oh() * ow;
            for (int y = y0; y <= y1; y++) {
                int a = Math.max(q0, y * wpad), e = Math.min(q1, y * wpad + ow);
                if (a >= e) continue;
                int src = co * ldv + a;
                long dst = (rowBase + (long) y * ow + (a - y * wpad)) * Float.BYTES;
                int len = e - a, i = 0;
                for (; i + 16 <= len; i += 16) {
                    FloatVector.fromArray(FS, vout, src + i).add(bv).intoMemorySegment(out, dst + 4L * i, NO);
                }
                for (; i < len; i++) out.set(F32, dst + 4L * i, vout[src + i] + b);
            }
        }
    }

    /**
     * As {@link #pad}, with a zeroed tail after the last channel: the pitched kernel's junk outputs read up
     * to one row and one strip past it.
     */
    private static void padPitched(MemorySegment x, long xOff, int channels, Geometry g, Work wk) {
        int size = channels * paddedHeight(g) * paddedWidth(g);
        int tail = paddedWidth(g) + 2 * NR;
        if (wk.pad.length < size + tail) wk.pad = new float[size + tail];
        pad(x, xOff, channels, g, wk, paddedWidth(g), tail);
    }

    /** Copies {@code channels} channels of one image into {@code wk.pad} with the convolution's zero border. */
    private static void pad(MemorySegment x, long xOff, int channels, Geometry g, Work wk) {
        pad(x, xOff, channels, g, wk, paddedWidth(g), 0);
    }

    /**
     * As above, with {@code tail} zeros after the last channel. The border (and tail) is written only when the
     * buffer does not already hold this layout's: a thread pads image after image of one layout, and the
     * interior copies never touch it.
     */
    private static void pad(MemorySegment x, long xOff, int channels, Geometry g, Work wk, int wpad, int tail) {
        int hp = paddedHeight(g);
        int h = g.h(), w = g.w(), ph = g.ph(), pw = g.pw();
        float[] p = wk.pad = grow(wk.pad, channels * hp * wpad + tail);
        Border layout = new Border(p, channels, hp, wpad, ph, pw, h, w, tail);
        if (!layout.equals(wk.border)) {
            java.util.Arrays.fill(p, 0, channels * hp * wpad + tail, 0f);
            wk.border = layout;
        }
        for (int c = 0; c < channels; c++) {
            int base = c * hp * wpad;
            for (int y = 0; y < h; y++) {
                copyRow(x, (xOff + ((long) c * h + y) * w) * Float.BYTES, p, base + (ph + y) * wpad + pw, w);
            }
        }
    }

    /** {@code n} floats from {@code x} at byte offset {@code from} into {@code p[to..]}: vectors, then a tail (rows are short, a bulk copy's set-up would dominate). */
    private static void copyRow(MemorySegment x, long from, float[] p, int to, int n) {
        int i = 0;
        for (; i + 16 <= n; i += 16) FloatVector.fromMemorySegment(FS, x, from + 4L * i, NO).intoArray(p, to + i);
        if (i < n) {
            VectorMask<Float> m = FS.indexInRange(i, n);
            FloatVector.fromMemorySegment(FS, x, from + 4L * i, NO, m).intoArray(p, to + i, m);
        }
    }

    /** Rows the padded image needs: the top padding, the image, and whatever the last window reaches below it. */
    static int paddedHeight(Geometry g) {
        return Math.max(g.ph() + g.h(), (g.oh() - 1) * g.sh() + g.dh() * (g.kh() - 1) + 1);
    }

    static int paddedWidth(Geometry g) {
        return Math.max(g.pw() + g.w(), (g.ow() - 1) * g.sw() + g.dw() * (g.kw() - 1) + 1);
    }

    /** Output pixel strips {@code [s0, s1)} of one image and group. */
    private static void strips(float[] wp, int wBase, int mPad, int kc0, int blocks, Geometry g, Work wk, int s0, int s1,
                               MemorySegment bias, long bOff, MemorySegment out, long outBase) {
        int kg = g.kg();
        int coutG = g.coutG();
        long pixels = (long) g.oh() * g.ow();
        long ldcBytes = pixels * Float.BYTES;
        float[] bp = wk.bp = grow(wk.bp, kc0 * NR);
        float[] tile = wk.tile;
        for (int s = s0; s < s1; s++) {
            int j0 = s * NR;
            int nr = (int) Math.min(NR, pixels - j0);
            for (int kb = 0; kb < blocks; kb++) {
                int k0 = kb * kc0, kc = Math.min(kc0, kg - k0);
                packColumns(wk.pad, g, k0, kc, j0, nr, bp, wk);
                int aBase = wBase + mPad * k0;
                for (int ir = 0; ir < coutG; ir += MR) {
                    int mr = Math.min(MR, coutG - ir);
                    long cByte = (outBase + (long) ir * pixels + j0) * Float.BYTES;
                    if (mr == MR && nr == NR) {
                        if (kb == 0) Gemm.kernelStore(kc, wp, aBase + ir * kc, bp, 0, out, cByte, ldcBytes, 1f);
                        else Gemm.kernelUpdate(kc, wp, aBase + ir * kc, bp, 0, out, cByte, ldcBytes, 1f, 1f);
                    } else {
                        Gemm.kernel(kc, wp, aBase + ir * kc, bp, 0, tile);
                        Gemm.updateC(tile, out, cByte, ldcBytes, mr, nr, 1f, kb == 0 ? 0f : 1f);
                    }
                }
            }
            if (bias != null) addBias(bias, bOff, out, outBase + j0, pixels, coutG, nr);
        }
    }

    /**
     * Packs rows {@code [k0, k0 + kc)} of the column matrix, columns (output pixels) {@code [j0, j0 + nr)},
     * as one NR-wide B strip: {@code bp[p * NR + j]}, zero past nr.
     */
    private static void packColumns(float[] pad, Geometry g, int k0, int kc, int j0, int nr, float[] bp, Work wk) {
        int ow = g.ow(), kh = g.kh(), kw = g.kw(), sh = g.sh(), sw = g.sw(), dh = g.dh(), dw = g.dw();
        int hp = paddedHeight(g), wpad = paddedWidth(g);
        // The strip's pixels as runs along output rows: run r reads from base + runSrc[r] into strip column runDst[r].
        int firstRow = j0 / ow, lastRow = (j0 + nr - 1) / ow;
        int runs = lastRow - firstRow + 1;
        int[] runSrc = wk.runSrc = growInts(wk.runSrc, runs), runDst = wk.runDst = growInts(wk.runDst, runs);
        int[] runLen = wk.runLen = growInts(wk.runLen, runs);
        for (int r = 0; r < runs; r++) {
            int oy = firstRow + r;
            int q0 = Math.max(j0, oy * ow), q1 = Math.min(j0 + nr, (oy + 1) * ow);
            runSrc[r] = oy * sh * wpad + (q0 - oy * ow) * sw;
            runDst[r] = q0 - j0;
            runLen[r] = q1 - q0;
        }
        boolean fullRow = runs == 1 && nr == NR && sw == 1;
        int kk = kh * kw;
        int c = k0 / kk, ki = (k0 / kw) % kh, kj = k0 % kw;
        for (int p = 0; p < kc; p++) {
            int base = (c * hp + ki * dh) * wpad + kj * dw;
            int dst = p * NR;
            if (fullRow) {
                int src = base + runSrc[0];
                FloatVector.fromArray(FS, pad, src).intoArray(bp, dst);
                FloatVector.fromArray(FS, pad, src + 16).intoArray(bp, dst + 16);
            } else {
                for (int r = 0; r < runs; r++) copyRun(pad, base + runSrc[r], sw, bp, dst + runDst[r], runLen[r]);
                if (nr < NR) java.util.Arrays.fill(bp, dst + nr, dst + NR, 0f);
            }
            if (++kj == kw) {
                kj = 0;
                if (++ki == kh) {
                    ki = 0;
                    c++;
                }
            }
        }
    }

    private static void copyRun(float[] pad, int src, int sw, float[] bp, int d, int len) {
        if (sw == 1) {
            int t = 0;
            for (; t + 16 <= len; t += 16) FloatVector.fromArray(FS, pad, src + t).intoArray(bp, d + t);
            for (; t + 8 <= len; t += 8) FloatVector.fromArray(FS8, pad, src + t).intoArray(bp, d + t);
            for (; t < len; t++) bp[d + t] = pad[src + t];
        } else {
            int t = 0;
            if (sw == 2) {
                // 16 outputs from 32 consecutive floats: one two-vector permute picks the even lanes.
                for (; t + 16 <= len && src + 2 * t + 32 <= pad.length; t += 16) {
                    FloatVector a = FloatVector.fromArray(FS, pad, src + 2 * t);
                    FloatVector b = FloatVector.fromArray(FS, pad, src + 2 * t + 16);
                    EVEN_LANES.selectFrom(a, b).intoArray(bp, d + t);
                }
                if (t + 8 <= len && src + 2 * t + 16 <= pad.length) {
                    FloatVector a = FloatVector.fromArray(FS, pad, src + 2 * t);
                    EVEN_LANES.selectFrom(a, a).intoArray(bp, d + t, FIRST_8);
                    t += 8;
                }
            }
            for (; t < len; t++) bp[d + t] = pad[src + t * sw];
        }
    }

    /** Lane i holds 2i: with {@code selectFrom(a, b)}, the even lanes of the 32 floats a:b. */
    static final FloatVector EVEN_LANES = evenLanes();
    /** The first 8 lanes: stores the 8 even lanes of one vector. */
    private static final jdk.incubator.vector.VectorMask<Float> FIRST_8 = FS.indexInRange(0, 8);

    private static FloatVector evenLanes() {
        float[] idx = new float[16];
        for (int l = 0; l < 16; l++) idx[l] = 2 * l;
        return FloatVector.fromArray(FS, idx, 0);
    }

    /** Adds {@code bias[c]} to the {@code rows x nr} block at {@code at} (row stride {@code ld}). */
    private static void addBias(MemorySegment bias, long bOff, MemorySegment out, long at, long ld, int rows, int nr) {
        for (int r = 0; r < rows; r++) {
            float b = bias.get(F32, (bOff + r) * Float.BYTES);
            long row = (at + r * ld) * Float.BYTES;
            if (nr == NR) {
                FloatVector bv = FloatVector.broadcast(FS, b);
                FloatVector.fromMemorySegment(FS, out, row, NO).add(bv).intoMemorySegment(out, row, NO);
                FloatVector.fromMemorySegment(FS, out, row + 64, NO).add(bv).intoMemorySegment(out, row + 64, NO);
            } else {
                for (int j = 0; j < nr; j++) out.set(F32, row + 4L * j, out.get(F32, row + 4L * j) + b);
            }
        }
    }

    // ------------------------------------------------------------------ weight gradient

    /** Whether {@link #weightGrad} runs {@code g} on {@link ConvDirectF32}, which reads bfloat16 gy and x itself. */
    static boolean weightGradReadsBf16(Geometry g) {
        return !ConvFewChannelWeightGradF32.handles(g) && !ConvLaneWeightGradF32.handles(g) && ConvDirectF32.handlesWeightGrad(g);
    }

    /** Whether {@link #weightGrad} applies: the forward path's conditions. */
    static boolean handlesWeightGrad(Geometry g) {
        return handles(g);
    }

    /**
     * {@code gw = sum_n gy[n] @ col(x[n])^T} as an implicit GEMM: A is gy (rows: output channels,
     * depth: output pixels) packed by Gemm, B the column matrix transposed (depth: pixels, columns: kernel
     * taps), packed straight from a channels-last zero-padded copy of the image with columns ordered
     * {@code (ki, kj, c)}: the 16 columns of one tap at one pixel are then one contiguous vector, so B
     * strips pack without transposes (the one transpose is the image's, 1/(kh*kw) of the column matrix).
     * Each chunk of images accumulates into its own buffer; the partial sums are added in chunk order. gy and x may be
     * bfloat16 where {@link #weightGradReadsBf16} says so.
     */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, boolean bf16, MemorySegment gw, long gwOff,
                           Geometry g) {
        if (bf16) {
            if (!weightGradReadsBf16(g)) throw new IllegalArgumentException("conv2d weight gradient: no bfloat16 kernel for " + g);
            ConvDirectF32.weightGrad(gy, gyOff, x, xOff, true, gw, gwOff, g);
            return;
        }
        if (ConvFewChannelWeightGradF32.handles(g)) {
            ConvFewChannelWeightGradF32.weightGrad(gy, gyOff, x, xOff, gw, gwOff, g);
            return;
        }
        if (ConvLaneWeightGradF32.handles(g)) {
            ConvLaneWeightGradF32.weightGrad(gy, gyOff, x, xOff, gw, gwOff, g);
            return;
        }
        if (ConvDirectF32.handlesWeightGrad(g)) {
            ConvDirectF32.weightGrad(gy, gyOff, x, xOff, false, gw, gwOff, g);
            return;
        }
        int kg = g.kg();
        int cout = g.cout();
        int chunks = (int) Math.max(1, Math.min(g.n(), Parallel.inParallelRegion() ? 1 : Parallel.numThreads()));
        float[][] partial = chunkSums(chunks, cout * kg);
        int[] pixOff = windowOffsets(g, paddedWidth(g), g.cinG());
        // Small images: several images' pixels make one GEMM depth, so that each packed block and each
        // micro-kernel call covers up to KMAX pixels rather than one small image's.
        int imagesPerBlock = Math.max(1, KMAX / (g.oh() * g.ow()));
        MemorySegment[] sums = nativeChunkSums(chunks, (long) cout * kg * Float.BYTES);
        Parallel.forRange(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                // One buffer per chunk, not per thread: a thread may run several chunks.
                Work wk = WORK.get();
                MemorySegment acc = sums[(int) c];
                long n0 = c * g.n() / chunks, n1 = (c + 1) * g.n() / chunks;
                for (long n = n0; n < n1; n += imagesPerBlock) {
                    int count = (int) Math.min(imagesPerBlock, n1 - n);
                    for (int gi = 0; gi < g.groups(); gi++) weightGradImages(gy, gyOff, x, xOff, (int) n, count, gi, g, pixOff, wk, acc);
                }
                MemorySegment.copy(acc, ValueLayout.JAVA_FLOAT, 0, partial[(int) c], 0, cout * kg);
            }
        });
        sumPartials(partial, cout, g.cinG(), g.kh() * g.kw(), gw, gwOff);
    }

    /**
     * Chunks of a weight gradient over {@code images} images whose partial sums are {@code size} floats each: up to
     * {@link Parallel#chunksPerThread} a thread (taken by whichever thread is free, {@link Parallel#forRangeBalanced}),
     * fewer where their sums would pass {@link #BALANCED_SUMS} floats together, one a thread at least. The count
     * depends on the thread count and the shape only, so results do not depend on scheduling.
     */
    static int sumChunks(long images, int size) {
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        long wanted = Math.min((long) threads * Parallel.chunksPerThread(), Math.max(threads, BALANCED_SUMS / Math.max(1, size)));
        return (int) Math.max(1, Math.min(images, wanted));
    }

    /** Floats of partial sums that {@link #sumChunks} allows for more chunks than threads (4 MB). */
    private static final long BALANCED_SUMS = 1 << 20;

    /** {@code chunks} zeroed buffers of {@code bytes} each, the calling thread's, reused from call to call. */
    private static MemorySegment[] nativeChunkSums(int chunks, long bytes) {
        CpuConvolutionKernels.Scratch[] scratch = NATIVE_CHUNK_SUMS.get();
        if (scratch.length < chunks) {
            scratch = java.util.Arrays.copyOf(scratch, chunks);
            for (int c = 0; c < chunks; c++) if (scratch[c] == null) scratch[c] = new CpuConvolutionKernels.Scratch();
            NATIVE_CHUNK_SUMS.set(scratch);
        }
        MemorySegment[] sums = new MemorySegment[chunks];
        for (int c = 0; c < chunks; c++) sums[c] = scratch[c].get(bytes).asSlice(0, bytes).fill((byte) 0);
        return sums;
    }

    /** Offset (in floats, channels-last with {@code channels} channels) of each output pixel's window corner in the padded image. */
    static int[] windowOffsets(Geometry g, int wpad, int channels) {
        int[] pixOff = new int[g.oh() * g.ow()];
        for (int oy = 0; oy < g.oh(); oy++) {
            for (int ox = 0; ox < g.ow(); ox++) pixOff[oy * g.ow() + ox] = (oy * g.sh() * wpad + ox * g.sw()) * channels;
        }
        return pixOff;
    }

    /**
     * The calling thread's buffers for the chunks' weight-gradient sums, {@code chunks} of them (the array is new, the
     * buffers are reused from call to call; they may be longer than {@code size}): a
     * fresh 2 MB array per chunk per call (DCGAN's 128 -> 256 layer, 4 calls a step) is zeroed by the allocating
     * thread and collected by GC threads that share the cores with the two compute threads. Each chunk's thread
     * clears its own buffer ({@link #clearedChunkSum}); sums larger than {@link #MAX_KEPT_SUM} floats are not kept.
     */
    static float[][] chunkSums(int chunks, int size) {
        if (size > MAX_KEPT_SUM) return new float[chunks][size];
        float[][] kept = CHUNK_SUMS.get();
        if (kept.length < chunks) CHUNK_SUMS.set(kept = java.util.Arrays.copyOf(kept, chunks));
        for (int c = 0; c < chunks; c++) {
            if (kept[c] == null || kept[c].length < size) kept[c] = new float[size];
        }
        return java.util.Arrays.copyOf(kept, chunks);
    }

    /** {@code sums[c]}, its first {@code size} floats set to zero (a fresh buffer of {@link #chunkSums} is already). */
    static float[] clearedChunkSum(float[][] sums, int c, int size) {
        float[] acc = sums[c];
        java.util.Arrays.fill(acc, 0, size, 0f);
        return acc;
    }

    /** Floats of one chunk's sums beyond which {@link #chunkSums} allocates per call rather than keep them (16 MB). */
    private static final int MAX_KEPT_SUM = 1 << 22;

    private static final ThreadLocal<float[][]> CHUNK_SUMS = ThreadLocal.withInitial(() -> new float[0][]);

    /** One output channel's summed row (native, as {@link Gemm#transposeBlock16}'s other sources) and its transpose. */
    private static final class SumRow {
        MemorySegment sums = MemorySegment.NULL;
        float[] out = new float[0];
    }

    private static final ThreadLocal<SumRow> SUM_ROWS = ThreadLocal.withInitial(SumRow::new);

    /**
     * {@code gw[co][ci][t]} = the sum, in chunk order, of the chunks' weight gradients, whose columns are
     * ordered (tap, channel): {@code partial[c][co * cinG * kk + t * cinG + ci]}. Output channels are split over the
     * threads (it ran on the calling thread alone: 0.5 M floats for DCGAN's 128 -> 256 layer while the other thread
     * waited); with 16 taps each (channel, 16 input channels) block is one 16x16 transpose. The grain counts the floats
     * read, every chunk's row: counted as one row's sums it left ResNet-20's 64 -> 64 3x3 layer (16 chunks of 64 x 576)
     * in one chunk, 0.16 ms a call on the calling thread alone.
     */
    static void sumPartials(float[][] partial, int cout, int cinG, int kk, MemorySegment gw, long gwOff) {
        int kg = cinG * kk;
        boolean blocks16 = kk == L && cinG % L == 0;
        Parallel.forRange(cout, Math.max(1, SUM_GRAIN / ((long) kg * partial.length)), (c0, c1) -> {
            SumRow r = SUM_ROWS.get();
            if (blocks16 && r.sums.byteSize() < (long) kg * Float.BYTES) {
                r.sums = java.lang.foreign.Arena.ofAuto().allocate((long) kg * Float.BYTES, 64);
                r.out = new float[kg];
            }
            for (int co = (int) c0; co < c1; co++) {
                int row = co * kg;
                if (blocks16) {
                    for (int i = 0; i < kg; i += L) {
                        FloatVector v = FloatVector.fromArray(FS, partial[0], row + i);
                        for (int c = 1; c < partial.length; c++) v = v.add(FloatVector.fromArray(FS, partial[c], row + i));
                        v.intoMemorySegment(r.sums, (long) i * Float.BYTES, NO);
                    }
                    for (int ci = 0; ci < cinG; ci += L) {
                        Gemm.transposeBlock16(r.sums, (long) ci * Float.BYTES, (long) cinG * Float.BYTES, r.out, ci * kk, kk);
                    }
                    MemorySegment.copy(r.out, 0, gw, F32, (gwOff + row) * Float.BYTES, kg);
                    continue;
                }
                for (int ci = 0; ci < cinG; ci++) {
                    for (int t = 0; t < kk; t++) {
                        int col = row + t * cinG + ci;
                        float v = partial[0][col];
                        for (int c = 1; c < partial.length; c++) v += partial[c][col];
                        gw.set(F32, (gwOff + ((long) co * cinG + ci) * kk + t) * Float.BYTES, v);
                    }
                }
            }
        });
    }

    /** Floats of partial sums a thread of {@link #sumPartials} reads at least. */
    private static final int SUM_GRAIN = 1 << 15;

    /**
     * Adds the weight gradient of images {@code [n0, n0 + count)} (group gi) into {@code accSeg}. Their
     * pixels, one image after another, are the GEMM's depth: A is gy (output channels x pixels), B the
     * taps of each pixel's window, both packed image by image into one block; one image's pixels are
     * split into blocks of at most KMAX when there are more ({@code count} is 1 then).
     */
    private static void weightGradImages(MemorySegment gy, long gyOff, MemorySegment x, long xOff, int n0, int count, int gi,
                                         Geometry g, int[] pixOff, Work wk, MemorySegment accSeg) {
        int coutG = g.coutG(), cinG = g.cinG(), kg = g.kg();
        int hp = paddedHeight(g), wpad = paddedWidth(g);
        int padSize = hp * wpad * cinG;
        float[] pads = wk.pad = grow(wk.pad, count * padSize);
        wk.border = null; // channels-last images: not the channels-first layout pad() keeps a border for
        for (int i = 0; i < count; i++) {
            padChannelsLast(x, xOff + ((long) (n0 + i) * g.cin() + (long) gi * cinG) * g.h() * g.w(), cinG, g, hp, wpad,
                    pads, i * padSize, wk.block);
        }
        int pixels = g.oh() * g.ow();
        int depth = count * pixels;
        int blocks = (depth + KMAX - 1) / KMAX;
        int kc0 = (depth + blocks - 1) / blocks;
        int mPad = roundUp(coutG, MR);
        float[] ap = wk.ap = grow(wk.ap, mPad * kc0);
        float[] scratch = wk.scratch = grow(wk.scratch, MR * kc0);
        float[] one = count == 1 ? null : (wk.imageA = grow(wk.imageA, mPad * pixels));
        float[] bp = wk.bp = grow(wk.bp, kc0 * NR);
        float[] tile = wk.tile;
        long ldcBytes = (long) kg * Float.BYTES;
        for (int kb = 0; kb < blocks; kb++) {
            int p0 = kb * kc0, kc = Math.min(kc0, depth - p0);
            if (count == 1) {
                Gemm.packA(gy, gyOff + ((long) n0 * g.cout() + (long) gi * coutG) * pixels + p0, pixels, 1, coutG, kc, ap, scratch);
            } else {
                // Each image packed on its own, then each strip's rows placed at the image's depth.
                for (int i = 0; i < count; i++) {
                    Gemm.packA(gy, gyOff + ((long) (n0 + i) * g.cout() + (long) gi * coutG) * pixels, pixels, 1, coutG, pixels,
                            one, scratch);
                    for (int st = 0; st < mPad / MR; st++) {
                        System.arraycopy(one, st * MR * pixels, ap, st * MR * kc + i * pixels * MR, MR * pixels);
                    }
                }
            }
            for (int j0 = 0; j0 < kg; j0 += NR) {
                int nr = Math.min(NR, kg - j0);
                if (count == 1) {
                    packTaps(pads, 0, g, wpad, pixOff, p0, kc, j0, nr, bp, 0);
                } else {
                    for (int i = 0; i < count; i++) packTaps(pads, i * padSize, g, wpad, pixOff, 0, pixels, j0, nr, bp, i * pixels * NR);
                }
                for (int ir = 0; ir < coutG; ir += MR) {
                    int mr = Math.min(MR, coutG - ir);
                    long cByte = ((long) (gi * coutG + ir) * kg + j0) * Float.BYTES;
                    if (mr == MR && nr == NR) {
                        Gemm.kernelUpdate(kc, ap, ir * kc, bp, 0, accSeg, cByte, ldcBytes, 1f, 1f);
                    } else {
                        Gemm.kernel(kc, ap, ir * kc, bp, 0, tile);
                        Gemm.updateC(tile, accSeg, cByte, ldcBytes, mr, nr, 1f, 1f);
                    }
                }
            }
        }
    }

    /**
     * Copies {@code channels} channels of one image into {@code p} from {@code base} on, channels-last,
     * {@code p[base + (y * wpad + x) * channels + c]}, with the convolution's zero border; {@code block}
     * is 16x16 floats of scratch.
     */
    static void padChannelsLast(MemorySegment x, long xOff, int channels, Geometry g, int hp, int wpad, float[] p,
                                        int base, float[] block) {
        padChannelsLast(x, xOff, false, channels, g, hp, wpad, p, base, block);
    }

    /**
     * {@link #padChannelsLast}, from a bfloat16 image when {@code bf16}: each 16 x 16 block is widened into an L1
     * block, then transposed as the float32 one is, so a bf16 operand needs no float32 copy of its own (the same
     * floats land in {@code p}: widening is exact).
     */
    static void padChannelsLast(MemorySegment x, long xOff, boolean bf16, int channels, Geometry g, int hp, int wpad,
                                float[] p, int base, float[] block) {
        int h = g.h(), w = g.w(), ph = g.ph(), pw = g.pw();
        int size = hp * wpad * channels;
        // Zero only the border: the rows above and below the image, and each image row's left and right margins.
        java.util.Arrays.fill(p, base, base + ph * wpad * channels, 0f);
        java.util.Arrays.fill(p, base + (ph + h) * wpad * channels, base + size, 0f);
        for (int y = 0; y < h; y++) {
            int row = base + (ph + y) * wpad * channels;
            java.util.Arrays.fill(p, row, row + pw * channels, 0f);
            java.util.Arrays.fill(p, row + (pw + w) * channels, row + wpad * channels, 0f);
        }
        // 16 channels x 16 pixels at a time, the pixels taken in the image's flat order (so rows narrower
        // than 16 transpose with vectors too). Blocks within one image row transpose straight into place;
        // others go through a scratch block, each pixel's 16 channels then copied to its place. (Positions
        // are counted along, not divided out: a division per pixel cost more than the transposes.)
        int hw = h * w;
        int c0 = 0;
        for (; c0 + L <= channels; c0 += L) {
            int q0 = 0;
            int y = 0, xq = 0; // q0's row and column
            for (; q0 + L <= hw; q0 += L) {
                long src = xOff + (long) c0 * hw + q0;
                int dst = base + ((ph + y) * wpad + pw + xq) * channels + c0;
                if (xq + L <= w) {
                    transposeBlock16(x, src, hw, bf16, p, dst, channels);
                    xq += L;
                } else {
                    transposeBlock16(x, src, hw, bf16, block, 0, L);
                    for (int q = 0; q < L; q++) {
                        FloatVector.fromArray(FS, block, q * L).intoArray(p, base + ((ph + y) * wpad + pw + xq) * channels + c0);
                        if (++xq == w) {
                            xq = 0;
                            y++;
                        }
                    }
                }
                if (xq == w) {
                    xq = 0;
                    y++;
                }
            }
            for (int c = c0; c < c0 + L; c++) {
                for (int pix = q0; pix < hw; pix++) {
                    p[base + ((ph + pix / w) * wpad + pw + pix % w) * channels + c] = element(x, xOff + (long) c * hw + pix, bf16);
                }
            }
        }
        for (int c = c0; c < channels; c++) {
            for (int y = 0; y < h; y++) {
                long src = xOff + ((long) c * h + y) * w;
                int dst = base + ((ph + y) * wpad + pw) * channels + c;
                for (int i = 0; i < w; i++) p[dst + i * channels] = element(x, src + i, bf16);
            }
        }
    }

    /**
     * {@link Gemm#transposeBlock16} of 16 columns of 16 elements (column j from element {@code src + j * colStride}),
     * float32 or bfloat16: bfloat16 columns are widened into an L1 block first, then transposed from there.
     */
    static void transposeBlock16(MemorySegment x, long src, long colStride, boolean bf16, float[] dst, int to, int dstStride) {
        if (bf16) {
            MemorySegment widened = WIDENED.get();
            for (int j = 0; j < L; j++) HalfGemm.widenRow(x, src + j * colStride, widened, j);
            Gemm.transposeBlock16(widened, 0, 4L * L, dst, to, dstStride);
        } else {
            Gemm.transposeBlock16(x, src * Float.BYTES, colStride * Float.BYTES, dst, to, dstStride);
        }
    }

    /** Element {@code at} of a float32 or (widened) bfloat16 tensor. */
    static float element(MemorySegment x, long at, boolean bf16) {
        return bf16 ? ElementCodec.bf16ToFloat(x.get(ValueLayout.JAVA_SHORT_UNALIGNED, at * 2)) : x.get(F32, at * Float.BYTES);
    }

    /** The calling thread's 16 x 16 floats of widened bfloat16 for {@link #transposeBlock16}: native, as the tensors the float32 transposes read. */
    private static final ThreadLocal<MemorySegment> WIDENED = ThreadLocal.withInitial(
            () -> java.lang.foreign.Arena.ofAuto().allocate(16 * 16 * Float.BYTES, 64));

    /**
     * Packs taps (columns) {@code [j0, j0 + nr)} in {@code (ki, kj, c)} order over output pixels
     * {@code [p0, p0 + kc)} of the image at {@code padBase}:
     * {@code bp[bBase + (p - p0) * NR + j] = pad[padBase + pixOff[p] + offset(ki, kj) * cinG + c]}, zero past
     * nr. The padded image is channels-last, so 16 channels of one tap are one contiguous vector.
     */
    private static void packTaps(float[] pad, int padBase, Geometry g, int wpad, int[] pixOff, int p0, int kc, int j0, int nr,
                                 float[] bp, int bBase) {
        int cinG = g.cinG(), kw = g.kw();
        for (int jj = 0; jj < nr; ) {
            int j = j0 + jj;
            int tap = j / cinG, c = j % cinG;
            int src = padBase + ((tap / kw) * g.dh() * wpad + (tap % kw) * g.dw()) * cinG + c;
            if (jj + 16 <= nr && c + 16 <= cinG) {
                for (int p = 0; p < kc; p++) FloatVector.fromArray(FS, pad, src + pixOff[p0 + p]).intoArray(bp, bBase + p * NR + jj);
                jj += 16;
            } else {
                for (int p = 0; p < kc; p++) bp[bBase + p * NR + jj] = pad[src + pixOff[p0 + p]];
                jj++;
            }
        }
        if (nr < NR) {
            for (int p = 0; p < kc; p++) java.util.Arrays.fill(bp, bBase + p * NR + nr, bBase + (p + 1) * NR, 0f);
        }
    }

    /** Vector length in floats (the 16x16 transposes). */
    private static final int L = 16;

    static float[] grow(float[] a, int size) {
        return a.length >= size ? a : new float[size];
    }

    static int[] growInts(int[] a, int size) {
        return a.length >= size ? a : new int[size];
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
