package org.jtorch.backend.cpu;

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
 * Float32 batch norm on planes shorter than a vector (2x2, 1x3, 2x3 maps), which runs across each image's
 * {@code c * s} elements and folds lanes into channels, against the same op in float64 (the per-plane path), on
 * random shapes: training and evaluation forwards, the running statistics, and the three gradients.
 */
class BatchNormSmallPlanesTest {
    private static final Generator GEN = new Generator(33);

    private static void assertClose(Tensor expected, Tensor actual, double tol, String what) {
        double[] e = expected.to(DType.FLOAT64).toDoubleArray();
        double[] a = actual.to(DType.FLOAT64).toDoubleArray();
        assertEquals(e.length, a.length, what);
        for (int i = 0; i < e.length; i++) {
            assertTrue(Math.abs(e[i] - a[i]) <= tol * (1 + Math.abs(e[i])), what + " element " + i + ": " + e[i] + " against " + a[i]);
        }
    }

    private static void check(long n, long c, long h, long w, boolean train) {
        String name = "[" + n + ", " + c + ", " + h + ", " + w + "] " + (train ? "train" : "eval");
        // An offset mean: the lanes' shifted sums must not cancel the variance.
        Tensor x64 = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT64, Device.cpu(), GEN).mul(1.7).add(3.0);
        Tensor g64 = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT64, Device.cpu(), GEN);
        Tensor wt64 = Torch.rand(new long[] {c}, DType.FLOAT64, Device.cpu(), GEN).add(0.5);
        Tensor b64 = Torch.randn(new long[] {c}, DType.FLOAT64, Device.cpu(), GEN);
        Tensor rm64 = Torch.randn(new long[] {c}, DType.FLOAT64, Device.cpu(), GEN);
        Tensor rv64 = Torch.rand(new long[] {c}, DType.FLOAT64, Device.cpu(), GEN).add(0.5);
        // The float32 operands are the float64 ones rounded, and the reference runs on those rounded values.
        Tensor x32 = x64.to(DType.FLOAT32), g32 = g64.to(DType.FLOAT32);
        Tensor w32 = wt64.to(DType.FLOAT32), b32 = b64.to(DType.FLOAT32);
        Tensor rm32 = rm64.to(DType.FLOAT32), rv32 = rv64.to(DType.FLOAT32);
        Tensor[] ref = run(x32.to(DType.FLOAT64), g32.to(DType.FLOAT64), w32.to(DType.FLOAT64), b32.to(DType.FLOAT64),
                rm32.to(DType.FLOAT64), rv32.to(DType.FLOAT64), train);
        Tensor[] got = run(x32, g32, w32, b32, rm32, rv32, train);
        String[] names = {"output", "grad input", "grad weight", "grad bias", "running mean", "running var"};
        for (int i = 0; i < ref.length; i++) assertClose(ref[i], got[i], 2e-4, name + " " + names[i]);
    }

    private static Tensor[] run(Tensor x, Tensor g, Tensor w, Tensor b, Tensor rm, Tensor rv, boolean train) {
        Tensor xr = x.clone().requiresGrad_(true), wr = w.clone().requiresGrad_(true), br = b.clone().requiresGrad_(true);
        Tensor rmr = rm.clone(), rvr = rv.clone();
        Tensor y = F.batchNorm(xr, rmr, rvr, wr, br, train, 0.1, 1e-5);
        Tensor[] grads = Autograd.grad(new Tensor[] {y.mul(g).sum()}, new Tensor[] {xr, wr, br});
        return new Tensor[] {y.detach(), grads[0], grads[1], grads[2], rmr, rvr};
    }

    @Test
    void smallPlanesMatchFloat64OnRandomShapes() {
        check(32, 512, 2, 2, true);
        check(3, 9, 2, 2, true);
        check(5, 7, 1, 3, true);
        check(2, 11, 2, 3, true);
        check(1, 40, 2, 2, true);
        check(6, 5, 1, 2, true);   // 10 elements an image: under a vector, the per-plane path
        check(4, 9, 2, 2, false);
        check(3, 13, 1, 3, false);
        java.util.Random r = new java.util.Random(7);
        for (int t = 0; t < 12; t++) {
            long h = 1 + r.nextInt(3), w = 1 + r.nextInt(3);
            check(1 + r.nextInt(9), 1 + r.nextInt(40), h, w, r.nextBoolean());
        }
    }
}
