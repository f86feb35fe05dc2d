package org.jtorch.backend.cpu;

import static org.jtorch.backend.cpu.SeparateConversionBits.assertSameBits;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Batch norm on bfloat16 activations with float32 parameters (as autocast's convolutions hand it), whose bfloat16 plane
 * loops widen and round in registers ({@link BatchNormBf16}), against the separate-conversion path: the same
 * operands widened to float32, batch norm in float32 and the output and input gradient rounded to bfloat16 once.
 * Bit for bit: the same float32 operations run in the same order on the same values. Odd shapes cover planes of one
 * vector, vector tails, planes longer than the float32 lanes' flush block, planes under a vector (the widening path),
 * batch of one, no affine parameters, training and evaluation.
 */
class BatchNormBf16Test {
    private static final Generator GEN = new Generator(45);

    private static void check(long n, long c, long h, long w, boolean train, boolean affine) {
        String name = "[" + n + ", " + c + ", " + h + ", " + w + "] " + (train ? "train" : "eval") + (affine ? "" : " no affine");
        // An offset mean: the shifted sums must not cancel the variance.
        Tensor x = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT32, Device.cpu(), GEN).mul(1.7f).add(3.0f).to(DType.BFLOAT16);
        Tensor g = Torch.randn(new long[] {n, c, h, w}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        Tensor wt = affine ? Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN).add(0.5f) : null;
        Tensor b = affine ? Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN) : null;
        Tensor rm = Torch.randn(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN);
        Tensor rv = Torch.rand(new long[] {c}, DType.FLOAT32, Device.cpu(), GEN).add(0.5f);
        Tensor[] separate = run(x.to(DType.FLOAT32), g.to(DType.FLOAT32), wt, b, rm, rv, train);
        separate[0] = separate[0].to(DType.BFLOAT16);
        separate[1] = separate[1].to(DType.BFLOAT16);
        Tensor[] inRegisters = run(x, g, wt, b, rm, rv, train);
        String[] names = {"output", "grad input", "grad weight", "grad bias", "running mean", "running var"};
        for (int i = 0; i < separate.length; i++) {
            if (separate[i] != null) assertSameBits(separate[i], inRegisters[i], name + " " + names[i]);
        }
    }

    private static Tensor[] run(Tensor x, Tensor g, Tensor w, Tensor b, Tensor rm, Tensor rv, boolean train) {
        Tensor xr = x.clone().requiresGrad_(true);
        Tensor wr = w == null ? null : w.clone().requiresGrad_(true);
        Tensor br = b == null ? null : b.clone().requiresGrad_(true);
        Tensor rmr = rm.clone(), rvr = rv.clone();
        Tensor y = F.batchNorm(xr, rmr, rvr, wr, br, train, 0.1, 1e-5);
        Tensor[] inputs = w == null ? new Tensor[] {xr} : new Tensor[] {xr, wr, br};
        Tensor[] grads = Autograd.grad(new Tensor[] {y}, inputs, new Tensor[] {g}, false, false, false);
        return new Tensor[] {y.detach(), grads[0], w == null ? null : grads[1], w == null ? null : grads[2], rmr, rvr};
    }

    @Test
    void registerConversionEqualsSeparateConversionBitForBit() {
        check(8, 16, 32, 32, true, true);   // ResNet-20's first stage, smaller batch
        check(5, 3, 4, 4, true, true);      // planes of exactly one vector (AVX-512)
        check(3, 7, 17, 1, true, true);     // a vector and a tail of one
        check(2, 5, 7, 5, true, true);      // two vectors and a tail
        check(1, 9, 45, 47, true, true);    // planes past the 2048-element flush block
        check(4, 6, 3, 3, true, true);      // planes under a vector: the widening path
        check(6, 11, 8, 8, true, false);
        check(7, 5, 9, 7, false, true);
        check(3, 4, 16, 16, false, false);
        java.util.Random r = new java.util.Random(11);
        for (int t = 0; t < 10; t++) {
            check(1 + r.nextInt(6), 1 + r.nextInt(20), 1 + r.nextInt(12), 1 + r.nextInt(40), r.nextInt(4) > 0, r.nextBoolean());
        }
    }
}
