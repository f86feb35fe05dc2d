package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * Ops that move, repeat or mask elements by their position, with PyTorch 1.13's semantics: {@code flip},
 * {@code fliplr}, {@code flipud}, {@code roll}, {@code rot90}, {@code repeat}, {@code tile},
 * {@code repeat_interleave}, {@code tril}, {@code triu}, {@code diag}, {@code diagonal} and {@code trace}.
 *
 * <p>Each is a composition of existing ops (views, index_select, cat, where), so it runs on every device
 * and differentiates through its parts. Each composition runs in its own {@link MemoryScope}, so its
 * intermediates are released at once. {@code diagonal} is a view, as PyTorch's; the others return new
 * tensors.
 */
public final class Rearranging {
    private Rearranging() {}

    /** {@code torch.flip(x, dims)}: reverses the order of elements along each of {@code dims}. */
    public static Tensor flip(Tensor x, int... dims) {
        Arguments.nonNull("flip", "dims", dims);
        x.checkOpen("flip");
        boolean[] seen = new boolean[Math.max(1, x.dim())];
        for (int dim : dims) {
            int d = Shapes.wrapDim("flip", dim, x.dim());
            if (seen[d]) throw new IllegalArgumentException("flip: dim " + d + " appears multiple times in the list of dims " + Arrays.toString(dims));
            seen[d] = true;
        }
        try (MemoryScope scope = new MemoryScope()) {
            Tensor r = x;
            for (int dim : dims) {
                if (x.dim() == 0) break;
                int d = Shapes.wrapDim("flip", dim, x.dim());
                long n = x.size(d);
                Tensor reversed = Torch.arange(n - 1, -1, -1, DType.INT64, x.device());
                r = r.indexSelect(d, reversed);
            }
            return scope.keep(r == x ? x.clone() : r);
        }
    }

    /** {@code torch.fliplr}: flips dim 1 of a tensor of at least 2 dims. */
    public static Tensor fliplr(Tensor x) {
        if (x.dim() < 2) throw new IllegalArgumentException("fliplr: input must be >= 2-d, got shape " + Shapes.format(x.shape()));
        return flip(x, 1);
    }

    /** {@code torch.flipud}: flips dim 0 of a tensor of at least 1 dim. */
    public static Tensor flipud(Tensor x) {
        if (x.dim() < 1) throw new IllegalArgumentException("flipud: input must be >= 1-d, got shape " + Shapes.format(x.shape()));
        return flip(x, 0);
    }

    /**
     * {@code torch.roll(x, shifts, dims)}: elements shifted along each dim, wrapping around. With no dims the
     * tensor is rolled as if flattened, then restored to its shape.
     */
    public static Tensor roll(Tensor x, long[] shifts, int[] dims) {
        Arguments.nonNull("roll", "shifts", shifts);
        x.checkOpen("roll");
        int[] ds = dims == null ? new int[0] : dims;
        if (ds.length == 0) {
            if (shifts.length != 1) {
                throw new IllegalArgumentException("roll: shifts " + Arrays.toString(shifts) + " need as many dims, got none");
            }
            try (MemoryScope scope = new MemoryScope()) {
                return scope.keep(roll(x.flatten(), shifts, new int[] {0}).view(x.shape()));
            }
        }
        if (shifts.length != ds.length) {
            throw new IllegalArgumentException("roll: shifts and dimensions must align. shifts: " + shifts.length + ", dims: " + ds.length);
        }
        try (MemoryScope scope = new MemoryScope()) {
            Tensor r = x;
            for (int i = 0; i < ds.length; i++) {
                int d = Shapes.wrapDim("roll", ds[i], x.dim());
                long n = x.size(d);
                long s = n == 0 ? 0 : Math.floorMod(shifts[i], n);
                if (s == 0) continue;
                r = Torch.cat(new Tensor[] {r.narrow(d, n - s, s), r.narrow(d, 0, n - s)}, d);
            }
            return scope.keep(r == x ? x.clone() : r);
        }
    }

    /** {@code torch.rot90(x, k, dims)}: rotates by 90 degrees {@code k} times from the first of {@code dims} towards the second. */
    public static Tensor rot90(Tensor x, int k, int[] dims) {
        Arguments.nonNull("rot90", "dims", dims);
        x.checkOpen("rot90");
        if (dims.length != 2) throw new IllegalArgumentException("rot90: expected total rotation dims == 2, but got dims = " + dims.length);
        if (x.dim() < 2) throw new IllegalArgumentException("rot90: expected total dims >= 2, but got total dims = " + x.dim());
        int d0 = Shapes.wrapDim("rot90", dims[0], x.dim());
        int d1 = Shapes.wrapDim("rot90", dims[1], x.dim());
        if (d0 == d1) throw new IllegalArgumentException("rot90: expected rotation dims to be different, got dims " + Arrays.toString(dims));
        try (MemoryScope scope = new MemoryScope()) {
            Tensor r = switch (Math.floorMod(k, 4)) {
                case 1 -> flip(x, d1).transpose(d0, d1);
                case 2 -> flip(x, d0, d1);
                case 3 -> flip(x, d0).transpose(d0, d1);
                default -> x.clone();
            };
            return scope.keep(r);
        }
    }

    /**
     * {@code x.repeat(sizes)}: the tensor tiled {@code sizes[i]} times along dim i; {@code sizes} may have more
     * entries than x has dims (x gets leading dims of size 1), not fewer.
     */
    public static Tensor repeat(Tensor x, long... sizes) {
        Arguments.nonNull("repeat", "sizes", sizes);
        x.checkOpen("repeat");
        if (sizes.length < x.dim()) {
            throw new IllegalArgumentException("repeat: number of dimensions of repeat dims (" + sizes.length
                    + ") can not be smaller than number of dimensions of tensor (" + x.dim() + ")");
        }
        for (long s : sizes) {
            if (s < 0) throw new IllegalArgumentException("repeat: negative repeat count in " + Arrays.toString(sizes));
        }
        int n = sizes.length;
        long[] padded = new long[n];
        Arrays.fill(padded, 1);
        System.arraycopy(x.shape(), 0, padded, n - x.dim(), x.dim());
        // x as [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then each pair merged.
        long[] interleaved = new long[2 * n];
        long[] expanded = new long[2 * n];
        long[] result = new long[n];
        for (int i = 0; i < n; i++) {
            interleaved[2 * i] = 1;
            interleaved[2 * i + 1] = padded[i];
            expanded[2 * i] = sizes[i];
            expanded[2 * i + 1] = padded[i];
            result[i] = sizes[i] * padded[i];
        }
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(x.reshape(interleaved).expand(expanded).contiguous().view(result));
        }
    }

    /** {@code torch.tile(x, dims)}: {@link #repeat} with {@code dims} padded with leading 1s to x's rank. */
    public static Tensor tile(Tensor x, long... dims) {
        Arguments.nonNull("tile", "dims", dims);
        if (dims.length >= x.dim()) return repeat(x, dims);
        long[] padded = new long[x.dim()];
        Arrays.fill(padded, 1);
        System.arraycopy(dims, 0, padded, x.dim() - dims.length, dims.length);
        return repeat(x, padded);
    }

    /**
     * {@code torch.repeat_interleave(x, repeats, dim)}: each element repeated {@code repeats} times along
     * {@code dim}; with a null dim, over the flattened tensor.
     */
    public static Tensor repeatInterleave(Tensor x, long repeats, Integer dim) {
        x.checkOpen("repeat_interleave");
        if (repeats < 0) throw new IllegalArgumentException("repeat_interleave: repeats must be non-negative, got " + repeats);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor in = dim == null ? x.flatten() : x;
            int d = dim == null ? 0 : Shapes.wrapDim("repeat_interleave", dim, x.dim());
            if (in.dim() == 0) in = in.reshape(1);
            long[] shape = in.shape();
            long[] unsqueezed = new long[shape.length + 1];
            long[] expanded = new long[shape.length + 1];
            for (int i = 0, j = 0; i < shape.length; i++, j++) {
                unsqueezed[j] = shape[i];
                expanded[j] = shape[i];
                if (i == d) {
                    j++;
                    unsqueezed[j] = 1;
                    expanded[j] = repeats;
                }
            }
            long[] result = shape.clone();
            result[d] = shape[d] * repeats;
            return scope.keep(in.reshape(unsqueezed).expand(expanded).contiguous().view(result));
        }
    }

    /**
     * {@code torch.repeat_interleave(x, repeats, dim)} with one count per element along {@code dim} (or of the
     * flattened tensor when dim is null). The counts are read on the host: they fix the result's size.
     */
    public static Tensor repeatInterleave(Tensor x, Tensor repeats, Integer dim) {
        Arguments.nonNull("repeat_interleave", "repeats", repeats);
        x.checkOpen("repeat_interleave");
        if (repeats.dtype() != DType.INT64 && repeats.dtype() != DType.INT32) {
            throw new IllegalArgumentException("repeat_interleave: repeats must be an int64 or int32 tensor, got " + repeats.dtype());
        }
        if (repeats.dim() > 1) {
            throw new IllegalArgumentException("repeat_interleave: repeats must be 0-dim or 1-dim, got shape " + Shapes.format(repeats.shape()));
        }
        try (MemoryScope scope = new MemoryScope()) {
            Tensor in = dim == null ? x.flatten() : x;
            int d = dim == null ? 0 : Shapes.wrapDim("repeat_interleave", dim, x.dim());
            if (repeats.dim() == 0) return scope.keep(repeatInterleave(x, repeats.itemLong(), dim));
            long n = in.dim() == 0 ? 1 : in.size(d);
            long[] counts = repeats.to(DType.INT64).toLongArray();
            if (counts.length != n) {
                throw new IllegalArgumentException("repeat_interleave: repeats must have the same size as input along dim " + d
                        + ", got " + counts.length + " repeats for size " + n);
            }
            long total = 0;
            for (long c : counts) {
                if (c < 0) throw new IllegalArgumentException("repeat_interleave: repeats can not be negative, got " + Arrays.toString(counts));
                total += c;
            }
            long[] index = new long[Math.toIntExact(total)];
            for (int i = 0, k = 0; i < counts.length; i++) for (long c = 0; c < counts[i]; c++) index[k++] = i;
            Tensor idx = Torch.tensor(index).to(x.device());
            return scope.keep((in.dim() == 0 ? in.reshape(1) : in).indexSelect(d, idx));
        }
    }

    /** {@code torch.tril(x, diagonal)}: zeroes the elements above the {@code diagonal}-th diagonal of the last two dims. */
    public static Tensor tril(Tensor x, long diagonal) {
        return triangle("tril", x, diagonal, true);
    }

    /** {@code torch.triu(x, diagonal)}: zeroes the elements below the {@code diagonal}-th diagonal of the last two dims. */
    public static Tensor triu(Tensor x, long diagonal) {
        return triangle("triu", x, diagonal, false);
    }

    private static Tensor triangle(String name, Tensor x, long k, boolean lower) {
        x.checkOpen(name);
        if (x.dim() < 2) throw new IllegalArgumentException(name + ": input tensor must have at least 2 dimensions, got shape " + Shapes.format(x.shape()));
        long rows = x.size(-2);
        long cols = x.size(-1);
        try (MemoryScope scope = new MemoryScope()) {
            Tensor mask;
            try (var g = Grad.noGrad()) {
                // Column j is kept where j - i <= k (tril) or >= k (triu): one broadcast comparison of a row of
                // column numbers against a column of row numbers shifted by k writes the bool mask directly, with
                // no rows x cols int64 offsets in between. The shift saturates so that a huge k cannot overflow.
                Tensor columns = positions(cols, x).unsqueeze(0);
                Tensor limits = positions(rows, x).add(saturatedShift(k, Math.max(rows, cols))).unsqueeze(1);
                mask = lower ? columns.le(limits) : columns.ge(limits);
            }
            return scope.keep(Torch.where(mask, x, Torch.zeros(new long[0], x.dtype(), x.device())));
        }
    }

    /**
     * {@code torch.diagonal(x, offset, dim1, dim2)}: the view of the {@code offset}-th diagonal of the planes
     * spanned by {@code dim1} and {@code dim2}, appended as the last dim.
     */
    public static Tensor diagonal(Tensor x, long offset, int dim1, int dim2) {
        return x.diagonal(offset, dim1, dim2);
    }

    /**
     * {@code torch.diag(x, diagonal)}: for a vector, the square matrix with x on its {@code diagonal}-th diagonal;
     * for a matrix, a copy of that diagonal.
     */
    public static Tensor diag(Tensor x, long diagonal) {
        x.checkOpen("diag");
        if (x.dim() == 2) {
            try (Tensor d = diagonal(x, diagonal, 0, 1)) {
                return d.clone();
            }
        }
        if (x.dim() != 1) throw new IllegalArgumentException("diag: expected a 1-D or 2-D tensor, got shape " + Shapes.format(x.shape()));
        if (diagonal == Long.MIN_VALUE || Math.abs(diagonal) > Long.MAX_VALUE - x.size(0)) {
            throw new IllegalArgumentException("diag: diagonal " + diagonal + " of a vector of shape " + Shapes.format(x.shape())
                    + " gives a matrix whose side exceeds int64");
        }
        long n = x.size(0) + Math.abs(diagonal);
        try (MemoryScope scope = new MemoryScope()) {
            // x[i] sits at (i, i + k) for k >= 0 (so it varies along rows), at (i - k, i) for k < 0 (along columns).
            Tensor padded = Torch.cat(new Tensor[] {x, Torch.zeros(new long[] {Math.abs(diagonal)}, x.dtype(), x.device())}, 0);
            Tensor values = diagonal >= 0 ? padded.unsqueeze(1).expand(n, n) : padded.unsqueeze(0).expand(n, n);
            Tensor onDiagonal;
            try (var g = Grad.noGrad()) {
                onDiagonal = positions(n, x).unsqueeze(0).sub(positions(n, x).unsqueeze(1)).eq(diagonal);
            }
            return scope.keep(Torch.where(onDiagonal, values, Torch.zeros(new long[0], x.dtype(), x.device())));
        }
    }

    /** {@code k} clamped to {@code [-n - 1, n + 1]} beyond which tril/triu keep all or nothing, so that adding it cannot overflow. */
    private static long saturatedShift(long k, long n) {
        return Math.max(-n - 1, Math.min(n + 1, k));
    }

    /** {@code 0, 1, ..., n - 1} as int64 on x's device. */
    private static Tensor positions(long n, Tensor x) {
        return Torch.arange(0, n, 1, DType.INT64, x.device());
    }

    /** {@code torch.trace(x)}: the sum of a matrix's main diagonal (int64 for integer matrices, as sum). */
    public static Tensor trace(Tensor x) {
        x.checkOpen("trace");
        if (x.dim() != 2) throw new IllegalArgumentException("trace: expected a matrix, got shape " + Shapes.format(x.shape()));
        try (Tensor d = diagonal(x, 0, 0, 1)) {
            return d.sum();
        }
    }
}
