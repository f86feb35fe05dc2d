package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.GradScaler;
import org.jtorch.op.OptimizerOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * GradScaler's unscale ({@link org.jtorch.backend.OptimizerKernels#unscaleAndCheckFinite}: on CUDA one
 * {@code jt_amp_unscale_<dtype>} multi-tensor kernel over all gradients writing a device flag) on every
 * device: {@code cpu} always, {@code cuda:0} skipped with CUDA's unavailability reason where there is no GPU.
 *
 * <p>Reference: the definition, element by element in Java arithmetic (float32: {@code v * invScale} as a
 * float product; float64: {@code v * (double) invScale}; bfloat16: the float product rounded to bfloat16 by
 * the CPU backend's conversion), and found-inf = whether any input element was inf or NaN. Results must be
 * equal bit for bit. Gradient lists: odd sizes, an empty tensor, a tensor crossing a 65,536-element chunk
 * and 30 tensors (more than one launch's 24 slots); one non-finite value (inf, -inf, NaN) at the first,
 * a middle or the last element of one tensor, or none.
 */
class GradScalerDeviceConformanceTest {
    private static final float INV_SCALE = (float) (1.0 / 65536.0 * 3); // not a power of two: products round
    private static final long[] SIZES = {1, 7, 0, 70_001, 33};

    private static float[] values(long n, int salt) {
        float[] v = new float[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = (float) ((((i * 0.6180339887498949 + 0.137 * salt) % 1.0) * 2 - 1) * 65536 * (1 + i % 5));
        return v;
    }

    /** The values as stored in {@code dtype} (float32 unchanged), as doubles. */
    private static double[] stored(float[] v, DType dtype) {
        try (Tensor f = Torch.tensor(v); Tensor t = f.to(dtype)) {
            return t.toDoubleArray();
        }
    }

    /** The definition: each stored value times invScale in the dtype's arithmetic. */
    private static double[] unscaled(double[] v, DType dtype) {
        double[] r = new double[v.length];
        for (int i = 0; i < v.length; i++) r[i] = dtype == DType.FLOAT64 ? v[i] * (double) INV_SCALE : (float) v[i] * INV_SCALE;
        if (dtype != DType.BFLOAT16) return r;
        float[] f = new float[r.length];
        for (int i = 0; i < r.length; i++) f[i] = (float) r[i];
        return stored(f, DType.BFLOAT16);
    }

    /** {@code _amp_foreach_non_finite_check_and_unscale_(grads, foundInf, inv_scale)} with inv_scale on {@code scaleDevice}. */
    private static void unscale(List<Tensor> grads, Tensor foundInf, float invScale, Device scaleDevice) {
        try (Tensor inv = Torch.full(new long[] {1}, invScale, DType.FLOAT32, scaleDevice)) {
            Dispatcher.callMutating(OptimizerOps.AMP_UNSCALE, List.of(grads), new Tensor[] {foundInf, inv});
        }
    }

    private static void unscaleCase(Device d, DType dtype, int count, int badTensor, int badWhere, float badValue) {
        List<double[]> inputs = new ArrayList<>();
        List<Tensor> grads = new ArrayList<>();
        boolean anyBad = false;
        try {
            for (int k = 0; k < count; k++) {
                long n = SIZES[k % SIZES.length];
                float[] v = values(n, k);
                if (k == badTensor && n > 0) {
                    v[badWhere < 0 ? 0 : badWhere == 0 ? v.length / 2 : v.length - 1] = badValue;
                    anyBad = true;
                }
                double[] s = stored(v, dtype);
                inputs.add(s);
                try (Tensor f = Torch.tensor(v); Tensor t = f.to(dtype)) {
                    grads.add(t.to(d));
                }
            }
            try (Tensor foundInf = Torch.zeros(new long[] {1}, DType.FLOAT32, d)) {
                unscale(grads, foundInf, INV_SCALE, Device.cpu());
                assertEquals(anyBad ? 1.0 : 0.0, foundInf.item(), "found_inf");
            }
            for (int k = 0; k < count; k++) {
                double[] expected = unscaled(inputs.get(k), dtype);
                double[] got = grads.get(k).toDoubleArray();
                for (int i = 0; i < expected.length; i++) {
                    if (Double.doubleToLongBits(expected[i]) != Double.doubleToLongBits(got[i])) {
                        fail(dtype + " tensor " + k + " element " + i + ": expected " + expected[i] + ", got " + got[i]);
                    }
                }
            }
        } finally {
            for (Tensor g : grads) g.close();
        }
    }

    @TestFactory
    List<DynamicTest> unscaleAndCheckFinite() {
        List<DynamicTest> tests = new ArrayList<>();
        for (DType dtype : List.of(DType.FLOAT32, DType.FLOAT64, DType.BFLOAT16)) {
            add(tests, dtype + "/clean", d -> unscaleCase(d, dtype, 5, -1, 0, 0));
            add(tests, dtype + "/30 tensors clean", d -> unscaleCase(d, dtype, 30, -1, 0, 0));
            int where = -1;
            for (float bad : new float[] {Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN}) {
                int w = where++;
                add(tests, dtype + "/" + bad + " at " + (w < 0 ? "first" : w == 0 ? "middle" : "last") + " of tensor 3",
                        d -> unscaleCase(d, dtype, 5, 3, w, bad));
            }
            add(tests, dtype + "/30 tensors, NaN in tensor 27", d -> unscaleCase(d, dtype, 30, 27, 1, Float.NaN));
        }
        add(tests, "empty list leaves the flag", d -> {
            try (Tensor foundInf = Torch.zeros(new long[] {1}, DType.FLOAT32, d)) {
                unscale(List.of(), foundInf, INV_SCALE, Device.cpu());
                assertEquals(0.0, foundInf.item());
            }
        });
        add(tests, "mixed dtypes in one call", d -> {
            try (Tensor a = Torch.tensor(new float[] {1f, Float.NaN}).to(d); Tensor b = Torch.tensor(new double[] {4.0, 8.0}).to(d);
                 Tensor foundInf = Torch.zeros(new long[] {1}, DType.FLOAT32, d)) {
                unscale(List.of(a, b), foundInf, 0.5f, d);
                assertEquals(1.0, foundInf.item());
                assertEquals(0.5, a.toDoubleArray()[0]);
                assertEquals(List.of(2.0, 4.0), List.of(b.toDoubleArray()[0], b.toDoubleArray()[1]));
            }
        });
        return tests;
    }

    /** GradScaler with SGD on each device: an overflowing step is skipped and the scale backs off; a clean one steps. */
    @TestFactory
    List<DynamicTest> gradScalerSkipsOverflowedStepsAndStepsCleanOnes() {
        List<DynamicTest> tests = new ArrayList<>();
        add(tests, "sgd", d -> {
            float[] p0 = values(70_001, 1);
            float[] g = values(70_001, 2);
            try (Tensor p = Torch.tensor(p0).to(d).detach().requiresGrad_(true)) {
                SGD sgd = new SGD(List.of(p), SGD.options().lr(0.5));
                GradScaler scaler = new GradScaler(1024.0, 2.0, 0.5, 2000, true);
                float[] bad = g.clone();
                bad[12_345] = Float.POSITIVE_INFINITY;
                p.setGrad(Torch.tensor(bad).to(d));
                assertFalse(scaler.step(sgd), "a step with an inf gradient is skipped");
                scaler.update();
                assertEquals(512.0, scaler.getScale());
                assertEquals(List.of(p0[0], p0[69_999]), List.of(p.toFloatArray()[0], p.toFloatArray()[69_999]));
                p.grad().close();
                p.setGrad(Torch.tensor(g).to(d));
                assertTrue(scaler.step(sgd));
                scaler.update();
                float inv = (float) (1.0 / 512.0);
                float[] got = p.toFloatArray();
                for (int i = 0; i < got.length; i++) {
                    // SGD without momentum: p + (g * invScale) * -lr, each product rounded to float (CpuOptimizerKernels.sgdF32).
                    float expected = p0[i] + (g[i] * inv) * -0.5f;
                    if (Float.floatToIntBits(expected) != Float.floatToIntBits(got[i])) fail("element " + i + ": " + expected + " vs " + got[i]);
                }
                p.grad().close();
            }
        });
        add(tests, "non-contiguous gradient", d -> {
            try (Tensor base = Torch.tensor(new float[] {1f, 2f, 3f, 4f}).reshape(2, 2).to(d); Tensor t = base.t();
                 Tensor foundInf = Torch.zeros(new long[] {1}, DType.FLOAT32, d)) {
                if (d.isCuda()) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> unscale(List.of(t), foundInf, 0.5f, Device.cpu()));
                    assertTrue(e.getMessage().contains("not contiguous") && e.getMessage().contains("cuda:0"), e.getMessage());
                } else {
                    unscale(List.of(t), foundInf, 0.5f, Device.cpu());
                    assertEquals(List.of(0.5, 1.0, 1.5, 2.0), java.util.Arrays.stream(base.toDoubleArray()).boxed().toList());
                }
            }
        });
        return tests;
    }
}
