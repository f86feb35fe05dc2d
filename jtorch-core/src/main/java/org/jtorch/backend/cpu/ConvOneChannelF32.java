package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * The float32 forward of convolutions with one input channel (the MNIST CNN's conv1, 1 -> 32, 3x3 at 28 px; DCGAN's
 * discriminator's first layer, 1 -> 64, 4x4 stride 2 from 32 px), with 16 output pixels of a row in the vector lanes.
 * The channel tiles of the other paths reduce over only 9 or 16 taps here, so their time went to transposing tiles
 * and storing them (1.5-1.6 ms a call against PyTorch 2.13's 0.45-0.47, one thread). Here each image is copied once
 * with its zero border and its columns split by phase ({@code column % sw}), so that the 16 inputs one tap reads for
 * 16 neighbouring outputs are 16 consecutive floats at any stride and dilation; each tap's two vectors (two row
 * segments) then feed 4 output channels, and whole output row segments are stored with no transpose. A segment whose
 * lanes run past its row is stored unmasked when it stays inside the channel's plane: its extra lanes land on the
 * next row, which is computed and stored after it. {@code -Djtorch.conv.oneChannel=false} turns this path off.
 */
final class ConvOneChannelF32 {
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    private static final int L = 16;
    private static final boolean ENABLED = !"false".equals(System.getProperty("jtorch.conv.oneChannel"));

    private ConvOneChannelF32() {}

    /** Per-thread copy of one image, grown on demand and then reused. */
    private static final ThreadLocal<float[][]> IMAGE = ThreadLocal.withInitial(() -> new float[][] {new float[0]});

    /**
     * Whether this class serves {@code g}'s forward: 16-lane vectors, one input channel and no groups, at least two taps,
     * and sizes whose phase-split copy and tap offsets fit in an int.
     */
    static boolean handles(Geometry g) {
        return ENABLED && FloatVector.SPECIES_PREFERRED.length() == L && g.groups() == 1 && g.cin() == 1
                && g.kh() * g.kw() > 1 && g.kh() * g.kw() <= 256 && g.oh() > 0 && g.ow() > 0
                && (long) paddedRows(g) * g.sw() * ((long) g.ow() + L + (long) g.dw() * g.kw()) < Integer.MAX_VALUE / 2;
    }

    /** Floats of one phase of one padded input row: whole 16-pixel segments plus the taps' reach beyond them. */
    private static int rowLength(Geometry g) {
        return (g.ow() + L - 1) / L * L + (g.kw() - 1) * g.dw() / g.sw();
    }

    /** Rows of the padded input that the outputs read. */
    private static int paddedRows(Geometry g) {
        return (g.oh() - 1) * g.sh() + (g.kh() - 1) * g.dh() + 1;
    }

    /**
     * Image {@code x} (elements from {@code xOff}) with its zero border into {@code dst}, as
     * {@code dst[(yp * sw + c % sw) * rowLength + c / sw] = xpad[yp][c]}, zeros past the padded image's edges.
     */
    private static void padPhases(MemorySegment x, long xOff, Geometry g, float[] dst) {
        int sw = g.sw(), rl = rowLength(g), h = g.h(), w = g.w(), pw = g.pw();
        int rows = paddedRows(g);
        Arrays.fill(dst, 0f);
        for (int yp = 0; yp < rows; yp++) {
            int iy = yp - g.ph();
            if (iy < 0 || iy >= h) continue;
            long src = (xOff + (long) iy * w) * Float.BYTES;
            if (sw == 1) {
                // Padded columns pw .. pw + w - 1 are the row; those past the copy's row length are never read.
                int n = Math.min(w, rl - pw);
                if (n > 0) MemorySegment.copy(x, F32, src, dst, yp * rl + pw, n);
                continue;
            }
            for (int phase = 0; phase < sw; phase++) {
                int at = (yp * sw + phase) * rl;
                for (int q = 0; q < rl; q++) {
                    int ix = q * sw + phase - pw;
                    if (ix >= 0 && ix < w) dst[at + q] = x.get(F32, src + (long) ix * Float.BYTES);
                }
            }
        }
    }

    /** Offset of tap {@code t = ki * kw + kj} from its output row segment's first input in the phase-split copy. */
    private static int[] tapOffsets(Geometry g) {
        int kw = g.kw(), sw = g.sw(), rl = rowLength(g);
        int[] offs = new int[g.kh() * kw];
        for (int ki = 0; ki < g.kh(); ki++) {
            for (int kj = 0; kj < kw; kj++) {
                int c = kj * g.dw();
                offs[ki * kw + kj] = (ki * g.dh() * sw + c % sw) * rl + c / sw;
            }
        }
        return offs;
    }

    /**
     * {@code out = conv(x, w) + bias}, contiguous, element offsets; {@code bias} may be null; the epilogue runs per image
     * as its thread finishes it. Images in parallel.
     */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int cout = g.cout(), taps = g.kh() * g.kw(), oh = g.oh(), ow = g.ow();
        float[] wt = new float[cout * taps];
        MemorySegment.copy(w, F32, wOff * Float.BYTES, wt, 0, wt.length);
        float[] bv = new float[cout];
        if (bias != null) MemorySegment.copy(bias, F32, bOff * Float.BYTES, bv, 0, cout);
        int[] offs = tapOffsets(g);
        int plane = oh * ow, size = paddedRows(g) * g.sw() * rowLength(g);
        // The row segments in raster order: where each reads its inputs and writes its outputs, and, where its lanes
        // would run past the plane, the mask of those inside its row (null: a full store).
        int segsPerRow = (ow + L - 1) / L, segs = oh * segsPerRow;
        int[] segIn = new int[segs], segOut = new int[segs];
        VectorMask<Float>[] segMask = newMasks(segs);
        int rowStep = g.sh() * g.sw() * rowLength(g);
        int full = 0;
        for (int oy = 0, s = 0; oy < oh; oy++) {
            for (int x0 = 0; x0 < ow; x0 += L, s++) {
                segIn[s] = oy * rowStep + x0;
                segOut[s] = oy * ow + x0;
                segMask[s] = segOut[s] + L <= plane ? null : FS.indexInRange(x0, ow);
                if (segMask[s] == null) full = s + 1;
            }
        }
        // Segments [0, full) are stored whole (the masked ones are the last few of the plane), in pairs; the rest one by one.
        int pairs = full & ~1;
        long inImage = (long) g.h() * g.w(), planeBytes = (long) plane * Float.BYTES;
        Parallel.forRange(g.n(), 1, (n0, n1) -> {
            float[][] holder = IMAGE.get();
            if (holder[0].length < size) holder[0] = new float[size];
            float[] img = holder[0];
            for (long n = n0; n < n1; n++) {
                padPhases(x, xOff + n * inImage, g, img);
                long outImage = (oOff + n * cout * (long) plane) * Float.BYTES;
                int oc = 0;
                for (; oc + 4 <= cout; oc += 4) {
                    long at = outImage + oc * planeBytes;
                    int s = 0;
                    for (; s < pairs; s += 2) {
                        fourChannelsTwoSegments(img, segIn[s], segIn[s + 1], offs, wt, oc * taps, taps, bv, oc, out,
                                at + segOut[s] * (long) Float.BYTES, at + segOut[s + 1] * (long) Float.BYTES, planeBytes);
                    }
                    for (; s < segs; s++) {
                        for (int c = oc; c < oc + 4; c++) {
                            oneChannel(img, segIn[s], offs, wt, c * taps, taps, bv[c], out,
                                    at + (c - oc) * planeBytes + segOut[s] * (long) Float.BYTES, segMask[s]);
                        }
                    }
                }
                for (; oc < cout; oc++) {
                    long at = outImage + oc * planeBytes;
                    for (int s = 0; s < segs; s++) {
                        oneChannel(img, segIn[s], offs, wt, oc * taps, taps, bv[oc], out, at + segOut[s] * (long) Float.BYTES,
                                segMask[s]);
                    }
                }
                if (epilogue != null) epilogue.block(n, n + 1, 0, cout, 0, plane);
            }
        });
    }

    @SuppressWarnings("unchecked")
    private static VectorMask<Float>[] newMasks(int n) {
        return (VectorMask<Float>[]) new VectorMask<?>[n];
    }

    /**
     * Output channels {@code oc .. oc + 3} of two row segments (inputs from {@code inA} and {@code inB}, outputs at byte
     * offsets {@code atA} and {@code atB} of channel {@code oc}): each tap's two input vectors loaded once for the four
     * channels, each weight once for the two segments. Both are stored whole, A first: its lanes past its row land on
     * B's. No masks here: a kernel with both store forms was not inlined whole, and its vectors were boxed.
     */
    private static void fourChannelsTwoSegments(float[] img, int inA, int inB, int[] offs, float[] wt, int w0, int taps,
                                                float[] bv, int oc, MemorySegment out, long atA, long atB, long planeBytes) {
        FloatVector a0 = FloatVector.broadcast(FS, bv[oc]), a1 = FloatVector.broadcast(FS, bv[oc + 1]);
        FloatVector a2 = FloatVector.broadcast(FS, bv[oc + 2]), a3 = FloatVector.broadcast(FS, bv[oc + 3]);
        FloatVector b0 = a0, b1 = a1, b2 = a2, b3 = a3;
        for (int t = 0; t < taps; t++) {
            int o = offs[t];
            FloatVector va = FloatVector.fromArray(FS, img, inA + o), vb = FloatVector.fromArray(FS, img, inB + o);
            int wi = w0 + t;
            FloatVector w0v = FloatVector.broadcast(FS, wt[wi]);
            a0 = va.fma(w0v, a0);
            b0 = vb.fma(w0v, b0);
            FloatVector w1v = FloatVector.broadcast(FS, wt[wi + taps]);
            a1 = va.fma(w1v, a1);
            b1 = vb.fma(w1v, b1);
            FloatVector w2v = FloatVector.broadcast(FS, wt[wi + 2 * taps]);
            a2 = va.fma(w2v, a2);
            b2 = vb.fma(w2v, b2);
            FloatVector w3v = FloatVector.broadcast(FS, wt[wi + 3 * taps]);
            a3 = va.fma(w3v, a3);
            b3 = vb.fma(w3v, b3);
        }
        a0.intoMemorySegment(out, atA, NO);
        b0.intoMemorySegment(out, atB, NO);
        a1.intoMemorySegment(out, atA + planeBytes, NO);
        b1.intoMemorySegment(out, atB + planeBytes, NO);
        a2.intoMemorySegment(out, atA + 2 * planeBytes, NO);
        b2.intoMemorySegment(out, atB + 2 * planeBytes, NO);
        a3.intoMemorySegment(out, atA + 3 * planeBytes, NO);
        b3.intoMemorySegment(out, atB + 3 * planeBytes, NO);
    }

    /** One output channel of one row segment (the channels and segments left over by the blocks of four and two). */
    private static void oneChannel(float[] img, int in, int[] offs, float[] wt, int w0, int taps, float bias,
                                   MemorySegment out, long at, VectorMask<Float> m) {
        FloatVector a = FloatVector.broadcast(FS, bias);
        for (int t = 0; t < taps; t++) a = FloatVector.fromArray(FS, img, in + offs[t]).fma(FloatVector.broadcast(FS, wt[w0 + t]), a);
        store(a, out, at, m);
    }

    private static void store(FloatVector v, MemorySegment out, long at, VectorMask<Float> m) {
        if (m == null) v.intoMemorySegment(out, at, NO);
        else v.intoMemorySegment(out, at, NO, m);
    }
}
