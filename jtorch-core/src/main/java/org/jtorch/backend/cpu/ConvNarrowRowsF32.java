package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 stride-1 convolution whose output rows fit one 16-lane vector and whose output channels are few (at most 8),
 * with an output row's pixels in the lanes. It serves the input gradient of convolutions with few input channels on
 * small maps, run as the flipped convolution: LeNet-5's conv2 (6 -> 16 channels, 5x5, 14 -> 10 px) has an input gradient
 * of 6 channels 14 px wide, which the implicit GEMM ran with 6 of its 8 tile rows and with every tap over the 4-pixel
 * zero border (half its products were zeros: 26 GFLOP/s of useful work in one thread).
 *
 * <p>Here each output row is 8 accumulators (one per output channel, unused ones wasted) of 16 lanes; for each input
 * channel and each kernel row whose input row lies inside the image (rows in the padding are skipped, not multiplied),
 * the {@code kw} shifted input rows are loaded once and multiplied by the 8 channels' weights. Columns of padding are
 * zeros in a per-thread copy of the image's rows. Work is split over images, each output written by one thread, so
 * results do not depend on the thread count. {@code -Djtorch.conv.narrowRows=false} turns it off.
 */
final class ConvNarrowRowsF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final int LANES = 16;
    /** Output channels computed together: the accumulators of one output row. */
    private static final int CO = 8;
    static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.narrowRows"));

    private ConvNarrowRowsF32() {}

    /** Per-thread buffers, grown on demand and reused: an image's padded rows, and (the caller's) the packed weights. */
    private static final class Work {
        float[] rows = new float[0];
        float[] weights = new float[0];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    static boolean handles(Geometry g) {
        return ENABLED && FloatVector.SPECIES_PREFERRED.length() == LANES && g.groups() == 1 && g.sh() == 1 && g.sw() == 1
                && g.dh() == 1 && g.dw() == 1 && g.ow() <= LANES && g.ow() >= 1 && g.oh() >= 1 && g.cout() <= CO
                && g.kh() * g.kw() > 1 && g.pw() < g.kw() && g.ph() < g.kh()
                && (long) g.cin() * g.h() * rowWidth(g) < Integer.MAX_VALUE / 2;
    }

    /** A padded input row: the kernel's {@code kw - 1} extra columns beyond the 16 lanes read at the last tap. */
    private static int rowWidth(Geometry g) {
        return LANES + g.kw() - 1;
    }

    /**
     * {@code out = conv(x, w')} for contiguous tensors given as segments and element offsets. With {@code flipped},
     * {@code w} is the weight of the convolution whose input gradient this is ({@code [g.cin, g.cout, kh, kw]}), and
     * {@code w'[o][i][ky][kx] = w[i][o][kh-1-ky][kw-1-kx]}; otherwise {@code w} is {@code [g.cout, g.cin, kh, kw]}.
     */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment out, long oOff, Geometry g,
                        boolean flipped) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw();
        // Packed on the calling thread into its kept buffer, read by every thread; channels past cout stay zero.
        Work caller = WORK.get();
        int packedLength = cin * kh * kw * CO;
        if (caller.weights.length < packedLength) caller.weights = new float[packedLength];
        float[] packed = caller.weights;
        java.util.Arrays.fill(packed, 0, packedLength, 0f);
        for (int o = 0; o < cout; o++) {
            for (int i = 0; i < cin; i++) {
                for (int ky = 0; ky < kh; ky++) {
                    for (int kx = 0; kx < kw; kx++) {
                        long src = flipped ? (((long) i * cout + o) * kh + (kh - 1 - ky)) * kw + (kw - 1 - kx)
                                : (((long) o * cin + i) * kh + ky) * kw + kx;
                        packed[((i * kh + ky) * kw + kx) * CO + o] = w.getAtIndex(F32, wOff + src);
                    }
                }
            }
        }
        long inImage = (long) cin * g.h() * g.w(), outImage = (long) cout * g.oh() * g.ow();
        Parallel.forRange(g.n(), 1, (n0, n1) -> {
            Work work = WORK.get();
            int width = rowWidth(g);
            int rowsLength = cin * g.h() * width;
            if (work.rows.length < rowsLength) work.rows = new float[rowsLength];
            float[] rows = work.rows;
            java.util.Arrays.fill(rows, 0, rowsLength, 0f);
            for (long n = n0; n < n1; n++) {
                copyRows(x, xOff + n * inImage, rows, g, width);
                image(rows, packed, out, oOff + n * outImage, g, width);
            }
        });
    }

    /** The image's rows at column {@code pw} of {@code width}-wide rows; the columns around them stay zero. */
    private static void copyRows(MemorySegment x, long xOff, float[] rows, Geometry g, int width) {
        int h = g.h(), w = g.w(), pw = g.pw();
        for (int c = 0; c < g.cin(); c++) {
            for (int r = 0; r < h; r++) {
                MemorySegment.copy(x, F32, (xOff + ((long) c * h + r) * w) * Float.BYTES, rows, (c * h + r) * width + pw, w);
            }
        }
    }

    private static void image(float[] rows, float[] packed, MemorySegment out, long oOff, Geometry g, int width) {
        int cin = g.cin(), cout = g.cout(), kh = g.kh(), kw = g.kw(), h = g.h(), oh = g.oh(), ow = g.ow(), ph = g.ph();
        VectorMask<Float> lanes = FS.indexInRange(0, ow);
        // Six or fewer channels (LeNet-5's 6) skip the last two accumulators' products: C2 unswitches the loop on it.
        boolean eight = cout > 6;
        long plane = (long) oh * ow;
        for (int y = 0; y < oh; y++) {
            // Kernel rows whose input row y + ky - ph lies inside the image.
            int ky0 = Math.max(0, ph - y), ky1 = Math.min(kh, h + ph - y);
            FloatVector a0 = FloatVector.zero(FS), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int i = 0; i < cin; i++) {
                for (int ky = ky0; ky < ky1; ky++) {
                    int row = (i * h + y + ky - ph) * width;
                    int wp = ((i * kh + ky) * kw) * CO;
                    for (int kx = 0; kx < kw; kx++, wp += CO) {
                        FloatVector v = FloatVector.fromArray(FS, rows, row + kx);
                        a0 = v.fma(FloatVector.broadcast(FS, packed[wp]), a0);
                        a1 = v.fma(FloatVector.broadcast(FS, packed[wp + 1]), a1);
                        a2 = v.fma(FloatVector.broadcast(FS, packed[wp + 2]), a2);
                        a3 = v.fma(FloatVector.broadcast(FS, packed[wp + 3]), a3);
                        a4 = v.fma(FloatVector.broadcast(FS, packed[wp + 4]), a4);
                        a5 = v.fma(FloatVector.broadcast(FS, packed[wp + 5]), a5);
                        if (eight) {
                            a6 = v.fma(FloatVector.broadcast(FS, packed[wp + 6]), a6);
                            a7 = v.fma(FloatVector.broadcast(FS, packed[wp + 7]), a7);
                        }
                    }
                }
            }
            long o = (oOff + (long) y * ow) * Float.BYTES, step = plane * Float.BYTES;
            a0.intoMemorySegment(out, o, NO, lanes);
            if (cout > 1) a1.intoMemorySegment(out, o + step, NO, lanes);
            if (cout > 2) a2.intoMemorySegment(out, o + 2 * step, NO, lanes);
            if (cout > 3) a3.intoMemorySegment(out, o + 3 * step, NO, lanes);
            if (cout > 4) a4.intoMemorySegment(out, o + 4 * step, NO, lanes);
            if (cout > 5) a5.intoMemorySegment(out, o + 5 * step, NO, lanes);
            if (cout > 6) a6.intoMemorySegment(out, o + 6 * step, NO, lanes);
            if (cout > 7) a7.intoMemorySegment(out, o + 7 * step, NO, lanes);
        }
    }
}
