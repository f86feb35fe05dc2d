package org.jtorch.autograd;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.types.DType;

/** Helpers shared by backward formulas. */
public final class Gradients {
    private Gradients() {}

    /**
     * Sums a broadcast gradient back to an operand's shape: over the leading dimensions the operand
     * lacked and over its size-1 dimensions, then converts to the operand's dtype. Returns {@code g}
     * itself when nothing needs to change.
     */
    public static Tensor sumTo(Tensor g, long[] shape, DType dtype) {
        long[] gs = g.shape();
        Tensor r = g;
        if (!Arrays.equals(gs, shape)) {
            int lead = gs.length - shape.length;
            int[] dims = new int[gs.length];
            int n = 0;
            // Two loops, so that no index depends on a branch: C2's profiled loop predicates trapped on shape[i - lead].
            for (int i = 0; i < lead; i++) dims[n++] = i;
            for (int j = 0; j < shape.length; j++) {
                if (shape[j] == 1 && gs[lead + j] != 1) dims[n++] = lead + j;
            }
            try (Tensor summed = n == 0 ? g.alias() : g.sum(Arrays.copyOf(dims, n), true)) {
                r = summed.reshape(shape);
            }
        }
        if (r.dtype() != dtype) {
            Tensor c = r.to(dtype);
            if (r != g) r.close();
            r = c;
        }
        return r;
    }

    /** Zeros shaped like {@code t}. */
    public static Tensor zerosLike(Tensor t) {
        return org.jtorch.Torch.zerosLike(t);
    }
}
