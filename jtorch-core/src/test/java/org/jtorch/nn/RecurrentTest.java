package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.io.SafeTensors;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.utils.PackedSequence;
import org.jtorch.nn.utils.Rnn;
import org.jtorch.ops.Recurrent;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The recurrent layers beyond the PyTorch fixtures ({@link RecurrentConformanceTest}): finite-difference gradients in
 * float64 (gradcheck's tolerances) through time, double backward of the fused cells, parameter names and
 * initialisation, checkpoints, truncated backpropagation through time, dropout between layers, and the errors.
 */
class RecurrentTest {
    private static final Generator GEN = new Generator(11);

    private static Tensor rand(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    private static RNNOptions f64() {
        return new RNNOptions().dtype(DType.FLOAT64).generator(GEN);
    }

    private static void gradcheck(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try (MemoryScope scope = new MemoryScope()) {
            assertTrue(Gradcheck.check(fn, inputs));
        }
    }

    // ------------------------------------------------------------------ gradcheck (float64: the fused kernels)

    @Test
    void fusedCellsPassGradcheck() {
        gradcheck(x -> {
            Recurrent.LstmStep s = Recurrent.lstmCell(x[0], x[1], x[2]);
            return s.hy().mul(2.0).add(s.cy());
        }, rand(2, 12), rand(2, 12), rand(2, 3));
        gradcheck(x -> Recurrent.gruCell(x[0], x[1], x[2]), rand(2, 9), rand(2, 9), rand(2, 3));
        // Hidden 9: whole float64 vectors and a scalar tail.
        gradcheck(x -> {
            Recurrent.LstmStep s = Recurrent.lstmCell(x[0], x[1], x[2]);
            return s.hy().mul(2.0).add(s.cy());
        }, rand(2, 36), rand(2, 36), rand(2, 9));
        gradcheck(x -> Recurrent.gruCell(x[0], x[1], x[2]), rand(2, 27), rand(2, 27), rand(2, 9));
    }

    @Test
    void lstmLayerPassesGradcheckThroughTimeIncludingInitialStates() {
        try (LSTM lstm = new LSTM(3, 4, f64().numLayers(2).bidirectional(true).projSize(2))) {
            gradcheck(x -> {
                LSTM.Output o = lstm.forward(x[0], new LSTM.State(x[1], x[2]));
                return Torch.cat(List.of(o.output().flatten(), o.hN().flatten(), o.cN().flatten()), 0);
            }, rand(4, 2, 3), rand(4, 2, 2), rand(4, 2, 4));
        }
    }

    @Test
    void gruAndReluRnnPassGradcheck() {
        try (GRU gru = new GRU(2, 3, f64().batchFirst(true).bidirectional(true));
             RNN rnn = new RNN(2, 3, f64().nonlinearity("relu").numLayers(2))) {
            gradcheck(x -> {
                RNN.Output o = gru.forward(x[0], x[1]);
                return Torch.cat(List.of(o.output().flatten(), o.hN().flatten()), 0);
            }, rand(2, 3, 2), rand(2, 2, 3));
            gradcheck(x -> rnn.forward(x[0], x[1]).hN(), rand(3, 2, 2), rand(2, 2, 3));
        }
    }

    /** Only the first step's output: the later steps' input projections get no gradient (zeros in the split's backward). */
    @Test
    void stepsWithoutGradientGetZeros() {
        try (LSTM lstm = new LSTM(2, 3, f64())) {
            gradcheck(x -> lstm.forward(x[0], (LSTM.State) null).output().select(0, 0), rand(4, 2, 2));
        }
    }

    @Test
    void packedLstmPassesGradcheck() {
        try (LSTM lstm = new LSTM(2, 3, f64().bidirectional(true))) {
            gradcheck(x -> {
                PackedSequence p = Rnn.packPaddedSequence(x[0], new long[] {2, 4, 1}, false, false);
                LSTM.PackedOutput o = lstm.forward(p, new LSTM.State(x[1], x[2]));
                return Torch.cat(List.of(Rnn.padPackedSequence(o.output(), false).padded().flatten(), o.hN().flatten(),
                        o.cN().flatten()), 0);
            }, rand(4, 3, 2), rand(2, 3, 3), rand(2, 3, 3));
        }
    }

    // ------------------------------------------------------------------ double backward

    // ------------------------------------------------------------------ the fused LSTM and GRU layers

    /**
     * {@code x, W_ih, W_hh, b_ih, b_hh, h0} and, for an LSTM, {@code c0}, of a layer with {@code in} inputs and {@code h}
     * hidden over {@code steps x batch} rows.
     */
    private static Tensor[] layerInputs(boolean lstm, int steps, int batch, int in, int h) {
        int g = lstm ? 4 : 3;
        Tensor[] p = {rand(steps * batch, in), rand(g * h, in), rand(g * h, h), rand(g * h), rand(g * h), rand(batch, h)};
        return lstm ? new Tensor[] {p[0], p[1], p[2], p[3], p[4], p[5], rand(batch, h)} : p;
    }

    private static Tensor[] fusedLayer(Tensor[] p, int steps, boolean reverse) {
        Recurrent.Layer l = p.length == 7 ? Recurrent.lstmLayer(p[0], p[1], p[2], p[3], p[4], p[5], p[6], steps, reverse)
                : Recurrent.gruLayer(p[0], p[1], p[2], p[3], p[4], p[5], steps, reverse);
        return l.cN() == null ? new Tensor[] {l.output(), l.hN()} : new Tensor[] {l.output(), l.hN(), l.cN()};
    }

    /** The layer as the step-by-step graph of fused cells (RNNBase's path for packed batches). */
    private static Tensor[] stepByStep(Tensor[] p, int steps, boolean reverse) {
        boolean lstm = p.length == 7;
        long batch = p[5].size(0);
        Tensor gx = Torch.linear(p[0], p[1], p[3]);
        Tensor h = p[5], c = lstm ? p[6] : null;
        Tensor[] out = new Tensor[steps];
        for (int s = 0; s < steps; s++) {
            int t = reverse ? steps - 1 - s : s;
            Tensor ig = gx.narrow(0, t * batch, batch), hg = Torch.linear(h, p[2], p[4]);
            if (lstm) {
                Recurrent.LstmStep step = Recurrent.lstmCell(ig, hg, c);
                h = step.hy();
                c = step.cy();
            } else {
                h = Recurrent.gruCell(ig, hg, h);
            }
            out[t] = h;
        }
        Tensor y = Torch.cat(List.of(out), 0);
        return lstm ? new Tensor[] {y, h, c} : new Tensor[] {y, h};
    }

    private static Tensor flatCat(Tensor[] outputs) {
        List<Tensor> flat = new java.util.ArrayList<>();
        for (Tensor o : outputs) flat.add(o.flatten());
        return Torch.cat(flat, 0);
    }

    @Test
    void fusedLayersPassGradcheckInEveryInputBothWays() {
        for (boolean lstm : new boolean[] {true, false}) {
            for (boolean reverse : new boolean[] {false, true}) {
                gradcheck(x -> flatCat(fusedLayer(x, 3, reverse)), layerInputs(lstm, 3, 2, 3, 2));
            }
            // One step: the hidden weight's gradient comes from h0 alone.
            gradcheck(x -> fusedLayer(x, 1, false)[0], layerInputs(lstm, 1, 2, 2, 3));
        }
    }

    @Test
    void fusedLayersPassGradgradcheck() {
        for (boolean lstm : new boolean[] {true, false}) {
            for (boolean reverse : new boolean[] {false, true}) {
                gradcheck(x -> {
                    Tensor[] o = fusedLayer(x, 2, reverse);
                    return firstDerivatives(o[0].pow(2.0).sum().add(o[o.length - 1].mul(o[1]).sum()), x);
                }, layerInputs(lstm, 2, 2, 2, 2));
            }
        }
    }

    /**
     * The fused layers give the step-by-step graph's values and gradients in every input (their weight and bias
     * gradients summed in one product over the sequence, not per step), at hidden sizes with whole float64 vectors
     * and a tail, forward and reverse, and without gradients for some outputs.
     */
    @Test
    void fusedLayersMatchTheStepByStepGraph() {
        for (boolean lstm : new boolean[] {true, false}) {
            for (int h : new int[] {2, 9}) {
                for (boolean reverse : new boolean[] {false, true}) {
                    try (MemoryScope scope = new MemoryScope()) {
                        Tensor[] p = layerInputs(lstm, 5, 3, 4, h);
                        assertSameValuesAndGradients(x -> fusedLayer(x, 5, reverse), x -> stepByStep(x, 5, reverse), p);
                        for (int k = 0; k < (lstm ? 3 : 2); k++) {
                            int output = k;
                            assertSameValuesAndGradients(x -> new Tensor[] {fusedLayer(x, 5, reverse)[output]},
                                    x -> new Tensor[] {stepByStep(x, 5, reverse)[output]}, p);
                        }
                    }
                }
            }
        }
    }

    /**
     * From batch 9 up the CPU layers run their per-step hidden products on {@code W_hh} packed once per layer call
     * ({@code LinalgKernels.packRight}); the step-by-step graph runs them as plain linear and mm kernels. Odd hidden sizes
     * (partial panels), batch 1 (the unpacked hand-off) and past both row tilings, one step and several, both ways.
     */
    @Test
    void fusedLayersOnPackedHiddenWeightsMatchTheStepByStepGraph() {
        int[][] shapes = {{1, 1, 1}, {1, 9, 7}, {4, 9, 17}, {3, 13, 5}, {2, 20, 33}, {3, 31, 3}, {1, 1, 17}, {2, 45, 9}};
        for (boolean lstm : new boolean[] {true, false}) {
            for (int[] shape : shapes) {
                int steps = shape[0], batch = shape[1], h = shape[2];
                for (boolean reverse : new boolean[] {false, true}) {
                    try (MemoryScope scope = new MemoryScope()) {
                        Tensor[] p = layerInputs(lstm, steps, batch, 3, h);
                        assertSameValuesAndGradients(x -> fusedLayer(x, steps, reverse), x -> stepByStep(x, steps, reverse), p);
                    }
                }
            }
        }
    }

    /** The same in float32 (the word LM's dtype), within float32's rounding of the two summation orders. */
    @Test
    void float32FusedLayersOnPackedHiddenWeightsMatchTheStepByStepGraph() {
        for (boolean lstm : new boolean[] {true, false}) {
            for (int[] shape : new int[][] {{3, 20, 33}, {2, 9, 7}, {1, 13, 5}}) {
                int steps = shape[0], batch = shape[1], h = shape[2];
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor[] p = layerInputs(lstm, steps, batch, 3, h);
                    for (int i = 0; i < p.length; i++) p[i] = p[i].detach().to(DType.FLOAT32).requiresGrad_(true);
                    Tensor[] a = fusedLayer(p, steps, false), e = stepByStep(p, steps, false);
                    Tensor[] ga = Autograd.grad(new Tensor[] {weighted(a)}, p, null, false, false, false);
                    Tensor[] ge = Autograd.grad(new Tensor[] {weighted(e)}, p, null, false, false, false);
                    assertClose(e, a, 1e-5, 1e-5);
                    assertClose(ge, ga, 1e-5, 1e-5);
                }
            }
        }
    }

    /** The differentiable backward (createGraph) of the fused layers gives their fused first derivatives. */
    @Test
    void fusedLayersDifferentiableBackwardMatchesTheKernels() {
        for (boolean lstm : new boolean[] {true, false}) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] p = layerInputs(lstm, 4, 2, 3, 5);
                Function<Tensor[], Tensor> loss = x -> weighted(fusedLayer(x, 4, true));
                assertClose(Autograd.grad(new Tensor[] {loss.apply(p)}, p, null, false, false, false),
                        Autograd.grad(new Tensor[] {loss.apply(p)}, p, null, false, true, false));
            }
        }
    }

    @Test
    void unprojectedLstmModulePassesGradcheckThroughTheFusedLayers() {
        try (LSTM lstm = new LSTM(3, 4, f64().numLayers(2).bidirectional(true))) {
            gradcheck(x -> {
                LSTM.Output o = lstm.forward(x[0], new LSTM.State(x[1], x[2]));
                return Torch.cat(List.of(o.output().flatten(), o.hN().flatten(), o.cN().flatten()), 0);
            }, rand(4, 2, 3), rand(4, 2, 4), rand(4, 2, 4));
        }
    }

    /**
     * Under createGraph the fused cells' backward runs as differentiable tensor ops: gradcheck of the first derivatives
     * (PyTorch's gradgradcheck) checks the second derivatives against finite differences.
     */
    @Test
    void fusedCellsPassGradgradcheck() {
        gradcheck(x -> {
            Recurrent.LstmStep s = Recurrent.lstmCell(x[0], x[1], x[2]);
            return firstDerivatives(s.hy().mul(s.cy()).sum(), x);
        }, rand(2, 8), rand(2, 8), rand(2, 2));
        gradcheck(x -> firstDerivatives(Recurrent.gruCell(x[0], x[1], x[2]).pow(2.0).sum(), x), rand(2, 6), rand(2, 6), rand(2, 2));
    }

    /** The differentiable backward (createGraph) gives the fused kernels' first derivatives. */
    @Test
    void differentiableBackwardMatchesTheFusedKernels() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor[] lstm = {rand(2, 8), rand(2, 8), rand(2, 2)};
            Function<Tensor[], Tensor> lstmLoss = x -> {
                Recurrent.LstmStep s = Recurrent.lstmCell(x[0], x[1], x[2]);
                return s.hy().mul(s.cy()).sum();
            };
            assertClose(Autograd.grad(new Tensor[] {lstmLoss.apply(lstm)}, lstm, null, false, false, false),
                    Autograd.grad(new Tensor[] {lstmLoss.apply(lstm)}, lstm, null, false, true, false));
            Tensor[] gru = {rand(2, 6), rand(2, 6), rand(2, 2)};
            Function<Tensor[], Tensor> gruLoss = x -> Recurrent.gruCell(x[0], x[1], x[2]).pow(2.0).sum();
            assertClose(Autograd.grad(new Tensor[] {gruLoss.apply(gru)}, gru, null, false, false, false),
                    Autograd.grad(new Tensor[] {gruLoss.apply(gru)}, gru, null, false, true, false));
        }
    }

    /**
     * The fused float64 kernels run whole vectors and a scalar tail: at hidden sizes around the vector width (one lane,
     * a lane short, exactly one or two vectors, a lane over, time_sequence_prediction's 51) they give the composed
     * formulas' values and first derivatives (the formulas are the reference: the same math as tensor ops).
     */
    @Test
    void float64FusedCellsMatchTheComposedFormulasAtEveryVectorWidth() {
        for (int h : new int[] {1, 3, 7, 8, 9, 16, 17, 51}) {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] lstm = {rand(5, 4 * h), rand(5, 4 * h), rand(5, h)};
                Function<Tensor[], Tensor[]> fused = x -> {
                    Recurrent.LstmStep s = Recurrent.lstmCell(x[0], x[1], x[2]);
                    return new Tensor[] {s.hy(), s.cy()};
                };
                Function<Tensor[], Tensor[]> composed = x -> {
                    Recurrent.LstmStep s = Recurrent.lstmCellComposed(x[0], x[1], x[2]);
                    return new Tensor[] {s.hy(), s.cy()};
                };
                assertSameValuesAndGradients(fused, composed, lstm);
                Tensor[] gru = {rand(5, 3 * h), rand(5, 3 * h), rand(5, h)};
                assertSameValuesAndGradients(x -> new Tensor[] {Recurrent.gruCell(x[0], x[1], x[2])},
                        x -> new Tensor[] {Recurrent.gruCellComposed(x[0], x[1], x[2])}, gru);
            }
        }
    }

    /** Both functions' outputs, and the gradients of a weighted sum of them (hy and cy get different weights). */
    private static void assertSameValuesAndGradients(Function<Tensor[], Tensor[]> actual, Function<Tensor[], Tensor[]> expected,
                                                     Tensor[] inputs) {
        Tensor[] a = actual.apply(inputs), e = expected.apply(inputs);
        assertClose(e, a);
        Tensor[] ga = Autograd.grad(new Tensor[] {weighted(a)}, inputs, null, false, false, false);
        Tensor[] ge = Autograd.grad(new Tensor[] {weighted(e)}, inputs, null, false, false, false);
        assertClose(ge, ga);
    }

    private static Tensor weighted(Tensor[] outputs) {
        Tensor total = null;
        for (int k = 0; k < outputs.length; k++) {
            Tensor w = outputs[k].mul(Torch.linspace(-1.0 - k, 2.0 + k, outputs[k].numel(), DType.FLOAT64, Device.cpu()).view(outputs[k].shape()));
            total = total == null ? w.sum() : total.add(w.sum());
        }
        return total;
    }

    private static void assertClose(Tensor[] expected, Tensor[] actual) {
        assertClose(expected, actual, 1e-12, 1e-10);
    }

    private static void assertClose(Tensor[] expected, Tensor[] actual, double absolute, double relative) {
        for (int k = 0; k < expected.length; k++) {
            double[] e = expected[k].toDoubleArray(), a = actual[k].toDoubleArray();
            for (int i = 0; i < e.length; i++) assertEquals(e[i], a[i], absolute + relative * Math.abs(e[i]), "input " + k + " element " + i);
        }
    }

    /** The gradients of {@code loss} with respect to each input, with their graph, flattened into one tensor. */
    private static Tensor firstDerivatives(Tensor loss, Tensor[] inputs) {
        Tensor[] first = Autograd.grad(new Tensor[] {loss}, inputs, null, true, true, false);
        List<Tensor> flat = new java.util.ArrayList<>();
        for (Tensor g : first) flat.add(g.flatten());
        return Torch.cat(flat, 0);
    }

    /** bfloat16 runs the composed formulas (the kernels take float32 and float64) and stays near float32. */
    @Test
    void bfloat16LstmRunsTheComposedPathNearFloat32() {
        try (MemoryScope scope = new MemoryScope(); LSTM lstm = new LSTM(3, 5, new RNNOptions().generator(new Generator(5)))) {
            Tensor x = Torch.randn(new long[] {4, 2, 3}, DType.FLOAT32, Device.cpu(), new Generator(6));
            double[] f32 = lstm.forward(x).toDoubleArray();
            lstm.to(DType.BFLOAT16);
            Tensor out = lstm.forward(x.to(DType.BFLOAT16));
            assertEquals(DType.BFLOAT16, out.dtype());
            double[] bf16 = out.toDoubleArray();
            for (int i = 0; i < f32.length; i++) assertEquals(f32[i], bf16[i], 0.03, "element " + i);
        }
    }

    // ------------------------------------------------------------------ parameters, initialisation, checkpoints

    @Test
    void parametersHavePyTorchsNamesAndShapes() {
        try (LSTM lstm = new LSTM(10, 20, LSTM.options().numLayers(2).bidirectional(true).projSize(5))) {
            assertEquals(List.of("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0", "weight_ih_l0_reverse",
                    "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_hr_l0_reverse", "weight_ih_l1",
                    "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_hr_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse",
                    "bias_ih_l1_reverse", "bias_hh_l1_reverse", "weight_hr_l1_reverse"), List.copyOf(lstm.namedParameters().keySet()));
            assertEquals(List.of(80L, 10L), List.of(lstm.parameter("weight_ih_l0").shape()[0], lstm.parameter("weight_ih_l0").shape()[1]));
            assertEquals(List.of(80L, 5L), List.of(lstm.parameter("weight_hh_l1").shape()[0], lstm.parameter("weight_hh_l1").shape()[1]));
            assertEquals(List.of(80L, 10L), List.of(lstm.parameter("weight_ih_l1").shape()[0], lstm.parameter("weight_ih_l1").shape()[1]));
            assertEquals(List.of(5L, 20L), List.of(lstm.parameter("weight_hr_l1_reverse").shape()[0],
                    lstm.parameter("weight_hr_l1_reverse").shape()[1]));
            assertEquals("LSTM(10, 20, proj_size=5, num_layers=2, bidirectional=True)", lstm.toString());
        }
        try (GRUCell cell = new GRUCell(3, 4, false)) {
            assertEquals(List.of("weight_ih", "weight_hh"), List.copyOf(cell.namedParameters().keySet()));
            assertEquals("GRUCell(3, 4, bias=False)", cell.toString());
        }
    }

    /** PyTorch's init: every parameter U(-1/sqrt(H), 1/sqrt(H)); 4,000 draws cover the interval with the uniform's variance. */
    @Test
    void parametersStartUniformInPlusMinusOneOverSqrtHidden() {
        try (GRU gru = new GRU(25, 25, GRU.options().generator(new Generator(1)))) {
            double bound = 1 / Math.sqrt(25);
            for (Tensor p : gru.parameters()) {
                double[] v = p.toDoubleArray();
                double min = Double.MAX_VALUE, max = -Double.MAX_VALUE, sq = 0;
                for (double x : v) {
                    min = Math.min(min, x);
                    max = Math.max(max, x);
                    sq += x * x;
                }
                assertTrue(min >= -bound && max < bound, "within the bound");
                if (v.length > 1000) {
                    assertTrue(max - min > 1.9 * bound, "spans the interval: " + min + " .. " + max);
                    assertEquals(bound * bound / 3, sq / v.length, 0.1 * bound * bound / 3, "the uniform's variance");
                }
            }
        }
    }

    @Test
    void safetensorsCheckpointRoundTripsAnLstm(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("lstm.safetensors");
        try (MemoryScope scope = new MemoryScope();
             LSTM a = new LSTM(3, 4, LSTM.options().numLayers(2).generator(new Generator(1)));
             LSTM b = new LSTM(3, 4, LSTM.options().numLayers(2).generator(new Generator(2)))) {
            Tensor x = Torch.randn(5, 2, 3);
            SafeTensors.saveStateDict(file, a);
            assertNotEquals(a.forward(x).toDoubleArray()[0], b.forward(x).toDoubleArray()[0]);
            SafeTensors.loadStateDict(file, b, true);
            double[] ea = a.forward(x).toDoubleArray(), eb = b.forward(x).toDoubleArray();
            for (int i = 0; i < ea.length; i++) assertEquals(ea[i], eb[i], 0.0);
        }
    }

    // ------------------------------------------------------------------ usage patterns

    /** The word language model's loop: the state carried across batches with its graph cut; each backward stands alone. */
    @Test
    void truncatedBackpropagationThroughTimeCarriesDetachedStates() {
        try (MemoryScope scope = new MemoryScope(); LSTM lstm = new LSTM(2, 3, LSTM.options().numLayers(2))) {
            LSTM.State state = null;
            for (int batch = 0; batch < 3; batch++) {
                try (MemoryScope step = new MemoryScope()) {
                    lstm.zeroGrad();
                    LSTM.Output out = lstm.forward(Torch.randn(4, 2, 2), state);
                    out.output().sum().backward();
                    assertTrue(lstm.parameter("weight_hh_l1").grad() != null);
                    LSTM.State next = out.state().detach();
                    state = new LSTM.State(step.keep(next.h()), step.keep(next.c()));
                }
            }
            assertEquals(List.of(2L, 2L, 3L), List.of(state.h().shape()[0], state.h().shape()[1], state.h().shape()[2]));
            assertTrue(!state.h().requiresGrad() && !state.c().requiresGrad());
        }
    }

    /** Dropout acts between layers in training only: evaluation repeats itself, training draws new masks. */
    @Test
    void dropoutActsBetweenLayersInTrainingOnly() {
        try (MemoryScope scope = new MemoryScope(); GRU gru = new GRU(3, 8, GRU.options().numLayers(2).dropout(0.5))) {
            Tensor x = Torch.randn(5, 2, 3);
            gru.eval();
            double[] e1 = gru.forward(x).toDoubleArray(), e2 = gru.forward(x).toDoubleArray();
            for (int i = 0; i < e1.length; i++) assertEquals(e1[i], e2[i], 0.0);
            gru.train();
            double[] t1 = gru.forward(x).toDoubleArray(), t2 = gru.forward(x).toDoubleArray();
            double diff = 0;
            for (int i = 0; i < t1.length; i++) diff += Math.abs(t1[i] - t2[i]) + Math.abs(t1[i] - e1[i]);
            assertTrue(diff > 0.1, "training draws masks: " + diff);
        }
    }

    // ------------------------------------------------------------------ errors

    @Test
    void badInputsFailNamingTheModuleAndShapes() {
        try (MemoryScope scope = new MemoryScope(); LSTM lstm = new LSTM(3, 4, LSTM.options().numLayers(2))) {
            var e = assertThrows(IllegalArgumentException.class, () -> lstm.forward(Torch.randn(5, 2, 7)));
            assertEquals("LSTM: input.size(-1) must be equal to input_size. Expected 3, got 7", e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> lstm.forward(Torch.randn(5, 2, 3), new LSTM.State(Torch.zeros(1, 2, 4), Torch.zeros(2, 2, 4))));
            assertEquals("LSTM: Expected hidden size [2, 2, 4], got [1, 2, 4] for hx", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> lstm.forward(Torch.randn(0, 2, 3)));
            assertEquals("LSTM: expected a sequence of at least one time step, got input of shape [0, 2, 3]", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> lstm.forward(Torch.randn(5)));
            assertTrue(e.getMessage().startsWith("LSTM: expected input to be 2-D (unbatched) or 3-D, got 1-D"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> lstm.forward(Torch.randn(new long[] {5, 2, 3}, DType.FLOAT64,
                    Device.cpu(), GEN)));
            assertTrue(e.getMessage().contains("float64") && e.getMessage().contains("float32"), e.getMessage());
        }
        var e = assertThrows(IllegalArgumentException.class, () -> new LSTM(3, 4, LSTM.options().projSize(4)));
        assertEquals("LSTM: proj_size has to be smaller than hidden_size, got 4 >= 4", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new GRU(3, 4, GRU.options().projSize(2)));
        assertTrue(e.getMessage().contains("proj_size argument is only supported for LSTM"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RNN(3, 4, RNN.options().nonlinearity("sigmoid")));
        assertTrue(e.getMessage().contains("Unknown nonlinearity 'sigmoid'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RNN(3, 4, RNN.options().dropout(1.5)));
        assertTrue(e.getMessage().startsWith("RNN: dropout should be a number in range [0, 1]"), e.getMessage());
        try (MemoryScope scope = new MemoryScope(); LSTMCell cell = new LSTMCell(3, 4)) {
            e = assertThrows(IllegalArgumentException.class, () -> cell.forward(Torch.randn(2, 3), new LSTM.State(Torch.zeros(3, 4),
                    Torch.zeros(3, 4))));
            assertEquals("LSTMCell: expected hx of shape [2, 4] for an input of shape [2, 3], got [3, 4]", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Recurrent.lstmCell(Torch.zeros(2, 8), Torch.zeros(2, 6), Torch.zeros(2, 2)));
            assertTrue(e.getMessage().startsWith("lstmCell: expected gates of shape [batch, 4 * hidden]"), e.getMessage());
        }
    }

    @Test
    void packingChecksItsLengths() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(4, 3, 2);
            var e = assertThrows(IllegalArgumentException.class, () -> Rnn.packPaddedSequence(x, new long[] {2, 4, 1}, false, true));
            assertTrue(e.getMessage().contains("must be sorted in decreasing order"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Rnn.packPaddedSequence(x, new long[] {4, 0, 0}, false, true));
            assertTrue(e.getMessage().contains("Length of all samples has to be greater than 0"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Rnn.packPaddedSequence(x, new long[] {5, 1, 1}, false, true));
            assertTrue(e.getMessage().contains("exceeds the 4 time steps"), e.getMessage());
            PackedSequence p = Rnn.packPaddedSequence(x, new long[] {4, 2, 1}, false, true);
            e = assertThrows(IllegalArgumentException.class, () -> Rnn.padPackedSequence(p, false, 0, 3L));
            assertTrue(e.getMessage().contains("total_length=3 and max sequence length being 4"), e.getMessage());
        }
    }
}
