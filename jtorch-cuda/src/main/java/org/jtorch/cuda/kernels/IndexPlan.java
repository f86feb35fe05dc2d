package org.jtorch.cuda.kernels;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.util.Arrays;
import org.jtorch.cuda.KernelStructs;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The host-side choices of the indexing kernels of {@code index.cu} (no GPU needed; only tensor metadata
 * is read, never memory).
 *
 * <p>Gathers and scatters follow the CPU backend ({@code CpuIndexKernels}): every operand is restrided to
 * one iteration shape, the dense side (gather's {@code out}, scatter's values) with its own strides, the
 * indexed side (gather's {@code src}, scatter's {@code dst}) with stride 0 along the dimensions the
 * indices select, and each index tensor with its strides broadcast to the iteration shape. A
 * {@link Geometry} holds that, coalesced (size-1 dimensions dropped, neighbours merged where every
 * operand allows, at most {@value KernelStructs#MAX_DIMS} left) as {@code jt::IndexGeometry}.
 *
 * <p>Index validation ({@link Check}) runs before any data kernel: {@code jt_index_check_<i32|i64>}
 * records the first out-of-range position, the launcher reads it back and throws
 * {@link IndexOutOfBoundsException} with the CPU backend's message ({@link #outOfBounds}).
 *
 * <p>nonzero and masked_select compact in row-major order: {@link #compaction} cuts the elements into
 * equal chunks of whole {@value #COMPACT_THREADS}-element tiles, one block each; a count pass writes one
 * count a block and the write pass starts each block at the sum of the counts before it, so the output
 * order is the CPU's whatever the grid.
 */
public final class IndexPlan {
    private IndexPlan() {}

    /** {@code JT_INDEX_MAX} of {@code index.cu}: index tensors one launch reads. */
    public static final int INDEX_MAX = 8;
    /** {@code JT_INDEX_THREADS} of {@code index.cu}: the block size the compaction kernels need. */
    public static final int COMPACT_THREADS = 256;

    /**
     * {@code jt::IndexGeometry}: int ndim, nindex, int32_mask, wrap_mask; i64 size[8]; i64 stride[2][8];
     * i64 index_stride[8][8]; i64 index_size[8]; i64 index_step[8]; u64 index_ptr[8].
     */
    public static final StructLayout INDEX_GEOMETRY = MemoryLayout.structLayout(
            JAVA_INT.withName("ndim"),
            JAVA_INT.withName("nindex"),
            JAVA_INT.withName("int32_mask"),
            JAVA_INT.withName("wrap_mask"),
            MemoryLayout.sequenceLayout(KernelStructs.MAX_DIMS, JAVA_LONG).withName("size"),
            MemoryLayout.sequenceLayout(2, MemoryLayout.sequenceLayout(KernelStructs.MAX_DIMS, JAVA_LONG)).withName("stride"),
            MemoryLayout.sequenceLayout(INDEX_MAX, MemoryLayout.sequenceLayout(KernelStructs.MAX_DIMS, JAVA_LONG)).withName("index_stride"),
            MemoryLayout.sequenceLayout(INDEX_MAX, JAVA_LONG).withName("index_size"),
            MemoryLayout.sequenceLayout(INDEX_MAX, JAVA_LONG).withName("index_step"),
            MemoryLayout.sequenceLayout(INDEX_MAX, JAVA_LONG).withName("index_ptr"));

    /** The kernels of {@code index.cu} that exist for every dtype. */
    public enum Kernel {
        GATHER("gather"), SCATTER("scatter"), SCATTER_ADD("scatter_add"), COUNT_NONZERO("count_nonzero"), NONZERO("nonzero"),
        MASKED_SELECT("masked_select");

        final String name;

        Kernel(String name) {
            this.name = name;
        }
    }

    /** {@code jt_index_<kernel>_<dtype>}. */
    public static String entry(Kernel kernel, DType t) {
        return "jt_index_" + kernel.name + "_" + ElementwisePlan.suffix(t);
    }

    /** {@code jt_index_check_<i32|i64>}: the index dtypes the front ends allow. */
    public static String checkEntry(DType index) {
        return switch (index) {
            case INT32 -> "jt_index_check_i32";
            case INT64 -> "jt_index_check_i64";
            default -> throw new IllegalArgumentException("index kernels take int32 or int64 indices, got " + index);
        };
    }

    // ------------------------------------------------------------------ gather / scatter geometry

    /**
     * An index operand: its element strides over the iteration shape (before coalescing), whether it is
     * int32, the size of the dimension it selects in, whether negative values wrap by it (the op's rule),
     * and the element step one index unit moves the indexed side by.
     */
    public record Index(long[] strides, boolean int32, long size, boolean wraps, long step) {}

    /** {@code jt::IndexGeometry}'s content; {@code n} is the number of iteration elements (0: no launch). */
    public record Geometry(long n, long[] sizes, long[] denseStrides, long[] indexedStrides, long[][] indexStrides,
                           boolean[] int32, long[] indexSizes, boolean[] wraps, long[] indexSteps) {
        public int ndim() {
            return sizes.length;
        }

        @Override
        public String toString() {
            return "Geometry[n=" + n + ", sizes=" + Arrays.toString(sizes) + ", dense=" + Arrays.toString(denseStrides)
                    + ", indexed=" + Arrays.toString(indexedStrides) + ", index=" + Arrays.deepToString(indexStrides)
                    + ", sizes=" + Arrays.toString(indexSizes) + ", steps=" + Arrays.toString(indexSteps) + "]";
        }
    }

    /** {@code self}'s size at {@code dim} (1 for a 0-d tensor, as the CPU backend). */
    private static long dimSize(StridedView self, int dim) {
        return self.dim() == 0 ? 1 : self.size(dim);
    }

    private static long dimStride(StridedView self, int dim) {
        return self.dim() == 0 ? 0 : self.stride(dim);
    }

    /** {@code self}'s strides with 0 at {@code dim}: the indexed side. */
    private static long[] zeroAt(StridedView self, int dim) {
        long[] s = self.strides().clone();
        if (s.length > 0) s[dim] = 0;
        return s;
    }

    /** A 1-d (or 0-d) index vector laid along {@code dim} of a rank-{@code rank} iteration shape. */
    private static Index vectorAlong(StridedView index, int dim, int rank, long size, boolean wraps, long step) {
        long[] st = new long[rank];
        if (rank > 0) st[dim] = index.dim() == 0 ? 0 : index.stride(0);
        return new Index(st, index.dtype() == DType.INT32, size, wraps, step);
    }

    /** index_select: iteration shape = {@code out}'s; {@code out[..., i, ...] = self[..., index[i], ...]}. */
    public static Geometry indexSelect(StridedView self, int dim, StridedView index, StridedView out) {
        return build("indexSelect", out.shape(), out.strides(), zeroAt(self, dim),
                vectorAlong(index, dim, self.dim(), dimSize(self, dim), false, dimStride(self, dim)));
    }

    /** gather: iteration shape = {@code index}'s; dense side {@code out}. */
    public static Geometry gather(StridedView self, int dim, StridedView index, StridedView out) {
        return build("gather", index.shape(), out.strides(), zeroAt(self, dim),
                new Index(index.strides(), index.dtype() == DType.INT32, dimSize(self, dim), false, dimStride(self, dim)));
    }

    /** scatter / scatter_add: iteration shape = {@code index}'s; dense side {@code src}, indexed side {@code self}. */
    public static Geometry scatter(String op, StridedView self, int dim, StridedView index, StridedView src) {
        return build(op, index.shape(), src.strides(), zeroAt(self, dim),
                new Index(index.strides(), index.dtype() == DType.INT32, dimSize(self, dim), false, dimStride(self, dim)));
    }

    /**
     * index_copy / index_fill / index_add: iteration shape = {@code source}'s; {@code index} along {@code dim},
     * negative values wrapping where the op allows them.
     */
    public static Geometry indexAccumulate(String op, StridedView self, int dim, StridedView index, StridedView source,
                                           boolean wrapNegative) {
        return build(op, source.shape(), source.strides(), zeroAt(self, dim),
                vectorAlong(index, dim, self.dim(), dimSize(self, dim), wrapNegative, dimStride(self, dim)));
    }

    /**
     * Advanced indexing and index_put: {@code indexed} (the source or destination) and {@code indices} are
     * already restrided to {@code dense}'s shape by the front end; {@code sizes}/{@code strides} per index.
     */
    public static Geometry advanced(String op, StridedView indexed, StridedView[] indices, long[] sizes, long[] strides,
                                    StridedView dense) {
        Index[] idx = new Index[indices.length];
        for (int k = 0; k < idx.length; k++) {
            idx[k] = new Index(indices[k].strides(), indices[k].dtype() == DType.INT32, sizes[k], true, strides[k]);
        }
        return build(op, dense.shape(), dense.strides(), indexed.strides(), idx);
    }

    /** The coalesced geometry of one gather or scatter over {@code shape}. */
    static Geometry build(String op, long[] shape, long[] dense, long[] indexed, Index... indices) {
        if (indices.length > INDEX_MAX) {
            throw new UnsupportedOperationException(op + ": the CUDA index kernels read at most " + INDEX_MAX + " index tensors, got "
                    + indices.length);
        }
        int k = indices.length;
        long[][] strides = new long[2 + k][];
        strides[0] = dense;
        strides[1] = indexed;
        for (int q = 0; q < k; q++) strides[2 + q] = indices[q].strides();
        for (long[] s : strides) {
            if (s.length != shape.length) {
                throw new IllegalArgumentException(op + ": operand strides " + Arrays.toString(s) + " do not match the iteration shape "
                        + Arrays.toString(shape));
            }
        }
        long n = ElementwisePlan.numel(shape);
        Coalesced c = coalesce(shape, strides);
        if (c.sizes.length > KernelStructs.MAX_DIMS) {
            throw new UnsupportedOperationException(op + ": the CUDA index kernels handle at most " + KernelStructs.MAX_DIMS
                    + " dimensions after coalescing, got " + c.sizes.length + " (iteration shape " + Arrays.toString(shape) + ")");
        }
        boolean[] int32 = new boolean[k], wraps = new boolean[k];
        long[] sizes = new long[k], steps = new long[k];
        long[][] idx = new long[k][];
        for (int q = 0; q < k; q++) {
            int32[q] = indices[q].int32();
            sizes[q] = indices[q].size();
            wraps[q] = indices[q].wraps();
            steps[q] = indices[q].step();
            idx[q] = c.strides[2 + q];
        }
        return new Geometry(n, c.sizes, c.strides[0], c.strides[1], idx, int32, sizes, wraps, steps);
    }

    /** Sizes and per-operand strides after coalescing. */
    record Coalesced(long[] sizes, long[][] strides) {}

    /**
     * Drops size-1 dimensions and merges neighbour {@code d} into {@code d + 1} when every operand has
     * {@code stride[d] == size[d + 1] * stride[d + 1]}: the row-major order of the elements is unchanged.
     * (ElementwisePlan's coalescing for any number of operands, since a gather has up to 10.)
     */
    static Coalesced coalesce(long[] shape, long[][] strides) {
        int k = strides.length;
        long[] sizes = new long[shape.length];
        long[][] st = new long[k][shape.length];
        int nd = 0;
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] == 1) continue;
            if (nd > 0 && mergeable(shape[d], strides, st, d, nd - 1)) {
                sizes[nd - 1] *= shape[d];
                for (int o = 0; o < k; o++) st[o][nd - 1] = strides[o][d];
                continue;
            }
            sizes[nd] = shape[d];
            for (int o = 0; o < k; o++) st[o][nd] = strides[o][d];
            nd++;
        }
        long[][] out = new long[k][];
        for (int o = 0; o < k; o++) out[o] = Arrays.copyOf(st[o], nd);
        return new Coalesced(Arrays.copyOf(sizes, nd), out);
    }

    /** Whether the kept outer dimension {@code w} can absorb inner dimension {@code d} (of {@code size}) for every operand. */
    private static boolean mergeable(long size, long[][] strides, long[][] kept, int d, int w) {
        for (int o = 0; o < strides.length; o++) {
            if (kept[o][w] != size * strides[o][d]) return false;
        }
        return true;
    }

    /** {@code jt::IndexGeometry} bytes for {@code g} with the index tensors at {@code indexAddresses}; unused entries zero. */
    public static MemorySegment packGeometry(Arena arena, Geometry g, long[] indexAddresses) {
        int k = g.indexStrides().length;
        if (indexAddresses.length != k) {
            throw new IllegalArgumentException("packGeometry: " + k + " index operands but " + indexAddresses.length + " addresses");
        }
        MemorySegment m = arena.allocate(INDEX_GEOMETRY);
        m.fill((byte) 0);
        int mask = 0, wrapMask = 0;
        for (int q = 0; q < k; q++) {
            if (g.int32()[q]) mask |= 1 << q;
            if (g.wraps()[q]) wrapMask |= 1 << q;
        }
        m.set(JAVA_INT, offset("ndim"), g.ndim());
        m.set(JAVA_INT, offset("nindex"), k);
        m.set(JAVA_INT, offset("int32_mask"), mask);
        m.set(JAVA_INT, offset("wrap_mask"), wrapMask);
        long size = offset("size"), stride = offset("stride"), indexStride = offset("index_stride");
        int maxDims = KernelStructs.MAX_DIMS;
        for (int d = 0; d < g.ndim(); d++) {
            m.set(JAVA_LONG, size + 8L * d, g.sizes()[d]);
            m.set(JAVA_LONG, stride + 8L * d, g.denseStrides()[d]);
            m.set(JAVA_LONG, stride + 8L * (maxDims + d), g.indexedStrides()[d]);
            for (int q = 0; q < k; q++) m.set(JAVA_LONG, indexStride + 8L * (q * maxDims + d), g.indexStrides()[q][d]);
        }
        for (int q = 0; q < k; q++) {
            m.set(JAVA_LONG, offset("index_size") + 8L * q, g.indexSizes()[q]);
            m.set(JAVA_LONG, offset("index_step") + 8L * q, g.indexSteps()[q]);
            m.set(JAVA_LONG, offset("index_ptr") + 8L * q, indexAddresses[q]);
        }
        return m;
    }

    private static long offset(String field) {
        return INDEX_GEOMETRY.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    /** {@code jt_index_gather_<T>(T* out, const T* src, jt_i64 n, IndexGeometry g)}. */
    public static KernelArgs gatherArgs(Arena arena, long out, long src, Geometry g, long[] indexAddresses) {
        return new KernelArgs(arena).pointer(out).pointer(src).i64(g.n()).struct(packGeometry(arena, g, indexAddresses));
    }

    /** {@code jt_index_scatter_<T>(T* dst, const T* values, jt_i64 n, IndexGeometry g)}. */
    public static KernelArgs scatterArgs(Arena arena, long dst, long values, Geometry g, long[] indexAddresses) {
        return new KernelArgs(arena).pointer(dst).pointer(values).i64(g.n()).struct(packGeometry(arena, g, indexAddresses));
    }

    /**
     * {@code jt_index_scatter_add_<T>(T* dst, const T* values, jt_i64 n, IndexGeometry g, double alpha, jt_i64 alpha_long)};
     * {@code alpha_long} is {@code (long) alpha}, the integer dtypes' factor (the front end refuses fractional ones).
     */
    public static KernelArgs scatterAddArgs(Arena arena, long dst, long values, Geometry g, long[] indexAddresses, double alpha) {
        return scatterArgs(arena, dst, values, g, indexAddresses).f64(alpha).i64((long) alpha);
    }

    // ------------------------------------------------------------------ validation

    /**
     * One index tensor to validate: values must lie in {@code [low, high)} ({@code [-size, size)} when
     * negative values wrap, else {@code [0, size)}); {@code dim < 0} leaves the dimension out of the message.
     * {@code strided} is the tensor's own coalesced layout (operand 0), in whose row-major order the
     * kernel reports the first bad position.
     */
    public record Check(String op, int dim, long size, long low, long high, DType dtype, long n, ElementwisePlan.Strided strided) {}

    /**
     * The check of {@code index}. Broadcast dimensions (stride 0, as advanced indexing's restrided indices have)
     * are left out, so each stored value is read once; the first bad value in the remaining row-major order is
     * also the first one met in the full tensor's.
     */
    public static Check check(String op, StridedView index, int dim, long size, boolean wrapNegative) {
        checkEntry(index.dtype());
        long[] shape = index.shape().clone(), strides = index.strides().clone();
        int kept = 0;
        for (int d = 0; d < shape.length; d++) {
            if (strides[d] == 0 && shape[d] > 1) continue;
            shape[kept] = shape[d];
            strides[kept] = strides[d];
            kept++;
        }
        shape = Arrays.copyOf(shape, kept);
        strides = Arrays.copyOf(strides, kept);
        ElementwisePlan.Strided s = coalesce(op, shape, new ElementwisePlan.Operand(index.dtype(), strides, false));
        return new Check(op, dim, size, wrapNegative ? -size : 0, size, index.dtype(), ElementwisePlan.numel(shape), s);
    }

    /** {@code jt_index_check_<I>(const I* index, jt_i64 n, Strided s, jt_i64 low, jt_i64 high, jt_u64* first_bad)}. */
    public static KernelArgs checkArgs(Arena arena, long index, Check c, long firstBad) {
        return new KernelArgs(arena).pointer(index).i64(c.n()).strided(c.strided()).i64(c.low()).i64(c.high()).pointer(firstBad);
    }

    /** The kernel that copies the index value at a check's first bad position into its record's second word. */
    public static String checkValueEntry(DType index) {
        return checkEntry(index).replace("jt_index_check_", "jt_index_check_value_");
    }

    public static KernelArgs checkValueArgs(Arena arena, long index, Check c, long record) {
        return new KernelArgs(arena).pointer(index).strided(c.strided()).pointer(record);
    }

    /** The element offset (from the tensor's first element) of row-major position {@code position} of a check. */
    public static long elementOffset(Check c, long position) {
        ElementwisePlan.Strided s = c.strided();
        long off = 0;
        for (int d = s.ndim() - 1; d >= 0; d--) {
            off += (position % s.sizes()[d]) * s.strides()[0][d];
            position /= s.sizes()[d];
        }
        return off;
    }

    /** The CPU backend's message for an index outside its dimension. */
    public static IndexOutOfBoundsException outOfBounds(Check c, long value) {
        return new IndexOutOfBoundsException(c.op() + ": index " + value + " is out of bounds for dimension "
                + (c.dim() >= 0 ? c.dim() + " " : "") + "with size " + c.size());
    }

    // ------------------------------------------------------------------ row-major compaction

    /** {@code blocks} blocks of {@value #COMPACT_THREADS} threads, block b owning elements {@code [b * chunk, (b + 1) * chunk)}. */
    public record Compaction(long n, int blocks, long chunk) {}

    /**
     * Chunks of whole tiles, at most {@link LaunchGeometry#BLOCKS_PER_SM} blocks per multiprocessor (each
     * write block sums the counts before it, so their number stays small); no blocks for {@code n == 0}.
     */
    public static Compaction compaction(long n, int multiprocessors) {
        int wanted = LaunchGeometry.blocks(n, 1, multiprocessors);
        if (wanted == 0) return new Compaction(0, 0, 0);
        long tiles = (n + COMPACT_THREADS - 1) / COMPACT_THREADS;
        long tilesPerBlock = (tiles + wanted - 1) / wanted;
        long chunk = tilesPerBlock * COMPACT_THREADS;
        return new Compaction(n, (int) ((n + chunk - 1) / chunk), chunk);
    }

    /**
     * {@code jt::Strided} of a nonzero input (operand 0), over its own uncoalesced shape: the kernel writes
     * coordinates over these sizes, so each dimension stays. More than {@value KernelStructs#MAX_DIMS} is refused.
     */
    public static ElementwisePlan.Strided nonzeroLayout(StridedView t) {
        if (t.dim() > KernelStructs.MAX_DIMS) {
            throw new UnsupportedOperationException("nonzero: the CUDA kernel handles at most " + KernelStructs.MAX_DIMS
                    + " dimensions, got shape " + Arrays.toString(t.shape()) + " on " + t.device());
        }
        return new ElementwisePlan.Strided(t.dim(), new int[] {t.dtype().ordinal()}, t.shape(), new long[][] {t.strides()});
    }

    /** {@code jt::Strided} of masked_select: operand 0 {@code self}, operand 1 {@code mask}, coalesced together. */
    public static ElementwisePlan.Strided maskedSelectLayout(StridedView self, StridedView mask) {
        return coalesce("maskedSelect", self.shape(),
                new ElementwisePlan.Operand(self.dtype(), self.strides(), self.isContiguous()),
                new ElementwisePlan.Operand(mask.dtype(), mask.strides(), mask.isContiguous()));
    }

    /** {@code jt::Strided} of a count over {@code t} alone (operand 0), coalesced: same row-major order as its shape. */
    public static ElementwisePlan.Strided countLayout(StridedView t) {
        return coalesce("countNonzero", t.shape(), new ElementwisePlan.Operand(t.dtype(), t.strides(), t.isContiguous()));
    }

    /** {@link ElementwisePlan#coalesce}, its refusal of more than 8 dimensions naming {@code op}. */
    private static ElementwisePlan.Strided coalesce(String op, long[] shape, ElementwisePlan.Operand... operands) {
        try {
            return ElementwisePlan.coalesce(shape, operands);
        } catch (UnsupportedOperationException e) {
            throw new UnsupportedOperationException(op + ": " + e.getMessage(), e);
        }
    }

    /** {@code jt_index_count_nonzero_<T>(const T* x, jt_i64 n, Strided s, jt_i64 chunk, jt_i64* block_counts)}. */
    public static KernelArgs countArgs(Arena arena, long x, ElementwisePlan.Strided s, Compaction c, long blockCounts) {
        return new KernelArgs(arena).pointer(x).i64(c.n()).strided(s).i64(c.chunk()).pointer(blockCounts);
    }

    /** {@code jt_index_nonzero_<T>(const T* x, jt_i64 n, Strided s, jt_i64 chunk, const jt_i64* block_counts, jt_i64* out, jt_i64 rows)}. */
    public static KernelArgs nonzeroArgs(Arena arena, long x, ElementwisePlan.Strided s, Compaction c, long blockCounts, long out,
                                         long rows) {
        return countArgs(arena, x, s, c, blockCounts).pointer(out).i64(rows);
    }

    /**
     * {@code jt_index_masked_select_<T>(const T* self, const jt_u8* mask, jt_i64 n, Strided s, jt_i64 chunk,
     * const jt_i64* block_counts, T* out, jt_i64 capacity)}.
     */
    public static KernelArgs maskedSelectArgs(Arena arena, long self, long mask, ElementwisePlan.Strided s, Compaction c,
                                              long blockCounts, long out, long capacity) {
        return new KernelArgs(arena).pointer(self).pointer(mask).i64(c.n()).strided(s).i64(c.chunk()).pointer(blockCounts)
                .pointer(out).i64(capacity);
    }
}
