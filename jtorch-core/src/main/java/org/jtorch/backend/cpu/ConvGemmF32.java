package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 convolutions of small images as one GEMM over the whole batch: the column matrix of every image side by
 * side ({@code [cin*kh*kw, n*oh*ow]}), so the GEMM's long side is {@code n*oh*ow}. The direct kernels tile output
 * rows; at 2x2 or 4x4 pixels (ResNet-18's last stages at 64 px: 512 channels at 2x2) a row holds 2-4 pixels of a
 * 16-lane tile and they ran at a few GFLOP/s, as did the per-image GEMMs of the general path (n = 4 columns). Here
 * the forward is {@code W [cout, K] x col [K, n*l]}, the input gradient {@code W^T x gradOut} followed by col2im, and
 * the weight gradient {@code gradOut [cout, n*l] x col^T}: three well-shaped GEMMs on every thread. The copies
 * (im2col, the output's scatter to NCHW) move K*n*l and cout*n*l floats against 2*cout*K*n*l FLOPs.
 */
final class ConvGemmF32 {
    private ConvGemmF32() {}

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Output images of at most this many pixels go here (measured: 4x4 and below; 8x8 stays on the direct kernels). */
    static final int MAX_PIXELS = 16;
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> COL = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> MAT = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);

    /**
     * One group, small output images, enough of them and enough output channels for a GEMM: one image alone runs the
     * direct kernels, and so does a single output channel (DCGAN's discriminator head, [256, 4, 4] -> 1: its input
     * gradient would be an outer product, 4x slower as a GEMM than on the direct path).
     */
    static boolean prefers(Geometry g) {
        long l = (long) g.oh() * g.ow();
        return g.groups() == 1 && l <= MAX_PIXELS && l > 0 && g.n() >= 2 && g.cout() >= 16 && !g.isPointwise()
                && (long) g.kg() * g.n() * l < Integer.MAX_VALUE && (long) g.cout() * g.n() * l < Integer.MAX_VALUE;
    }

    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int k = g.kg(), cout = g.cout();
        long l = (long) g.oh() * g.ow();
        int cols = (int) (g.n() * l);
        MemorySegment col = columns(x, xOff, g);
        MemorySegment c = MAT.get().get((long) cout * cols * 4);
        Gemm.sgemm(cout, cols, k, 1f, w, wOff, k, 1, col, 0, cols, 1, 0f, c, 0, cols);
        // [cout, n*l] -> NCHW, plus the bias.
        Parallel.forRange(g.n(), 1, (n0, n1) -> {
            for (long n = n0; n < n1; n++) {
                for (int o = 0; o < cout; o++) {
                    long dst = (oOff + (n * cout + o) * l) * 4;
                    MemorySegment.copy(c, ((long) o * cols + n * l) * 4, out, dst, l * 4);
                    if (bias != null) {
                        float b = bias.get(F32, (bOff + o) * 4);
                        for (long j = 0; j < l; j++) out.set(F32, dst + j * 4, out.get(F32, dst + j * 4) + b);
                    }
                }
                if (epilogue != null) epilogue.block(n, n + 1, 0, cout, 0, l);
            }
        });
    }

    static void backwardInput(MemorySegment gradOut, long goOff, MemorySegment w, long wOff, MemorySegment gradInput, long giOff,
                              Geometry g) {
        int k = g.kg(), cout = g.cout();
        long l = (long) g.oh() * g.ow();
        int cols = (int) (g.n() * l);
        MemorySegment go = gathered(gradOut, goOff, g);
        MemorySegment col = COL.get().get((long) k * cols * 4);
        Gemm.sgemm(k, cols, cout, 1f, w, wOff, 1, k, go, 0, cols, 1, 0f, col, 0, cols);
        BatchColumnsF32.addColumns(col, cols, g, gradInput, giOff);
    }

    static void weightGrad(MemorySegment gradOut, long goOff, MemorySegment x, long xOff, MemorySegment gradWeight, long gwOff,
                           Geometry g) {
        int k = g.kg(), cout = g.cout();
        int cols = (int) (g.n() * (long) g.oh() * g.ow());
        MemorySegment col = columns(x, xOff, g);
        MemorySegment go = gathered(gradOut, goOff, g);
        Gemm.sgemm(cout, k, cols, 1f, go, 0, cols, 1, col, 0, 1, cols, 0f, gradWeight, gwOff, k);
    }

    /** The batch's column matrix {@code [K, n*l]}, image n in columns {@code [n*l, (n+1)*l)}, in this thread's scratch. */
    private static MemorySegment columns(MemorySegment x, long xOff, Geometry g) {
        long l = (long) g.oh() * g.ow();
        long cols = g.n() * l;
        MemorySegment col = COL.get().get(g.kg() * cols * 4);
        BatchColumnsF32.columns(x, xOff, g, col, cols);
        return col;
    }

    /** {@code gradOut} (NCHW) as {@code [cout, n*l]}, in this thread's scratch. */
    private static MemorySegment gathered(MemorySegment gradOut, long goOff, Geometry g) {
        int cout = g.cout();
        long l = (long) g.oh() * g.ow();
        long cols = g.n() * l;
        MemorySegment m = MAT.get().get(cout * cols * 4);
        for (long n = 0; n < g.n(); n++) {
            for (int o = 0; o < cout; o++) MemorySegment.copy(gradOut, (goOff + (n * cout + o) * l) * 4, m, ((long) o * cols + n * l) * 4, l * 4);
        }
        return m;
    }
}
