package org.jtorch.cuda;

import static org.jtorch.cuda.DeviceCases.add;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.optim.Adadelta;
import org.jtorch.optim.Adam;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The fused optimizer steps ({@link org.jtorch.op.OptimizerOps}: SGD, Adam, AdamW, Adadelta through the
 * public optimizers) on every device: {@code cpu} always, {@code cuda:0} skipped with CUDA's
 * unavailability reason where there is no GPU (never passed).
 *
 * <p>Reference: a scalar float32 transcription in this test of PyTorch 1.13's update rules in
 * {@code CpuOptimizerKernels}' operation order (each product and sum rounded to float, scalars computed
 * in double and rounded once, as {@code SGD}, {@code AdamUpdate} and {@code Adadelta} pass them). Parameters and states
 * must equal it bit for bit after several steps on every device, so cuda:0 equals the CPU backend bit
 * for bit. Parameter lists: odd sizes, a tensor crossing a 65,536-element chunk, an empty tensor, a
 * parameter without a gradient, and 30 tensors (more than one launch's 24 slots); on cuda:0 also one
 * tensor of more than 320 chunks (two launches).
 */
class OptimizerDeviceConformanceTest {
    private static final Device CUDA = DeviceCases.CUDA;
    private static final int STEPS = 3;

    private static float[] values(long n, int salt) {
        float[] v = new float[Math.toIntExact(n)];
        for (int i = 0; i < v.length; i++) v[i] = (float) (((i * 0.6180339887498949 + 0.137 * salt) % 1.0) * 2 - 1);
        return v;
    }

    private static double[] toDouble(float[] f) {
        double[] d = new double[f.length];
        for (int i = 0; i < f.length; i++) d[i] = f[i];
        return d;
    }

    private static Tensor onDevice(float[] v, Device d) {
        try (Tensor h = Torch.tensor(toDouble(v), DType.FLOAT32, v.length)) {
            return h.to(d).detach().requiresGrad_(true);
        }
    }

    // ------------------------------------------------------------------ the reference rules

    /** One parameter's float state in the reference. */
    private static final class Ref {
        final float[] p;
        float[] s0, s1, s2;
        Ref(float[] p) {
            this.p = p.clone();
        }
    }

    private record SgdConfig(double lr, double momentum, double dampening, double wd, boolean nesterov, boolean maximize) {}

    private static void sgdRef(Ref r, float[] g, SgdConfig c) {
        float negLr = (float) -c.lr, wd = (float) c.wd, mu = (float) c.momentum, omd = (float) (1 - c.dampening);
        boolean first = mu != 0 && r.s0 == null;
        if (first) r.s0 = new float[r.p.length];
        for (int i = 0; i < r.p.length; i++) {
            float pv = r.p[i];
            float d = g[i];
            if (c.maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            if (mu != 0) {
                float b = first ? d : r.s0[i] * mu + d * omd;
                r.s0[i] = b;
                d = c.nesterov ? d + b * mu : b;
            }
            r.p[i] = pv + d * negLr;
        }
    }

    private record AdamConfig(boolean decoupled, double lr, double beta1, double beta2, double eps, double wd, boolean amsgrad,
                              boolean maximize) {}

    private static void adamRef(Ref r, float[] g, AdamConfig c, int step) {
        if (r.s0 == null) {
            r.s0 = new float[r.p.length];
            r.s1 = new float[r.p.length];
            if (c.amsgrad) r.s2 = new float[r.p.length];
        }
        double bias1 = 1 - Math.pow(c.beta1, step), bias2 = 1 - Math.pow(c.beta2, step);
        float paramScale = c.decoupled ? (float) (1 - c.lr * c.wd) : 1f, wd = c.decoupled ? 0f : (float) c.wd;
        float b1 = (float) c.beta1, omb1 = (float) (1 - c.beta1), b2 = (float) c.beta2, omb2 = (float) (1 - c.beta2);
        float bc2Sqrt = (float) Math.sqrt(bias2), eps = (float) c.eps, negStep = (float) -(c.lr / bias1);
        for (int i = 0; i < r.p.length; i++) {
            float pv = r.p[i];
            if (paramScale != 1f) pv = pv * paramScale;
            float d = g[i];
            if (c.maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            float mv = r.s0[i] * b1 + d * omb1;
            r.s0[i] = mv;
            float vv = r.s1[i] * b2 + d * omb2 * d;
            r.s1[i] = vv;
            if (c.amsgrad) {
                vv = Math.max(r.s2[i], vv);
                r.s2[i] = vv;
            }
            float denom = (float) Math.sqrt(vv) / bc2Sqrt + eps;
            r.p[i] = pv + mv * negStep / denom;
        }
    }

    private record AdadeltaConfig(double lr, double rho, double eps, double wd, boolean maximize) {}

    /** Adadelta's composed path: {@code s = s*rho + ((1-rho)*d)*d}, {@code delta = sqrt(a + eps) / sqrt(s + eps) * d}, ... */
    private static void adadeltaRef(Ref r, float[] g, AdadeltaConfig c) {
        if (r.s0 == null) {
            r.s0 = new float[r.p.length];
            r.s1 = new float[r.p.length];
        }
        float negLr = (float) -c.lr, rho = (float) c.rho, omr = (float) (1 - c.rho), eps = (float) c.eps, wd = (float) c.wd;
        for (int i = 0; i < r.p.length; i++) {
            float pv = r.p[i];
            float d = g[i];
            if (c.maximize) d = -d;
            if (wd != 0) d = d + pv * wd;
            float s = r.s0[i] * rho + d * omr * d;
            r.s0[i] = s;
            float a = r.s1[i];
            float delta = (float) Math.sqrt(a + eps) / (float) Math.sqrt(s + eps) * d;
            r.s1[i] = a * rho + delta * omr * delta;
            r.p[i] = pv + delta * negLr;
        }
    }

    // ------------------------------------------------------------------ the runs

    private interface RefStep {
        void step(Ref r, float[] grad, int step);
    }

    private static void assertBits(float[] expected, Tensor actual, String what) {
        float[] a;
        try (Tensor h = actual.to(Device.cpu())) {
            a = h.toFloatArray();
        }
        assertEquals(expected.length, a.length, what + ": element count");
        for (int i = 0; i < a.length; i++) {
            if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(a[i])) {
                fail(what + ": element " + i + " expected " + expected[i] + " but was " + a[i] + " (bit for bit)");
            }
        }
    }

    /**
     * Runs {@code STEPS} steps of the optimizer made by {@code make} on parameters of {@code sizes} on
     * device d (the last parameter gets no gradient when {@code lastWithoutGrad}) and compares parameters
     * and the named states with the reference.
     */
    private static void run(Device d, long[] sizes, boolean lastWithoutGrad, Function<List<Tensor>, Optimizer> make, RefStep ref,
                            String[] stateNames, String what) {
        List<Tensor> params = new ArrayList<>();
        List<Ref> refs = new ArrayList<>();
        for (int k = 0; k < sizes.length; k++) {
            float[] v = values(sizes[k], k + 1);
            params.add(onDevice(v, d));
            refs.add(new Ref(v));
        }
        Optimizer opt = make.apply(params);
        try {
            for (int step = 1; step <= STEPS; step++) {
                for (int k = 0; k < sizes.length; k++) {
                    if (lastWithoutGrad && k == sizes.length - 1) continue;
                    float[] g = values(sizes[k], 7 * step + k);
                    for (int i = 0; i < g.length; i++) g[i] *= 0.5f + step;
                    try (Tensor h = Torch.tensor(toDouble(g), DType.FLOAT32, g.length)) {
                        params.get(k).setGrad(h.to(d));
                    }
                    ref.step(refs.get(k), g, step);
                }
                opt.step();
            }
            @SuppressWarnings("unchecked")
            java.util.Map<Integer, java.util.Map<String, Object>> state =
                    (java.util.Map<Integer, java.util.Map<String, Object>>) opt.stateDict().get("state");
            for (int k = 0; k < sizes.length; k++) {
                Tensor p = params.get(k);
                assertEquals(d, p.device(), what + ": parameter device");
                assertBits(refs.get(k).p, p, d + "/" + what + ": parameter " + k);
                java.util.Map<String, Object> st = state.get(k);
                float[][] refStates = {refs.get(k).s0, refs.get(k).s1, refs.get(k).s2};
                for (int s = 0; s < stateNames.length; s++) {
                    if (refStates[s] == null) continue;
                    Tensor t = (Tensor) st.get(stateNames[s]);
                    assertEquals(d, t.device(), what + ": " + stateNames[s] + " device");
                    assertBits(refStates[s], t, d + "/" + what + ": " + stateNames[s] + " of parameter " + k);
                }
            }
        } finally {
            for (Tensor p : params) p.close();
        }
    }

    private static final long[][] LISTS = {
            {5, 12, 65_536 + 3, 0, 7},          // odd sizes, one crossing a chunk, an empty one; the last has no grad
            manyTensors(),                      // more tensors than one launch's 24 slots
    };

    private static long[] manyTensors() {
        long[] s = new long[30];
        for (int i = 0; i < s.length; i++) s[i] = 1 + 37L * i;
        return s;
    }

    private static final SgdConfig[] SGDS = {
            new SgdConfig(0.1, 0, 0, 0, false, false),
            new SgdConfig(0.05, 0.9, 0.1, 0.01, false, false),
            new SgdConfig(0.05, 0.9, 0, 1e-4, true, false),
            new SgdConfig(0.01, 0.5, 0, 0, false, true),
    };

    private static final AdamConfig[] ADAMS = {
            new AdamConfig(false, 1e-3, 0.9, 0.999, 1e-8, 0, false, false),
            new AdamConfig(false, 2e-3, 0.8, 0.99, 1e-6, 0.01, false, true),
            new AdamConfig(false, 1e-3, 0.9, 0.999, 1e-8, 0, true, false),
            new AdamConfig(true, 1e-3, 0.9, 0.999, 1e-8, 0.01, false, false),
            new AdamConfig(true, 5e-3, 0.85, 0.995, 1e-7, 0.1, true, true),
    };

    private static Optimizer sgd(List<Tensor> params, SgdConfig c) {
        return new SGD(params, SGD.options().lr(c.lr).momentum(c.momentum).dampening(c.dampening).weightDecay(c.wd)
                .nesterov(c.nesterov).maximize(c.maximize));
    }

    private static Optimizer adam(List<Tensor> params, AdamConfig c) {
        if (c.decoupled) {
            return new AdamW(params, AdamW.options().lr(c.lr).betas(c.beta1, c.beta2).eps(c.eps).weightDecay(c.wd)
                    .amsgrad(c.amsgrad).maximize(c.maximize));
        }
        return new Adam(params, Adam.options().lr(c.lr).betas(c.beta1, c.beta2).eps(c.eps).weightDecay(c.wd).amsgrad(c.amsgrad)
                .maximize(c.maximize));
    }

    @TestFactory
    List<DynamicTest> sgd() {
        List<DynamicTest> tests = new ArrayList<>();
        for (SgdConfig c : SGDS) {
            for (int l = 0; l < LISTS.length; l++) {
                long[] sizes = LISTS[l];
                boolean lastWithoutGrad = l == 0;
                String name = "sgd/" + c + "/" + sizes.length + " params";
                add(tests, name, d -> run(d, sizes, lastWithoutGrad, ps -> sgd(ps, c), (r, g, step) -> sgdRef(r, g, c),
                        new String[] {"momentum_buffer"}, name));
            }
        }
        return tests;
    }

    private static final AdadeltaConfig[] ADADELTAS = {
            new AdadeltaConfig(1.0, 0.9, 1e-6, 0, false),
            new AdadeltaConfig(0.5, 0.95, 1e-5, 0.01, true),
    };

    @TestFactory
    List<DynamicTest> adadelta() {
        List<DynamicTest> tests = new ArrayList<>();
        for (AdadeltaConfig c : ADADELTAS) {
            for (int l = 0; l < LISTS.length; l++) {
                long[] sizes = LISTS[l];
                boolean lastWithoutGrad = l == 0;
                String name = "adadelta/" + c + "/" + sizes.length + " params";
                add(tests, name, d -> run(d, sizes, lastWithoutGrad, ps -> new Adadelta(ps, Adadelta.options().lr(c.lr).rho(c.rho)
                        .eps(c.eps).weightDecay(c.wd).maximize(c.maximize)), (r, g, step) -> adadeltaRef(r, g, c),
                        new String[] {"square_avg", "acc_delta"}, name));
            }
        }
        return tests;
    }

    @TestFactory
    List<DynamicTest> adam() {
        List<DynamicTest> tests = new ArrayList<>();
        for (AdamConfig c : ADAMS) {
            for (int l = 0; l < LISTS.length; l++) {
                long[] sizes = LISTS[l];
                boolean lastWithoutGrad = l == 0;
                String name = (c.decoupled ? "adamw/" : "adam/") + c + "/" + sizes.length + " params";
                add(tests, name, d -> run(d, sizes, lastWithoutGrad, ps -> adam(ps, c), (r, g, step) -> adamRef(r, g, c, step),
                        new String[] {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, name));
            }
        }
        // One tensor of 325 chunks: two launches of one tensor (cuda:0 only; 85 MB a tensor).
        long[] big = {(long) KernelStructs.MT_CHUNK * (KernelStructs.MT_BLOCKS + 5) - 3};
        AdamConfig c = ADAMS[2];
        String name = "adam/one tensor of 325 chunks";
        tests.add(DynamicTest.dynamicTest(CUDA + "/" + name, () -> {
            DeviceCases.assumeAvailable(CUDA);
            run(CUDA, big, false, ps -> adam(ps, c), (r, g, step) -> adamRef(r, g, c, step),
                    new String[] {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, name);
        }));
        return tests;
    }
}
