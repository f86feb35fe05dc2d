package org.jtorch.op;

import java.util.Arrays;

/** Shape arithmetic shared by every op: broadcasting, contiguous strides, dimension wrapping. */
public final class Shapes {
    private Shapes() {}

    public static long numel(long[] shape) {
        long n = 1;
        for (long s : shape) n *= s;
        return n;
    }

    /**
     * The element count of a shape that a new tensor or view will have, validated: a negative size, or a
     * count beyond {@code Long.MAX_VALUE} (which would wrap around to a small or zero count), is an
     * {@link IllegalArgumentException} naming {@code op} and the shape. A shape with a zero size has no
     * elements however large its other sizes are.
     */
    public static long checkedNumel(String op, long[] shape) {
        return checkedNumel(op, shape, shape);
    }

    /** {@link #checkedNumel(String, long[])}, naming {@code shown} (the shape as the caller wrote it) in errors. */
    private static long checkedNumel(String op, long[] shape, long[] shown) {
        long n = 1;
        boolean overflow = false;
        for (long s : shape) {
            if (s < 0) {
                throw new IllegalArgumentException(op + ": negative dimension " + s + " in shape " + format(shown));
            }
            overflow |= Math.multiplyHigh(n, s) != 0;
            n *= s;
            overflow |= n < 0;
        }
        if (overflow) {
            for (long s : shape) if (s == 0) return 0;
            throw new IllegalArgumentException(op + ": shape " + format(shown)
                    + " has more elements than a tensor can hold (the element count overflows a 64-bit integer)");
        }
        return n;
    }

    /** Row-major strides (in elements) of a contiguous tensor of this shape. */
    public static long[] contiguousStrides(long[] shape) {
        long[] strides = new long[shape.length];
        long s = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            strides[i] = s;
            s *= Math.max(shape[i], 1);
        }
        return strides;
    }

    /** The broadcast shape of two shapes, by NumPy's rules; {@code op} names the op in the error. */
    public static long[] broadcast(String op, long[] a, long[] b) {
        if (Arrays.equals(a, b)) return a;
        int n = Math.max(a.length, b.length);
        long[] out = new long[n];
        long numel = 1;
        boolean overflow = false;
        for (int i = 0; i < n; i++) {
            long da = i < n - a.length ? 1 : a[i - (n - a.length)];
            long db = i < n - b.length ? 1 : b[i - (n - b.length)];
            if (da == db || db == 1) out[i] = da;
            else if (da == 1) out[i] = db;
            else {
                throw new IllegalArgumentException(op + ": shapes " + format(a) + " and " + format(b)
                        + " cannot be broadcast (size " + da + " != " + db + " at dimension " + i + ")");
            }
            overflow |= Math.multiplyHigh(numel, out[i]) != 0;
            numel *= out[i];
        }
        // Two valid shapes can broadcast to one with more elements than int64 counts ([2^32, 1] and [1, 2^32]).
        if (overflow || numel < 0) checkedNumel(op, out);
        return out;
    }

    /**
     * Strides that view a tensor of {@code shape}/{@code strides} as {@code target}: size-1 and missing
     * leading dimensions get stride 0. A {@code shape} that does not broadcast to {@code target} is an
     * {@link IllegalArgumentException} naming {@code op}.
     */
    public static long[] broadcastStrides(String op, long[] shape, long[] strides, long[] target) {
        int lead = target.length - shape.length;
        if (lead < 0) throw notBroadcastable(op, shape, target);
        long[] out = new long[target.length];
        // The new leading dimensions (stride 0), then the matched ones: no index depends on a branch, where C2's
        // profiled loop predicates trapped on shape[i - lead].
        for (int i = 0; i < lead; i++) {
            if (target[i] < 0) throw notBroadcastable(op, shape, target);
        }
        for (int j = 0; j < shape.length; j++) {
            long size = target[lead + j];
            if (shape[j] == size) out[lead + j] = strides[j];
            else if (shape[j] != 1 || size < 0) throw notBroadcastable(op, shape, target);
        }
        long numel = 1;
        boolean overflow = false;
        for (int i = 0; i < target.length; i++) {
            overflow |= Math.multiplyHigh(numel, target[i]) != 0;
            numel *= target[i];
            overflow |= numel < 0;
        }
        if (overflow) checkedNumel(op, target); // throws, naming the op and the shape
        return out;
    }

    private static IllegalArgumentException notBroadcastable(String op, long[] shape, long[] target) {
        return new IllegalArgumentException(op + ": shape " + format(shape) + " cannot be broadcast to " + format(target));
    }

    /** Wraps a possibly negative dimension index into {@code [0, rank)}, as PyTorch's {@code maybe_wrap_dim}. */
    public static int wrapDim(String op, long dim, int rank) {
        int r = Math.max(rank, 1); // a 0-d tensor accepts dim 0 and -1
        if (dim < -r || dim >= r) {
            throw new IndexOutOfBoundsException(op + ": dimension " + dim + " out of range for a tensor of "
                    + rank + " dimension" + (rank == 1 ? "" : "s") + " (expected to be in [" + (-r) + ", " + (r - 1) + "])");
        }
        return (int) (dim < 0 ? dim + r : dim);
    }

    /**
     * {@link #wrapDim} for a dimension that must exist (a size, a stride, a dimension to split): a 0-d tensor
     * has none, as PyTorch's "Dimension specified as 0 but tensor has no dimensions".
     */
    public static int existingDim(String op, long dim, int rank) {
        if (rank == 0) {
            throw new IndexOutOfBoundsException(op + ": dimension specified as " + dim + " but tensor has no dimensions");
        }
        return wrapDim(op, dim, rank);
    }

    /** {@code [2, 3]} */
    public static String format(long[] shape) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) sb.append(", ");
            sb.append(shape[i]);
        }
        return sb.append(']').toString();
    }

    /** The index in {@code shape} of row-major element {@code flat}. */
    public static long[] unravel(long flat, long[] shape) {
        long[] index = new long[shape.length];
        for (int d = shape.length - 1; d >= 0; d--) {
            if (shape[d] == 0) continue;
            index[d] = flat % shape[d];
            flat /= shape[d];
        }
        return index;
    }

    /** Whether these strides describe a row-major contiguous layout of {@code shape} (size-1 dims ignored). */
    public static boolean isContiguous(long[] shape, long[] strides) {
        long expected = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (shape[i] == 1) continue;
            if (shape[i] == 0) return true;
            if (strides[i] != expected) return false;
            expected *= shape[i];
        }
        return true;
    }

    /**
     * Whether the elements of a tensor of this shape and these strides occupy a dense block of memory
     * exactly once, in some order of dimensions (PyTorch's {@code is_non_overlapping_and_dense}):
     * a permutation of a contiguous tensor. Dimensions of size 1 are ignored; an empty tensor is dense.
     */
    public static boolean isNonOverlappingAndDense(long[] shape, long[] strides) {
        int[] dims = new int[shape.length];
        int n = 0;
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == 0) return true;
            if (shape[i] > 1) dims[n++] = i;
        }
        // Insertion sort by stride: tensors have few dimensions.
        for (int i = 1; i < n; i++) {
            int d = dims[i];
            int j = i - 1;
            while (j >= 0 && strides[dims[j]] > strides[d]) {
                dims[j + 1] = dims[j];
                j--;
            }
            dims[j + 1] = d;
        }
        long expected = 1;
        for (int i = 0; i < n; i++) {
            if (strides[dims[i]] != expected) return false;
            expected *= shape[dims[i]];
        }
        return true;
    }

    /**
     * Infers one {@code -1} entry of a requested shape from the element count, as {@code view}/{@code reshape}.
     */
    public static long[] inferSize(String op, long[] requested, long numel, long[] original) {
        long[] shape = requested.clone();
        int infer = -1;
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == -1) {
                if (infer >= 0) throw new IllegalArgumentException(op + ": only one dimension can be inferred, got "
                        + format(requested));
                infer = i;
                shape[i] = 1;
            } else if (shape[i] < 0) {
                throw new IllegalArgumentException(op + ": invalid shape dimension " + shape[i] + " in " + format(requested));
            }
        }
        long known = checkedNumel(op, shape, requested);
        if (infer >= 0) {
            if (known == 0 || numel % known != 0) {
                throw new IllegalArgumentException(op + ": shape " + format(requested) + " is invalid for input of size "
                        + numel + " (shape " + format(original) + ")");
            }
            shape[infer] = numel / known;
        } else if (known != numel) {
            throw new IllegalArgumentException(op + ": shape " + format(requested) + " is invalid for input of size "
                    + numel + " (shape " + format(original) + ")");
        }
        return shape;
    }

    /**
     * Strides for viewing a tensor with {@code oldShape}/{@code oldStrides} as {@code newShape} without a
     * copy, or null when impossible (ATen's {@code computeStride}).
     */
    public static long[] viewStrides(long[] oldShape, long[] oldStrides, long[] newShape) {
        long numel = numel(oldShape);
        long[] newStrides = new long[newShape.length];
        if (oldShape.length == 0) return contiguousStrides(newShape); // a 0-d tensor views as any all-ones shape
        if (numel == 0) {
            return Arrays.equals(oldShape, newShape) ? oldStrides.clone() : contiguousStrides(newShape);
        }
        // A 0-d tensor has one element and no strides to follow: any all-ones shape views it.
        if (oldShape.length == 0) return contiguousStrides(newShape);
        int viewD = newShape.length - 1;
        long chunkBaseStride = oldStrides.length > 0 ? oldStrides[oldStrides.length - 1] : 1;
        long tensorNumel = 1;
        long viewNumel = 1;
        for (int tensorD = oldShape.length - 1; tensorD >= 0; tensorD--) {
            tensorNumel *= oldShape[tensorD];
            if (tensorD == 0 || (oldShape[tensorD - 1] != 1 && oldStrides[tensorD - 1] != tensorNumel * chunkBaseStride)) {
                while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
                    newStrides[viewD] = viewNumel * chunkBaseStride;
                    viewNumel *= newShape[viewD];
                    viewD--;
                }
                if (viewNumel != tensorNumel) return null;
                if (tensorD > 0) {
                    chunkBaseStride = oldStrides[tensorD - 1];
                    tensorNumel = 1;
                    viewNumel = 1;
                }
            }
        }
        if (viewD != -1) return null;
        return newStrides;
    }
}
