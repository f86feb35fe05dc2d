package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.backend.ConvolutionKernels.Geometry;

/**
 * float32 1x1 convolutions (ResNet-50's bottleneck reductions and expansions, and its stride-2 downsampling
 * shortcuts) as GEMMs without im2col: for stride 1 the NCHW image already is the GEMM operand
 * ({@code out[n] (cout x pixels) = W (cout x cin) @ x[n] (cin x pixels)}), and a stride is one strided gather
 * of the input (forward, weight gradient) or scatter of the input gradient, 1/(2 cout) of the FLOPs in copies.
 *
 * <p>The whole batch is one product whose columns are every image's pixels one after another: the B operand is
 * packed in blocks of up to 16 32-column strips straight from the images (each row of a block one contiguous
 * run; element by element where a strip crosses into the next image), and {@link Gemm}'s 8x32 micro-kernel runs
 * every 8-row strip of the packed weight against the block while it is in L2. So 7- and 14-pixel images (49
 * and 196 pixels, not whole strips) waste no columns. Work is split over blocks; each output element is written
 * by one thread. Measured against the per-image {@code sgemm} before it (one thread, loaded machine): the strided
 * layers 1.3-1.7x faster (the gather replaces im2col), the stride-1 ones about level (0.95-1.2x).
 *
 * <p>The weight gradient {@code gw (cout x cin) = sum over columns of gy[:, col] x[:, col]^T} has the depth
 * contiguous in both operands: gy is packed as Gemm's A, and x's 32-channel strips transposed 16x16 in
 * registers into B strips, in depth blocks of {@link #KW} columns that run across image boundaries (a 7x7
 * image is 49 columns). Chunks of images accumulate into their own buffers, added in chunk order, so results
 * do not depend on the thread count. It serves strided layers only ({@link #handlesWeightGrad}).
 * Each chunk's buffer is kept tile by tile, in the order the kernels visit them: as rows of a {@code cout x cin}
 * matrix, ResNet-50's strided 1x1 weight gradients ran at 43-58% of the one-thread peak, tile by tile at 61-73%.
 */
final class ConvPointwiseF32 {
    private static final int MR = Gemm.MR;
    private static final int NR = Gemm.NR;
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_512;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();
    /** Deepest packed block of the forward and input gradient (as {@link Gemm#KC}): deeper ones split into balanced blocks. */
    private static final int KMAX = 1024;
    /** Deepest block when A has at most 8 strips ({@link #depthBlocks}): the 32-column B strip (16 KB) stays in L1. */
    private static final int SHALLOW = Integer.getInteger("jtorch.conv.pointwiseShallowDepth", 128);
    /** Depth (pixels) of one weight-gradient block: the 32-channel B strip (32 KB) stays in L1, the gy block in L2. */
    private static final int KW = 256;
    /** Rows of gy per block of the weight gradient: their packed depth block (128 KB) stays in L2. */
    private static final int WROWS = 128;

    private ConvPointwiseF32() {}

    /** Per-thread buffers, grown on demand and then reused. */
    private static final class Work {
        float[] bp = new float[0];
        float[] ap = new float[0];
        /** The packed weight of a forward or input gradient (the calling thread's, read by every worker). */
        float[] weights = new float[0];
        float[] scratch = new float[0];
        /** One image's piece of a weight-gradient depth block, packed before it is placed. */
        float[] one = new float[0];
        final float[] tile = new float[MR * NR];
    }

    private static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);
    /** The strided input gathered, or the input gradient before its scatter: native, as the tensors the kernels read. */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> GATHERED = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);
    /** The weight gradient's per-chunk sums (the calling thread's), native as the tensors the kernels also store into. */
    private static final ThreadLocal<CpuConvolutionKernels.Scratch> ACC = ThreadLocal.withInitial(CpuConvolutionKernels.Scratch::new);

    /** Whether this path applies: 512-bit vectors, a 1x1 kernel without padding, one group, channels, any stride. */
    static boolean handles(Geometry g) {
        return Gemm.L == 16 && g.kh() == 1 && g.kw() == 1 && g.ph() == 0 && g.pw() == 0 && g.groups() == 1
                && g.cin() > 0 && g.cout() > 0
                && g.oh() == (g.h() - 1) / g.sh() + 1 && g.ow() == (g.w() - 1) / g.sw() + 1
                && (long) g.n() * g.oh() * g.ow() < Integer.MAX_VALUE
                && (long) g.n() * Math.max(g.cin(), g.cout()) * g.h() * g.w() < Integer.MAX_VALUE;
    }

    /**
     * Whether {@link #weightGrad} applies: strided 1x1 convolutions. At stride 1 the per-image {@code sgemm} of the
     * general path measured faster (ResNet-50's 1x1 layers, one thread: 256 to 64 channels at 56 px 13.6 against
     * 14.8 ms, 2048 to 512 at 7 px 9.8 against 16.7 ms); with a stride, the gather here replaces its im2col.
     */
    static boolean handlesWeightGrad(Geometry g) {
        return handles(g) && strided(g);
    }

    private static boolean strided(Geometry g) {
        return g.sh() != 1 || g.sw() != 1;
    }

    /** {@code out = conv(x, w) + bias} for contiguous float32 tensors ({@code bias} may be null). */
    static void forward(MemorySegment x, long xOff, MemorySegment w, long wOff, MemorySegment bias, long bOff,
                        MemorySegment out, long oOff, Geometry g, ConvolutionKernels.Epilogue epilogue) {
        int cin = g.cin(), cout = g.cout();
        int l = g.oh() * g.ow();
        MemorySegment b = x;
        long bBase = xOff;
        if (strided(g)) {
            b = gather(x, xOff, g);
            bBase = 0;
        }
        float[] bv = null;
        if (bias != null) {
            bv = new float[cout];
            MemorySegment.copy(bias, F32, bOff * Float.BYTES, bv, 0, cout);
        }
        // A = W (cout x cin), rows contiguous.
        product(packed(w, wOff, cin, 1, cout, cin), cout, cin, b, bBase, l, out, oOff, g.n(), bv, epilogue);
    }

    /** {@code gi = conv^T(gy, w)}: {@code W^T (cin x cout) @ gy[n]}, scattered to every stride-th pixel when strided. */
    static void backwardInput(MemorySegment gy, long gyOff, MemorySegment w, long wOff, MemorySegment gi, long giOff, Geometry g) {
        int cin = g.cin(), cout = g.cout();
        int l = g.oh() * g.ow();
        // A = W^T (cin x cout): columns of W contiguous.
        float[] ap = packed(w, wOff, 1, cin, cin, cout);
        if (!strided(g)) {
            product(ap, cin, cout, gy, gyOff, l, gi, giOff, g.n(), null, null);
            return;
        }
        MemorySegment dense = GATHERED.get().get((long) g.n() * cin * l * Float.BYTES);
        product(ap, cin, cout, gy, gyOff, l, dense, 0, g.n(), null, null);
        scatter(dense, gi, giOff, g);
    }

    /**
     * The {@code m x k} matrix {@code a[off + i * rs + p * cs]} as Gemm's A strips, in depth blocks of at most
     * {@link #KMAX}: block kb at {@code mPad * k0}, as {@link #product} reads them.
     */
    private static float[] packed(MemorySegment a, long off, long rs, long cs, int m, int k) {
        int mPad = roundUp(m, MR);
        int blocks = depthBlocks(m, k), kc0 = (k + blocks - 1) / blocks;
        // Reused buffers: fresh megabytes cost a page fault per 4 KB. Each depth block is packed straight into its
        // place: packed into a buffer of its own and copied, the copy was a third of 2048 -> 512's packing (0.39-0.50
        // ms against 0.17-0.26, one thread, load 25-28).
        Work wk = WORK.get();
        float[] ap = wk.weights = ConvF32.grow(wk.weights, mPad * k);
        float[] scratch = wk.scratch = ConvF32.grow(wk.scratch, MR * kc0);
        for (int kb = 0; kb < blocks; kb++) {
            int k0 = kb * kc0;
            Gemm.packA(a, off + k0 * cs, rs, cs, m, Math.min(kc0, k - k0), ap, mPad * k0, scratch);
        }
        return ap;
    }

    /**
     * {@code c[n] (m x l) = A (m x k) @ b[n] (k x l) (+ bias per row)} for images {@code n < images}: b's image n at
     * element {@code bOff + n * k * l}, c's at {@code cOff + n * m * l}, both NCHW. The columns of all images
     * together are cut into blocks of whole 32-column strips, each block packed once (its rows read as contiguous
     * runs, which the hardware prefetches: one strip at a time read k separate 128-byte pieces, and stalled on them
     * when m is small) and multiplied by every 8-row strip of A.
     */
    private static void product(float[] ap, int m, int k, MemorySegment b, long bOff, int l, MemorySegment c, long cOff,
                                int images, float[] bias, ConvolutionKernels.Epilogue epilogue) {
        int mPad = roundUp(m, MR);
        int blocks = depthBlocks(m, k), kc0 = (k + blocks - 1) / blocks;
        // Strips per block: up to 512 KB of packed B (in L2), at most 16, so that a deep A (2048 x 512 at 7 px: 4 MB)
        // streams from L3 once per 4 strips rather than once per strip.
        int perBlock = Math.max(1, Math.min(16, 131072 / (kc0 * NR)));
        long cols = (long) images * l;
        long strips = (cols + NR - 1) / NR;
        // Images of whole strips, at least a block each (56 px): blocks within an image, balanced, so that every
        // block packs as one run per row; blocks across image boundaries packed strip by strip. One thread, 56 px,
        // 2 rounds against batch blocks in one tree (load 13-20): 64 -> 256 channels 8.7-9.1 ms against 8.9, 256 -> 64
        // 10.3-10.4 against 10.6-12.2, their input gradients 10.0-10.2 against 10.7-11.2 and 8.7-8.8 against 9.2-9.6;
        // against the tree before it (load 19-25) level within the noise, 0.93-1.02x.
        int imageStrips = l / NR;
        boolean byImage = l % NR == 0 && imageStrips >= perBlock;
        int perImage = byImage ? (imageStrips + perBlock - 1) / perBlock : 0;
        int blockStrips = byImage ? (imageStrips + perImage - 1) / perImage : perBlock;
        long colBlocks = byImage ? (long) images * perImage : (strips + perBlock - 1) / perBlock;
        long work = 2L * m * k * NR * blockStrips;
        long grain = Math.max(1, (1L << 20) / work);
        // Fewer column blocks than threads (ResNet-18's strided shortcuts at 8 and 4 px: 512 and 128 columns, one block):
        // each block's rows of A in parts too, so that every thread gets work; each part packs the block's B itself.
        // Without an epilogue only: it runs on a block once every row of it is final.
        int rowParts = rowParts(colBlocks, mPad / MR, epilogue == null);
        Parallel.forRange(colBlocks * rowParts, rowParts == 1 ? grain : 1, (t0, t1) -> {
            Work wk = WORK.get();
            float[] bp = wk.bp = ConvF32.grow(wk.bp, kc0 * NR * blockStrips);
            float[] tile = wk.tile;
            for (long t = t0; t < t1; t++) {
                long q = t / rowParts;
                int part = (int) (t % rowParts), rowFrom = part * (mPad / MR) / rowParts * MR;
                int rowTo = Math.min(m, (part + 1) * (mPad / MR) / rowParts * MR);
                long col0 = byImage ? q / perImage * l + q % perImage * blockStrips * NR : q * perBlock * NR;
                int n = (int) (col0 / l), p0 = (int) (col0 % l);
                long end = byImage ? (long) (n + 1) * l : cols;
                int width = (int) Math.min((long) NR * blockStrips, end - col0);
                int count = (width + NR - 1) / NR;
                // The block in one image and whole strips: packed as one run per row.
                boolean whole = width % NR == 0 && p0 + width <= l;
                long ld = (long) l * Float.BYTES;
                for (int kb = 0; kb < blocks; kb++) {
                    int k0 = kb * kc0, kc = Math.min(kc0, k - k0);
                    if (whole) {
                        packStrips(b, bOff + (long) n * k * l + (long) k0 * l + p0, l, kc, count, bp, 0);
                    } else {
                        for (int st = 0; st < count; st++) {
                            long sc = col0 + (long) st * NR;
                            int sn = (int) (sc / l), sp = (int) (sc % l);
                            if (inOneImage(sc, l, cols)) packStrips(b, bOff + (long) sn * k * l + (long) k0 * l + sp, l, kc, 1, bp, st * kc * NR);
                            else packStripAcross(b, bOff, k, l, k0, kc, sn, sp, (int) Math.min(NR, cols - sc), bp, st * kc * NR);
                        }
                    }
                    boolean first = kb == 0, last = kb == blocks - 1;
                    int aBlock = mPad * k0;
                    for (int ir = rowFrom; ir < rowTo; ir += MR) {
                        int mr = Math.min(MR, m - ir);
                        for (int st = 0; st < count; st++) {
                            long sc = col0 + (long) st * NR;
                            if (mr == MR && (whole || inOneImage(sc, l, cols))) {
                                // A whole strip in one image: the kernels store straight into c.
                                long cByte = (cOff + ((sc / l) * m + ir) * l + sc % l) * Float.BYTES;
                                if (first) Gemm.kernelStore(kc, ap, aBlock + ir * kc, bp, st * kc * NR, c, cByte, ld, 1f);
                                else Gemm.kernelUpdate(kc, ap, aBlock + ir * kc, bp, st * kc * NR, c, cByte, ld, 1f, 1f);
                                if (last && bias != null) addBias(bias, ir, MR, c, cByte, ld);
                            } else {
                                Gemm.kernel(kc, ap, aBlock + ir * kc, bp, st * kc * NR, tile);
                                storeAcross(tile, mr, m, l, c, cOff, (int) (sc / l), (int) (sc % l), (int) Math.min(NR, cols - sc), ir,
                                        !first, last ? bias : null);
                            }
                        }
                    }
                }
                if (epilogue != null) CpuConvolutionKernels.epilogueOverColumns(epilogue, col0, col0 + width, l, m);
            }
        });
    }

    /**
     * Parts each column block's 8-row strips of A are split into: 1 when there are at least as many blocks as threads
     * (or none: an empty batch; or {@code allowed} is false), else enough parts of at least two strips for every thread to get one task.
     * {@code -Djtorch.conv.pointwiseRowParts=false} (read at each call) keeps one part.
     */
    static int rowParts(long colBlocks, int strips, boolean allowed) {
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        if (!allowed || colBlocks == 0 || colBlocks >= threads || "false".equals(System.getProperty("jtorch.conv.pointwiseRowParts"))) return 1;
        return (int) Math.max(1, Math.min(strips / 2, (threads + colBlocks - 1) / colBlocks));
    }

    /**
     * Depth blocks of an {@code m x k} A: at most {@link #KMAX} deep, and at most {@link #SHALLOW} when A has few rows.
     * With 8 A strips or fewer each packed B strip is read by few kernel calls, from L2 unless it fits L1 beside
     * the A strip: 256 to 64 channels at 56 px ran at 10.7-11.3 ms in 128-deep blocks against 11.7-12.2 in one
     * 256-deep block (one thread); with more rows (1024 to 256 at 14 px) the extra C updates lost (11.7-13.2
     * against 10.8-11.4 ms).
     */
    private static int depthBlocks(int m, int k) {
        int deepest = m <= 8 * MR ? SHALLOW : KMAX;
        return (k + deepest - 1) / deepest;
    }

    /** Whether the 32 columns from column {@code col} on are all there and in one image of {@code l} pixels. */
    private static boolean inOneImage(long col, int l, long cols) {
        return col + NR <= cols && col % l + NR <= l;
    }

    /**
     * {@code count} strips from {@code b[off]} on, rows {@code ld} apart: strip st holds
     * {@code bp[base + st * kc * NR + p * NR + j] = b[off + p * ld + st * NR + j]}, each row read as one run.
     */
    private static void packStrips(MemorySegment b, long off, int ld, int kc, int count, float[] bp, int base) {
        long at = off * Float.BYTES, step = (long) ld * Float.BYTES;
        for (int p = 0; p < kc; p++, at += step) {
            for (int st = 0; st < count; st++) {
                int d = base + st * kc * NR + p * NR;
                FloatVector.fromMemorySegment(FS, b, at + st * 128L, NO).intoArray(bp, d);
                FloatVector.fromMemorySegment(FS, b, at + st * 128L + 64, NO).intoArray(bp, d + 16);
            }
        }
    }

    /**
     * A strip of {@code width} columns from column {@code p0} of image {@code n0} on, rows {@code [k0, k0 + kc)},
     * continuing into the following images; columns past width are zero.
     */
    private static void packStripAcross(MemorySegment b, long bOff, int k, int l, int k0, int kc, int n0, int p0, int width,
                                        float[] bp, int base) {
        for (int p = 0; p < kc; p++) java.util.Arrays.fill(bp, base + p * NR + width, base + (p + 1) * NR, 0f);
        int j = 0, n = n0, pix = p0;
        while (j < width) {
            int run = Math.min(width - j, l - pix);
            long src = bOff + ((long) n * k + k0) * l + pix;
            for (int p = 0; p < kc; p++) {
                MemorySegment.copy(b, F32, (src + (long) p * l) * Float.BYTES, bp, base + p * NR + j, run);
            }
            j += run;
            n++;
            pix = 0;
        }
    }

    /** Rows {@code [ir, ir + mr)} of the tile (columns as {@link #packStripAcross}'s) into c: stored, or added with {@code accumulate}, plus the bias. */
    private static void storeAcross(float[] tile, int mr, int m, int l, MemorySegment c, long cOff, int n0, int p0, int width,
                                    int ir, boolean accumulate, float[] bias) {
        int j = 0, n = n0, pix = p0;
        while (j < width) {
            int run = Math.min(width - j, l - pix);
            for (int r = 0; r < mr; r++) {
                float add = bias == null ? 0f : bias[ir + r];
                long at = (cOff + ((long) n * m + ir + r) * l + pix) * Float.BYTES;
                for (int q = 0; q < run; q++, at += Float.BYTES) {
                    float v = tile[r * NR + j + q] + add;
                    c.set(F32, at, accumulate ? c.get(F32, at) + v : v);
                }
            }
            j += run;
            n++;
            pix = 0;
        }
    }

    /** Adds {@code bias[ir + r]} to the 32 columns of rows {@code r < rows} at {@code cByte}, {@code ld} bytes apart. */
    private static void addBias(float[] bias, int ir, int rows, MemorySegment c, long cByte, long ld) {
        for (int r = 0; r < rows; r++) {
            FloatVector bv = FloatVector.broadcast(FS, bias[ir + r]);
            long at = cByte + r * ld;
            FloatVector.fromMemorySegment(FS, c, at, NO).add(bv).intoMemorySegment(c, at, NO);
            FloatVector.fromMemorySegment(FS, c, at + 64, NO).add(bv).intoMemorySegment(c, at + 64, NO);
        }
    }

    // ------------------------------------------------------------------ strides

    /** {@code x[:, :, ::sh, ::sw]}, contiguous, in this thread's scratch. */
    private static MemorySegment gather(MemorySegment x, long xOff, Geometry g) {
        int oh = g.oh(), ow = g.ow(), h = g.h(), w = g.w(), sh = g.sh(), sw = g.sw();
        long planes = (long) g.n() * g.cin();
        MemorySegment dense = GATHERED.get().get(planes * oh * ow * Float.BYTES);
        Parallel.forRange(planes, Math.max(1, 16384 / ((long) oh * ow)), (q0, q1) -> {
            for (long q = q0; q < q1; q++) {
                for (int oy = 0; oy < oh; oy++) {
                    long src = (xOff + (q * h + (long) oy * sh) * w) * Float.BYTES;
                    long dst = ((q * oh + oy) * ow) * Float.BYTES;
                    for (int ox = 0; ox < ow; ox++) dense.set(F32, dst + 4L * ox, x.get(F32, src + 4L * ox * sw));
                }
            }
        });
        return dense;
    }

    /**
     * {@code gi[:, :, ::sh, ::sw] = dense}, zero elsewhere: each row of gi written once, in order, rows the stride
     * skips as zeros and, at stride 2 along rows, the others as 8 dense pixels zipped with zeros per vector.
     * {@code -Djtorch.conv.pointwiseScatterOnce=false} (read at each call) zero-fills gi and then stores the dense
     * pixels one by one, to compare.
     */
    private static void scatter(MemorySegment dense, MemorySegment gi, long giOff, Geometry g) {
        int oh = g.oh(), ow = g.ow(), h = g.h(), w = g.w(), sh = g.sh(), sw = g.sw();
        long planes = (long) g.n() * g.cin();
        if (!"false".equals(System.getProperty("jtorch.conv.pointwiseScatterOnce"))) {
            Parallel.forRange(planes, Math.max(1, 16384 / ((long) h * w)), (q0, q1) -> {
                for (long q = q0; q < q1; q++) {
                    for (int y = 0; y < h; y++) {
                        long dst = (giOff + (q * h + y) * w) * Float.BYTES;
                        // handles() makes oh = (h - 1) / sh + 1: every row y % sh == 0 has its dense row.
                        if (y % sh != 0) gi.asSlice(dst, (long) w * Float.BYTES).fill((byte) 0);
                        else scatterRow(dense, ((q * oh + y / sh) * ow) * Float.BYTES, ow, sw, gi, dst, w);
                    }
                }
            });
            return;
        }
        Parallel.forRange(planes, Math.max(1, 16384 / ((long) h * w)), (q0, q1) -> {
            for (long q = q0; q < q1; q++) {
                gi.asSlice((giOff + q * h * w) * Float.BYTES, (long) h * w * Float.BYTES).fill((byte) 0);
                for (int oy = 0; oy < oh; oy++) {
                    long dst = (giOff + (q * h + (long) oy * sh) * w) * Float.BYTES;
                    long src = ((q * oh + oy) * ow) * Float.BYTES;
                    for (int ox = 0; ox < ow; ox++) gi.set(F32, dst + 4L * ox * sw, dense.get(F32, src + 4L * ox));
                }
            }
        });
    }

    /** Lane l: lane l / 2 of a vector for even l, lane 8 (beyond the 8 loaded, so zero) for odd l. */
    private static final FloatVector ZIP_ZEROS = zipZeros();

    private static FloatVector zipZeros() {
        float[] idx = new float[16];
        for (int l = 0; l < 16; l++) idx[l] = l % 2 == 0 ? l / 2 : 8;
        return FloatVector.fromArray(FS, idx, 0);
    }

    /** The {@code w} pixels of one gi row from the {@code ow} dense ones at {@code src}: dense pixel i at i * sw, zeros between. */
    private static void scatterRow(MemorySegment dense, long src, int ow, int sw, MemorySegment gi, long dst, int w) {
        if (sw == 2) {
            for (int x0 = 0; x0 < w; x0 += 16) {
                int from = x0 / 2;
                FloatVector v = FloatVector.fromMemorySegment(FS, dense, src + 4L * from, NO, FS.indexInRange(0, Math.min(8, ow - from)));
                ZIP_ZEROS.selectFrom(v).intoMemorySegment(gi, dst + 4L * x0, NO, FS.indexInRange(0, w - x0));
            }
            return;
        }
        for (int x = 0; x < w; x++) gi.set(F32, dst + 4L * x, x % sw == 0 ? dense.get(F32, src + 4L * (x / sw)) : 0f);
    }

    // ------------------------------------------------------------------ weight gradient

    /**
     * Columns (images x pixels) up to which {@link #weightGrad} splits gy's rows over the threads, each over every column,
     * instead of the images: ResNet-18's strided shortcuts at 64 px have 2048, 512 and 128 columns, for which each
     * chunk of images summed the whole 256 x 512 product over a few columns and the chunks' sums were then added by
     * one thread. {@code -Djtorch.conv.pointwiseWeightGradRowSplit=false} (read at each call) splits over images always.
     */
    static final int ROW_SPLIT_COLUMNS = 4096;

    /** {@code gw = sum over images and pixels of gy[:, pixel] x[:, pixel]^T} (x gathered first when strided). */
    static void weightGrad(MemorySegment gy, long gyOff, MemorySegment x, long xOff, MemorySegment gw, long gwOff, Geometry g) {
        int cin = g.cin(), cout = g.cout();
        int l = g.oh() * g.ow();
        MemorySegment xs = x;
        long xsOff = xOff;
        if (strided(g)) {
            xs = gather(x, xOff, g);
            xsOff = 0;
        }
        MemorySegment xd = xs;
        long xdOff = xsOff;
        int threads = Parallel.inParallelRegion() ? 1 : Parallel.numThreads();
        int mPad = roundUp(cout, MR), strips = (cin + NR - 1) / NR, rowStrips = mPad / MR;
        boolean byRows = (long) g.n() * l <= ROW_SPLIT_COLUMNS && rowStrips >= 2 * threads
                && !"false".equals(System.getProperty("jtorch.conv.pointwiseWeightGradRowSplit"));
        int chunks = byRows ? 1 : (int) Math.max(1, Math.min(g.n(), threads));
        // Each chunk's sums, tile by tile (tile (ir, j0) at (j0 / NR * mPad / MR + ir / MR) * MR * NR): the kernels run
        // through them in that order, so they stream; rows of a cout x cin buffer (4-8 MB for ResNet-50's last
        // layers) were 8 cache misses per kernel call.
        long tileFloats = (long) MR * NR, perChunk = (long) mPad / MR * strips * tileFloats;
        MemorySegment acc = ACC.get().get(chunks * perChunk * Float.BYTES);
        if (byRows) {
            // Every row summed over all columns in the same depth blocks as one chunk: the same bits at any thread count.
            Parallel.forRange(rowStrips, 1, (s0, s1) -> {
                int r0 = (int) s0 * MR, r1 = Math.min(cout, (int) s1 * MR);
                accumulate(gy, gyOff, xd, xdOff, g, 0, g.n(), r0, r1, acc, 0, mPad, strips);
                storeTileRows(acc, 1, perChunk, mPad, gw, gwOff, r0, r1, cin);
            });
            return;
        }
        Parallel.forRange(chunks, 1, (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                accumulate(gy, gyOff, xd, xdOff, g, c * g.n() / chunks, (c + 1) * g.n() / chunks, 0, cout, acc,
                        c * perChunk * Float.BYTES, mPad, strips);
            }
        });
        // gw[co][ci]: the chunks' sums added in chunk order, so results do not depend on the thread count.
        if (!"false".equals(System.getProperty("jtorch.conv.pointwiseWeightGradRows"))) {
            storeTileRows(acc, chunks, perChunk, mPad, gw, gwOff, 0, cout, cin);
            return;
        }
        for (int co = 0; co < cout; co++) {
            for (int ci = 0; ci < cin; ci++) {
                long at = (((long) ci / NR * mPad / MR + co / MR) * tileFloats + co % MR * NR + ci % NR) * Float.BYTES;
                float v = acc.get(F32, at);
                for (int c = 1; c < chunks; c++) v += acc.get(F32, at + c * perChunk * Float.BYTES);
                gw.set(F32, (gwOff + (long) co * cin + ci) * Float.BYTES, v);
            }
        }
    }

    /**
     * Rows {@code [r0, r1)} (r0 a multiple of MR) of images {@code [n0, n1)}'s sums into the tiles at {@code accByte}:
     * the columns (the images' pixels one after another) in depth blocks of KW, which may span images.
     */
    private static void accumulate(MemorySegment gy, long gyOff, MemorySegment xd, long xdOff, Geometry g, long n0, long n1,
                                   int r0, int r1, MemorySegment acc, long accByte, int mPad, int strips) {
        int cin = g.cin(), cout = g.cout(), l = g.oh() * g.ow(), rows = r1 - r0, rowsPad = roundUp(rows, MR);
        long tileFloats = (long) MR * NR;
        Work wk = WORK.get();
        float[] ap = wk.ap = ConvF32.grow(wk.ap, rowsPad * KW);
        float[] scratch = wk.scratch = ConvF32.grow(wk.scratch, MR * KW);
        float[] bp = wk.bp = ConvF32.grow(wk.bp, KW * strips * NR);
        float[] one = wk.one = ConvF32.grow(wk.one, rowsPad * KW);
        for (long d0 = n0 * l; d0 < n1 * l; d0 += KW) {
            int kc = (int) Math.min(KW, n1 * l - d0);
            boolean first = d0 == n0 * l;
            if (d0 % l + kc <= l) {
                Gemm.packA(gy, gyOff + (d0 / l) * cout * l + (long) r0 * l + d0 % l, l, 1, rows, kc, ap, scratch);
            } else {
                // Each image's piece packed on its own, then each strip's rows placed at the piece's depth.
                for (int q = 0; q < kc; ) {
                    long n = (d0 + q) / l;
                    int p = (int) ((d0 + q) % l), run = Math.min(kc - q, l - p);
                    Gemm.packA(gy, gyOff + n * cout * l + (long) r0 * l + p, l, 1, rows, run, one, scratch);
                    for (int st = 0; st < rowsPad / MR; st++) System.arraycopy(one, st * MR * run, ap, st * MR * kc + q * MR, MR * run);
                    q += run;
                }
            }
            // Every 32-channel strip of x's block packed first, then rows of gy in blocks of WROWS (whose
            // packed A stays in L2) against every strip: A read from L3 once per block, not once per strip.
            for (int j0 = 0; j0 < cin; j0 += NR) {
                int nr = Math.min(NR, cin - j0);
                for (int q = 0; q < kc; ) {
                    long n = (d0 + q) / l;
                    int p = (int) ((d0 + q) % l), run = Math.min(kc - q, l - p);
                    packTransposed(xd, xdOff + (n * cin + j0) * l + p, l, run, nr, bp, j0 * kc + q * NR);
                    q += run;
                }
            }
            for (int i0 = r0; i0 < r1; i0 += WROWS) {
                int i1 = Math.min(r1, i0 + WROWS);
                for (int j0 = 0; j0 < cin; j0 += NR) {
                    long tileByte = accByte + ((long) j0 / NR * mPad / MR + i0 / MR) * tileFloats * Float.BYTES;
                    for (int ir = i0; ir < i1; ir += MR, tileByte += tileFloats * Float.BYTES) {
                        if (first) Gemm.kernelStore(kc, ap, (ir - r0) * kc, bp, j0 * kc, acc, tileByte, NR * Float.BYTES, 1f);
                        else Gemm.kernelUpdate(kc, ap, (ir - r0) * kc, bp, j0 * kc, acc, tileByte, NR * Float.BYTES, 1f, 1f);
                    }
                }
            }
        }
    }

    /**
     * {@link #weightGrad}'s sums of rows {@code [coFrom, coTo)} into {@code gw}, 16 channels at a time: a tile row's 32 input channels lie together in
     * each chunk's buffer, and so do a gw row's. The same additions in the same order as element by element, which took
     * about 6 of the 25-26 ms of ResNet-50's 1024 -> 2048 stride-2 weight gradient (one thread, load 22): 2M scalar
     * reads and writes with their index arithmetic. {@code -Djtorch.conv.pointwiseWeightGradRows=false} (read at each
     * call) goes back to that.
     */
    private static void storeTileRows(MemorySegment acc, int chunks, long perChunk, int mPad, MemorySegment gw, long gwOff,
                                      int coFrom, int coTo, int cin) {
        long chunkBytes = perChunk * Float.BYTES, stripBytes = (long) mPad * NR * Float.BYTES;
        for (int co = coFrom; co < coTo; co++) {
            long row = ((long) co / MR * MR * NR + co % MR * NR) * Float.BYTES;
            long to = (gwOff + (long) co * cin) * Float.BYTES;
            for (int ci = 0; ci < cin; ci += 16) {
                long at = row + ci / NR * stripBytes + ci % NR * Float.BYTES;
                FloatVector v = FloatVector.fromMemorySegment(FS, acc, at, NO);
                for (int c = 1; c < chunks; c++) v = v.add(FloatVector.fromMemorySegment(FS, acc, at + c * chunkBytes, NO));
                if (ci + 16 <= cin) v.intoMemorySegment(gw, to + ci * Float.BYTES, NO);
                else v.intoMemorySegment(gw, to + ci * Float.BYTES, NO, FS.indexInRange(ci, cin));
            }
        }
    }

    /**
     * {@code bp[base + p * NR + j] = x[off + j * ld + p]} for {@code p < kc}, {@code j < nr} (zero past nr): 16 channels of 16
     * pixels transposed in registers at a time.
     */
    private static void packTransposed(MemorySegment x, long off, int ld, int kc, int nr, float[] bp, int base) {
        if (nr == NR) {
            Gemm.packTransposedStrip(x, off, ld, kc, bp, base);
            return;
        }
        for (int q = 0; q < kc; q++) {
            for (int j = 0; j < nr; j++) bp[base + q * NR + j] = x.get(F32, (off + (long) j * ld + q) * Float.BYTES);
            java.util.Arrays.fill(bp, base + q * NR + nr, base + (q + 1) * NR, 0f);
        }
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
