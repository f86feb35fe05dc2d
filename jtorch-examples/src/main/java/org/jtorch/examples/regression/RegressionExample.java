package org.jtorch.examples.regression;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;

/**
 * pytorch/examples {@code regression/main.py}: fits a random polynomial of degree 4 with one
 * {@code Linear(4, 1)} on features {@code x, x^2, x^3, x^4}, by plain gradient descent (lr 0.1) on the
 * smooth-L1 loss of batches of 32, until the loss is under 1e-3. {@code --quick} changes nothing: the
 * original already runs in a second.
 */
public final class RegressionExample implements Example {
    static final int POLY_DEGREE = 4;

    @Override
    public String name() {
        return "regression";
    }

    @Override
    public String summary() {
        return "fits a degree-4 polynomial with one Linear layer and hand-written SGD, as regression/main.py";
    }

    /** The hidden polynomial: {@code y = x W + b} on {@link #makeFeatures features}. */
    public record Target(Tensor w, Tensor b) {
        public static Target random() {
            return new Target(Torch.randn(POLY_DEGREE, 1).mul(5).untrack(), Torch.randn(1).mul(5).untrack());
        }

        Tensor f(Tensor features) {
            return features.mm(w).add(b);
        }
    }

    /** {@code [x, x^2, x^3, x^4]} for each x: a matrix {@code [n, 4]}. */
    public static Tensor makeFeatures(Tensor x) {
        Tensor col = x.unsqueeze(1);
        List<Tensor> powers = new ArrayList<>();
        for (int i = 1; i <= POLY_DEGREE; i++) powers.add(col.pow((long) i));
        return Torch.cat(powers, 1);
    }

    /** main.py's {@code poly_desc}: {@code y = +1.23 x^1 -0.45 x^2 ... +6.78}. */
    static String polyDesc(Tensor w, Tensor b) {
        StringBuilder s = new StringBuilder("y = ");
        double[] ws = w.toDoubleArray();
        for (int i = 0; i < ws.length; i++) s.append(String.format(Locale.ROOT, "%+.2f x^%d ", ws[i], i + 1));
        s.append(String.format(Locale.ROOT, "%+.2f", b.toDoubleArray()[0]));
        return s.toString();
    }

    /** A batch of {@code batchSize} random points: features and targets, both kept past the caller's scope. */
    public static Tensor[] getBatch(Target target, int batchSize) {
        Tensor x = makeFeatures(Torch.randn(batchSize));
        return new Tensor[] {x, target.f(x)};
    }

    /** One step of main.py's loop: smooth-L1 loss, backward, {@code p -= 0.1 * p.grad} by hand. */
    public static final class Training {
        public final Linear fc = new Linear(POLY_DEGREE, 1);
        private final double lr;

        public Training(double lr) {
            this.lr = lr;
        }

        public double step(Tensor batchX, Tensor batchY) {
            try (MemoryScope scope = new MemoryScope()) {
                fc.zeroGrad();
                Tensor output = F.smoothL1Loss(fc.forward(batchX), batchY);
                double loss = output.item();
                output.backward();
                try (var g = Grad.noGrad()) {
                    for (Tensor p : fc.parameters()) p.add_(p.grad(), -lr);
                }
                return loss;
            }
        }
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) {
        Torch.manualSeed(o.seed());
        Target target = Target.random();
        Training t = new Training(o.lr(0.1));
        int batchIdx = 0;
        double loss = Double.NaN;
        while (batchIdx < o.maxSteps()) {
            batchIdx++;
            try (MemoryScope scope = new MemoryScope()) {
                Tensor[] batch = getBatch(target, o.batchSize(32));
                loss = t.step(batch[0], batch[1]);
            }
            if (loss < 1e-3) break;
        }
        out.printf(Locale.ROOT, "Loss: %.6f after %d batches%n", loss, batchIdx);
        out.println("==> Learned function:\t" + polyDesc(t.fc.weight().view(-1), t.fc.parameter("bias")));
        out.println("==> Actual function:\t" + polyDesc(target.w().view(-1), target.b()));
    }
}
