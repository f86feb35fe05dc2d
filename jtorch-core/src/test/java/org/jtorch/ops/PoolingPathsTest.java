package org.jtorch.ops;

import org.jtorch.op.Shapes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The float32 fast paths (heap planes, row pass then column pass) against the generic float64 path (PyTorch's
 * row-major window scan), on planes wider than a vector, with many ties, NaNs and infinities: max pooling must
 * pick the same elements (same indices, so the same gradient routing); average pooling agrees to float rounding.
 */
class PoolingPathsTest {
    private static final int[][] GEOMETRIES = {
        // kernel h, w, stride h, w, pad h, w
        {3, 3, 2, 2, 1, 1}, {2, 2, 2, 2, 0, 0}, {3, 3, 1, 1, 1, 1}, {2, 3, 1, 2, 1, 1}, {4, 2, 3, 1, 2, 0}, {1, 1, 1, 1, 0, 0},
    };

    /** Values from a small set (ties everywhere), with some NaN and +-inf. */
    private static Tensor tricky(long seed, long... shape) {
        Random r = new Random(seed);
        int n = (int) Shapes.numel(shape);
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            int k = r.nextInt(40);
            v[i] = k == 0 ? Double.NaN : k == 1 ? Double.POSITIVE_INFINITY : k == 2 ? Double.NEGATIVE_INFINITY : r.nextInt(5) - 2;
        }
        return Torch.tensor(v, shape);
    }

    @Test
    void maxPoolFastPathPicksTheSameElementsAsTheRowMajorScan() {
        for (boolean ceil : new boolean[] {false, true}) {
            for (int[] g : GEOMETRIES) {
                try (Tensor x64 = tricky(g[0] * 31L + g[2], 2, 3, 19, 37); Tensor x32 = x64.to(DType.FLOAT32);
                     ValuesIndices a = Pooling.maxPool2dWithIndices(x32, new int[] {g[0], g[1]}, new int[] {g[2], g[3]},
                             new int[] {g[4], g[5]}, new int[] {1}, ceil);
                     ValuesIndices b = Pooling.maxPool2dWithIndices(x64, new int[] {g[0], g[1]}, new int[] {g[2], g[3]},
                             new int[] {g[4], g[5]}, new int[] {1}, ceil)) {
                    String what = java.util.Arrays.toString(g) + " ceil=" + ceil;
                    assertArrayEquals(b.indices().toLongArray(), a.indices().toLongArray(), what);
                    double[] va = a.values().toDoubleArray();
                    double[] vb = b.values().toDoubleArray();
                    for (int i = 0; i < va.length; i++) assertEquals(vb[i], va[i], 0.0, what + " element " + i);
                }
            }
        }
    }

    /** The 2x2 stride-2 path (SpatialF32.maxPoolPairs) at the MNIST CNN's and LeNet-5's planes, and odd ones it crops. */
    @Test
    void twoByTwoPoolsPickTheSameElementsAsTheRowMajorScan() {
        long[][] shapes = {{2, 3, 24, 24}, {2, 2, 28, 28}, {3, 2, 10, 10}, {1, 2, 7, 9}, {1, 1, 2, 2}};
        for (long[] shape : shapes) {
            for (boolean ceil : new boolean[] {false, true}) {
                try (Tensor x64 = tricky(shape[2] * 7 + shape[3], shape); Tensor x32 = x64.to(DType.FLOAT32);
                     ValuesIndices a = Pooling.maxPool2dWithIndices(x32, new int[] {2}, new int[] {2}, new int[] {0}, new int[] {1}, ceil);
                     ValuesIndices b = Pooling.maxPool2dWithIndices(x64, new int[] {2}, new int[] {2}, new int[] {0}, new int[] {1}, ceil);
                     Tensor plain = Pooling.maxPool2d(x32, new int[] {2}, new int[] {2}, new int[] {0}, new int[] {1}, ceil)) {
                    String what = java.util.Arrays.toString(shape) + " ceil=" + ceil;
                    assertArrayEquals(b.indices().toLongArray(), a.indices().toLongArray(), what);
                    double[] va = a.values().toDoubleArray();
                    double[] vb = b.values().toDoubleArray();
                    double[] vp = plain.toDoubleArray();
                    for (int i = 0; i < va.length; i++) {
                        assertEquals(vb[i], va[i], 0.0, what + " element " + i);
                        assertEquals(vb[i], vp[i], 0.0, what + " element " + i + " without indices");
                    }
                }
            }
        }
    }

    @Test
    void maxPoolWithoutIndicesGivesTheSameValues() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            try (Tensor x64 = tricky(9, 2, 3, 19, 37); Tensor x = x64.to(t);
                 Tensor plain = Pooling.maxPool2d(x, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, true);
                 ValuesIndices r = Pooling.maxPool2dWithIndices(x, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, true)) {
                assertArrayEquals(r.values().toDoubleArray(), plain.toDoubleArray(), t.toString());
            }
        }
    }

    @Test
    void maxPoolGradientScattersToTheSameElements() {
        try (Tensor x64 = tricky(5, 2, 2, 17, 33); Tensor x32 = x64.to(DType.FLOAT32);
             ValuesIndices a = Pooling.maxPool2dWithIndices(x32, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
             ValuesIndices b = Pooling.maxPool2dWithIndices(x64, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
             Tensor g64 = Torch.randn(b.values().shape()).to(DType.FLOAT64); Tensor g32 = g64.to(DType.FLOAT32);
             Tensor ga = Pooling.maxPool2dBackward(g32, a.indices(), x32.shape());
             Tensor gb = Pooling.maxPool2dBackward(g64, b.indices(), x64.shape())) {
            double[] da = ga.toDoubleArray();
            double[] db = gb.toDoubleArray();
            for (int i = 0; i < da.length; i++) assertEquals(db[i], da[i], 1e-5, "element " + i);
        }
    }

    @Test
    void avgPoolFastPathAgreesWithTheGenericPath() {
        Random r = new Random(3);
        for (boolean ceil : new boolean[] {false, true}) {
            for (boolean includePad : new boolean[] {false, true}) {
                for (int[] g : GEOMETRIES) {
                    if (g[4] * 2 > g[0] || g[5] * 2 > g[1]) continue;
                    try (Tensor x64 = Torch.randn(2, 3, 19, 37).to(DType.FLOAT64); Tensor x32 = x64.to(DType.FLOAT32)) {
                        int[] k = {g[0], g[1]};
                        int[] s = {g[2], g[3]};
                        int[] p = {g[4], g[5]};
                        long divisor = r.nextBoolean() ? 0 : 3;
                        try (Tensor a = Pooling.avgPool2d(x32, k, s, p, ceil, includePad, divisor);
                             Tensor b = Pooling.avgPool2d(x64, k, s, p, ceil, includePad, divisor);
                             Tensor ga = Pooling.avgPool2dBackward(a, x32.shape(), k, s, p, ceil, includePad, divisor);
                             Tensor gb = Pooling.avgPool2dBackward(b, x64.shape(), k, s, p, ceil, includePad, divisor)) {
                            close(a.toDoubleArray(), b.toDoubleArray(), java.util.Arrays.toString(g));
                            close(ga.toDoubleArray(), gb.toDoubleArray(), java.util.Arrays.toString(g) + " backward");
                        }
                    }
                }
            }
        }
    }

    private static void close(double[] a, double[] b, String what) {
        assertEquals(b.length, a.length, what);
        for (int i = 0; i < a.length; i++) assertEquals(b[i], a[i], 1e-5 * (1 + Math.abs(b[i])), what + " element " + i);
    }
}
