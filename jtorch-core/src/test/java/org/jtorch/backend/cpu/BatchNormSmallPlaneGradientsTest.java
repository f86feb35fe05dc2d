package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Batch norm's backward on small float32 planes (ResNet-20's 8x8 and 16x16 maps, odd planes with a scalar tail): the
 * three gradients have the same bits in one and two threads (two threads split the input gradient's planes
 * mid-channel) and match float64 gradients computed from their formulas in tensor ops, independent of the kernels.
 */
class BatchNormSmallPlaneGradientsTest {
    private static final Generator GEN = new Generator(71);

    private static Tensor[] backward(Tensor x, Tensor g, Tensor w, Tensor b) {
        Tensor xr = x.clone().requiresGrad_(true), wr = w.clone().requiresGrad_(true), br = b.clone().requiresGrad_(true);
        long c = x.shape()[1];
        Tensor y = F.batchNorm(xr, Torch.zeros(new long[] {c}, x.dtype(), Device.cpu()), Torch.ones(new long[] {c}, x.dtype(), Device.cpu()), wr, br, true, 0.1, 1e-5);
        return Autograd.grad(new Tensor[] {y.mul(g).sum()}, new Tensor[] {xr, wr, br});
    }

    /** The three gradients in float64 from their formulas in tensor ops, independent of the batch norm kernels. */
    private static Tensor[] reference(Tensor x, Tensor g, Tensor w) {
        int[] dims = {0, 2, 3};
        long[] perChannel = {1, x.shape()[1], 1, 1};
        Tensor xm = x.sub(x.mean(dims, true));
        Tensor invstd = xm.mul(xm).mean(dims, true).add(1e-5).rsqrt();
        Tensor xhat = xm.mul(invstd);
        Tensor gradInput = g.sub(g.mean(dims, true)).sub(xhat.mul(g.mul(xhat).mean(dims, true))).mul(invstd).mul(w.reshape(perChannel));
        return new Tensor[] {gradInput, g.mul(xhat).sum(dims), g.sum(dims)};
    }

    private static void check(long n, long c, long h, long w) {
        String name = "[" + n + ", " + c + ", " + h + ", " + w + "]";
        Tensor x = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT32, Device.cpu(), GEN).mul(1.3).add(2.0);
        Tensor g = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT32, Device.cpu(), GEN);
        Tensor wt = Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN).add(0.5);
        Tensor b = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN);
        int threads = Parallel.numThreads();
        Tensor[] one, two;
        try {
            Parallel.setNumThreads(1);
            one = backward(x, g, wt, b);
            Parallel.setNumThreads(2);
            two = backward(x, g, wt, b);
        } finally {
            Parallel.setNumThreads(threads);
        }
        Tensor[] ref = reference(x.to(DType.FLOAT64), g.to(DType.FLOAT64), wt.to(DType.FLOAT64));
        String[] names = {"grad input", "grad weight", "grad bias"};
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(one[i].toFloatArray(), two[i].toFloatArray(), name + " " + names[i] + ": one thread against two");
            double[] e = ref[i].toDoubleArray();
            float[] a = one[i].toFloatArray();
            assertEquals(e.length, a.length);
            for (int k = 0; k < e.length; k++) {
                assertTrue(Math.abs(e[k] - a[k]) <= 1e-4 * (1 + Math.abs(e[k])), name + " " + names[i] + " element " + k + ": " + e[k] + " against " + a[k]);
            }
        }
    }

    @Test
    void smallPlaneGradientsMatchFloat64InOneAndTwoThreads() {
        check(128, 64, 8, 8);      // ResNet-20's last stage; two threads split its planes mid-channel
        check(33, 32, 16, 16);
        check(17, 7, 5, 9);        // 45-float planes: a vector and a scalar tail
        check(9, 13, 4, 4);
        check(200, 3, 4, 5);       // more images than one f32 flush holds
    }
}
