package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.op.IndexingOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.IndexKernels;

/**
 * Front end of the indexing ops, with PyTorch's semantics: {@code index_select}, {@code gather},
 * {@code scatter}/{@code scatter_add}, {@code index_add}/{@code index_copy}/{@code index_fill},
 * {@code masked_fill}/{@code masked_select}, {@code nonzero}, and advanced (integer-tensor) indexing
 * {@code t[i0, i1, ...]} with {@code index_put_}.
 *
 * <p>Shape and dtype rules are checked here; index values are checked by the kernels before they
 * write, and a bad one raises {@link IndexOutOfBoundsException} naming the op, the value and the size
 * of the dimension. Where PyTorch 1.13 accepts negative indices (advanced indexing, index_fill) they
 * wrap; elsewhere (index_select, gather, scatter, index_add, index_copy) they are errors, as there.
 * Out-of-place forms copy {@code self} and run the in-place form; in-place forms bump the version
 * counter.
 *
 * <p>{@code index_select}, {@code gather}, {@code scatter} (src and value), {@code scatter_add}, {@code index_add},
 * {@code index_copy}, {@code index_fill}, {@code masked_fill} and {@code masked_select} are declared ops ({@link IndexingOps})
 * that the dispatcher runs, their in-place forms through {@link Dispatcher#callInPlace}: their checks, derivatives and
 * kernels live there. Advanced indexing and {@code index_put_} still write their chain here (issue 15).
 *
 * <p>Autograd: each public op computes with grad mode off (internal views and recursion record
 * nothing) and then records one node with PyTorch's formula from {@code derivatives.yaml}. Index
 * tensors and masks get no gradient. In-place forms refuse leaves and views that require grad
 * ({@link Elementwise#checkInPlaceAllowed}) and rebase {@code self} onto their node.
 */
public final class Indexing {
    private Indexing() {}

    // ---------------------------------------------------------------- index_select / gather

    /** {@code self.index_select(dim, index)}: {@code index} is a vector (or 0-d) of int32 or int64 ({@link IndexingOps#INDEX_SELECT}). */
    public static Tensor indexSelect(Tensor self, int dim, Tensor index) {
        return Dispatcher.call(IndexingOps.INDEX_SELECT, new Tensor[] {self, index}, dim);
    }

    /** {@code self.gather(dim, index)}: {@code out[i][j] = self[index[i][j]][j]} for dim 0; index is int64 ({@link IndexingOps#GATHER}). */
    public static Tensor gather(Tensor self, int dim, Tensor index) {
        return Dispatcher.call(IndexingOps.GATHER, new Tensor[] {self, index}, dim);
    }

    // ---------------------------------------------------------------- scatter

    /**
     * {@code self.scatter_(dim, index, src)} (or {@code scatter_add_} when {@code accumulate}):
     * {@code self[index[i][j]][j] = src[i][j]} for dim 0. Only the index-shaped corner of {@code src}
     * is read. Returns {@code self}.
     */
    public static Tensor scatterInPlace(Tensor self, int dim, Tensor index, Tensor src, boolean accumulate) {
        OpDef def = accumulate ? IndexingOps.SCATTER_ADD : IndexingOps.SCATTER;
        return withCorner(src, index, s -> Dispatcher.callInPlace(def, new Tensor[] {self, index, s}, dim));
    }

    /** {@code self.scatter_(dim, index, value)}: writes a scalar (converted to self's dtype) at the indexed places. */
    public static Tensor scatterValueInPlace(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.callInPlace(IndexingOps.SCATTER_VALUE, new Tensor[] {self, index}, dim, value);
    }

    /**
     * {@code self.scatter(dim, index, src)}, or {@code scatter_add} when {@code accumulate} ({@link IndexingOps#SCATTER},
     * {@link IndexingOps#SCATTER_ADD}), given the index-shaped corner of a larger {@code src}, so that the rest of it gets a
     * zero gradient.
     */
    public static Tensor scatter(Tensor self, int dim, Tensor index, Tensor src, boolean accumulate) {
        OpDef def = accumulate ? IndexingOps.SCATTER_ADD : IndexingOps.SCATTER;
        return withCorner(src, index, s -> Dispatcher.call(def, new Tensor[] {self, index, s}, dim));
    }

    /** {@code self.scatter(dim, index, value)} ({@link IndexingOps#SCATTER_VALUE}). */
    public static Tensor scatterValue(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.call(IndexingOps.SCATTER_VALUE, new Tensor[] {self, index}, dim, value);
    }

    /**
     * {@code body} of {@code src}, or of its index-shaped corner when {@code src} is larger than {@code index}: only the
     * corner is read, so that the rest of a larger {@code src} gets a zero gradient.
     */
    private static Tensor withCorner(Tensor src, Tensor index, java.util.function.UnaryOperator<Tensor> body) {
        if (!cornerNeeded(src, index)) return body.apply(src);
        Tensor corner = src.asStrided(index.shape(), src.strides(), src.storageOffset());
        try {
            return body.apply(corner);
        } finally {
            // a view in the graph stays referenced by its node
            if (!corner.requiresGrad()) corner.close();
        }
    }

    /** Whether {@code src} is larger than {@code index} (same rank, every size at least the index's) somewhere. */
    private static boolean cornerNeeded(Tensor src, Tensor index) {
        src.checkOpen("scatter_add");
        index.checkOpen("scatter_add");
        if (src.dim() != index.dim() || src.dim() == 0 || Arrays.equals(src.shape(), index.shape())) return false;
        for (int k = 0; k < src.dim(); k++) if (src.size(k) < index.size(k)) return false;
        return true;
    }

    // ---------------------------------------------------------------- index_add / index_copy / index_fill

    /** {@code self.index_add(dim, index, source, alpha)}: a copy of self with the slices added ({@link IndexingOps#INDEX_ADD}). */
    public static Tensor indexAdd(Tensor self, int dim, Tensor index, Tensor source, double alpha) {
        return Dispatcher.call(IndexingOps.INDEX_ADD, new Tensor[] {self, index, source}, dim, alpha);
    }

    /** {@code self.index_add_(dim, index, source, alpha)}: {@code self.select(dim, index[i]) += alpha * source.select(dim, i)}. */
    public static Tensor indexAddInPlace(Tensor self, int dim, Tensor index, Tensor source, double alpha) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_ADD, new Tensor[] {self, index, source}, dim, alpha);
    }

    /** {@code self.index_copy(dim, index, source)}: a copy of self with the slices written ({@link IndexingOps#INDEX_COPY}). */
    public static Tensor indexCopy(Tensor self, int dim, Tensor index, Tensor source) {
        return Dispatcher.call(IndexingOps.INDEX_COPY, new Tensor[] {self, index, source}, dim);
    }

    /** {@code self.index_copy_(dim, index, source)}: {@code self.select(dim, index[i]) = source.select(dim, i)}; index is int64. */
    public static Tensor indexCopyInPlace(Tensor self, int dim, Tensor index, Tensor source) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_COPY, new Tensor[] {self, index, source}, dim);
    }

    /** {@code self.index_fill_(dim, index, value)}; index is int64 and negative entries wrap, as PyTorch ({@link IndexingOps#INDEX_FILL}). */
    public static Tensor indexFillInPlace(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.callInPlace(IndexingOps.INDEX_FILL, new Tensor[] {self, index}, dim, value);
    }

    /** {@code self.index_fill(dim, index, value)} ({@link IndexingOps#INDEX_FILL}). */
    public static Tensor indexFill(Tensor self, int dim, Tensor index, double value) {
        return Dispatcher.call(IndexingOps.INDEX_FILL, new Tensor[] {self, index}, dim, value);
    }

    /** Out-of-place form of an in-place indexing op: runs {@code body} on a copy of {@code self}. */
    public static Tensor onCopy(Tensor self, java.util.function.UnaryOperator<Tensor> body) {
        Tensor r = self.clone();
        try {
            return body.apply(r);
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- masks

    /** {@code self.masked_fill(mask, value)}: the result has the broadcast shape of self and mask, self's dtype ({@link IndexingOps#MASKED_FILL}). */
    public static Tensor maskedFill(Tensor self, Tensor mask, double value) {
        return Dispatcher.call(IndexingOps.MASKED_FILL, new Tensor[] {self, mask}, value);
    }

    /** {@code self.masked_fill_(mask, value)}: the mask must broadcast to self's shape ({@link Dispatcher#callInPlace}). */
    public static Tensor maskedFillInPlace(Tensor self, Tensor mask, double value) {
        return Dispatcher.callInPlace(IndexingOps.MASKED_FILL, new Tensor[] {self, mask}, value);
    }

    /**
     * {@code self.masked_select(mask)}: the elements where the broadcast mask is true, as a 1-d tensor
     * ({@link IndexingOps#MASKED_SELECT}). The count of true elements, which fixes the result's size, is read here, on the host.
     */
    public static Tensor maskedSelect(Tensor self, Tensor mask) {
        String op = "masked_select";
        checkOpen(op, self, mask);
        long[] shape = Shapes.broadcast(op, self.shape(), mask.shape());
        // the meta function reports a mask of another device or dtype
        boolean countable = self.device().equals(mask.device()) && (mask.dtype() == DType.BOOL || mask.dtype() == DType.UINT8);
        // a trace must not fix the count: the JIT runs a function that reads one eagerly
        if (countable && Dispatcher.tracing()) Dispatcher.traceHostRead(mask, op);
        long count = countable ? kernels(mask.device()).countNonzero(view(mask).expand(op, shape)) : 0;
        return Dispatcher.call(IndexingOps.MASKED_SELECT, new Tensor[] {self, mask}, count);
    }

    /** {@code self.nonzero()}: int64 {@code [n, self.dim()]}, the coordinates of nonzero elements in row-major order. */
    public static Tensor nonzero(Tensor self) {
        String op = "nonzero";
        self.checkOpen(op);
        IndexKernels k = kernels(self.device());
        Tensor out = Tensor.empty(new long[] {k.countNonzero(view(self)), self.dim()}, DType.INT64, self.device());
        k.nonzero(view(self), view(out));
        return out;
    }

    /** {@code self.nonzero(as_tuple=True)} and {@code torch.where(condition)}: one int64 vector per dimension. */
    public static List<Tensor> nonzeroTuple(Tensor self) {
        if (self.dim() == 0) {
            try (Tensor v = self.unsqueeze(0)) {
                return nonzeroTuple(v);
            }
        }
        try (Tensor nz = nonzero(self)) {
            List<Tensor> r = new ArrayList<>(self.dim());
            for (int d = 0; d < self.dim(); d++) r.add(nz.select(1, d));
            return r;
        }
    }

    // ---------------------------------------------------------------- advanced indexing

    /**
     * {@code self[indices[0], indices[1], ...]} with NumPy/PyTorch advanced-indexing rules: entries
     * index the leading dimensions; {@code null} is a full slice {@code :}; int64 tensors broadcast
     * together and select (negative values count from the end); a bool (or uint8) tensor of k
     * dimensions covers k dimensions and selects where it is true. When the indexed dimensions are
     * adjacent, the broadcast index shape replaces them in place; otherwise it comes first. The
     * result is a new tensor, never a view.
     */
    public static Tensor index(Tensor self, Tensor... indices) {
        if (!Autograd.needsGrad(self)) return indexImpl(self, indices);
        Tensor out = withoutGrad(() -> indexImpl(self, indices));
        long[] shape = self.shape();
        SavedIndices si = new SavedIndices(indices);
        // self: zeros.index_put_(indices, grad, accumulate=True)
        return Autograd.record("IndexBackward0", out, g -> new Tensor[] {
                zerosOf(shape, g[0]).indexPut_(si.get(), g[0], true)}, new Tensor[] {self}, si.saved);
    }

    private static void checkIndexRanges(String op, Tensor[] indices, long[] sizes) {
        for (int k = 0; k < indices.length; k++) {
            if (indices[k].numel() == 0) continue;
            try (Tensor low = indices[k].amin(); Tensor high = indices[k].amax()) {
                long lo = low.itemLong(), hi = high.itemLong();
                long bad = lo < -sizes[k] ? lo : hi >= sizes[k] ? hi : Long.MIN_VALUE;
                if (bad != Long.MIN_VALUE) {
                    throw new IndexOutOfBoundsException(op + ": index " + bad + " is out of bounds for dimension with size " + sizes[k]);
                }
            }
        }
    }

    private static Tensor indexImpl(Tensor self, Tensor... indices) {
        String op = "index";
        try (AdvancedIndex ai = AdvancedIndex.of(op, self, indices)) {
            if (ai == null) return self.clone();
            Tensor out = Tensor.empty(ai.resultShape, self.dtype(), self.device());
            // The kernel checks the indices it visits; an empty result visits none, but PyTorch still checks them.
            if (out.numel() == 0) checkIndexRanges(op, ai.unexpanded, ai.sizes);
            try (Tensor src = ai.restrided(ai.self)) {
                kernels(self.device()).advancedIndex(view(src), views(ai.indices), ai.sizes, ai.strides, view(out));
            } catch (RuntimeException e) {
                out.close();
                throw e;
            }
            return out;
        }
    }

    /**
     * {@code self.index_put_(indices, values, accumulate)}: the places {@code self[indices]} selects
     * get {@code values} (broadcast to their shape), or have them added when {@code accumulate}
     * (duplicate indices then sum). {@code values} must have self's dtype.
     */
    public static Tensor indexPutInPlace(Tensor self, Tensor[] indices, Tensor values, boolean accumulate) {
        self.checkWritable("indexPut_");
        boolean selfGrad = self.requiresGrad();
        boolean valuesGrad = values.requiresGrad();
        if (!Autograd.needsGrad(self, values)) return indexPutImpl(self, indices, values, accumulate);
        Elementwise.checkInPlaceAllowed("indexPut_", self);
        withoutGrad(() -> indexPutImpl(self, indices, values, accumulate));
        long[] valuesShape = values.shape();
        DType valuesType = values.dtype();
        SavedIndices si = new SavedIndices(indices);
        // self: grad, with the written places zeroed unless accumulate; values: grad[indices] summed to values' shape
        return Autograd.record("IndexPutBackward0", self, g -> {
            Tensor selfGradient = null;
            if (selfGrad) {
                if (accumulate) {
                    selfGradient = g[0];
                } else {
                    try (Tensor zero = Torch.zeros(new long[0], g[0].dtype(), g[0].device())) {
                        selfGradient = g[0].indexPut(si.get(), zero, false);
                    }
                }
            }
            return new Tensor[] {selfGradient,
                    valuesGrad ? Gradients.sumTo(g[0].index(si.get()), valuesShape, valuesType) : null};
        }, new Tensor[] {self, values}, si.saved);
    }

    private static Tensor indexPutImpl(Tensor self, Tensor[] indices, Tensor values, boolean accumulate) {
        String op = "indexPut_";
        self.checkOpen(op);
        values.checkOpen(op);
        sameDevice(op, self, values);
        if (values.dtype() != self.dtype()) {
            throw new IllegalArgumentException(op + ": index put requires the source and destination dtypes match, got "
                    + self.dtype() + " for the destination and " + values.dtype() + " for the source");
        }
        self.checkNoOverlap(op, values);
        for (Tensor index : indices) {
            if (index != null) self.checkNoOverlap(op, index);
        }
        try (AdvancedIndex ai = AdvancedIndex.of(op, self, indices)) {
            if (ai == null) {
                if (accumulate) {
                    self.add_(values);
                } else {
                    self.copy_(values);
                }
                return self;
            }
            long[] b = Shapes.broadcast(op, ai.resultShape, values.shape());
            if (!Arrays.equals(b, ai.resultShape)) {
                throw new IllegalArgumentException(op + ": shape mismatch: value tensor of shape " + Shapes.format(values.shape())
                        + " cannot be broadcast to indexing result of shape " + Shapes.format(ai.resultShape));
            }
            try (Tensor dst = ai.restrided(ai.self)) {
                kernels(self.device()).indexPut(view(dst), views(ai.indices), ai.sizes, ai.strides,
                        view(values.broadcastTo(ai.resultShape)), accumulate);
            }
        }
        self.bumpVersion();
        return self;
    }

    /**
     * The geometry of one advanced-indexing call after PyTorch's normalisation: masks expanded into
     * int64 index tensors, indices broadcast together, indexed dimensions moved to be adjacent.
     * Holds the tensors it created (closed with it).
     */
    private static final class AdvancedIndex implements AutoCloseable {
        /** Self, with the indexed dimensions adjacent (a view: possibly permuted). */
        Tensor self;
        /** First indexed dimension of {@link #self}. */
        int start;
        /** Index tensors restrided to the result shape. */
        Tensor[] indices;
        /** The index tensors before restriding to the result's shape (whose other dims may be empty). */
        Tensor[] unexpanded;
        long[] sizes;
        long[] strides;
        long[] resultShape;
        private final List<Tensor> owned = new ArrayList<>();

        /** Null when no entry is a tensor (the whole tensor is selected). */
        static AdvancedIndex of(String op, Tensor self, Tensor[] entries) {
            self.checkOpen(op);
            AdvancedIndex ai = new AdvancedIndex();
            try {
                return ai.build(op, self, entries) ? ai : closeAndNull(ai);
            } catch (RuntimeException e) {
                ai.close();
                throw e;
            }
        }

        private static AdvancedIndex closeAndNull(AdvancedIndex ai) {
            ai.close();
            return null;
        }

        private boolean build(String op, Tensor base, Tensor[] entries) {
            Tensor src = own(base.alias());
            // 1. Expand masks into int64 index tensors, one per dimension they cover.
            List<Tensor> expanded = new ArrayList<>();
            int consumed = 0;
            for (int e = 0; e < entries.length; e++) {
                Tensor t = entries[e];
                if (t == null) {
                    expanded.add(null);
                    consumed++;
                    continue;
                }
                t.checkOpen(op);
                sameDevice(op, base, t);
                if (t.dtype() == DType.BOOL || t.dtype() == DType.UINT8) {
                    if (t.dim() == 0) {
                        // A 0-d mask adds a dimension of size 1 and keeps (true) or drops (false) it, as PyTorch.
                        src = own(src.unsqueeze(consumed));
                        boolean keep = t.item() != 0;
                        expanded.add(own(keep ? org.jtorch.Torch.zeros(new long[] {1}, DType.INT64, base.device())
                                : Tensor.empty(new long[] {0}, DType.INT64, base.device())));
                        consumed++;
                        continue;
                    }
                    if (consumed + t.dim() > src.dim()) throw tooMany(op, base, entries);
                    for (int k = 0; k < t.dim(); k++) {
                        if (t.size(k) != src.size(consumed + k)) {
                            throw new IndexOutOfBoundsException(op + ": the shape of the mask " + Shapes.format(t.shape())
                                    + " at index " + k + " does not match the shape of the indexed tensor "
                                    + Shapes.format(src.shape()) + " at index " + (consumed + k));
                        }
                    }
                    Tensor nz = own(nonzero(t));
                    for (int k = 0; k < t.dim(); k++) expanded.add(own(nz.select(1, k)));
                    consumed += t.dim();
                } else if (t.dtype() == DType.INT64) {
                    expanded.add(t);
                    consumed++;
                } else {
                    throw new IllegalArgumentException(op + ": tensors used as indices must be long, byte or bool tensors, got "
                            + t.dtype());
                }
                if (consumed > src.dim()) throw tooMany(op, base, entries);
            }
            if (consumed > src.dim()) throw tooMany(op, base, entries);
            while (expanded.size() < src.dim()) expanded.add(null);

            // 2. Broadcast the index tensors together.
            long[] b = null;
            int count = 0;
            for (Tensor t : expanded) {
                if (t == null) continue;
                b = b == null ? t.shape() : Shapes.broadcast(op, b, t.shape());
                count++;
            }
            if (count == 0) return false;

            // 3. Move the indexed dimensions to the front when they are not adjacent.
            int first = -1;
            int last = -1;
            for (int d = 0; d < expanded.size(); d++) {
                if (expanded.get(d) != null) {
                    if (first < 0) first = d;
                    last = d;
                }
            }
            if (last - first + 1 != count) {
                int[] perm = new int[expanded.size()];
                List<Tensor> moved = new ArrayList<>();
                int j = 0;
                for (int d = 0; d < expanded.size(); d++) {
                    if (expanded.get(d) != null) {
                        perm[j++] = d;
                        moved.add(expanded.get(d));
                    }
                }
                for (int d = 0; d < expanded.size(); d++) {
                    if (expanded.get(d) == null) {
                        perm[j++] = d;
                        moved.add(null);
                    }
                }
                src = own(src.permute(perm));
                expanded = moved;
                first = 0;
            }

            // 4. Geometry: result = src.shape[:first] + b + src.shape[first+count:].
            long[] sShape = src.shape();
            long[] sStrides = src.strides();
            int before = first;
            int after = sShape.length - first - count;
            resultShape = new long[before + b.length + after];
            for (int d = 0; d < before; d++) resultShape[d] = sShape[d];
            System.arraycopy(b, 0, resultShape, before, b.length);
            for (int d = 0; d < after; d++) resultShape[before + b.length + d] = sShape[first + count + d];
            indices = new Tensor[count];
            unexpanded = new Tensor[count];
            sizes = new long[count];
            strides = new long[count];
            for (int k = 0; k < count; k++) {
                Tensor t = expanded.get(first + k);
                long[] bs = Shapes.broadcastStrides("index", t.shape(), t.strides(), b);
                long[] st = new long[resultShape.length];
                System.arraycopy(bs, 0, st, before, b.length);
                indices[k] = own(t.asStrided(resultShape, st, t.storageOffset()));
                unexpanded[k] = t;
                sizes[k] = sShape[first + k];
                strides[k] = sStrides[first + k];
            }
            self = src;
            start = first;
            return true;
        }

        /** {@code t} (this.self) viewed with the result shape: its own strides outside, 0 across the index dimensions. */
        Tensor restrided(Tensor t) {
            long[] st = t.strides();
            int count = indices.length;
            long[] r = new long[resultShape.length];
            int bLen = resultShape.length - (st.length - count);
            for (int d = 0; d < start; d++) r[d] = st[d];
            for (int d = start + count; d < st.length; d++) r[d - count + bLen] = st[d];
            return t.asStrided(resultShape, r, t.storageOffset());
        }

        private Tensor own(Tensor t) {
            owned.add(t);
            return t;
        }

        private static IndexOutOfBoundsException tooMany(String op, Tensor base, Tensor[] entries) {
            return new IndexOutOfBoundsException(op + ": too many indices for tensor of dimension " + base.dim()
                    + " (got " + entries.length + " index entries)");
        }

        @Override
        public void close() {
            for (Tensor t : owned) t.close();
            owned.clear();
        }
    }

    // ---------------------------------------------------------------- autograd helpers

    /** Runs a forward body with grad mode off, so that the views and recursion inside it record nothing. */
    private static Tensor withoutGrad(java.util.function.Supplier<Tensor> body) {
        try (Grad.Mode m = Grad.noGrad()) {
            return body.get();
        }
    }

    /** Zeros of {@code shape} with the gradient's dtype and device. */
    private static Tensor zerosOf(long[] shape, Tensor g) {
        return Torch.zeros(shape, g.dtype(), g.device());
    }

    /** The non-null entries of an advanced index, saved for backward, and the list rebuilt from them. */
    private static final class SavedIndices {
        final SavedTensor[] saved;
        private final int[] positions;
        private final int length;

        SavedIndices(Tensor[] indices) {
            length = indices.length;
            int n = 0;
            for (Tensor t : indices) if (t != null) n++;
            saved = new SavedTensor[n];
            positions = new int[n];
            n = 0;
            for (int i = 0; i < indices.length; i++) {
                if (indices[i] == null) continue;
                positions[n] = i;
                saved[n++] = Autograd.save(indices[i]);
            }
        }

        Tensor[] get() {
            Tensor[] r = new Tensor[length];
            for (int k = 0; k < saved.length; k++) r[positions[k]] = saved[k].get();
            return r;
        }
    }

    // ---------------------------------------------------------------- helpers

    static IndexKernels kernels(Device device) {
        return Backends.of(device).indexing();
    }

    private static void checkOpen(String op, Tensor a, Tensor b) {
        a.checkOpen(op);
        b.checkOpen(op);
    }

    private static Device sameDevice(String op, Tensor a, Tensor b) {
        if (!a.device().equals(b.device())) {
            throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found "
                    + a.device() + " and " + b.device());
        }
        return a.device();
    }

    private static StridedView[] views(Tensor[] ts) {
        StridedView[] v = new StridedView[ts.length];
        for (int i = 0; i < v.length; i++) v[i] = view(ts[i]);
        return v;
    }
}
