package org.jtorch.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.gpt.CharGpt;
import org.jtorch.examples.mnist.MnistExample;
import org.jtorch.examples.timeseq.TimeSequencePrediction;
import org.jtorch.io.PyTorchFile;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The ported models and their training steps against PyTorch 1.13 runs of the original programs' code from
 * the same weights ({@code tools/fixtures/gen_examples.py}; dropout off, so the runs are deterministic).
 */
class ExamplesAgainstPyTorchTest {
    private static Map<?, ?> fixture(String name) throws IOException, URISyntaxException {
        return (Map<?, ?>) PyTorchFile.load(Path.of(ExamplesAgainstPyTorchTest.class.getResource("/fixtures/" + name).toURI()));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Tensor> state(Map<?, ?> f) {
        return (Map<String, Tensor>) f.get("state");
    }

    private static double[] doubles(Map<?, ?> f, String key) {
        return ((Tensor) f.get(key)).toDoubleArray();
    }

    /** gen_examples.py's formula_weights: parameter j, element i = sin(0.7 i + j) / sqrt(fan_in). */
    private static void formulaWeights(Module m) {
        int j = 0;
        try (var g = Grad.noGrad()) {
            for (Tensor p : m.namedParameters().values()) {
                long fanIn = p.dim() > 1 ? p.numel() / p.size(0) : p.size(0);
                double[] v = new double[(int) p.numel()];
                for (int i = 0; i < v.length; i++) v[i] = Math.sin(0.7 * i + j) / Math.sqrt(fanIn);
                p.copy_(Torch.tensor(v, DType.FLOAT64, p.shape()));
                j++;
            }
        }
    }

    @Test
    void mnistCnnAdadeltaStepsMatchPyTorch() throws Exception {
        Map<?, ?> f = fixture("mnist_adadelta.pt");
        var t = new MnistExample.Training(1.0);
        formulaWeights(t.model);
        t.model.eval();
        Tensor x = (Tensor) f.get("x"), y = (Tensor) f.get("y");
        double[] expected = doubles(f, "losses");
        for (int step = 0; step < expected.length; step++) {
            try (MemoryScope scope = new MemoryScope()) {
                t.optimizer.zeroGrad();
                Tensor loss = F.nllLoss(t.model.forward(x), y);
                loss.backward();
                t.optimizer.step();
                assertEquals(expected[step], loss.item(), 1e-4 * Math.max(1, Math.abs(expected[step])), "mnist loss at step " + step);
            }
        }
    }

    @Test
    void timeSequenceLbfgsEvaluationsAndPredictionMatchPyTorch() throws Exception {
        Map<?, ?> f = fixture("time_sequence_lbfgs.pt");
        var t = new TimeSequencePrediction.Training(0.8);
        t.seq.loadStateDict(state(f));
        Tensor data = (Tensor) f.get("data");
        Tensor input = data.narrow(1, 0, data.size(1) - 1), target = data.narrow(1, 1, data.size(1) - 1);
        List<Double> evaluations = new ArrayList<>();
        for (int step = 0; step < 2; step++) t.step(input, target, evaluations::add);
        double[] expected = doubles(f, "evaluations");
        assertEquals(expected.length, evaluations.size(), "closure evaluations: PyTorch " + java.util.Arrays.toString(expected) + ", jtorch " + evaluations);
        for (int i = 0; i < expected.length; i++) assertEquals(expected[i], evaluations.get(i), 1e-9 * Math.max(1, expected[i]), "evaluation " + i);
        try (var g = Grad.noGrad()) {
            Tensor pred = t.seq.forward(input.narrow(0, 0, 2), 10);
            assertArrayEquals(doubles(f, "prediction"), pred.toDoubleArray(), 1e-9);
        }
    }

    @Test
    void charGptAdamwStepsMatchPyTorch() throws Exception {
        Map<?, ?> f = fixture("char_gpt_adamw.pt");
        var t = new CharGpt.Training(new CharGpt.Config(8, 11, 2, 2, 16, 0.0), 1e-2);
        t.model.loadStateDict(state(f));
        double[] expected = doubles(f, "losses");
        for (int step = 0; step < expected.length; step++) {
            double loss = t.step((Tensor) f.get("idx"), (Tensor) f.get("targets"), 1e-2);
            assertEquals(expected[step], loss, 1e-5, "char_gpt loss at step " + step);
        }
    }
}
