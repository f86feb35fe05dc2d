package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * Broadcasting on random shapes (seeded) against the NumPy rule written out directly: align shapes on
 * the right; each pair of sizes must be equal or contain a 1; the result takes the larger. Values of
 * {@code add} are checked element by element through the same rule.
 */
class BroadcastPropertyTest {
    private static long[] randomShape(Random r) {
        long[] s = new long[r.nextInt(5)];
        for (int i = 0; i < s.length; i++) s[i] = r.nextInt(4); // 0..3: empty, size-1 and larger dims
        return s;
    }

    /** The reference rule, or null when the shapes do not broadcast. */
    private static long[] reference(long[] a, long[] b) {
        int n = Math.max(a.length, b.length);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            long x = i < n - a.length ? 1 : a[i - (n - a.length)];
            long y = i < n - b.length ? 1 : b[i - (n - b.length)];
            if (x != y && x != 1 && y != 1) return null;
            out[i] = x == 1 ? y : x;
        }
        return out;
    }

    /** Maps an output index to the flat index of an operand of shape {@code s} (size-1 and missing dims read index 0). */
    private static long operandIndex(long[] out, long flat, long[] s) {
        long[] outStrides = Shapes.contiguousStrides(out);
        long[] sStrides = Shapes.contiguousStrides(s);
        long idx = 0;
        for (int d = 0; d < out.length; d++) {
            long i = (flat / outStrides[d]) % out[d];
            int sd = d - (out.length - s.length);
            if (sd >= 0 && s[sd] != 1) idx += i * sStrides[sd];
        }
        return idx;
    }

    @Test
    void broadcastShapeFollowsTheNumPyRule() {
        Random r = new Random(1234);
        for (int trial = 0; trial < 2000; trial++) {
            long[] a = randomShape(r);
            long[] b = randomShape(r);
            long[] want = reference(a, b);
            if (want == null) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Shapes.broadcast("add", a, b));
                assertTrue(e.getMessage().startsWith("add: shapes " + Shapes.format(a) + " and " + Shapes.format(b)
                        + " cannot be broadcast"), e.getMessage());
            } else {
                assertArrayEquals(want, Shapes.broadcast("add", a, b), Shapes.format(a) + " with " + Shapes.format(b));
            }
        }
    }

    @Test
    void addOfBroadcastOperandsReadsTheRightElements() {
        Random r = new Random(99);
        int checked = 0;
        while (checked < 300) {
            long[] a = randomShape(r);
            long[] b = randomShape(r);
            long[] out = reference(a, b);
            if (out == null) continue;
            checked++;
            try (Tensor ta = Torch.arange(0.0, Shapes.numel(a), 1.0, DType.FLOAT64, Device.cpu()).reshape(a);
                 Tensor tb = Torch.arange(0.0, Shapes.numel(b), 1.0, DType.FLOAT64, Device.cpu()).reshape(b);
                 Tensor sum = ta.mul(1000.0).add(tb)) {
                assertArrayEquals(out, sum.shape());
                double[] v = sum.toDoubleArray();
                for (int i = 0; i < v.length; i++) {
                    double want = 1000.0 * operandIndex(out, i, a) + operandIndex(out, i, b);
                    assertEquals(want, v[i], Shapes.format(a) + " + " + Shapes.format(b) + " at " + i);
                }
            }
        }
    }
}
