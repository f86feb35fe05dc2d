package org.jtorch.examples.timeseq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.examples.LossCurve;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/** The CI variant of time_sequence_prediction: two L-BFGS steps on 20 short waves. */
class TimeSequencePredictionTest {
    @Test
    void lbfgsLowersTheLossOnShortWaves() {
        Torch.manualSeed(0);
        Tensor data = TimeSequencePrediction.sineWaves(20, 40, 2);
        Tensor input = data.narrow(1, 0, 39), target = data.narrow(1, 1, 39);
        var t = new TimeSequencePrediction.Training(0.8);
        List<Double> losses = new ArrayList<>();
        for (int step = 0; step < 2; step++) t.step(input, target, losses::add);
        LossCurve.assertFalls("time_sequence_prediction", losses.stream().mapToDouble(Double::doubleValue).toArray(), 3, 0.5);
    }

    @Test
    void predictionRunsPastTheInputInFloat64() {
        var seq = new TimeSequencePrediction.Sequence();
        seq.to(DType.FLOAT64);
        Tensor pred = seq.forward(TimeSequencePrediction.sineWaves(3, 10, 2), 5);
        assertArrayEquals(new long[] {3, 15}, pred.shape());
        assertEquals(DType.FLOAT64, pred.dtype());
    }

    @Test
    void lossesPrintAsPythonPrintsThem() {
        // Python 3: print(0.0009492853258741653), print(0.5), print(1e-05), print(2.5e-07), print(1.5e16)
        assertEquals("0.0009492853258741653", TimeSequencePrediction.pythonRepr(9.492853258741653E-4));
        assertEquals("0.5", TimeSequencePrediction.pythonRepr(0.5));
        assertEquals("1e-05", TimeSequencePrediction.pythonRepr(1e-5));
        assertEquals("2.5e-07", TimeSequencePrediction.pythonRepr(2.5e-7));
        assertEquals("1.5e+16", TimeSequencePrediction.pythonRepr(1.5e16));
    }
}
