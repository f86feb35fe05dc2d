package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.op.OpDef;
import org.jtorch.op.RandomOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.SortingOps;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;

/**
 * Sorting, selection and sampling with PyTorch 1.13's semantics: {@code sort}, {@code argsort}, {@code msort},
 * {@code topk}, {@code kthvalue}, {@code median}, {@code mode}, {@code unique}, {@code searchsorted},
 * {@code bucketize}, {@code multinomial} and {@code bernoulli}.
 *
 * <p>Two backend primitives do the work: {@link org.jtorch.backend.ReductionKernels#argsort} (a stable sort along a
 * dim, optionally only its first k positions) and {@link org.jtorch.backend.ReductionKernels#searchsorted} (PyTorch's
 * binary search); everything else is composed from them and existing ops, so a device with the two has every op
 * here. CPU: lines of dtypes up to 32 bits sort packed (key, position) longs, selecting the first k when fewer are
 * asked; 64-bit dtypes use an LSD radix sort. CUDA: one block a line runs a bitonic network over (key, position)
 * pairs in global scratch (O(n log^2 n) work, so a single very long line, e.g. a 1-D argsort of millions, runs in
 * one block and is slow; many rows of moderate length are what it is for). Values are always
 * {@code x.gather(dim, indices)}: their gradient is the incoming gradient scattered to the selected positions, as
 * PyTorch's SortBackward/TopkBackward/... (recorded as GatherBackward).
 *
 * <p>Order: NaN is larger than every number (last ascending, first descending); equal elements keep their order
 * (every sort is stable, which {@code stable=false} allows). Where PyTorch leaves a choice unspecified, jtorch's
 * answer is the stable one: {@code topk} and {@code kthvalue} pick among equal values by position (first ones
 * ascending, and descending too), {@code topk(sorted=false)} and {@code unique(sorted=false)} still return sorted
 * results, {@code median} picks the lower middle of the stable order and {@code mode} the last position of its
 * value (as PyTorch 1.13's CPU kernel). {@code unique} gives every NaN its own entry with count 1 (PyTorch 1.13's
 * CPU result for NaN is inconsistent: counts of 0, every inverse pointing at the first value); {@code unique} along
 * a dim sorts the slices lexicographically by one stable sort per column of the flattened slices.
 */
public final class Sorting {
    private Sorting() {}

    /** The result of {@code torch.unique}: the sorted distinct values, and when asked for the inverse indices and counts (else null). */
    public record Unique(Tensor values, Tensor inverse, Tensor counts) implements AutoCloseable {
        @Override
        public void close() {
            values.close();
            if (inverse != null) inverse.close();
            if (counts != null) counts.close();
        }
    }

    // ---------------------------------------------------------------- sort

    /** {@code torch.sort(x, dim, descending, stable)}; the sort is always stable. */
    public static ValuesIndices sort(Tensor x, int dim, boolean descending, boolean stable) {
        int d = along("sort", x, dim);
        Tensor indices = sortedPositions(x, d, descending);
        return new ValuesIndices(x.gather(d, indices), indices);
    }

    /** {@code torch.argsort(x, dim, descending, stable)}: the indices of {@link #sort}. */
    public static Tensor argsort(Tensor x, int dim, boolean descending, boolean stable) {
        return sortedPositions(x, along("argsort", x, dim), descending);
    }

    /** {@code torch.msort(x)}: the values sorted along dim 0. */
    public static Tensor msort(Tensor x) {
        int d = along("msort", x, 0);
        try (Tensor indices = sortedPositions(x, d, false)) {
            return x.gather(d, indices);
        }
    }

    /** {@code torch.topk(x, k, dim, largest, sorted)}: the k largest (or smallest) along dim, always in sorted order. */
    public static ValuesIndices topk(Tensor x, long k, int dim, boolean largest, boolean sorted) {
        int d = along("topk", x, dim);
        long n = lineLength(x, d);
        if (k < 0 || k > n) {
            throw new IllegalArgumentException("topk(): selected index k out of range (k = " + k + ", size " + n
                    + " along dim " + dim + " of input shape " + Shapes.format(x.shape()) + ")");
        }
        if (x.dim() == 0) return ofScalar(x, (line, ld) -> topk(line, k, ld, largest, sorted));
        Tensor indices = sortedPositions(x, d, largest, k);
        return new ValuesIndices(x.gather(d, indices), indices);
    }

    /** {@code torch.kthvalue(x, k, dim, keepdim)}: the k-th smallest (1-based) along dim. */
    public static ValuesIndices kthvalue(Tensor x, long k, int dim, boolean keepdim) {
        int d = along("kthvalue", x, dim);
        long n = lineLength(x, d);
        if (k < 1 || k > n) {
            throw new IllegalArgumentException("kthvalue(): selected number k out of range for dimension " + dim
                    + " (k = " + k + ", size " + n + ", input shape " + Shapes.format(x.shape()) + ")");
        }
        if (x.dim() == 0) return ofScalar(x, (line, ld) -> kthvalue(line, k, ld, true));
        Tensor indices;
        try (Tensor first = sortedPositions(x, d, false, k); Tensor kth = first.narrow(d, k - 1, 1)) {
            indices = kth.contiguous();
        }
        return selected(x, d, indices, keepdim);
    }

    /**
     * {@code torch.median(x, dim, keepdim)}: the lower of the two middle values along dim; a line holding NaN gives
     * NaN and the position of its first NaN, as PyTorch.
     */
    public static ValuesIndices median(Tensor x, int dim, boolean keepdim) {
        int d = along("median", x, dim);
        long n = nonEmptyLine("median", x, d, dim);
        if (x.dim() == 0) return ofScalar(x, (line, ld) -> median(line, ld, true));
        long middle = (n - 1) / 2;
        Tensor indices;
        try (Tensor first = sortedPositions(x, d, false, middle + 1); Tensor lower = first.narrow(d, middle, 1)) {
            indices = x.dtype().isFloatingPoint() ? firstNanOr(x, d, lower) : lower.contiguous();
        }
        return selected(x, d, indices, keepdim);
    }

    /** {@code torch.median(x)}: the lower middle value of all elements (0-d); NaN if any element is NaN, NaN for an empty tensor. */
    public static Tensor median(Tensor x) {
        Arguments.nonNull("median", "x", x);
        x.checkOpen("median");
        checkSortable("median", x);
        if (x.numel() == 0) return Torch.full(new long[0], Double.NaN, x.dtype(), x.device());
        try (Tensor flat = x.reshape(-1); ValuesIndices m = median(flat, 0, false)) {
            return m.values().alias();
        }
    }

    /** Keepdim positions along d: each line's first NaN if it has one, else {@code positions}' (as PyTorch's median). */
    private static Tensor firstNanOr(Tensor x, int d, Tensor positions) {
        try (Grad.Mode m = Grad.noGrad(); Tensor nan = x.isnan(); Tensor nanBytes = nan.to(DType.UINT8);
             Tensor firstNan = nanBytes.argmax(d, true); Tensor hasNan = nan.any(new int[] {d}, true)) {
            return Torch.where(hasNan, firstNan, positions);
        }
    }

    /**
     * {@code torch.mode(x, dim, keepdim)}: the most frequent value along dim (the smallest on ties) and the last
     * position of that value, as PyTorch 1.13's CPU kernel. NaNs never equal each other.
     */
    public static ValuesIndices mode(Tensor x, int dim, boolean keepdim) {
        int d = along("mode", x, dim);
        long n = nonEmptyLine("mode", x, d, dim);
        if (x.dim() == 0) return ofScalar(x, (line, ld) -> mode(line, ld, true));
        Tensor indices;
        try (Grad.Mode m = Grad.noGrad(); Tensor order = sortedPositions(x, d, false); Tensor sorted = x.gather(d, order);
             Tensor starts = runStarts(sorted, d); Tensor runs = starts.cumsum(d); Tensor runIds = runs.sub(1);
             Tensor ones = Torch.ones(x.shape(), DType.INT64, x.device());
             Tensor counts = Torch.zeros(x.shape(), DType.INT64, x.device()).scatterAdd_(d, runIds, ones);
             Tensor best = counts.argmax(d, true); Tensor ends = counts.cumsum(d); Tensor bestEnd = ends.gather(d, best);
             Tensor last = bestEnd.sub(1)) {
            indices = order.gather(d, last);
        }
        return selected(x, d, indices, keepdim);
    }

    // ---------------------------------------------------------------- unique

    /** {@code torch.unique(x, sorted, return_inverse, return_counts)} over all elements: the values are always sorted. */
    public static Unique unique(Tensor x, boolean sorted, boolean returnInverse, boolean returnCounts) {
        Arguments.nonNull("unique", "x", x);
        x.checkOpen("unique");
        checkSortable("unique", x);
        long n = x.numel();
        try (Grad.Mode m = Grad.noGrad()) {
            if (n == 0) {
                return new Unique(Tensor.empty(new long[] {0}, x.dtype(), x.device()),
                        returnInverse ? Tensor.empty(x.shape(), DType.INT64, x.device()) : null,
                        returnCounts ? Tensor.empty(new long[] {0}, DType.INT64, x.device()) : null);
            }
            try (Tensor flat = x.reshape(-1); Tensor order = sortedPositions(flat, 0, false); Tensor sortedValues = flat.gather(0, order);
                 Tensor starts = runStarts(sortedValues, 0); Tensor runs = starts.cumsum(0); Tensor runIds = runs.sub(1)) {
                Tensor values = sortedValues.maskedSelect(starts);
                Tensor inverse = null, counts = null;
                if (returnInverse) {
                    try (Tensor inv = Tensor.empty(new long[] {n}, DType.INT64, x.device())) {
                        inv.scatter_(0, order, runIds);
                        inverse = inv.reshape(x.shape());
                    }
                }
                if (returnCounts) {
                    try (Tensor ones = Torch.ones(new long[] {n}, DType.INT64, x.device())) {
                        counts = Torch.zeros(values.shape(), DType.INT64, x.device()).scatterAdd_(0, runIds, ones);
                    }
                }
                return new Unique(values, inverse, counts);
            }
        }
    }

    /**
     * {@code torch.unique(x, dim=dim, return_inverse, return_counts)}: the distinct slices along {@code dim}, sorted
     * lexicographically (their elements compared in row-major order); the inverse maps each slice of x to its row
     * of the result. Slices holding NaN never equal each other.
     */
    public static Unique unique(Tensor x, int dim, boolean returnInverse, boolean returnCounts) {
        Arguments.nonNull("unique", "x", x);
        x.checkOpen("unique");
        int d = Shapes.wrapDim("unique", dim, x.dim());
        if (x.dim() == 0) throw new IllegalArgumentException("unique(): Dimension specified as " + dim + " but tensor has no dimensions");
        long n = x.size(d), width = 1;
        for (int i = 0; i < x.dim(); i++) {
            if (i != d) width *= x.size(i);
            if (i != d && x.size(i) == 0) {
                throw new IllegalArgumentException("unique(): There are 0 sized dimensions, and they aren't selected, so unique cannot"
                        + " be applied (input shape " + Shapes.format(x.shape()) + ", dim " + dim + ")");
            }
        }
        try (Grad.Mode m = Grad.noGrad(); Tensor front = x.permute(toFront(x.dim(), d)); Tensor rows = front.reshape(n, width)) {
            if (n == 0) {
                return new Unique(x.detach().clone(), returnInverse ? Tensor.empty(new long[] {0}, DType.INT64, x.device()) : null,
                        returnCounts ? Tensor.empty(new long[] {0}, DType.INT64, x.device()) : null);
            }
            // Lexicographic order of the rows: stable sorts by each column, last column first.
            Tensor lexicographic = Torch.arange(0, n, 1).to(x.device());
            for (long c = rows.size(1) - 1; c >= 0; c--) {
                try (Tensor column = rows.select(1, c); Tensor permuted = column.gather(0, lexicographic);
                     Tensor by = sortedPositions(permuted, 0, false); Tensor previous = lexicographic) {
                    lexicographic = previous.gather(0, by);
                }
            }
            Tensor order = lexicographic;
            try (order; Tensor sortedRows = rows.indexSelect(0, order); Tensor next = sortedRows.narrow(0, 1, n - 1);
                 Tensor prev = sortedRows.narrow(0, 0, n - 1); Tensor differ = next.ne(prev); Tensor anyDiffer = differ.any(new int[] {1}, false);
                 Tensor first = Torch.ones(new long[] {1}, DType.BOOL, x.device()); Tensor starts = Torch.cat(new Tensor[] {first, anyDiffer}, 0);
                 Tensor runs = starts.cumsum(0); Tensor runIds = runs.sub(1); Tensor startPositions = starts.nonzero(); Tensor firsts = startPositions.reshape(-1);
                 Tensor uniqueRows = sortedRows.indexSelect(0, firsts)) {
                long[] shape = front.shape().clone();
                shape[0] = firsts.size(0);
                Tensor values;
                try (Tensor unflat = uniqueRows.reshape(shape); Tensor back = unflat.permute(fromFront(x.dim(), d))) {
                    values = back.contiguous();
                }
                Tensor inverse = null, counts = null;
                if (returnInverse) inverse = Tensor.empty(new long[] {n}, DType.INT64, x.device()).scatter_(0, order, runIds);
                if (returnCounts) {
                    try (Tensor ones = Torch.ones(new long[] {n}, DType.INT64, x.device())) {
                        counts = Torch.zeros(new long[] {firsts.size(0)}, DType.INT64, x.device()).scatterAdd_(0, runIds, ones);
                    }
                }
                return new Unique(values, inverse, counts);
            }
        }
    }

    /** The permutation moving dimension d of a rank-r tensor to the front, the others in order. */
    private static int[] toFront(int rank, int d) {
        int[] perm = new int[rank];
        perm[0] = d;
        for (int i = 0, j = 1; i < rank; i++) if (i != d) perm[j++] = i;
        return perm;
    }

    /** The inverse of {@link #toFront}. */
    private static int[] fromFront(int rank, int d) {
        int[] toFront = toFront(rank, d), inverse = new int[rank];
        for (int i = 0; i < rank; i++) inverse[toFront[i]] = i;
        return inverse;
    }

    /** Bool, along d, true where a sorted line's element differs from the one before it (and at each line's start). */
    private static Tensor runStarts(Tensor sorted, int d) {
        long n = sorted.size(d);
        long[] firstShape = sorted.shape().clone();
        firstShape[d] = 1;
        try (Tensor first = Torch.ones(firstShape, DType.BOOL, sorted.device());
             Tensor next = sorted.narrow(d, 1, n - 1); Tensor prev = sorted.narrow(d, 0, n - 1); Tensor differs = next.ne(prev)) {
            return Torch.cat(new Tensor[] {first, differs}, d);
        }
    }

    // ---------------------------------------------------------------- searchsorted, bucketize

    /**
     * {@code torch.searchsorted(sortedSequence, values, out_int32, right, sorter)}: for each value, the number of
     * boundaries below it ({@code right}: not above it) in its row of {@code sortedSequence} (1-D, or with the same
     * leading dims as {@code values}); {@code sorter} (int64, may be null) sorts an unsorted sequence.
     */
    public static Tensor searchsorted(Tensor sortedSequence, Tensor values, boolean outInt32, boolean right, Tensor sorter) {
        return searchsorted(sortedSequence, values, outInt32, right, null, sorter);
    }

    /**
     * {@code torch.searchsorted(sortedSequence, values, out_int32=, right=, side=, sorter=)}: {@code side} is null,
     * {@code "left"} or {@code "right"} (the same as {@code right = true}); as in PyTorch, {@code side = "left"} with
     * {@code right = true} is an error rather than one of them winning.
     */
    public static Tensor searchsorted(Tensor sortedSequence, Tensor values, boolean outInt32, boolean right, String side,
                                      Tensor sorter) {
        Arguments.nonNull("searchsorted", "sortedSequence", sortedSequence);
        Arguments.nonNull("searchsorted", "values", values);
        if (side != null) {
            if (!side.equals("left") && !side.equals("right")) {
                throw new IllegalArgumentException("torch.searchsorted(): side can only be 'left' or 'right' but got '" + side + "'");
            }
            if (side.equals("left") && right) {
                throw new IllegalArgumentException("torch.searchsorted(): side and right can't be set to opposites, got side of left"
                        + " while right was True");
            }
            right = side.equals("right");
        }
        boolean upper = right;
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(SortingOps.SEARCHSORTED, new Tensor[] {sortedSequence, values, sorter},
                    new double[] {outInt32 ? 1 : 0, upper ? 1 : 0}, t -> searchsortedOf(t[0], t[1], outInt32, upper, t[2]));
        }
        return searchsortedOf(sortedSequence, values, outInt32, upper, sorter);
    }

    private static Tensor searchsortedOf(Tensor sortedSequence, Tensor values, boolean outInt32, boolean right, Tensor sorter) {
        String op = "searchsorted";
        sortedSequence.checkOpen(op);
        values.checkOpen(op);
        if (sorter != null) sorter.checkOpen(op);
        Dispatcher.sameDevice(SortingOps.SEARCHSORTED, sortedSequence, values, sorter);
        long[] bs = sortedSequence.shape(), vs = values.shape();
        boolean leadingMatch = bs.length == vs.length && bs.length > 0;
        for (int i = 0; leadingMatch && i < bs.length - 1; i++) leadingMatch = bs[i] == vs[i];
        if (bs.length != 1 && !leadingMatch) {
            throw new IllegalArgumentException("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                    + "dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                    + Shapes.format(bs) + " and input value tensor " + Shapes.format(vs));
        }
        checkSortable(op, sortedSequence);
        checkSortable(op, values);
        if (sorter != null) {
            if (sorter.dtype() != DType.INT64) {
                throw new IllegalArgumentException("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype " + sorter.dtype());
            }
            if (!java.util.Arrays.equals(sorter.shape(), bs)) {
                throw new IllegalArgumentException("torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor "
                        + Shapes.format(bs) + " and got sorter tensor " + Shapes.format(sorter.shape()));
            }
        }
        DType common = TypePromotion.resultType(sortedSequence, values);
        // Rows of boundaries and of values: one boundary row for all values, or one per leading index.
        long n = bs[bs.length - 1];
        long boundaryRows = leadingProduct(bs), valueRows = bs.length == 1 ? 1 : leadingProduct(vs);
        long m = bs.length == 1 ? values.numel() : vs[vs.length - 1];
        try (Grad.Mode g = Grad.noGrad();
             Tensor seq = sorter == null ? sortedSequence.alias() : sortedSequence.gather(bs.length - 1, sorter);
             Tensor seqTyped = seq.to(common); Tensor seqContiguous = seqTyped.contiguous(); Tensor b2 = seqContiguous.reshape(boundaryRows, n);
             Tensor valuesTyped = values.to(common); Tensor valuesContiguous = valuesTyped.contiguous();
             Tensor v2 = valuesContiguous.reshape(valueRows, m);
             Tensor out = Dispatcher.call(SortingOps.SEARCHSORTED_ROWS, new Tensor[] {b2, v2}, right ? 1 : 0)) {
            try (Tensor shaped = out.reshape(vs)) {
                return outInt32 ? shaped.to(DType.INT32) : shaped.alias();
            }
        }
    }

    private static long leadingProduct(long[] shape) {
        long p = 1;
        for (int i = 0; i < shape.length - 1; i++) p *= shape[i];
        return p;
    }

    /** {@code torch.bucketize(x, boundaries, out_int32, right)}: {@link #searchsorted} of x into 1-D boundaries. */
    public static Tensor bucketize(Tensor x, Tensor boundaries, boolean outInt32, boolean right) {
        Arguments.nonNull("bucketize", "x", x);
        Arguments.nonNull("bucketize", "boundaries", boundaries);
        if (boundaries.dim() != 1) {
            throw new IllegalArgumentException("bucketize(): boundaries tensor must be 1 dimension, but got dim(" + boundaries.dim() + ")");
        }
        return searchsorted(boundaries, x, outInt32, right, null);
    }

    // ---------------------------------------------------------------- sampling

    /**
     * {@code torch.multinomial(probs, numSamples, replacement, generator)}: category indices (int64) drawn from each
     * row of the 1-D or 2-D non-negative weights ({@link RandomOps#MULTINOMIAL}: its kernel checks the weights and draws).
     */
    public static Tensor multinomial(Tensor probs, long numSamples, boolean replacement, Generator generator) {
        Arguments.nonNull("multinomial", "probs", probs);
        Arguments.nonNull("multinomial", "generator", generator);
        try (Grad.Mode m = Grad.noGrad()) {
            return Dispatcher.call(RandomOps.MULTINOMIAL, new Tensor[] {probs}, numSamples, replacement ? 1 : 0, generator.id());
        }
    }

    /** {@code torch.bernoulli(p, generator)}: 1 with probability p, elementwise, in p's (floating) dtype; p in [0, 1]. */
    public static Tensor bernoulli(Tensor p, Generator generator) {
        Arguments.nonNull("bernoulli", "p", p);
        Arguments.nonNull("bernoulli", "generator", generator);
        p.checkOpen("bernoulli");
        // The kernel refuses probabilities outside [0, 1]: at the call on the CPU, at the next synchronisation on a device.
        try (Grad.Mode m = Grad.noGrad()) {
            return Dispatcher.call(RandomOps.BERNOULLI, new Tensor[] {p}, generator.id());
        }
    }

    /** {@code torch.bernoulli(x, p, generator)}: a tensor of x's shape, dtype and device, 1 with probability p. */
    public static Tensor bernoulli(Tensor x, double p, Generator generator) {
        Arguments.nonNull("bernoulli", "x", x);
        Arguments.nonNull("bernoulli", "generator", generator);
        x.checkOpen("bernoulli");
        try (Grad.Mode m = Grad.noGrad()) {
            return Dispatcher.call(RandomOps.BERNOULLI_P, new Tensor[] {x}, p, generator.id());
        }
    }

    /** {@code self.bernoulli_(p, generator)}: self filled with 1 with probability p, else 0 ({@code bernoulli_.float}). */
    public static Tensor bernoulli_(Tensor self, double p, Generator generator) {
        return fill("bernoulli_", RandomOps.BERNOULLI_P, self, generator, p);
    }

    /** {@code self.bernoulli_(p, generator)} with a tensor of probabilities broadcast to self ({@code bernoulli_.Tensor}). */
    public static Tensor bernoulli_(Tensor self, Tensor p, Generator generator) {
        Arguments.nonNull("bernoulli_", "self", self);
        Arguments.nonNull("bernoulli_", "p", p);
        Arguments.nonNull("bernoulli_", "generator", generator);
        return Dispatcher.callInPlace(RandomOps.BERNOULLI_TENSOR, new Tensor[] {self, p}, generator.id());
    }

    /**
     * Runs the random fill {@code op} in place on {@code self} with {@code scalars} and the generator's id; outside
     * autograd's view of self's values, as PyTorch's in-place samplers (an earlier history of self is kept by its node).
     */
    public static Tensor fill(String name, OpDef op, Tensor self, Generator generator, double... scalars) {
        Arguments.nonNull(name, "self", self);
        Arguments.nonNull(name, "generator", generator);
        double[] s = java.util.Arrays.copyOf(scalars, scalars.length + 1);
        s[scalars.length] = generator.id();
        return Dispatcher.callInPlace(op, new Tensor[] {self}, s);
    }

    // ---------------------------------------------------------------- helpers

    /** Validates the op's input and wraps dim (a 0-d tensor accepts 0 and -1). */
    private static int along(String op, Tensor x, int dim) {
        Arguments.nonNull(op, "x", x);
        x.checkOpen(op);
        checkSortable(op, x);
        return Shapes.wrapDim(op, dim, x.dim());
    }

    /** Bool tensors sort, but PyTorch 1.13 has no bool kernel for the selections or for searchsorted. */
    private static void checkSortable(String op, Tensor x) {
        if (x.dtype() == DType.BOOL && !java.util.Set.of("sort", "argsort", "msort", "mode", "unique").contains(op)) {
            throw new IllegalArgumentException(op + "(): not implemented for bool tensors (input shape " + Shapes.format(x.shape()) + ")");
        }
    }

    /** A selection of a 0-d tensor: {@code op} on it as a 1-element line (dim 0, keepdim), the results back as 0-d. */
    private static ValuesIndices ofScalar(Tensor x, java.util.function.BiFunction<Tensor, Integer, ValuesIndices> op) {
        try (Tensor line = x.reshape(1); ValuesIndices r = op.apply(line, 0)) {
            return new ValuesIndices(r.values().reshape(), r.indices().reshape());
        }
    }

    /** The line length along d, which must not be 0 (PyTorch's message). */
    private static long nonEmptyLine(String op, Tensor x, int d, int dim) {
        long n = lineLength(x, d);
        if (n == 0) {
            throw new IllegalArgumentException(op + "(): Expected reduction dim " + dim + " to have non-zero size"
                    + " (input shape " + Shapes.format(x.shape()) + ")");
        }
        return n;
    }

    private static long lineLength(Tensor x, int d) {
        return x.dim() == 0 ? 1 : x.size(d);
    }

    /** Positions (int64, x's shape) of each line's elements along d in stable sorted order. */
    private static Tensor sortedPositions(Tensor x, int d, boolean descending) {
        return sortedPositions(x, d, descending, lineLength(x, d));
    }

    /** The first k of {@link #sortedPositions(Tensor, int, boolean)} along d (a backend may select them without a full sort). */
    private static Tensor sortedPositions(Tensor x, int d, boolean descending, long k) {
        return Dispatcher.call(SortingOps.SORT_INDICES, new Tensor[] {x}, d, descending ? 1 : 0, k);
    }

    /** The values at keepdim-shaped {@code indices} along d (differentiable through gather), squeezed unless keepdim. */
    private static ValuesIndices selected(Tensor x, int d, Tensor indices, boolean keepdim) {
        Tensor values = x.gather(d, indices);
        if (keepdim || x.dim() == 0) return new ValuesIndices(values, indices);
        try (values; indices) {
            return new ValuesIndices(values.squeeze(d), indices.squeeze(d));
        }
    }
}
