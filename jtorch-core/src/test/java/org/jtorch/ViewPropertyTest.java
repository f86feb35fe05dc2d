package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Views share storage: a write through any view is visible in its base at the element the view's
 * strides and offset address (offset + sum(index * stride)), and the version counter is shared.
 * (Stride values themselves are compared with PyTorch's in {@link ViewsConformanceTest}.)
 */
class ViewPropertyTest {
    /** Fills the view made by {@code make} from a 2x3x4 arange with -1 and checks the base saw exactly those elements. */
    private static void writesThrough(String what, Function<Tensor, Tensor> make) {
        try (Tensor base = Torch.arange(0.0, 24.0, 1.0).reshape(2, 3, 4); Tensor v = make.apply(base)) {
            assertSame(base.storage(), v.storage(), what + " shares storage");
            int version = base.version();
            boolean[] touched = new boolean[24];
            long[] shape = v.shape();
            long[] strides = v.strides();
            long n = v.numel();
            for (long flat = 0; flat < n; flat++) {
                long rem = flat;
                long pos = v.storageOffset();
                for (int d = shape.length - 1; d >= 0; d--) {
                    pos += (rem % shape[d]) * strides[d];
                    rem /= shape[d];
                }
                touched[(int) pos] = true;
            }
            v.fill_(-1.0);
            assertEquals(version + 1, base.version(), what + ": the version counter is shared");
            double[] b = base.toDoubleArray();
            for (int i = 0; i < 24; i++) assertEquals(touched[i] ? -1.0 : i, b[i], what + " element " + i);
        }
    }

    @Test
    void writesThroughEveryKindOfViewReachTheBase() {
        writesThrough("view", t -> t.view(6, 4).narrow(0, 1, 2));
        writesThrough("reshape (viewable)", t -> t.reshape(4, 6).select(1, 5));
        writesThrough("permute", t -> t.permute(2, 0, 1).select(0, 1));
        writesThrough("transpose", t -> t.transpose(0, 2).narrow(0, 2, 1));
        writesThrough("t", t -> t.select(0, 1).t().select(0, 0));
        writesThrough("squeeze/unsqueeze", t -> t.narrow(1, 1, 1).squeeze(1).unsqueeze(0));
        writesThrough("narrow", t -> t.narrow(2, 1, 2));
        writesThrough("select", t -> t.select(2, 3));
        writesThrough("slice with step", t -> t.slice(2, 0, 4, 3));
        writesThrough("flatten (viewable)", t -> t.flatten().slice(0, 5, 20, 7));
        writesThrough("unflatten", t -> t.flatten().unflatten(0, 4, 6).select(1, 2));
        writesThrough("unfold", t -> t.select(0, 0).select(0, 0).unfold(0, 2, 2));
        writesThrough("asStrided", t -> t.asStrided(new long[] {3, 2}, new long[] {5, 2}, 1));
        writesThrough("diagonal via asStrided", t -> t.reshape(4, 6).asStrided(new long[] {4}, new long[] {7}, 0));
    }

    @Test
    void expandedViewsReadTheBaseWithoutCopying() {
        try (Tensor col = Torch.arange(0.0, 3.0, 1.0).reshape(3, 1); Tensor e = col.expand(3, 4)) {
            assertArrayEquals(new long[] {1, 0}, e.strides());
            col.mul_(10.0);
            assertArrayEquals(new double[] {0, 0, 0, 0, 10, 10, 10, 10, 20, 20, 20, 20}, e.toDoubleArray());
        }
    }

    @Test
    void reshapeOfANonViewableTensorCopies() {
        try (Tensor base = Torch.arange(0.0, 6.0, 1.0).reshape(2, 3); Tensor t = base.t(); Tensor r = t.reshape(6)) {
            assertEquals(false, r.storage() == base.storage());
            r.fill_(0.0);
            assertArrayEquals(new double[] {0, 1, 2, 3, 4, 5}, base.toDoubleArray());
        }
    }
}
