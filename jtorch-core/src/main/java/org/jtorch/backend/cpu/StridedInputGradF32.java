package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The input gradient of a strided float32 convolution as one stride-1 convolution per output phase.
 * Input row {@code iy = s * m + py} receives gradient only from the kernel rows {@code ki} with
 * {@code (py + ph - ki) % s == 0}, from output row {@code m + (py + ph - ki) / s}: for each phase
 * {@code (py, px)} that is a correlation of gradOut with a sub-kernel of the (transposed) weight, which
 * the stride-1 forward kernels compute at full speed into a phase plane; the planes are then interleaved
 * into the NCHW gradient. Against GEMM + col2im this skips the column matrix and its scattered adds
 * (the ResNet-20 stride-2 layers' input gradients took 6-7 ms each that way). 3x3 stride-2 padding-1
 * layers go to {@link ConvDirectF32#stride2InputGrad} first, which runs the four phases as one convolution.
 */
final class StridedInputGradF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();

    private StridedInputGradF32() {}

    /** One phase: its kernel rows and columns in the order the phase convolution uses, and its geometry (null when it receives nothing). */
    private record Phase(int py, int px, int[] rows, int[] cols, Geometry geometry) {}

    /** Plane buffer of the calling thread, reused: fresh memory costs a page fault per 4 KiB here. */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> PLANES = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);
    /** A phase's weights, native ({@link CpuConvolutionKernels.Scratch} says why). */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> PHASE_WEIGHTS = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);

    /**
     * Whether {@link #backwardInput} applies: stride 2 along rows, no dilation or groups, and every phase on
     * the direct convolution's 8- or 7-pixel x 32-channel tile, in rows longer than 7 pixels (ResNet-50's 512
     * channels at 14 px, in 7-pixel phases: 43-45 ms this way against 34-40 with GEMM + col2im, one thread). On
     * the 16x16 tile the phases' short reductions (one to four taps of gradOut's channels) pay too much for each
     * tile's transpose: ResNet-20's
     * 16->32-channel layer took 5.2 ms that way against 4.5 with GEMM + col2im (32->64: 3.6 against 4.9).
     */
    static boolean applies(Geometry g) {
        if (g.groups() != 1 || g.dh() != 1 || g.dw() != 1 || g.sw() != 2) return false;
        List<Phase> phases = phases(g);
        if (phases == null) return false;
        for (Phase p : phases) {
            if (p.geometry() != null && (!ConvDirectF32.handlesWithWideTile(p.geometry()) || p.geometry().ow() < 8)) return false;
        }
        return true;
    }

    /** The phases of {@code g}, or null when one would need negative padding. */
    private static List<Phase> phases(Geometry g) {
        List<Phase> phases = new ArrayList<>();
        for (int py = 0; py < g.sh(); py++) {
            for (int px = 0; px < g.sw(); px++) {
                int[] rows = taps(py, g.sh(), g.ph(), g.kh());
                int[] cols = taps(px, g.sw(), g.pw(), g.kw());
                int mh = Math.max(0, (g.h() - py + g.sh() - 1) / g.sh()), mw = Math.max(0, (g.w() - px + g.sw() - 1) / g.sw());
                Geometry pg = null;
                if (rows.length > 0 && cols.length > 0 && mh > 0 && mw > 0) {
                    // Taps in ascending output offset d = (p + pad - k) / s; the first is the phase's top (left) padding.
                    int padTop = -((py + g.ph() - rows[0]) / g.sh()), padLeft = -((px + g.pw() - cols[0]) / g.sw());
                    if (padTop < 0 || padLeft < 0) return null;
                    pg = new Geometry(g.n(), g.cout(), g.oh(), g.ow(), g.cin(), rows.length, cols.length, 1, 1, padTop, padLeft,
                            1, 1, 1, mh, mw);
                }
                phases.add(new Phase(py, px, rows, cols, pg));
            }
        }
        return phases;
    }

    /** Kernel indices k with {@code (p + pad - k) % s == 0}, largest first (ascending output offset). */
    private static int[] taps(int p, int s, int pad, int k) {
        List<Integer> ks = new ArrayList<>();
        for (int kk = k - 1; kk >= 0; kk--) {
            if (Math.floorMod(p + pad - kk, s) == 0) ks.add(kk);
        }
        return ks.stream().mapToInt(Integer::intValue).toArray();
    }

    static void backwardInput(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        List<Phase> phases = phases(g);
        int cin = g.cin(), cout = g.cout();
        long[] planeOff = new long[phases.size()];
        long total = 0;
        for (int i = 0; i < phases.size(); i++) {
            planeOff[i] = total;
            Geometry pg = phases.get(i).geometry();
            if (pg != null) total += (long) pg.n() * pg.cout() * pg.oh() * pg.ow();
        }
        MemorySegment planes = PLANES.get().get(Math.max(1, total) * Float.BYTES);
        float[] wh = new float[cout * cin * g.kh() * g.kw()];
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wh, 0, wh.length);
        for (int i = 0; i < phases.size(); i++) {
            Phase p = phases.get(i);
            Geometry pg = p.geometry();
            if (pg == null) continue;
            // wp[ic][oc][ty][tx] = w[oc][ic][rows[ty]][cols[tx]]: the phase's sub-kernel with input and output channels swapped.
            int ty = p.rows().length, tx = p.cols().length;
            float[] wp = new float[cin * cout * ty * tx];
            for (int ic = 0; ic < cin; ic++) {
                for (int oc = 0; oc < cout; oc++) {
                    for (int a = 0; a < ty; a++) {
                        for (int b = 0; b < tx; b++) {
                            int src = ((oc * cin + ic) * g.kh() + p.rows()[a]) * g.kw() + p.cols()[b];
                            wp[((ic * cout + oc) * ty + a) * tx + b] = wh[src];
                        }
                    }
                }
            }
            MemorySegment phaseWeights = PHASE_WEIGHTS.get().get((long) wp.length * Float.BYTES);
            MemorySegment.copy(wp, 0, phaseWeights, F32, 0, wp.length);
            ConvDirectF32.forward(gy, gyOff, phaseWeights, 0, null, 0, planes, planeOff[i], pg, null);
        }
        interleave(phases, planes, planeOff, gi, giOff, g);
    }

    /** Lane l of the first (second) 16 of 32 interleaved floats: element l / 2 (8 + l / 2) of the even phase's row or, in odd lanes, of the odd one's. */
    private static final FloatVector ZIP_LO = zipIndex(0), ZIP_HI = zipIndex(8);

    private static FloatVector zipIndex(int from) {
        float[] idx = new float[16];
        for (int l = 0; l < 16; l++) idx[l] = (l % 2 == 0 ? 0 : 16) + from + l / 2;
        return FloatVector.fromArray(FS, idx, 0);
    }

    /** {@code gi[n][c][s*m + py][2q + px] = plane(py, px)[n][c][m][q]}, zero where a phase receives nothing. */
    private static void interleave(List<Phase> phases, MemorySegment planes, long[] planeOff, MemorySegment gi, long giOff, Geometry g) {
        int h = g.h(), w = g.w(), sh = g.sh();
        long rows = (long) g.n() * g.cin() * h;
        Parallel.forRange(rows, Math.max(1, 4096 / Math.max(1, w)), (r0, r1) -> {
            for (long r = r0; r < r1; r++) {
                long image = r / h;
                int iy = (int) (r % h), py = iy % sh, m = iy / sh;
                long dst = (giOff + r * w) * Float.BYTES;
                Phase even = phases.get(py * 2), odd = phases.get(py * 2 + 1);
                long a = rowOf(even, planeOff[py * 2], image, m), b = rowOf(odd, planeOff[py * 2 + 1], image, m);
                zipRow(planes, a, b, gi, dst, w);
            }
        });
    }

    /** Byte offset of row m of (image, channel) {@code image} in a phase plane, or -1 when the phase receives nothing. */
    private static long rowOf(Phase p, long planeOff, long image, int m) {
        Geometry pg = p.geometry();
        if (pg == null) return -1;
        return (planeOff + (image * pg.oh() + m) * pg.ow()) * Float.BYTES;
    }

    /** {@code out[2q] = planes[a + q]}, {@code out[2q + 1] = planes[b + q]} for the {@code w} floats of one gradient row; -1 reads zeros. */
    private static void zipRow(MemorySegment planes, long a, long b, MemorySegment out, long dst, int w) {
        int evens = (w + 1) / 2, odds = w / 2;
        int q = 0;
        for (; 2 * q + 32 <= w; q += 16) {
            FloatVector va = a < 0 ? FloatVector.zero(FS) : FloatVector.fromMemorySegment(FS, planes, a + 4L * q, NO);
            FloatVector vb = b < 0 ? FloatVector.zero(FS) : FloatVector.fromMemorySegment(FS, planes, b + 4L * q, NO);
            ZIP_LO.selectFrom(va, vb).intoMemorySegment(out, dst + 8L * q, NO);
            ZIP_HI.selectFrom(va, vb).intoMemorySegment(out, dst + 8L * q + 64, NO);
        }
        if (2 * q + 16 <= w) {
            VectorMask<Float> m = FS.indexInRange(0, 8);
            FloatVector va = a < 0 ? FloatVector.zero(FS) : FloatVector.fromMemorySegment(FS, planes, a + 4L * q, NO, m);
            FloatVector vb = b < 0 ? FloatVector.zero(FS) : FloatVector.fromMemorySegment(FS, planes, b + 4L * q, NO, m);
            ZIP_LO.selectFrom(va, vb).intoMemorySegment(out, dst + 8L * q, NO);
            q += 8;
        }
        for (; q < evens; q++) {
            out.set(F32, dst + 8L * q, a < 0 ? 0f : planes.get(F32, a + 4L * q));
            if (q < odds) out.set(F32, dst + 8L * q + 4, b < 0 ? 0f : planes.get(F32, b + 4L * q));
        }
    }
}
