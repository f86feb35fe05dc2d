package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.Gemm.DKC;
import static org.jtorch.backend.cpu.Gemm.DMR;
import static org.jtorch.backend.cpu.Gemm.DNR;
import static org.jtorch.backend.cpu.Gemm.KC;
import static org.jtorch.backend.cpu.Gemm.L;
import static org.jtorch.backend.cpu.Gemm.MR;
import static org.jtorch.backend.cpu.Gemm.NR;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A right-hand op(B) ({@code k x n}, any strides) packed once into {@link Gemm}'s column panels, for many products
 * {@code C = alpha * op(A) * op(B) + beta * C} with different A while B's values do not change: a recurrent layer's
 * hidden weights over its time steps. {@link Gemm#sgemm} and {@link Gemm#dgemm} pack a transposed B (the forward's
 * {@code h W_hh^T}) again on every call, 35 times a layer in the word LM, where oneDNN packs it once a layer; and they
 * read a row-major B (the backward's {@code g W_hh}) in place with rows {@code n} floats apart, where the packed panel
 * is read in order.
 *
 * <p>The panels are the general paths' layout, one set per depth block: float32 {@code NR}-wide panels of {@code KC}-deep
 * blocks (row blocks of A in {@link GemmShortM}'s 10-row tiles where those pad m less than 8-row tiles, as
 * {@link Gemm#sgemm} chooses), float64 {@code DNR}-wide strips of {@code DKC}-deep blocks in native memory (which
 * {@link Gemm#kernelD} reads). A product with at most {@value GemmDot#MAX_M} rows is handed to the unpacked GEMM on
 * the original B: there the dot-product and direct-row paths read B in place faster than an 8-row tile would pad one
 * row. Each panel's result is computed the same way on any thread count.
 *
 * <p>The packed copy does not see later writes to B; the original B is read only by the short products above, so it
 * must stay alive and unchanged while this object is used.
 */
abstract sealed class GemmPackedB implements AutoCloseable permits GemmPackedB.F32, GemmPackedB.F64 {
    final int k, n;
    final MemorySegment b;
    final long bOff, brs, bcs;

    private GemmPackedB(int k, int n, MemorySegment b, long bOff, long brs, long bcs) {
        this.k = k;
        this.n = n;
        this.b = b;
        this.bOff = bOff;
        this.brs = brs;
        this.bcs = bcs;
    }

    /** op(B)[p][j] at element {@code bOff + p * brs + j * bcs} of {@code b}, packed now. */
    static GemmPackedB f32(int k, int n, MemorySegment b, long bOff, long brs, long bcs) {
        return new F32(k, n, b, bOff, brs, bcs);
    }

    /** As {@link #f32}, of doubles. */
    static GemmPackedB f64(int k, int n, MemorySegment b, long bOff, long brs, long bcs) {
        return new F64(k, n, b, bOff, brs, bcs);
    }

    /** {@code C = alpha * op(A) * op(B) + beta * C}, op(A) {@code m x k} as in {@link Gemm#sgemm}; beta 0 ignores C's contents. */
    abstract void multiply(int m, double alpha, MemorySegment a, long aOff, long ars, long acs, double beta,
                           MemorySegment c, long cOff, long ldc);

    /** Frees the native panels at once (float64); the float32 panels are a heap array. */
    @Override
    public void close() {}

    int panels(int width) {
        return (n + width - 1) / width;
    }

    private static final class Workspace {
        float[] a = new float[0];
        final float[] tile = new float[Math.max(GemmShortM.R, MR) * NR];
        final float[] scratch = new float[Math.max(MR, NR) * KC];
        double[] da = new double[0];
        final double[] dtile = new double[DMR * DNR];

        float[] a(int size) {
            if (a.length < size) a = new float[size];
            return a;
        }

        double[] da(int size) {
            if (da.length < size) da = new double[size];
            return da;
        }
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    static final class F32 extends GemmPackedB {
        /** Depth block q ({@code KC} deep, the last shorter): panel s at {@code blocks[q][s * kc * NR + p * NR + j]}. */
        private final float[][] blocks;

        private F32(int k, int n, MemorySegment b, long bOff, long brs, long bcs) {
            super(k, n, b, bOff, brs, bcs);
            blocks = new float[(k + KC - 1) / KC][];
            float[] scratch = WORKSPACE.get().scratch;
            for (int q = 0, pc = 0; pc < k; q++, pc += KC) {
                int kc = Math.min(KC, k - pc);
                blocks[q] = new float[panels(NR) * NR * kc];
                Gemm.packB(b, bOff + pc * brs, brs, bcs, kc, n, blocks[q], scratch);
            }
        }

        @Override
        void multiply(int m, double alpha, MemorySegment a, long aOff, long ars, long acs, double beta,
                      MemorySegment c, long cOff, long ldc) {
            if (m == 0 || n == 0) return;
            if (m <= GemmDot.MAX_M || k == 0) {
                Gemm.sgemm(m, n, k, (float) alpha, a, aOff, ars, acs, b, bOff, brs, bcs, (float) beta, c, cOff, ldc);
                return;
            }
            // GemmShortM's 10-row tiles where they pad m less than Gemm's 8-row ones, as Gemm.sgemm picks between them.
            boolean tens = L == 16 && roundUp(m, GemmShortM.R) < roundUp(m, MR);
            int rows = tens ? GemmShortM.R : MR, rowBlocks = (m + rows - 1) / rows, panels = panels(NR);
            boolean parallel = Parallel.numThreads() > 1 && (long) m * n * k >= Gemm.PARALLEL_MIN_WORK && !Parallel.inParallelRegion();
            long ldcBytes = ldc * Float.BYTES;
            Workspace own = WORKSPACE.get();
            for (int q = 0, pc = 0; pc < k; q++, pc += KC) {
                int kc = Math.min(KC, k - pc);
                float[] ap = own.a(rowBlocks * rows * kc), bp = blocks[q];
                if (tens) GemmShortM.packRows(a, aOff + pc * acs, ars, acs, m, kc, ap, own.scratch);
                else Gemm.packA(a, aOff + pc * acs, ars, acs, m, kc, ap, own.scratch);
                float betaHere = pc == 0 ? (float) beta : 1f;
                Parallel.RangeBody body = (s0, s1) -> {
                    float[] tile = WORKSPACE.get().tile;
                    for (int s = (int) s0; s < s1; s++) {
                        int j0 = s * NR, nr = Math.min(NR, n - j0), bBase = s * kc * NR;
                        for (int i0 = 0; i0 < m; i0 += rows) {
                            if (tens) GemmShortM.kernelPacked(kc, ap, i0 * kc, bp, bBase, tile);
                            else Gemm.kernel(kc, ap, i0 * kc, bp, bBase, tile);
                            Gemm.updateC(tile, c, (cOff + i0 * ldc + j0) * Float.BYTES, ldcBytes, Math.min(rows, m - i0), nr,
                                    (float) alpha, betaHere);
                        }
                    }
                };
                if (parallel) Parallel.forRange(panels, 1, body);
                else body.run(0, panels);
            }
        }
    }

    static final class F64 extends GemmPackedB {
        /** Depth block q ({@code DKC} deep) from byte {@code q * DKC * strips * DNR * 8}: strip s, row p at {@code (s * kc + p) * DNR}. */
        private final MemorySegment packed;
        /**
         * The panels' memory, freed by {@link #close} at the end of the layer call: an automatic arena would keep megabytes
         * of native memory per call until a GC, and hand out fresh pages each time. Shared: the products' threads read it.
         */
        private final Arena arena = Arena.ofShared();

        private F64(int k, int n, MemorySegment b, long bOff, long brs, long bcs) {
            super(k, n, b, bOff, brs, bcs);
            long perRow = (long) panels(DNR) * DNR;
            packed = arena.allocate(Math.max(1, perRow * k) * Double.BYTES, 64);
            for (int pc = 0; pc < k; pc += DKC) {
                Gemm.packDB(b, bOff + pc * brs, brs, bcs, Math.min(DKC, k - pc), n, packed.asSlice(pc * perRow * Double.BYTES));
            }
        }

        @Override
        public void close() {
            arena.close();
        }

        @Override
        void multiply(int m, double alpha, MemorySegment a, long aOff, long ars, long acs, double beta,
                      MemorySegment c, long cOff, long ldc) {
            if (m == 0 || n == 0) return;
            if (m <= GemmDot.MAX_M || k == 0) {
                Gemm.dgemm(m, n, k, alpha, a, aOff, ars, acs, b, bOff, brs, bcs, beta, c, cOff, ldc);
                return;
            }
            // As Gemm.dgemm: beta 0 makes the first depth block store its tiles instead of C being zeroed first.
            boolean overwrite = beta == 0d;
            if (!overwrite) Gemm.scaleD(m, n, beta, c, cOff, ldc);
            int strips = panels(DNR), rowStrips = (m + DMR - 1) / DMR;
            long perRow = (long) strips * DNR;
            boolean parallel = Parallel.numThreads() > 1 && (long) m * n * k >= Gemm.PARALLEL_MIN_WORK && !Parallel.inParallelRegion();
            Workspace own = WORKSPACE.get();
            for (int pc = 0; pc < k; pc += DKC) {
                int kc = Math.min(DKC, k - pc);
                boolean store = overwrite && pc == 0;
                double[] ap = own.da(rowStrips * DMR * kc);
                Gemm.packDA(a, aOff + pc * acs, ars, acs, m, kc, ap);
                long blockByte = pc * perRow * Double.BYTES;
                Parallel.RangeBody body = (s0, s1) -> {
                    double[] tile = WORKSPACE.get().dtile;
                    for (int s = (int) s0; s < s1; s++) {
                        int nr = Math.min(DNR, n - s * DNR);
                        long strip = blockByte + (long) s * kc * DNR * Double.BYTES;
                        for (int ir = 0; ir < m; ir += DMR) {
                            Gemm.kernelD(kc, ap, ir * kc, packed, strip, DNR * Double.BYTES, tile);
                            Gemm.updateCD(tile, c, (cOff + ir * ldc + (long) s * DNR) * Double.BYTES, ldc * Double.BYTES,
                                    Math.min(DMR, m - ir), nr, alpha, store);
                        }
                    }
                };
                if (parallel) Parallel.forRange(strips, 1, body);
                else body.run(0, strips);
            }
        }
    }

    private static int roundUp(int x, int to) {
        return (x + to - 1) / to * to;
    }
}
