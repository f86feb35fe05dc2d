package org.jtorch.amp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.cpu.CpuOptimizerKernels;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.utils.ClipGrad;
import org.jtorch.optim.Adam;
import org.jtorch.optim.SGD;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * GradScaler: the scale trajectory against PyTorch 1.13's GradScaler class ({@code tools/fixtures/gen_amp.py};
 * its CUDA update kernel transcribed, as 1.13 has none on the CPU), skipped steps, the once-per-step rules,
 * clipping, several optimizers, accumulation, state dicts and the fused unscale kernel.
 */
class GradScalerTest {

    @TestFactory
    Stream<DynamicTest> scaleTrajectoryMatchesPyTorch() {
        return Fixtures.load("amp").stream().filter(c -> c.op().equals("scaler"))
                .map(c -> DynamicTest.dynamicTest("scaler/" + c.name(), () -> checkTrajectory(c)));
    }

    private static void checkTrajectory(Case c) {
        GradScaler scaler = new GradScaler(c.doubleArg("init_scale", 65536.0), c.doubleArg("growth_factor", 2.0),
                c.doubleArg("backoff_factor", 0.5), (int) c.longArg("growth_interval", 2000), true);
        boolean[] events;
        try (Tensor e = c.input(0)) {
            events = e.toBooleanArray();
        }
        List<Double> scales = new ArrayList<>();
        List<Long> trackers = new ArrayList<>();
        List<Boolean> stepped = new ArrayList<>();
        Tensor p = Torch.zeros(3).requiresGrad_(true);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.1));
        for (boolean inf : events) {
            try (MemoryScope scope = new MemoryScope()) {
                opt.zeroGrad();
                Tensor coef = Torch.tensor(new float[] {1e-3f, inf ? Float.POSITIVE_INFINITY : 2e-3f, 3e-3f});
                Tensor loss = p.mul(coef).sum();
                scaler.scale(loss).backward();
                stepped.add(scaler.step(opt));
                scaler.update();
                scales.add(scaler.getScale());
                trackers.add((long) scaler.getGrowthTracker());
            }
        }
        JsonArray e = c.expected().getAsJsonArray();
        try (MemoryScope scope = new MemoryScope()) {
            Fixtures.assertMatches(e.get(0).getAsJsonObject(), Torch.tensor(scales.stream().mapToDouble(d -> d).toArray()).to(DType.FLOAT32),
                    0, 0, "scale");
            Fixtures.assertMatches(e.get(1).getAsJsonObject(), Torch.tensor(trackers.stream().mapToLong(l -> l).toArray()).to(DType.INT32),
                    "growth tracker");
            boolean[] s = new boolean[stepped.size()];
            for (int i = 0; i < s.length; i++) s[i] = stepped.get(i);
            Fixtures.assertMatches(e.get(2).getAsJsonObject(), Torch.tensor(s), "stepped");
        }
        p.close();
    }

    private static Tensor param(float... values) {
        return Torch.tensor(values).requiresGrad_(true);
    }

    @Test
    void stepIsSkippedOnNanOrInfGradientsAndTheScaleBacksOff() {
        for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
            Tensor p = param(1f, 2f);
            SGD opt = new SGD(List.of(p), SGD.options().lr(0.5));
            GradScaler scaler = new GradScaler();
            p.setGrad(Torch.tensor(new float[] {bad, 4f}));
            assertFalse(scaler.step(opt));
            scaler.update();
            assertArrayEquals(new float[] {1f, 2f}, p.toFloatArray(), "parameter untouched");
            assertEquals(32768.0, scaler.getScale());
            p.close();
        }
    }

    @Test
    void stepUnscalesBeforeTheOptimizerSeesTheGradients() {
        Tensor p = param(1f, 2f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.5));
        GradScaler scaler = new GradScaler();
        try (Tensor loss = p.mul(Torch.tensor(new float[] {3f, 5f})).sum(); Tensor scaled = scaler.scale(loss)) {
            assertEquals(DType.FLOAT32, scaled.dtype());
            assertArrayEquals(new long[] {1}, scaled.shape(), "PyTorch's scale is a [1] tensor");
            assertEquals(65536.0 * 13, scaled.item());
            scaled.backward();
        }
        assertArrayEquals(new float[] {3 * 65536f, 5 * 65536f}, p.grad().toFloatArray());
        assertTrue(scaler.step(opt));
        assertArrayEquals(new float[] {1f - 1.5f, 2f - 2.5f}, p.toFloatArray());
        p.close();
    }

    @Test
    void scaledHalfLossDoesNotOverflow() {
        try (Tensor loss = Torch.tensor(new float[] {2f}).to(DType.FLOAT16).reshape(); Tensor s = new GradScaler().scale(loss)) {
            assertEquals(DType.FLOAT32, s.dtype());
            assertEquals(131072.0, s.item());
        }
    }

    @Test
    void unscaleTwiceOrAfterStepIsAnError() {
        Tensor p = param(1f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.1));
        GradScaler scaler = new GradScaler();
        p.setGrad(Torch.tensor(new float[] {1f}));
        scaler.unscale_(opt);
        var twice = assertThrows(IllegalStateException.class, () -> scaler.unscale_(opt));
        assertTrue(twice.getMessage().contains("unscale_() has already been called on this optimizer since the last update()"));
        scaler.step(opt);
        var after = assertThrows(IllegalStateException.class, () -> scaler.unscale_(opt));
        assertTrue(after.getMessage().contains("unscale_() is being called after step()"));
        var stepTwice = assertThrows(IllegalStateException.class, () -> scaler.step(opt));
        assertTrue(stepTwice.getMessage().contains("step() has already been called since the last update()"));
        scaler.update();
        scaler.unscale_(opt); // a new iteration
        p.close();
    }

    @Test
    void stepWithoutGradientsAndUpdateWithoutStepsAreErrors() {
        Tensor p = param(1f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.1));
        GradScaler scaler = new GradScaler();
        assertThrows(IllegalStateException.class, scaler::update);
        var e = assertThrows(IllegalStateException.class, () -> scaler.step(opt));
        assertTrue(e.getMessage().contains("No inf checks were recorded"));
        p.close();
    }

    @Test
    void float16GradientsAreRefused() {
        Tensor p = Torch.tensor(new float[] {1f}).to(DType.FLOAT16).requiresGrad_(true);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.1));
        p.setGrad(Torch.tensor(new float[] {1f}).to(DType.FLOAT16));
        var e = assertThrows(IllegalArgumentException.class, () -> new GradScaler().unscale_(opt));
        assertTrue(e.getMessage().contains("Attempting to unscale FP16 gradients"));
        p.close();
    }

    @Test
    void clippingAfterUnscaleSeesTheTrueGradients() {
        Tensor p = param(0f, 0f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(1.0));
        GradScaler scaler = new GradScaler(1024.0, 2.0, 0.5, 2000, true);
        p.setGrad(Torch.tensor(new float[] {3f * 1024, 4f * 1024})); // true gradient [3, 4], norm 5
        scaler.unscale_(opt);
        try (Tensor norm = ClipGrad.clipGradNorm_(List.of(p), 1.0)) {
            assertEquals(5.0, norm.item(), 1e-6);
        }
        assertTrue(scaler.step(opt)); // does not unscale again
        scaler.update();
        assertArrayEquals(new float[] {-0.6f, -0.8f}, p.toFloatArray(), 1e-5f);
        p.close();
    }

    @Test
    void eachOptimizerStepsOnItsOwnChecksAndUpdateBacksOffIfAnyOverflowed() {
        Tensor a = param(1f);
        Tensor b = param(1f);
        SGD sgd = new SGD(List.of(a), SGD.options().lr(1.0));
        Adam adam = new Adam(List.of(b), Adam.options().lr(0.1));
        GradScaler scaler = new GradScaler(8.0, 2.0, 0.5, 2000, true);
        a.setGrad(Torch.tensor(new float[] {8f}));
        b.setGrad(Torch.tensor(new float[] {Float.POSITIVE_INFINITY}));
        assertTrue(scaler.step(sgd));
        assertFalse(scaler.step(adam));
        scaler.update();
        assertArrayEquals(new float[] {0f}, a.toFloatArray());
        assertArrayEquals(new float[] {1f}, b.toFloatArray());
        assertEquals(4.0, scaler.getScale());
        a.close();
        b.close();
    }

    @Test
    void gradientAccumulationStepsOnTheSumOfUnscaledMicroBatchGradients() {
        Tensor p = param(0f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(1.0));
        GradScaler scaler = new GradScaler();
        for (float c : new float[] {2f, 3f, 5f}) {
            try (MemoryScope s = new MemoryScope()) {
                scaler.scale(p.mul(c).sum()).backward();
            }
        }
        assertTrue(scaler.step(opt));
        scaler.update();
        assertArrayEquals(new float[] {-10f}, p.toFloatArray());
        p.close();
    }

    @Test
    void lossesScaledBeforeOneBackwardShareTheScale() {
        Tensor p = param(1f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(1.0));
        GradScaler scaler = new GradScaler(4.0, 2.0, 0.5, 2000, true);
        try (MemoryScope s = new MemoryScope()) {
            Tensor a = scaler.scale(p.mul(2.0).sum());
            Tensor b = scaler.scale(p.mul(3.0).sum());
            a.add(b).backward();
        }
        assertArrayEquals(new float[] {20f}, p.grad().toFloatArray());
        assertTrue(scaler.step(opt));
        scaler.update();
        assertArrayEquals(new float[] {-4f}, p.toFloatArray());
        p.close();
    }

    @Test
    void disabledScalerIsTransparent() {
        Tensor p = param(1f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(1.0));
        GradScaler scaler = new GradScaler(false);
        try (Tensor loss = p.mul(2.0).sum(); Tensor s = scaler.scale(loss)) {
            assertEquals(2.0, s.item());
            s.backward();
        }
        assertTrue(scaler.step(opt));
        scaler.update();
        assertEquals(1.0, scaler.getScale());
        assertTrue(scaler.stateDict().isEmpty());
        assertArrayEquals(new float[] {-1f}, p.toFloatArray());
        p.close();
    }

    @Test
    void stateDictHasPyTorchsKeysAndRoundTrips() {
        GradScaler a = new GradScaler(1024.0, 3.0, 0.25, 7, true);
        Tensor p = param(1f);
        SGD opt = new SGD(List.of(p), SGD.options().lr(0.1));
        p.setGrad(Torch.tensor(new float[] {1f}));
        a.step(opt);
        a.update();
        Map<String, Object> sd = a.stateDict();
        assertEquals(List.of("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"), List.copyOf(sd.keySet()));
        assertEquals(1024.0, sd.get("scale"));
        assertEquals(1, sd.get("_growth_tracker"));
        GradScaler b = new GradScaler();
        b.loadStateDict(sd);
        assertEquals(sd, b.stateDict());
        assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(Map.of()));
        p.close();
    }

    @Test
    void updateWithANewScaleSetsIt() {
        GradScaler s = new GradScaler();
        s.update(128.0);
        assertEquals(128.0, s.getScale());
    }

    @Test
    void fusedUnscaleKernelMultipliesEveryElementAndFlagsNonFinite() {
        for (DType dt : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT16, DType.FLOAT64}) {
            for (int n : new int[] {1, 7, 16, 37, 100_003}) {
                for (int bad : new int[] {-1, 0, n - 1, n / 2}) {
                    float[] v = new float[n];
                    for (int i = 0; i < n; i++) v[i] = (i % 13) - 6;
                    if (bad >= 0) v[bad] = bad % 2 == 0 ? Float.NaN : Float.NEGATIVE_INFINITY;
                    try (Tensor g = Torch.tensor(v).to(dt); Tensor expected = g.to(DType.FLOAT32).mul(0.25)) {
                        boolean found = CpuOptimizerKernels.unscaleAndCheckFinite(dt, g.storage().segment(),
                                g.storageOffset() * dt.byteSize(), g.numel(), 0.25f);
                        String what = dt + " n=" + n + " bad=" + bad;
                        assertEquals(bad >= 0, found, what);
                        try (Tensor got = g.to(DType.FLOAT32)) {
                            assertArrayEquals(expected.toFloatArray(), got.toFloatArray(), what);
                        }
                    }
                }
            }
        }
    }

    @Test
    void nonContiguousGradientsAreUnscaledAsContiguousOnesAre() {
        // A transposed gradient takes the kernel's element-by-element path; the contiguous path is the reference.
        for (DType dt : new DType[] {DType.FLOAT32, DType.BFLOAT16, DType.FLOAT16, DType.FLOAT64}) {
            float[] v = new float[35];
            for (int i = 0; i < v.length; i++) v[i] = (i - 17) * 0.37f;
            v[11] = Float.POSITIVE_INFINITY;
            try (Tensor base = Torch.tensor(v).reshape(5,
                    7).to(dt); Tensor strided = base.t(); Tensor dense = strided.contiguous()) {
                try (Grad.Mode m = Grad.noGrad()) {
                    assertTrue(GradScaler.unscaleGrad(strided, 0.3f), dt + ": the inf is found");
                    assertTrue(GradScaler.unscaleGrad(dense, 0.3f), dt + ": the inf is found");
                }
                try (Tensor a = strided.to(DType.FLOAT64); Tensor b = dense.to(DType.FLOAT64)) {
                    assertArrayEquals(b.toDoubleArray(), a.toDoubleArray(), dt.toString());
                }
            }
        }
    }

    @Test
    void nonContiguousGradientsAreUnscaledInPlace() {
        try (Tensor base = Torch.tensor(new float[] {1f, 2f, 3f, Float.NaN}).reshape(2, 2); Tensor g = base.t()) {
            try (Grad.Mode m = Grad.noGrad()) {
                assertTrue(GradScaler.unscaleGrad(g, 0.5f));
            }
            float[] out = base.toFloatArray();
            assertEquals(0.5f, out[0]);
            assertEquals(1.5f, out[2]);
            assertTrue(Float.isNaN(out[3]));
        }
    }
}
