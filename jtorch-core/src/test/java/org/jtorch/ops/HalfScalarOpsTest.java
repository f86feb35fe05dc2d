package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A float16 or bfloat16 tensor combined with a Java number computes in float32 with the number unrounded, and rounds
 * the result once, as PyTorch 2's opmath does: {@code x / 70001} in float16 is not 0 (70001 is inf in float16), and
 * {@code x * 0.1} in bfloat16 does not first round 0.1 to 0.10009765625. PyTorch 1.13's CPU rounded the number to the
 * tensor's dtype first; PyTorch 2.13 (checked: {@code tensor([262., 1.]).half() / 70001} is {@code [3.7422e-03,
 * 1.4305e-05]}) and PyTorch's CUDA kernels do not. The reference is float32 arithmetic rounded once, computed here.
 * Also a float16 mean sums in float32: the mean of 70,001 ones is 1, where their float16 sum is inf.
 */
class HalfScalarOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final float[] VALUES = {262f, 1f, -3.5f, 0.0999f, 65504f, 1e-4f, -7.25f};
    private static final double[] SCALARS = {70001, 0.1, 1.0 / 70001, 3.0, -1e-5, 1e5};

    private static float round(DType dt, float v) {
        try (Tensor t = Torch.tensor(v).to(dt); Tensor back = t.to(DType.FLOAT32)) {
            return back.item() == 0 ? 0f : (float) back.item();
        }
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void aJavaNumberIsNotRoundedToTheTensorsDtype(DType dt) {
        try (Tensor x = Torch.tensor(VALUES).to(dt).to(DEVICE)) {
            float[] xs = new float[VALUES.length];
            for (int i = 0; i < xs.length; i++) xs[i] = round(dt, VALUES[i]);
            for (double s : SCALARS) {
                float f = (float) s;
                check(dt, x.mul(s), xs, v -> v * f, "mul " + s);
                check(dt, x.div(s), xs, v -> v / f, "div " + s);
                check(dt, x.add(s), xs, v -> v + f, "add " + s);
                check(dt, x.sub(s), xs, v -> v - f, "sub " + s);
                try (Tensor y = x.clone()) {
                    y.mul_(s);
                    check(dt, y, xs, v -> v * f, "mul_ " + s);
                }
            }
        }
    }

    private interface FloatOp {
        float apply(float v);
    }

    private static void check(DType dt, Tensor got, float[] xs, FloatOp op, String what) {
        try (got; Tensor host = got.to(Device.cpu()).to(DType.FLOAT32)) {
            assertEquals(dt, got.dtype(), what);
            float[] g = host.toFloatArray();
            for (int i = 0; i < xs.length; i++) {
                assertEquals(round(dt, op.apply(xs[i])), g[i], 0f, what + " of " + xs[i]);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void theMeanOfAHalfPrecisionTensorSumsInFloat32(DType dt) {
        try (Tensor ones = Torch.ones(70_001).to(dt).to(DEVICE); Tensor m = ones.mean(); Tensor h = m.to(Device.cpu())) {
            assertEquals(dt, m.dtype());
            assertEquals(1.0, h.item(), 0.0);
        }
    }

    /** The float32 accumulation is the declaration's ({@code ReductionOps.MEAN}), so a generic call (the JIT's replay) gets it too. */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void theDeclaredMeanSumsHalfPrecisionInFloat32ThroughTheDispatcher(DType dt) {
        try (Tensor ones = Torch.ones(70_001).to(dt).to(DEVICE);
             Tensor m = Dispatcher.call(org.jtorch.op.ReductionOps.MEAN, new Tensor[] {ones});
             Tensor h = m.to(Device.cpu())) {
            assertEquals(dt, m.dtype());
            assertEquals(1.0, h.item(), 0.0);
        }
    }
}
