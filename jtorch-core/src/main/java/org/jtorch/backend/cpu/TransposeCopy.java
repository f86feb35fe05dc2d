package org.jtorch.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * A copy whose two innermost dimensions are transposed between source and destination ({@code x.t().contiguous()},
 * attention's head permutes): the destination's rows are the source's columns. Walking the destination row by row
 * reads the source a column at a time, one cache line per element; here each {@value #TILE} x {@value #TILE} tile is
 * read along source rows and written along destination rows, so that both stay within a few cache lines. Bits are
 * copied unchanged (same dtype, 4- or 8-byte elements).
 */
final class TransposeCopy {
    private static final int TILE = 16;

    private TransposeCopy() {}

    /**
     * Whether the iteration ({@code [destination, source]}) is such a copy: the destination's inner dimension is
     * contiguous and the source's next-outer dimension is, and each is longer than a tile.
     */
    static boolean serves(ElementwiseIteration it, long es) {
        int k = it.shape.length;
        if (k < 2 || (es != 4 && es != 8)) return false;
        long[] dst = it.byteStrides[0], src = it.byteStrides[1];
        return dst[k - 1] == es && src[k - 2] == es && src[k - 1] != es && dst[k - 2] == it.shape[k - 1] * es && it.shape[k - 1] >= TILE
                && it.shape[k - 2] >= TILE;
    }

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int FL = FS.length();
    private static final ByteOrder LE = ByteOrder.nativeOrder();
    /** Where lane c of a destination row finds its element in the tile scratch ({@code tile[c][r]}): {@code 16 c}. */
    private static final int[] COLUMN_STARTS = new int[TILE];
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[TILE * TILE]);
    private static final VectorSpecies<Long> LS = LongVector.SPECIES_PREFERRED;
    private static final int LL = LS.length();
    /** The 8-byte tile's side: one vector of longs ({@code tile[c][r]} at {@code LL c + r}). */
    private static final int[] LONG_COLUMN_STARTS = new int[LL];
    private static final ThreadLocal<long[]> LONG_SCRATCH = ThreadLocal.withInitial(() -> new long[LL * LL]);

    static {
        for (int c = 0; c < TILE; c++) COLUMN_STARTS[c] = c * TILE;
        for (int c = 0; c < LL; c++) LONG_COLUMN_STARTS[c] = c * LL;
    }

    /**
     * One full 16 x 16 float tile: the 16 source runs (destination columns) load as vectors into the scratch, and each
     * destination row gathers its 16 elements from there (in L1) and stores them as one vector, whole cache lines.
     */
    private static void floatTile(MemorySegment ss, long s, long srcColStride, MemorySegment ds, long d, long dstRowStride, float[] tile) {
        for (int c = 0; c < TILE; c++) FloatVector.fromMemorySegment(FS, ss, s + c * srcColStride, LE).intoArray(tile, c * TILE);
        for (int r = 0; r < TILE; r++) FloatVector.fromArray(FS, tile, r, COLUMN_STARTS, 0).intoMemorySegment(ds, d + r * dstRowStride, LE);
    }

    /**
     * {@link #floatTile}'s 8-byte form (float64, int64): an LL x LL tile moved as raw bits (longs, so that no NaN payload
     * can change), half as many to a vector and so to a gather. Element by element, a float64
     * transpose ran 4x float32's time where the bytes moved are only twice as many.
     */
    private static void longTile(MemorySegment ss, long s, long srcColStride, MemorySegment ds, long d, long dstRowStride, long[] tile) {
        for (int c = 0; c < LL; c++) LongVector.fromMemorySegment(LS, ss, s + c * srcColStride, LE).intoArray(tile, c * LL);
        for (int r = 0; r < LL; r++) LongVector.fromArray(LS, tile, r, LONG_COLUMN_STARTS, 0).intoMemorySegment(ds, d + r * dstRowStride, LE);
    }

    static void run(ElementwiseIteration it, MemorySegment ss, MemorySegment ds, long es) {
        int k = it.shape.length;
        long rows = it.shape[k - 2], cols = it.shape[k - 1];
        long planes = it.numel / (rows * cols);
        long rowTiles = (rows + TILE - 1) / TILE;
        long srcColStride = it.byteStrides[1][k - 1];
        Parallel.forRange(planes * rowTiles, Math.max(1, ElementwiseKernels.GRAIN / (TILE * cols)), (begin, end) -> {
            for (long item = begin; item < end; item++) {
                long plane = item / rowTiles;
                long r0 = (item % rowTiles) * TILE;
                long srcPlane = it.baseOffsets[1], dstPlane = it.baseOffsets[0];
                long rem = plane;
                for (int d = k - 3; d >= 0; d--) {
                    long idx = rem % it.shape[d];
                    rem /= it.shape[d];
                    srcPlane += idx * it.byteStrides[1][d];
                    dstPlane += idx * it.byteStrides[0][d];
                }
                int tileRows = (int) Math.min(TILE, rows - r0);
                long c0 = 0;
                if (es == 4 && tileRows == TILE && FL == TILE && srcColStride % 4 == 0) {
                    float[] tile = SCRATCH.get();
                    for (; c0 + TILE <= cols; c0 += TILE) floatTile(ss, srcPlane + r0 * 4 + c0 * srcColStride, srcColStride, ds,
                            dstPlane + (r0 * cols + c0) * 4, cols * 4, tile);
                } else if (es == 8 && tileRows == TILE && TILE % LL == 0 && LL >= 4 && srcColStride % 8 == 0) {
                    long[] tile = LONG_SCRATCH.get();
                    for (; c0 + TILE <= cols; c0 += TILE) {
                        for (int ri = 0; ri < TILE; ri += LL) {
                            for (int ci = 0; ci < TILE; ci += LL) longTile(ss, srcPlane + (r0 + ri) * 8 + (c0 + ci) * srcColStride,
                                    srcColStride, ds, dstPlane + ((r0 + ri) * cols + c0 + ci) * 8, cols * 8, tile);
                        }
                    }
                }
                for (; c0 < cols; c0 += TILE) {
                    int tileCols = (int) Math.min(TILE, cols - c0);
                    // Source element (r, c) sits at r * es + c * srcColStride; for a fixed c, consecutive r are adjacent.
                    for (int c = 0; c < tileCols; c++) {
                        long s = srcPlane + r0 * es + (c0 + c) * srcColStride;
                        long d = dstPlane + (r0 * cols + c0 + c) * es;
                        if (es == 4) {
                            for (int r = 0; r < tileRows; r++) ds.set(ElementIO.I32, d + r * cols * 4, ss.get(ElementIO.I32, s + 4L * r));
                        } else {
                            for (int r = 0; r < tileRows; r++) ds.set(ElementIO.I64, d + r * cols * 8, ss.get(ElementIO.I64, s + 8L * r));
                        }
                    }
                }
            }
        });
    }
}
