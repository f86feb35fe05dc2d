package org.jtorch.op;

import static org.jtorch.op.DTypeRule.SAME;

import java.util.Arrays;

/**
 * The view ops: each returns a tensor that shares its input's memory, with a new geometry (sizes, strides and storage
 * offset, in elements). Each is declared once here with PyTorch's signature, and its meta function is the geometry:
 * computed and checked from the input's geometry and the arguments, without data. Errors name the op, the shape and
 * the offending argument, as PyTorch's do. {@code Tensor}'s view methods are these functions plus autograd; the trace
 * records each call as one op, replayed through the same method.
 */
public final class ViewOps {
    private ViewOps() {}

    /** A view's sizes and strides (in elements) and its storage offset (in elements). */
    public record Geometry(long[] shape, long[] strides, long offset) {}

    private static final Param SELF = Param.tensor("self");

    public static final OpDef VIEW = view("view", new Param("size", "SymInt[]", null));
    public static final OpDef RESHAPE = OpDef.frontEnd("reshape", true).rule(SAME).signature(SELF, new Param("shape", "SymInt[]", null))
            .doc("a view, or a copy where strides cannot express it").build();
    public static final OpDef PERMUTE = view("permute", new Param("dims", "int[]", null));
    public static final OpDef TRANSPOSE = view("transpose", new Param("dim0", "int", null), new Param("dim1", "int", null));
    public static final OpDef SQUEEZE = view("squeeze");
    public static final OpDef SQUEEZE_DIM = OpDef.frontEnd("squeeze_dim", true).py("squeeze").rule(SAME)
            .signature(SELF, new Param("dim", "int", null)).doc("a view").build();
    public static final OpDef UNSQUEEZE = view("unsqueeze", new Param("dim", "int", null));
    public static final OpDef EXPAND = view("expand", new Param("size", "SymInt[]", null));
    public static final OpDef SLICE = view("slice", new Param("dim", "int", "0"), new Param("start", "SymInt?", "None"),
            new Param("end", "SymInt?", "None"), new Param("step", "SymInt", "1"));
    public static final OpDef NARROW = view("narrow", new Param("dim", "int", null), new Param("start", "SymInt", null),
            new Param("length", "SymInt", null));
    public static final OpDef SELECT = view("select", new Param("dim", "int", null), new Param("index", "SymInt", null));
    public static final OpDef UNFOLD = view("unfold", new Param("dimension", "int", null), new Param("size", "int", null),
            new Param("step", "int", null));
    public static final OpDef DIAGONAL = view("diagonal", new Param("offset", "int", "0"), new Param("dim1", "int", "0"),
            new Param("dim2", "int", "1"));

    private static OpDef view(String name, Param... params) {
        Param[] all = new Param[params.length + 1];
        all[0] = SELF;
        System.arraycopy(params, 0, all, 1, params.length);
        return OpDef.frontEnd(name, true).rule(SAME).signature(all).doc("a view").build();
    }

    // ------------------------------------------------------------------ meta functions: the views' geometry

    /** {@code view(size)}: one size may be -1; fails where the strides cannot express the new shape. */
    public static Geometry view(long[] shape, long[] strides, long offset, long[] size) {
        long[] s = Shapes.inferSize("view", size, Shapes.numel(shape), shape);
        long[] st = Shapes.viewStrides(shape, strides, s);
        if (st == null) {
            throw new IllegalArgumentException("view: size " + Shapes.format(s) + " is not compatible with the input's size "
                    + Shapes.format(shape) + " and strides " + Shapes.format(strides)
                    + " (at least one dimension spans two contiguous subspaces); use reshape() instead");
        }
        return new Geometry(s, st, offset);
    }

    /** {@code reshape(shape)} as a view, or null where it needs a copy; {@code size} is the inferred shape. */
    public static Geometry reshapeView(long[] shape, long[] strides, long offset, long[] size) {
        long[] st = Shapes.viewStrides(shape, strides, size);
        return st == null ? null : new Geometry(size, st, offset);
    }

    public static Geometry permute(long[] shape, long[] strides, long offset, int[] dims) {
        if (dims.length != shape.length) {
            throw new IllegalArgumentException("permute: number of dims " + dims.length + " doesn't match the tensor's "
                    + shape.length + " (shape " + Shapes.format(shape) + ")");
        }
        long[] s = new long[dims.length];
        long[] st = new long[dims.length];
        boolean[] seen = new boolean[dims.length];
        for (int i = 0; i < dims.length; i++) {
            int d = Shapes.wrapDim("permute", dims[i], shape.length);
            if (seen[d]) throw new IllegalArgumentException("permute: repeated dim " + dims[i] + " in " + Arrays.toString(dims));
            seen[d] = true;
            s[i] = shape[d];
            st[i] = strides[d];
        }
        return new Geometry(s, st, offset);
    }

    /** {@code permute}'s inverse permutation (its backward), for dims already checked by {@link #permute}. */
    public static int[] inversePermutation(int[] dims) {
        int[] inverse = new int[dims.length];
        for (int i = 0; i < dims.length; i++) inverse[Shapes.wrapDim("permute", dims[i], dims.length)] = i;
        return inverse;
    }

    /** {@code transpose(dim0, dim1)}; null for a 0-d tensor, whose dims 0 and -1 name the tensor itself (an alias). */
    public static Geometry transpose(long[] shape, long[] strides, long offset, int dim0, int dim1) {
        int a = Shapes.wrapDim("transpose", dim0, shape.length);
        int b = Shapes.wrapDim("transpose", dim1, shape.length);
        if (shape.length == 0) return null;
        long[] s = shape.clone();
        long[] st = strides.clone();
        s[a] = shape[b];
        s[b] = shape[a];
        st[a] = strides[b];
        st[b] = strides[a];
        return new Geometry(s, st, offset);
    }

    /** {@code squeeze()}: every dimension of size 1 removed. */
    public static Geometry squeeze(long[] shape, long[] strides, long offset) {
        int n = 0;
        for (long s : shape) if (s != 1) n++;
        long[] s = new long[n];
        long[] st = new long[n];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (shape[i] != 1) {
                s[j] = shape[i];
                st[j++] = strides[i];
            }
        }
        return new Geometry(s, st, offset);
    }

    /** {@code squeeze(dim)}; null where nothing is removed (a 0-d tensor, or a size other than 1: an alias). */
    public static Geometry squeezeDim(long[] shape, long[] strides, long offset, int dim) {
        if (shape.length == 0) {
            Shapes.wrapDim("squeeze", dim, 0);
            return null;
        }
        int d = Shapes.wrapDim("squeeze", dim, shape.length);
        if (shape[d] != 1) return null;
        return new Geometry(remove(shape, d), remove(strides, d), offset);
    }

    /** {@code unsqueeze(dim)}, {@code dim} in {@code [-dim()-1, dim()]}. */
    public static Geometry unsqueeze(long[] shape, long[] strides, long offset, int dim) {
        int d = Shapes.wrapDim("unsqueeze", dim, shape.length + 1);
        long newStride = d < shape.length ? shape[d] * strides[d] : 1;
        return new Geometry(insert(shape, d, 1), insert(strides, d, newStride), offset);
    }

    /** {@code expand(sizes)}: size-1 dimensions broadcast to larger sizes with stride 0; -1 keeps a size. */
    public static Geometry expand(long[] shape, long[] strides, long offset, long[] sizes) {
        if (sizes.length < shape.length) {
            throw new IllegalArgumentException("expand: the number of sizes provided (" + sizes.length
                    + ") must be greater or equal to the number of dimensions in the tensor (" + shape.length + ")");
        }
        long[] s = new long[sizes.length];
        long[] st = new long[sizes.length];
        int lead = sizes.length - shape.length;
        for (int i = sizes.length - 1; i >= 0; i--) {
            int j = i - lead;
            long want = sizes[i];
            if (want < -1) {
                throw new IllegalArgumentException("expand: the expanded size of the tensor (" + want + ") at dimension " + i
                        + " must be non-negative, or -1 to keep the existing size. Target sizes: " + Shapes.format(sizes)
                        + ". Tensor sizes: " + Shapes.format(shape));
            }
            if (j < 0) {
                if (want < 0) throw new IllegalArgumentException("expand: -1 is not allowed in a leading, non-existing dimension "
                        + i + " (sizes " + Shapes.format(sizes) + ")");
                s[i] = want;
                st[i] = 0;
            } else if (want == -1 || want == shape[j]) {
                s[i] = shape[j];
                st[i] = strides[j];
            } else if (shape[j] == 1) {
                s[i] = want;
                st[i] = 0;
            } else {
                throw new IllegalArgumentException("expand: the expanded size of the tensor (" + want
                        + ") must match the existing size (" + shape[j] + ") at non-singleton dimension " + i
                        + ". Target sizes: " + Shapes.format(sizes) + ". Tensor sizes: " + Shapes.format(shape));
            }
        }
        Shapes.checkedNumel("expand", s);
        return new Geometry(s, st, offset);
    }

    /** {@code narrow(dim, start, length)}: elements {@code [start, start + length)} of {@code dim} (start may count from the end). */
    public static Geometry narrow(long[] shape, long[] strides, long offset, int dim, long start, long length) {
        if (shape.length == 0) throw new IllegalArgumentException("narrow: cannot be applied to a 0-dim tensor");
        int d = Shapes.wrapDim("narrow", dim, shape.length);
        long size = shape[d];
        if (start < -size || start > size) {
            throw new IndexOutOfBoundsException("narrow: start " + start + " out of range for dimension " + dim + " of size "
                    + size + " (expected to be in [" + (-size) + ", " + size + "]; shape " + Shapes.format(shape) + ")");
        }
        long from = start < 0 ? start + size : start;
        // length > size - from rather than from + length > size: the sum overflows for a huge length.
        if (length < 0 || length > size - from) {
            throw new IndexOutOfBoundsException("narrow: start (" + from + ") + length (" + length
                    + ") exceeds dimension size (" + size + ") of dimension " + dim + " (shape " + Shapes.format(shape) + ")");
        }
        long[] s = shape.clone();
        s[d] = length;
        return new Geometry(s, strides.clone(), offset + from * strides[d]);
    }

    /** {@code slice(dim, start, end, step)} as Python's {@code [start:end:step]}: bounds clamped, negative ones from the end. */
    public static Geometry slice(long[] shape, long[] strides, long offset, int dim, long start, long end, long step) {
        if (shape.length == 0) throw new IllegalArgumentException("slice: cannot be applied to a 0-dim tensor");
        if (step <= 0) throw new IllegalArgumentException("slice: step must be positive, got " + step);
        int d = Shapes.wrapDim("slice", dim, shape.length);
        long[] bounds = sliceBounds(shape[d], start, end);
        long from = bounds[0];
        long to = bounds[1];
        long[] s = shape.clone();
        long[] st = strides.clone();
        s[d] = to > from ? (to - from - 1) / step + 1 : 0; // (to - from + step - 1) / step overflows for a huge step
        st[d] = steppedStride(strides[d], step, s[d]);
        return new Geometry(s, st, offset + from * strides[d]);
    }

    /** A slice's {@code start} and {@code end} clamped into {@code [0, size]}, negative ones counted from the end. */
    public static long[] sliceBounds(long size, long start, long end) {
        if (start < 0) start += size;
        if (end < 0) end += size;
        start = Math.min(Math.max(start, 0), size);
        end = Math.min(Math.max(end, start), size);
        return new long[] {start, end};
    }

    /** {@code select(dim, index)}: dimension {@code dim} removed by taking one index (negative counts from the end). */
    public static Geometry select(long[] shape, long[] strides, long offset, int dim, long index) {
        if (shape.length == 0) throw new IllegalArgumentException("select: cannot be applied to a 0-dim tensor");
        int d = Shapes.wrapDim("select", dim, shape.length);
        long size = shape[d];
        if (index < -size || index >= size) {
            throw new IndexOutOfBoundsException("select: index " + index + " out of range for tensor of size "
                    + Shapes.format(shape) + " at dimension " + dim);
        }
        if (index < 0) index += size;
        return new Geometry(remove(shape, d), remove(strides, d), offset + index * strides[d]);
    }

    /** {@code unfold(dim, size, step)}: every window of {@code size} elements taken each {@code step}, as a new last dimension. */
    public static Geometry unfold(long[] shape, long[] strides, long offset, int dim, long size, long step) {
        int d = Shapes.wrapDim("unfold", dim, shape.length);
        long dimSize = shape.length == 0 ? 1 : shape[d];
        if (size < 0 || size > dimSize) {
            throw new IllegalArgumentException("unfold: maximum size for tensor at dimension " + d + " is " + dimSize
                    + " but size is " + size);
        }
        if (step <= 0) throw new IllegalArgumentException("unfold: step is " + step + " but must be > 0");
        long[] s = new long[shape.length + 1];
        long[] st = new long[shape.length + 1];
        for (int i = 0; i < shape.length; i++) {
            s[i] = shape[i];
            st[i] = strides[i];
        }
        if (shape.length > 0) {
            s[d] = (dimSize - size) / step + 1;
            st[d] = steppedStride(strides[d], step, s[d]);
            st[shape.length] = strides[d];
        } else {
            st[0] = 1;
        }
        s[shape.length] = size;
        Shapes.checkedNumel("unfold", s); // windows of an expanded tensor can outnumber int64
        return new Geometry(s, st, offset);
    }

    /**
     * {@code diagonal(offset, dim1, dim2)}: the diagonal of dims {@code dim1} and {@code dim2} as a new last dimension,
     * {@code diagonalOffset} above (positive) or below (negative) the main one.
     */
    public static Geometry diagonal(long[] shape, long[] strides, long offset, long diagonalOffset, int dim1, int dim2) {
        int d1 = Shapes.wrapDim("diagonal", dim1, shape.length);
        int d2 = Shapes.wrapDim("diagonal", dim2, shape.length);
        if (d1 == d2) throw new IllegalArgumentException("diagonal: dimensions cannot be identical " + dim1 + ", " + dim2);
        long length = diagonalOffset >= 0 ? Math.max(0, Math.min(shape[d1], shape[d2] - diagonalOffset))
                : Math.max(0, Math.min(shape[d1] + diagonalOffset, shape[d2]));
        long start = offset;
        if (length > 0) start += diagonalOffset >= 0 ? diagonalOffset * strides[d2] : -diagonalOffset * strides[d1];
        long[] size = new long[shape.length - 1];
        long[] stride = new long[shape.length - 1];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (i == d1 || i == d2) continue;
            size[j] = shape[i];
            stride[j++] = strides[i];
        }
        size[size.length - 1] = length;
        stride[stride.length - 1] = strides[d1] + strides[d2];
        return new Geometry(size, stride, start);
    }

    /**
     * {@code as_strided(size, stride, storage_offset)} over a storage of {@code elements} elements: every element the view
     * reaches must lie inside it.
     */
    public static Geometry asStrided(long[] size, long[] stride, long storageOffset, long elements) {
        if (size.length != stride.length) {
            throw new IllegalArgumentException("asStrided: mismatch in length of strides and shape (" + size.length
                    + " vs " + stride.length + ")");
        }
        if (storageOffset < 0) throw new IllegalArgumentException("asStrided: invalid storage offset " + storageOffset);
        for (int i = 0; i < size.length; i++) {
            if (size[i] < 0) throw new IllegalArgumentException("asStrided: negative size in " + Shapes.format(size));
            if (stride[i] < 0) {
                throw new IllegalArgumentException("asStrided: negative strides are not supported, got strides " + Shapes.format(stride));
            }
        }
        boolean empty = Shapes.checkedNumel("asStrided", size) == 0;
        // The last element's index, offset + sum (size - 1) * stride, in arithmetic that cannot wrap around.
        long maxIndex = storageOffset;
        boolean overflow = false;
        for (int i = 0; i < size.length && !empty; i++) {
            long extent = (size[i] - 1) * stride[i];
            overflow |= Math.multiplyHigh(size[i] - 1, stride[i]) != 0 || extent < 0;
            maxIndex += extent;
            overflow |= maxIndex < 0;
        }
        if (!empty && (overflow || maxIndex >= elements)) {
            throw new IndexOutOfBoundsException("asStrided: size " + Shapes.format(size) + " with stride " + Shapes.format(stride)
                    + " and offset " + storageOffset + " is out of bounds for a storage of " + elements + " elements");
        }
        return new Geometry(size.clone(), stride.clone(), storageOffset);
    }

    /** {@code stride * step}, or {@code stride} where the dimension has at most one element and the product would overflow. */
    private static long steppedStride(long stride, long step, long size) {
        long r = stride * step;
        return size <= 1 && (Math.multiplyHigh(stride, step) != 0 || r < 0) ? stride : r;
    }

    private static long[] remove(long[] a, int i) {
        long[] r = new long[a.length - 1];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }

    private static long[] insert(long[] a, int i, long v) {
        long[] r = new long[a.length + 1];
        System.arraycopy(a, 0, r, 0, i);
        r[i] = v;
        System.arraycopy(a, i, r, i + 1, a.length - i);
        return r;
    }
}
