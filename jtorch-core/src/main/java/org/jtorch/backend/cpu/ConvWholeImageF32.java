package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 convolutions whose kernel covers the whole unpadded image (one output pixel): a fully connected layer,
 * {@code out[n, co] = x[n, :] . w[co, :]} with {@code x} as an {@code [N, cin*h*w]} matrix in place, so each pass is one
 * GEMM on the operands as they lie, with no column matrix. DCGAN's discriminator head ({@code [256, 4, 4] -> 1}) and
 * its generator's first transposed convolution ({@code 100 -> [256, 4, 4]}, whose forward is this shape's input
 * gradient) are such layers; through the general paths they ran at 0.2-14 GFLOP/s (the head's forward 3.4 ms for
 * 0.5 MFLOP, one thread).
 */
final class ConvWholeImageF32 {
    private ConvWholeImageF32() {}

    /** One group, no padding or dilation, the kernel the size of the image (the stride then plays no part). */
    static boolean handles(Geometry g) {
        return g.groups() == 1 && g.ph() == 0 && g.pw() == 0 && g.dh() == 1 && g.dw() == 1 && g.kh() == g.h() && g.kw() == g.w()
                && g.oh() == 1 && g.ow() == 1;
    }

    /** {@code out [N, cout] = x [N, K] @ w [cout, K]^T + bias}. */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g) {
        int n = g.n(), cout = g.cout(), k = g.kg();
        if (bias != null) {
            for (long i = 0; i < n; i++) MemorySegment.copy(bias, bOff * Float.BYTES, out, (oOff + i * cout) * Float.BYTES, (long) cout * Float.BYTES);
        }
        Gemm.sgemm(n, cout, k, 1f, x, xOff, k, 1, w, wOff, 1, k, bias == null ? 0f : 1f, out, oOff, cout);
    }

    /** {@code gradInput [N, K] = gradOut [N, cout] @ w [cout, K]}. */
    static void backwardInput(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        int n = g.n(), cout = g.cout(), k = g.kg();
        Gemm.sgemm(n, k, cout, 1f, gy, gyOff, cout, 1, w, wOff, k, 1, 0f, gi, giOff, k);
    }

    /** {@code gradWeight [cout, K] = gradOut [N, cout]^T @ x [N, K]}. */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int n = g.n(), cout = g.cout(), k = g.kg();
        Gemm.sgemm(cout, k, n, 1f, gy, gyOff, 1, cout, x, xOff, k, 1, 0f, gw, gwOff, k);
    }
}
