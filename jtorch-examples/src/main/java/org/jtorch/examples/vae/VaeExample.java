package org.jtorch.examples.vae;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.optim.Adam;
import org.jtorch.types.Generator;
import org.jtorch.vision.Images;

/**
 * pytorch/examples {@code vae/main.py}: a variational auto-encoder (784-400-20 encoder, 20-400-784
 * decoder) trained with Adam (lr 1e-3) on the summed binary cross-entropy plus the KL divergence, 10
 * epochs of batches of 128. After each epoch it writes {@code results/reconstruction_N.png} (8 test
 * images above their reconstructions) and {@code results/sample_N.png} (64 decoded random codes).
 * {@code --quick}: the first 4,096 training and 512 test images, two epochs.
 */
public final class VaeExample implements Example {
    @Override
    public String name() {
        return "vae";
    }

    @Override
    public String summary() {
        return "a variational auto-encoder on MNIST with reconstruction and sample grids, as vae/main.py";
    }

    /** The VAE of main.py; {@link #forward(Tensor)} returns only the reconstruction, {@link #forwardAll} all three outputs. */
    public static final class VAE extends Module {
        // Children are not final: deepCopy points a copy's fields at its own children (Module#deepCopy).
        private Linear fc1 = registerModule("fc1", new Linear(784, 400));
        private Linear fc21 = registerModule("fc21", new Linear(400, 20));
        private Linear fc22 = registerModule("fc22", new Linear(400, 20));
        private Linear fc3 = registerModule("fc3", new Linear(20, 400));
        private Linear fc4 = registerModule("fc4", new Linear(400, 784));

        /** The reconstruction, the code's mean and its log-variance. */
        public record Output(Tensor reconstruction, Tensor mu, Tensor logvar) {}

        Tensor[] encode(Tensor x) {
            Tensor h1 = F.relu(fc1.forward(x));
            return new Tensor[] {fc21.forward(h1), fc22.forward(h1)};
        }

        Tensor reparameterize(Tensor mu, Tensor logvar) {
            Tensor std = logvar.mul(0.5).exp();
            Tensor eps = Torch.randnLike(std);
            return mu.add(eps.mul(std));
        }

        public Tensor decode(Tensor z) {
            Tensor h3 = F.relu(fc3.forward(z));
            return F.sigmoid(fc4.forward(h3));
        }

        public Output forwardAll(Tensor x) {
            Tensor[] muLogvar = encode(x.view(-1, 784));
            Tensor z = reparameterize(muLogvar[0], muLogvar[1]);
            return new Output(decode(z), muLogvar[0], muLogvar[1]);
        }

        @Override
        public Tensor forward(Tensor x) {
            return forwardAll(x).reconstruction();
        }
    }

    /** main.py's {@code loss_function}: reconstruction BCE (summed) + KL divergence from the unit Gaussian. */
    public static Tensor lossFunction(Tensor reconX, Tensor x, Tensor mu, Tensor logvar) {
        Tensor bce = F.binaryCrossEntropy(reconX, x.view(-1, 784), null, F.Reduction.SUM);
        // KLD = -0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)  (Kingma and Welling 2014, appendix B)
        Tensor kld = logvar.add(1.0).sub(mu.pow(2L)).sub(logvar.exp()).sum().mul(-0.5);
        return bce.add(kld);
    }

    /** One step of main.py's {@code train} loop, reusable by tests and benchmarks. */
    public static final class Training {
        public final VAE model = new VAE();
        public final Adam optimizer;

        public Training(double lr) {
            optimizer = new Adam(model.parameters(), Adam.options().lr(lr));
        }

        /** Returns the batch's summed loss (main.py prints it divided by the batch size). */
        public double step(Tensor data) {
            model.train();
            try (MemoryScope scope = new MemoryScope()) {
                optimizer.zeroGrad();
                VAE.Output out = model.forwardAll(data);
                Tensor loss = lossFunction(out.reconstruction(), data, out.mu(), out.logvar());
                loss.backward();
                optimizer.step();
                return loss.item();
            }
        }
    }

    @Override
    public void run(ExampleOptions o, PrintStream out) throws IOException {
        Torch.manualSeed(o.seed());
        int epochs = o.epochs(o.quick() ? 2 : 10);
        int batchSize = o.batchSize(128);
        ImageData.Split data = ImageData.load(o.dataset("mnist"), 28, null, o.quick() ? 4096 : 0, o.quick() ? 512 : 0, out);
        DataLoader<Sample> trainLoader = DataLoader.builder(data.train()).batchSize(batchSize).shuffle(true)
                .generator(new Generator(o.seed())).build();
        DataLoader<Sample> testLoader = DataLoader.builder(data.test()).batchSize(batchSize).build();
        Path results = o.outDir().resolve("results");
        Files.createDirectories(results);
        Training t = new Training(o.lr(1e-3));
        int logInterval = 10;
        int steps = 0;
        for (int epoch = 1; epoch <= epochs && steps < o.maxSteps(); epoch++) {
            double trainLoss = 0;
            int batchIdx = 0;
            for (Sample batch : trainLoader) {
                if (steps++ >= o.maxSteps()) break;
                double loss = t.step(batch.input());
                trainLoss += loss;
                long n = batch.input().size(0);
                if (batchIdx % logInterval == 0) {
                    out.printf(Locale.ROOT, "Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f%n", epoch, batchIdx * n,
                            data.train().size(), 100.0 * batchIdx / trainLoader.size(), loss / n);
                }
                batchIdx++;
            }
            out.printf(Locale.ROOT, "====> Epoch: %d Average loss: %.4f%n", epoch, trainLoss / data.train().size());
            test(t.model, testLoader, data.test().size(), epoch, results, out);
            try (MemoryScope scope = new MemoryScope(); var g = Grad.noGrad()) {
                Tensor sample = t.model.decode(Torch.randn(64, 20));
                Images.saveImage(sample.view(64, 1, 28, 28), results.resolve("sample_" + epoch + ".png"));
            }
        }
    }

    private static void test(VAE model, DataLoader<Sample> loader, int size, int epoch, Path results, PrintStream out) throws IOException {
        model.eval();
        double testLoss = 0;
        boolean first = true;
        try (var g = Grad.noGrad()) {
            for (Sample batch : loader) {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor data = batch.input();
                    VAE.Output r = model.forwardAll(data);
                    testLoss += lossFunction(r.reconstruction(), data, r.mu(), r.logvar()).item();
                    if (first) {
                        long n = Math.min(data.size(0), 8);
                        Tensor comparison = Torch.cat(data.narrow(0, 0, n), r.reconstruction().view(-1, 1, 28, 28).narrow(0, 0, n));
                        Images.saveImage(comparison, results.resolve("reconstruction_" + epoch + ".png"),
                                Images.GridOptions.defaults().nrow((int) n));
                        first = false;
                    }
                }
            }
        }
        out.printf(Locale.ROOT, "====> Test set loss: %.4f%n", testLoss / size);
    }
}
