package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.optim.Adam;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.SGD;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The ops of {@link OptimizerOps} called directly: GradScaler's two against PyTorch 2's own CPU kernels
 * ({@code tools/fixtures/amp_ops_torch2.py}: PyTorch 1.13 has CUDA kernels only), bit for bit; the fused steps
 * against the public optimizers, which call them; and the dispatcher's checks of the lists. On the device
 * {@link Fixtures#device()} names ({@code -Djtorch.test.device=cuda:0} on the CUDA simulator).
 */
class OptimizerOpsTest {
    private static final Device DEVICE = Fixtures.device();

    private static Stream<Case> cases(String op) {
        return Fixtures.load("amp_ops").stream().filter(c -> c.op().equals(op));
    }

    @TestFactory
    Stream<DynamicTest> unscaleMatchesPyTorchsKernelBitForBit() {
        return cases("_amp_foreach_non_finite_check_and_unscale_").map(c -> DynamicTest.dynamicTest(c.name(), () -> {
            JsonArray in = c.inputs();
            int n = in.size() - 2;
            List<Tensor> grads = new ArrayList<>();
            for (int i = 0; i < n; i++) grads.add(Fixtures.decode(in.get(i).getAsJsonObject(), DEVICE));
            try (Tensor found = Fixtures.decode(in.get(n).getAsJsonObject(), DEVICE);
                 Tensor inv = Fixtures.decode(in.get(n + 1).getAsJsonObject(), DEVICE)) {
                boolean deviceRefuses = DEVICE.isCuda() && grads.stream().anyMatch(g -> !g.isContiguous() || g.dtype() == DType.FLOAT16);
                if (deviceRefuses) {
                    // CUDA's multi-tensor kernel takes contiguous float32/float64/bfloat16 gradients (GradScaler refuses float16).
                    Exception e = assertThrows(IllegalArgumentException.class, () -> unscale(grads, found, inv));
                    assertTrue(e.getMessage().startsWith("_amp_foreach_non_finite_check_and_unscale_"), e.getMessage());
                    return;
                }
                unscale(grads, found, inv);
                JsonArray expected = c.expected().getAsJsonArray();
                for (int i = 0; i < n; i++) {
                    Fixtures.assertMatches(expected.get(i).getAsJsonObject(), grads.get(i), 0, 0, c.name() + " gradient " + i);
                }
                Fixtures.assertMatches(expected.get(n).getAsJsonObject(), found, 0, 0, c.name() + " found_inf");
            } finally {
                for (Tensor g : grads) g.close();
            }
        }));
    }

    private static void unscale(List<Tensor> grads, Tensor found, Tensor inv) {
        Dispatcher.callMutating(OptimizerOps.AMP_UNSCALE, List.of(grads), new Tensor[] {found, inv});
    }

    @TestFactory
    Stream<DynamicTest> updateScaleFollowsPyTorchsKernelStepByStep() {
        return cases("_amp_update_scale_").map(c -> DynamicTest.dynamicTest(c.name(), () -> {
            JsonArray in = c.inputs();
            double growth = c.args().get("growth").getAsDouble();
            double backoff = c.args().get("backoff").getAsDouble();
            long interval = c.args().get("interval").getAsLong();
            try (Tensor scale = Fixtures.decode(in.get(0).getAsJsonObject(), DEVICE);
                 Tensor tracker = Fixtures.decode(in.get(1).getAsJsonObject(), DEVICE);
                 Tensor found = Fixtures.decode(in.get(2).getAsJsonObject())) {
                float[] f = found.toFloatArray();
                float[] scales = new float[f.length];
                int[] trackers = new int[f.length];
                for (int i = 0; i < f.length; i++) {
                    try (Tensor fi = Torch.full(new long[] {1}, f[i], DType.FLOAT32, DEVICE)) {
                        Dispatcher.callMutating(OptimizerOps.AMP_UPDATE_SCALE, List.of(), new Tensor[] {scale, tracker, fi}, growth,
                                backoff, interval);
                    }
                    scales[i] = scale.toFloatArray()[0];
                    trackers[i] = (int) tracker.item();
                }
                JsonArray expected = c.expected().getAsJsonArray();
                try (Tensor s = Torch.tensor(scales); Tensor t = Torch.tensor(toLongs(trackers)).to(DType.INT32)) {
                    Fixtures.assertMatches(expected.get(0).getAsJsonObject(), s, 0, 0, c.name() + " scales");
                    Fixtures.assertMatches(expected.get(1).getAsJsonObject(), t, 0, 0, c.name() + " trackers");
                }
            }
        }));
    }

    private static long[] toLongs(int[] v) {
        long[] r = new long[v.length];
        for (int i = 0; i < v.length; i++) r[i] = v[i];
        return r;
    }

    @Test
    void updateScaleRefusesATrackerThatIsNotInt32() {
        try (Tensor scale = Torch.ones(1).to(DEVICE); Tensor tracker = Torch.zeros(new long[] {1}, DType.INT64, DEVICE);
             Tensor found = Torch.zeros(1).to(DEVICE)) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callMutating(OptimizerOps.AMP_UPDATE_SCALE,
                    List.of(), new Tensor[] {scale, tracker, found}, 2.0, 0.5, 3));
            assertEquals("_amp_update_scale_: growth_tracker must be a one-element torch.int32 tensor, got shape [1] and dtype torch.int64",
                    e.getMessage());
        }
    }

    @Test
    void unscaleRefusesAFoundInfOfTwoElementsNamingTheShape() {
        try (Tensor g = Torch.ones(3).to(DEVICE); Tensor found = Torch.zeros(2).to(DEVICE); Tensor inv = Torch.ones(1)) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> unscale(List.of(g), found, inv));
            assertEquals("_amp_foreach_non_finite_check_and_unscale_: found_inf must be a one-element torch.float32 tensor, got shape"
                    + " [2] and dtype torch.float32", e.getMessage());
            assertArrayEquals(new float[] {1f, 1f, 1f}, g.toFloatArray(), "a refused call writes nothing");
        }
    }

    @Test
    void aMutatingOpIsNotCalledThroughCall() {
        try (Tensor g = Torch.ones(1)) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.call(OptimizerOps.AMP_UNSCALE, new Tensor[] {g}));
            assertTrue(e.getMessage().contains("callMutating"), e.getMessage());
        }
    }

    // ------------------------------------------------------------------ the fused steps

    private static List<Tensor> params(long seed) {
        Torch.manualSeed(seed);
        List<Tensor> ps = new ArrayList<>();
        for (long[] shape : new long[][] {{7}, {3, 33}, {129}}) ps.add(Torch.randn(shape).to(DEVICE).requiresGrad_(true));
        return ps;
    }

    private static List<Tensor> grads(long seed) {
        Torch.manualSeed(seed + 1000);
        List<Tensor> gs = new ArrayList<>();
        for (long[] shape : new long[][] {{7}, {3, 33}, {129}}) gs.add(Torch.randn(shape).to(DEVICE));
        return gs;
    }

    private static List<Tensor> detached(List<Tensor> ts) {
        List<Tensor> r = new ArrayList<>();
        for (Tensor t : ts) r.add(t.detach().clone());
        return r;
    }

    private static void assertSameBits(List<Tensor> expected, List<Tensor> actual, String what) {
        for (int i = 0; i < expected.size(); i++) {
            float[] e = expected.get(i).toFloatArray(), a = actual.get(i).toFloatArray();
            for (int j = 0; j < e.length; j++) {
                assertEquals(Float.floatToIntBits(e[j]), Float.floatToIntBits(a[j]), what + ": tensor " + i + " element " + j);
            }
        }
    }

    private static void closeAll(List<Tensor> ts) {
        for (Tensor t : ts) t.close();
    }

    /** Two steps of {@code opt} with the given gradients, against two calls of the op with the same scalars. */
    @Test
    void adamsStepsAreTheFusedOpsCalls() {
        for (boolean decoupled : new boolean[] {false, true}) {
            for (boolean amsgrad : new boolean[] {false, true}) {
                List<Tensor> ps = params(3), gs = grads(3);
                List<Tensor> mine = detached(ps), m = zerosLike(ps), v = zerosLike(ps), vmax = amsgrad ? zerosLike(ps) : List.of();
                Optimizer opt = decoupled ? new AdamW(ps, AdamW.options().lr(0.01).weightDecay(0.1).amsgrad(amsgrad))
                        : new Adam(ps, Adam.options().lr(0.01).weightDecay(0.1).amsgrad(amsgrad));
                OpDef op = decoupled ? OptimizerOps.FUSED_ADAMW : OptimizerOps.FUSED_ADAM;
                for (int step = 1; step <= 2; step++) {
                    for (int i = 0; i < ps.size(); i++) ps.get(i).setGrad(gs.get(i).clone());
                    opt.step();
                    try (Grad.Mode g = Grad.noGrad()) {
                        Dispatcher.callMutating(op, List.of(mine, gs, m, v, vmax), new Tensor[0], step, 0.01, 0.9, 0.999, 0.1, 1e-8,
                                amsgrad ? 1 : 0, 0);
                    }
                }
                assertSameBits(ps, mine, op.name() + (amsgrad ? " amsgrad" : ""));
                opt.close();
                for (List<Tensor> l : List.of(ps, gs, mine, m, v, vmax)) closeAll(l);
            }
        }
    }

    @Test
    void sgdsStepsAreTheFusedOpsCalls() {
        List<Tensor> ps = params(4), gs = grads(4);
        List<Tensor> mine = detached(ps), buf = zerosLike(ps);
        SGD opt = new SGD(ps, SGD.options().lr(0.1).momentum(0.9).nesterov(true).weightDecay(0.01));
        for (int step = 0; step < 3; step++) {
            for (int i = 0; i < ps.size(); i++) ps.get(i).setGrad(gs.get(i).clone());
            opt.step();
            try (Grad.Mode g = Grad.noGrad()) {
                Dispatcher.callMutating(OptimizerOps.FUSED_SGD, List.of(mine, gs, buf), new Tensor[0], 0.01, 0.9, 0.1, 0, 1, 0,
                        step == 0 ? 1 : 0);
            }
        }
        assertSameBits(ps, mine, "_fused_sgd_");
        opt.close();
        for (List<Tensor> l : List.of(ps, gs, mine, buf)) closeAll(l);
    }

    private static List<Tensor> zerosLike(List<Tensor> ts) {
        List<Tensor> r = new ArrayList<>();
        for (Tensor t : ts) r.add(Torch.zeros(t.shape(), DType.FLOAT32, DEVICE));
        return r;
    }

    /**
     * A new update rule (sign SGD, {@code p -= lr * sign(g)}) is one declaration and the kernel of each backend that takes
     * it: before a kernel is registered, a call names the op and device; the optimizers ask {@link KernelRegistry#hasMutating}
     * and take their composed path there.
     */
    @Test
    void aNewStepIsOneDeclarationPlusTheKernelsOfTheBackendsThatTakeIt() {
        OpDef signSgd = OpDef.mutating("_test_sign_sgd_").rule(DTypeRule.FLOAT32_ONLY)
                .signature(new Param("self", "Tensor(a!)[]", null), new Param("grads", "Tensor[]", null), new Param("lr", "float", null))
                .returns("()").check((lists, tensors, s) -> {}).build();
        try (Tensor p = Torch.tensor(new float[] {1f, 2f, 3f}); Tensor g = Torch.tensor(new float[] {-5f, 0f, 0.5f});
             Grad.Mode mode = Grad.noGrad()) {
            assertEquals(false, KernelRegistry.hasMutating(signSgd, Device.Type.CPU));
            Exception e = assertThrows(UnsupportedOperationException.class,
                    () -> Dispatcher.callMutating(signSgd, List.of(List.of(p), List.of(g)), new Tensor[0], 0.5));
            assertEquals("_test_sign_sgd_: no cpu kernel is registered for _test_sign_sgd_", e.getMessage());
            KernelRegistry.registerMutating(Device.Type.CPU, signSgd.kernel(), (lists, tensors, s) -> {
                for (int i = 0; i < lists[0].length; i++) {
                    StridedView pv = lists[0][i], gv = lists[1][i];
                    for (long j = 0; j < pv.numel(); j++) {
                        long po = (pv.offset() + j) * 4, go = (gv.offset() + j) * 4;
                        float gj = gv.memory().get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, go);
                        float pj = pv.memory().get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, po);
                        pv.memory().set(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, po, pj - (float) s[0] * Math.signum(gj));
                    }
                }
            });
            Dispatcher.callMutating(signSgd, List.of(List.of(p), List.of(g)), new Tensor[0], 0.5);
            assertArrayEquals(new float[] {1.5f, 2f, 2.5f}, p.toFloatArray());
        }
    }

    @Test
    void listsOfDifferentLengthsAreRefusedNamingBoth() {
        List<Tensor> ps = zerosLike(List.of(Torch.ones(2), Torch.ones(3)));
        List<Tensor> gs = zerosLike(List.of(Torch.ones(2)));
        try (Grad.Mode g = Grad.noGrad()) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callMutating(OptimizerOps.FUSED_SGD,
                    List.of(ps, gs, List.of()), new Tensor[0], 0, 0, 0.1, 0, 0, 0, 0));
            assertEquals("_fused_sgd_: Tensor lists must have the same number of tensors, got 2 and 1 (self, grads)", e.getMessage());
        }
        closeAll(ps);
        closeAll(gs);
    }

    @Test
    void aFloat64ParameterIsRefusedNamingItsShapeAndDtype() {
        try (Tensor p = Torch.zeros(new long[] {2, 3}, DType.FLOAT64, DEVICE); Tensor gr = Torch.zeros(new long[] {2, 3}, DType.FLOAT64, DEVICE);
             Grad.Mode g = Grad.noGrad()) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callMutating(OptimizerOps.FUSED_SGD,
                    List.of(List.of(p), List.of(gr), List.of()), new Tensor[0], 0, 0, 0.1, 0, 0, 0, 0));
            assertEquals("_fused_sgd_: expected contiguous float32 tensors of the parameter's shape [2, 3], got one of shape [2, 3]"
                    + " and dtype torch.float64 in list 1 at 0", e.getMessage());
        }
    }

    @Test
    void momentumWithoutBuffersIsRefused() {
        try (Tensor p = Torch.zeros(3).to(DEVICE); Tensor gr = Torch.zeros(3).to(DEVICE); Grad.Mode g = Grad.noGrad()) {
            Exception e = assertThrows(IllegalArgumentException.class, () -> Dispatcher.callMutating(OptimizerOps.FUSED_SGD,
                    List.of(List.of(p), List.of(gr), List.of()), new Tensor[0], 0, 0.9, 0.1, 0, 0, 0, 0));
            assertEquals("_fused_sgd_: list 3 must hold one tensor per parameter (1), got 0", e.getMessage());
        }
    }

    @Test
    void aLeafThatRequiresGradIsRefusedWithGradModeOn() {
        try (Tensor p = Torch.zeros(3).to(DEVICE).requiresGrad_(true); Tensor gr = Torch.ones(3).to(DEVICE)) {
            Exception e = assertThrows(IllegalStateException.class, () -> Dispatcher.callMutating(OptimizerOps.FUSED_SGD,
                    List.of(List.of(p), List.of(gr), List.of()), new Tensor[0], 0, 0, 0.1, 0, 0, 0, 0));
            assertTrue(e.getMessage().startsWith("_fused_sgd_: a leaf tensor that requires grad"), e.getMessage());
        }
    }

    @Test
    void aStepBumpsTheVersionsOfWhatItWritesOnly() {
        try (Tensor p = Torch.zeros(3).to(DEVICE); Tensor gr = Torch.ones(3).to(DEVICE); Tensor b = Torch.zeros(3).to(DEVICE);
             Grad.Mode g = Grad.noGrad()) {
            int pv = p.version(), gv = gr.version(), bv = b.version();
            Dispatcher.callMutating(OptimizerOps.FUSED_SGD, List.of(List.of(p), List.of(gr), List.of(b)), new Tensor[0], 0, 0.9, 0.5, 0,
                    0, 0, 1);
            assertEquals(List.of(pv + 1, gv, bv + 1), List.of(p.version(), gr.version(), b.version()));
            assertArrayEquals(new float[] {-0.5f, -0.5f, -0.5f}, p.toFloatArray());
        }
    }
}
