package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import org.jtorch.cli.train.TrainConfig;
import org.jtorch.cli.train.Trainer;
import org.jtorch.vision.datasets.FashionMNIST;
import org.jtorch.vision.datasets.MNIST;
import org.junit.jupiter.api.Test;

/**
 * The accuracy targets, through {@code jtorch train}'s own pipeline. Skipped when the data are
 * absent ({@code scripts/fetch-data}); the full-length runs only with {@code JTORCH_LONG_TESTS=1}
 * (their results are recorded in docs/BENCHMARKS.md), a quick variant always.
 */
class MnistAccuracyTest {
    private static boolean present(boolean fashion) {
        try {
            if (fashion) new FashionMNIST(false);
            else new MNIST(false);
            return true;
        } catch (UncheckedIOException e) {
            return false;
        }
    }

    private static boolean longTests() {
        return "1".equals(System.getenv("JTORCH_LONG_TESTS"));
    }

    private static double testAccuracy(String... args) throws IOException {
        CommandLine cl = TrainCommand.commandLine();
        assertTrue(cl.parse(args));
        TrainConfig config = TrainCommand.config(cl);
        Trainer t = new Trainer(config, new PrintStream(System.out, true), false);
        t.run(false);
        return t.history().get(t.history().size() - 1).testAccuracy();
    }

    @Test
    void leNetLearnsMnistQuickly() throws IOException {
        assumeTrue(present(false), "MNIST is absent (scripts/fetch-data mnist)");
        double acc = testAccuracy("--model", "lenet", "--dataset", "mnist", "--epochs", "1", "--limit-train", "12000",
                "--limit-test", "2000", "--plot", "none", "--no-fetch");
        assertTrue(acc >= 0.93, "LeNet-5, 1 epoch on 12,000 MNIST images: test accuracy " + acc);
    }

    @Test
    void leNetReachesNinetyNinePercentOnMnistInThreeEpochs() throws IOException {
        assumeTrue(longTests(), "a full MNIST run; set JTORCH_LONG_TESTS=1");
        assumeTrue(present(false), "MNIST is absent (scripts/fetch-data mnist)");
        double acc = testAccuracy("--model", "lenet", "--dataset", "mnist", "--epochs", "3", "--plot", "none", "--no-fetch");
        assertTrue(acc >= 0.99, "LeNet-5, 3 epochs on MNIST: test accuracy " + acc);
    }

    @Test
    void resNet20ReachesNinetyTwoPercentOnFashionMnistWithinFifteenEpochs() throws IOException {
        assumeTrue(longTests(), "a full Fashion-MNIST run (about 20 minutes on 2 cores); set JTORCH_LONG_TESTS=1");
        assumeTrue(present(true), "Fashion-MNIST is absent (scripts/fetch-data fashion-mnist)");
        double acc = testAccuracy("--model", "resnet20", "--dataset", "fashion-mnist", "--epochs", "7", "--batch-size", "128",
                "--lr", "0.1", "--weight-decay", "5e-4", "--scheduler", "cosine", "--workers", "1", "--plot", "none", "--no-fetch");
        assertTrue(acc >= 0.92, "ResNet-20, 7 epochs on Fashion-MNIST: test accuracy " + acc);
    }
}
