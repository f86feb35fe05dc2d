package org.jtorch.examples.mnist;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Locale;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.data.DataLoader;
import org.jtorch.data.Sample;
import org.jtorch.examples.Example;
import org.jtorch.examples.ExampleOptions;
import org.jtorch.examples.ImageData;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Conv2d;
import org.jtorch.nn.Dropout;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.optim.Adadelta;
import org.jtorch.optim.lr.StepLR;
import org.jtorch.types.Generator;
import org.jtorch.vision.datasets.MNIST;

/**
 * pytorch/examples {@code mnist/main.py}: a two-convolution CNN with dropout trained by Adadelta (lr 1.0,
 * stepped down by 0.7 every epoch), 14 epochs of batches of 64, tested on batches of 1000 after each.
 * {@code --quick}: the first 2,000 training and 500 test images, one epoch.
 */
public final class MnistExample implements Example {
    @Override
    public String name() {
        return "mnist";
    }

    @Override
    public String summary() {
        return "the MNIST CNN (2 convolutions, dropout, Adadelta + StepLR), as pytorch/examples mnist/main.py";
    }

    /** {@code Net} of main.py. */
    public static final class Net extends Module {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private Conv2d conv1 = registerModule("conv1", new Conv2d(1, 32, 3));
        private Conv2d conv2 = registerModule("conv2", new Conv2d(32, 64, 3));
        private Dropout dropout1 = registerModule("dropout1", new Dropout(0.25));
        private Dropout dropout2 = registerModule("dropout2", new Dropout(0.5));
        private Linear fc1 = registerModule("fc1", new Linear(9216, 128));
        private Linear fc2 = registerModule("fc2", new Linear(128, 10));

        @Override
        public Tensor forward(Tensor x) {
            x = F.relu(conv1.forward(x));
            x = F.relu(conv2.forward(x));
            x = F.maxPool2d(x, 2);
            x = dropout1.forward(x);
            x = x.flatten(1);
            x = F.relu(fc1.forward(x));
            x = dropout2.forward(x);
            x = fc2.forward(x);
            return F.logSoftmax(x, 1);
        }
    }

    /** One training step of main.py's {@code train} loop, reusable by tests and benchmarks. */
    public static final class Training {
        public final Net model = new Net();
        public final Adadelta optimizer;

        public Training(double lr) {
            optimizer = new Adadelta(model.parameters(), Adadelta.options().lr(lr));
        }

        /** Forward, NLL loss, backward and an Adadelta step on one batch; returns the loss. */
        public double step(Tensor data, Tensor target) {
            model.train();
            try (MemoryScope scope = new MemoryScope()) {
                optimizer.zeroGrad();
                Tensor loss = F.nllLoss(model.forward(data), target);
                loss.backward();
                optimizer.step();
                return loss.item();
            }
        }

        /** main.py's {@code test}: the summed NLL loss and the number of correct predictions. */
        public double[] evaluate(Tensor data, Tensor target) {
            model.eval();
            try (MemoryScope scope = new MemoryScope(); var g = Grad.noGrad()) {
                Tensor output = model.forward(data);
                double loss = F.nllLoss(output, target, null, -100, F.Reduction.SUM).item();
                double correct = output.argmax(1, false).eq(target).sum().item();
                return new double[] {loss, correct};
            }
        }
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) throws IOException {
        Torch.manualSeed(o.seed());
        int epochs = o.epochs(o.quick() ? 1 : 14);
        ImageData.Split data = ImageData.load(o.dataset("mnist"), 28, MNIST.normalize(), o.quick() ? 2000 : 0, o.quick() ? 500 : 0, out);
        DataLoader<Sample> trainLoader = DataLoader.builder(data.train()).batchSize(o.batchSize(64)).shuffle(true)
                .generator(new Generator(o.seed())).build();
        DataLoader<Sample> testLoader = DataLoader.builder(data.test()).batchSize(1000).build();
        Training t = new Training(o.lr(1.0));
        StepLR scheduler = new StepLR(t.optimizer, 1, 0.7);
        int logInterval = 10;
        int steps = 0;
        for (int epoch = 1; epoch <= epochs && steps < o.maxSteps(); epoch++) {
            int batchIdx = 0;
            for (Sample batch : trainLoader) {
                if (steps++ >= o.maxSteps()) break;
                double loss = t.step(batch.input(), batch.target());
                if (batchIdx % logInterval == 0) {
                    out.printf(Locale.ROOT, "Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f%n", epoch, batchIdx * o.batchSize(64),
                            data.train().size(), 100.0 * batchIdx / trainLoader.size(), loss);
                }
                batchIdx++;
            }
            double testLoss = 0, correct = 0;
            for (Sample batch : testLoader) {
                double[] r = t.evaluate(batch.input(), batch.target());
                testLoss += r[0];
                correct += r[1];
            }
            int n = data.test().size();
            out.printf(Locale.ROOT, "%nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)%n%n", testLoss / n, (long) correct, n, 100.0 * correct / n);
            scheduler.step();
        }
    }
}
