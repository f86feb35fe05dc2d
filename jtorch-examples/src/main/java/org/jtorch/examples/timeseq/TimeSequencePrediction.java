package org.jtorch.examples.timeseq;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.LSTMCell;
import org.jtorch.nn.Linear;
import org.jtorch.nn.MSELoss;
import org.jtorch.nn.Module;
import org.jtorch.optim.LBFGS;
import org.jtorch.types.DType;

/**
 * pytorch/examples {@code time_sequence_prediction}: two stacked {@code LSTMCell}s (51 units) and a
 * {@code Linear} learn to continue sine waves, in float64, with L-BFGS (lr 0.8) over 15 steps on 97 waves
 * of 1,000 points; after each step it predicts 1,000 points past the 3 test waves and prints the test loss.
 * The waves are {@code generate_sine_wave.py}'s (T = 20, random phase shifts in [-80, 80)), drawn with
 * Java's {@code Random} (not numpy's, so not its numbers); the original's PDF plots are not drawn.
 * {@code --quick}: 200 points a wave, 3 steps, 200 points of prediction.
 */
public final class TimeSequencePrediction implements Example {
    @Override
    public String name() {
        return "time_sequence_prediction";
    }

    @Override
    public String summary() {
        return "two LSTMCells learn sine waves with L-BFGS in float64, as time_sequence_prediction/train.py";
    }

    /** {@code generate_sine_wave.py}: {@code n} waves of {@code length} points, {@code sin((j + shift_i) / T)}, float64 {@code [n, length]}. */
    public static Tensor sineWaves(int n, int length, long seed) {
        final int t = 20;
        Random random = new Random(seed);
        double[] data = new double[n * length];
        for (int i = 0; i < n; i++) {
            int shift = random.nextInt(-4 * t, 4 * t);
            for (int j = 0; j < length; j++) data[i * length + j] = Math.sin((j + shift) / 1.0 / t);
        }
        return Torch.tensor(data, DType.FLOAT64, n, length);
    }

    /** {@code Sequence} of train.py. */
    public static final class Sequence extends Module {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private LSTMCell lstm1 = registerModule("lstm1", new LSTMCell(1, 51));
        private LSTMCell lstm2 = registerModule("lstm2", new LSTMCell(51, 51));
        private Linear linear = registerModule("linear", new Linear(51, 1));

        @Override
        public Tensor forward(Tensor input) {
            return forward(input, 0);
        }

        /** One output per input point, then {@code future} more, each fed back as the next input: {@code [B, T + future]}. */
        public Tensor forward(Tensor input, int future) {
            long b = input.size(0);
            LSTM.State s1 = new LSTM.State(Torch.zeros(new long[] {b, 51}, DType.FLOAT64, input.device()),
                    Torch.zeros(new long[] {b, 51}, DType.FLOAT64, input.device()));
            LSTM.State s2 = new LSTM.State(Torch.zeros(new long[] {b, 51}, DType.FLOAT64, input.device()),
                    Torch.zeros(new long[] {b, 51}, DType.FLOAT64, input.device()));
            List<Tensor> outputs = new ArrayList<>();
            Tensor output = null;
            for (long i = 0; i < input.size(1); i++) {
                s1 = lstm1.forward(input.narrow(1, i, 1), s1);
                s2 = lstm2.forward(s1.h(), s2);
                output = linear.forward(s2.h());
                outputs.add(output);
            }
            for (int i = 0; i < future; i++) {
                s1 = lstm1.forward(output, s1);
                s2 = lstm2.forward(s1.h(), s2);
                output = linear.forward(s2.h());
                outputs.add(output);
            }
            return Torch.cat(outputs, 1);
        }
    }

    /** One L-BFGS step of train.py, reusable by tests and benchmarks; every closure's loss is reported to {@code onLoss}. */
    public static final class Training {
        public final Sequence seq = new Sequence();
        public final LBFGS optimizer;
        private final MSELoss criterion = new MSELoss();

        public Training(double lr) {
            this(LBFGS.options().lr(lr));
        }

        /** With other L-BFGS options (the benchmark suite takes one iteration per step). */
        public Training(LBFGS.Options options) {
            seq.to(DType.FLOAT64);
            optimizer = new LBFGS(seq.parameters(), options);
        }

        /** Returns the loss of the step's first evaluation. */
        public double step(Tensor input, Tensor target, java.util.function.DoubleConsumer onLoss) {
            try (Tensor loss = optimizer.step(() -> {
                // Each evaluation's 2,000 cell steps are released when it returns; only the loss (and the gradients) leave.
                try (MemoryScope scope = new MemoryScope()) {
                    optimizer.zeroGrad();
                    Tensor l = criterion.forward(seq.forward(input), target);
                    onLoss.accept(l.item());
                    l.backward();
                    return scope.keep(l);
                }
            })) {
                return loss.item();
            }
        }

        /** The test loss over the known points, and the prediction {@code [B, T + future]}. */
        public double test(Tensor testInput, Tensor testTarget, int future, Tensor[] prediction) {
            try (var g = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
                Tensor pred = seq.forward(testInput, future);
                double loss = criterion.forward(pred.narrow(1, 0, pred.size(1) - future), testTarget).item();
                if (prediction != null) prediction[0] = scope.keep(pred);
                return loss;
            }
        }
    }

    /** A double as Python's {@code print} shows it: positional from 1e-4 to 1e16, else with an exponent. */
    static String pythonRepr(double x) {
        if (Double.isNaN(x)) return "nan";
        if (Double.isInfinite(x)) return x > 0 ? "inf" : "-inf";
        double a = Math.abs(x);
        if (a == 0) return Double.toString(x);
        if (a >= 1e-4 && a < 1e16) {
            String plain = new java.math.BigDecimal(Double.toString(x)).toPlainString();
            return plain.contains(".") ? plain : plain + ".0";
        }
        String[] parts = Double.toString(x).replace(".0E", "E").split("E");
        int exponent = Integer.parseInt(parts[1]);
        return parts[0] + "e" + (exponent < 0 ? "-" : "+") + String.format(java.util.Locale.ROOT, "%02d", Math.abs(exponent));
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) {
        Torch.manualSeed(o.seed());
        int length = o.quick() ? 200 : 1000;
        Tensor data = sineWaves(100, length, 2);
        Tensor input = data.narrow(0, 3, 97).narrow(1, 0, length - 1);
        Tensor target = data.narrow(0, 3, 97).narrow(1, 1, length - 1);
        Tensor testInput = data.narrow(0, 0, 3).narrow(1, 0, length - 1);
        Tensor testTarget = data.narrow(0, 0, 3).narrow(1, 1, length - 1);
        Training t = new Training(o.lr(0.8));
        int steps = Math.min(o.epochs(o.quick() ? 3 : 15), o.maxSteps());
        int future = o.quick() ? 200 : 1000;
        for (int i = 0; i < steps; i++) {
            out.println("STEP:  " + i);
            t.step(input, target, l -> out.println("loss: " + pythonRepr(l)));
            out.println("test loss: " + pythonRepr(t.test(testInput, testTarget, future, null)));
        }
    }
}
