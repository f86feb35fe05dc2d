package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jtorch.cli.train.TrainConfig;
import org.jtorch.cli.train.Trainer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code jtorch train} end to end on the bundled digits (no download needed). */
class TrainCommandTest {
    @TempDir
    Path dir;

    private static Trainer train(String... args) throws IOException {
        CommandLine cl = TrainCommand.commandLine();
        assertTrue(cl.parse(args));
        TrainConfig config = TrainCommand.config(cl);
        Trainer t = new Trainer(config, new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), false);
        t.run(false);
        return t;
    }

    /** Runs the jtorch command with {@code args}, expects status 0, and returns what it printed. */
    private static String mainSucceeds(String... args) {
        var out = new ByteArrayOutputStream();
        PrintStream saved = System.out;
        int status;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            status = Main.run(args);
        } finally {
            System.setOut(saved);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        return text;
    }

    @Test
    void anMlpLearnsTheDigitsAndTheRunWritesItsMetricsAndPlot() throws IOException {
        Path metrics = dir.resolve("m.json");
        Path plot = dir.resolve("curves.png");
        String text = mainSucceeds("train", "--model", "mlp", "--dataset", "digits", "--epochs", "4", "--batch-size", "32",
                "--lr", "0.05", "--scheduler", "none", "--metrics-json", metrics.toString(), "--plot", plot.toString());
        assertTrue(text.contains("training mlp on digits (8x8, bundled) (1437 train / 360 test images) on cpu"), text);
        assertTrue(text.contains("epoch  lr       train loss  train acc  test loss  test acc  seconds  images/s"), text);
        String json = Files.readString(metrics);
        assertTrue(json.contains("\"model\": \"mlp\"") && json.contains("\"precision\": \"fp32\"") && json.contains("\"peak_memory_bytes\""), json);
        double accuracy = Double.parseDouble(json.replaceAll("(?s).*\"test_accuracy\": ([0-9.]+).*", "$1"));
        assertTrue(accuracy >= 0.9, "test accuracy " + accuracy);
        assertTrue(Files.size(plot) > 1000);
        // images_per_second is the steady state; the warm-up is reported on its own.
        assertTrue(json.matches("(?s).*\"images_per_second\": [0-9.]+,.*\"warmup\": \\{\\s*\"steps\": [0-9]+,\\s*\"seconds\": [0-9.]+.*"), json);
        assertTrue(text.matches("(?s).*steady state: [0-9]+ images/s, after a warm-up of [0-9]+ steps.*"), text);
    }

    /** {@code --compile}: the JIT's compiled model trains as the eager one does (same seed, same accuracy). */
    @Test
    void aCompiledLeNetLearnsTheDigitsAsTheEagerOneDoes() throws IOException {
        String[] common = {"train", "--model", "lenet", "--dataset", "digits", "--epochs", "2", "--batch-size", "32", "--lr", "0.05",
            "--scheduler", "none", "--plot", "none", "--limit-train", "640"};
        Path eagerMetrics = dir.resolve("eager.json");
        Path compiledMetrics = dir.resolve("compiled.json");
        String[] eager = java.util.stream.Stream.concat(java.util.Arrays.stream(common), java.util.stream.Stream.of("--metrics-json",
                eagerMetrics.toString())).toArray(String[]::new);
        String[] compiled = java.util.stream.Stream.concat(java.util.Arrays.stream(common), java.util.stream.Stream.of("--compile",
                "--metrics-json", compiledMetrics.toString())).toArray(String[]::new);
        mainSucceeds(eager);
        mainSucceeds(compiled);
        String e = Files.readString(eagerMetrics);
        String c = Files.readString(compiledMetrics);
        assertTrue(c.contains("\"compiled\": true") && e.contains("\"compiled\": false"), c);
        String accuracy = "(?s).*\"test_accuracy\": ([0-9.]+).*";
        assertEquals(e.replaceAll(accuracy, "$1"), c.replaceAll(accuracy, "$1"));
        assertTrue(Double.parseDouble(c.replaceAll(accuracy, "$1")) >= 0.7, c);  // chance is 0.1
    }

    @Test
    void theSteadyStateCountsTheStepsAfterTheWarmUp() throws IOException {
        Trainer t = train("--model", "mlp", "--dataset", "digits", "--epochs", "1", "--batch-size", "32",
                "--lr", "0.05", "--scheduler", "none", "--plot", "none");
        List<Trainer.Step> steps = t.steps();
        assertEquals(45, steps.size()); // ceil(1437 / 32)
        assertEquals(1.0, steps.get(steps.size() - 1).epoch(), 1e-12);
        var tp = t.throughput();
        var st = org.jtorch.backend.SteadyState.of(steps.stream().mapToDouble(Trainer.Step::seconds).toArray());
        double images = 0, seconds = 0;
        for (int i = Math.max(0, st.warmupSteps()); i < steps.size(); i++) {
            images += steps.get(i).images();
            seconds += steps.get(i).seconds();
        }
        assertEquals(Math.max(0, st.warmupSteps()), tp.warmupSteps());
        assertEquals(images / seconds, tp.steadyImagesPerSecond(), 1e-9 * tp.steadyImagesPerSecond());
    }

    @Test
    void theLossCurveIsSmoothedAsTensorBoardDoes() {
        // Debiased: a constant stays constant, and the first point is the first value.
        assertArrayEquals(new double[] {2, 2, 2}, TrainCommand.smoothed(new double[] {2, 2, 2}, 0.9), 1e-12);
        double[] s = TrainCommand.smoothed(new double[] {1, 0}, 0.9);
        assertEquals(1.0, s[0], 1e-12);
        assertEquals(0.9 * 0.1 / (0.1 + 0.9 * 0.1), s[1], 1e-12);
    }

    /** {@code --nproc-per-node 2}: two workers under jtorch launch, DDP with a DistributedSampler; rank 0 reports. */
    @Test
    void dataParallelOnTwoWorkersLearnsTheDigitsAndRankZeroReports() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/mpirun")), "Open MPI's mpirun is not installed");
        String text = mainSucceeds("train", "--nproc-per-node", "2", "--model", "mlp", "--dataset", "digits", "--epochs", "2",
                "--batch-size", "32", "--lr", "0.05", "--scheduler", "none", "--plot", "none");
        assertTrue(text.contains("[rank0]: training mlp on digits (8x8, bundled) (1437 train / 360 test images) on cpu, data-parallel on 2 "
                + "ranks (mpi): 2 epochs, batch 32 per rank"), text);
        assertTrue(!text.contains("[rank1]: training"), "only rank 0 reports: " + text);
        String last = text.lines().filter(l -> l.startsWith("[rank0]:     2 ")).findFirst().orElseThrow(() -> new AssertionError(text));
        double accuracy = Double.parseDouble(last.trim().split("\\s+")[6].replace("%", "")) / 100;
        assertTrue(accuracy >= 0.85, "test accuracy " + accuracy + " in " + last);
    }

    @Test
    void aConvolutionalNetworkLearnsTheDigits() throws IOException {
        Trainer t = train("--model", "lenet", "--dataset", "digits", "--epochs", "5", "--batch-size", "32", "--plot", "none");
        double accuracy = t.history().get(4).testAccuracy();
        assertTrue(accuracy >= 0.93, "LeNet-5 on digits (resized to 28x28): test accuracy " + accuracy);
    }

    @Test
    void theAdamVariantsTrainTheMlp() throws IOException {
        for (String optimizer : List.of("nadam", "radam", "adamax")) {
            List<Trainer.EpochResult> h = train("--model", "mlp", "--dataset", "digits", "--epochs", "2", "--batch-size", "64",
                    "--optimizer", optimizer, "--scheduler", "none", "--plot", "none", "--seed", "3").history();
            assertTrue(h.get(1).trainLoss() < h.get(0).trainLoss() && h.get(1).testAccuracy() >= 0.8,
                    optimizer + ": train losses " + h.get(0).trainLoss() + ", " + h.get(1).trainLoss() + ", test accuracy " + h.get(1).testAccuracy());
        }
    }

    @Test
    void lbfgsTrainsTheMlpWithItsClosure() throws IOException {
        // Three batches of 512, each an LBFGS step of up to 20 iterations with the strong-Wolfe line search.
        List<Trainer.EpochResult> h = train("--model", "mlp", "--dataset", "digits", "--epochs", "1", "--batch-size", "512",
                "--optimizer", "lbfgs", "--scheduler", "none", "--plot", "none", "--seed", "3").history();
        assertTrue(h.get(0).testAccuracy() >= 0.8, "lbfgs: train loss " + h.get(0).trainLoss() + ", test accuracy " + h.get(0).testAccuracy());
    }

    @Test
    void resumingFromACheckpointContinuesExactlyAsAnUninterruptedRun() throws IOException {
        String[] common = {"--model", "mlp", "--dataset", "digits", "--batch-size", "64", "--optimizer", "adam", "--scheduler", "step",
                "--plot", "none", "--seed", "5"};
        List<Trainer.EpochResult> straight = train(concat(common, "--epochs", "3")).history();
        Path ckpt = dir.resolve("run.ckpt");
        train(concat(common, "--epochs", "1", "--checkpoint", ckpt.toString()));
        List<Trainer.EpochResult> resumed = train(concat(common, "--epochs", "3", "--resume", ckpt.toString())).history();
        assertEquals(3, resumed.size());
        // Separate JVMs repeat a run bit for bit. Within one JVM, the vectorised exp and log that C2 compiles
        // (SVML) can differ by an ulp from the interpreter's, so runs at different stages of compilation
        // agree to about 1e-8 only; core's CheckpointTest checks the restored state itself bit for bit.
        for (int e = 0; e < 3; e++) {
            assertEquals(straight.get(e).trainLoss(), resumed.get(e).trainLoss(), 1e-6 * straight.get(e).trainLoss(), "train loss of epoch " + (e + 1));
            assertEquals(straight.get(e).testLoss(), resumed.get(e).testLoss(), 1e-6 * straight.get(e).testLoss(), "test loss of epoch " + (e + 1));
            assertEquals(straight.get(e).lr(), resumed.get(e).lr(), "lr of epoch " + (e + 1));
        }
    }

    @Test
    void bf16AutocastTrainsTheMlpAndFp16IsRefusedOnTheCpu() throws IOException {
        Trainer t = train("--model", "mlp", "--dataset", "digits", "--epochs", "3", "--amp", "bf16", "--plot", "none");
        double accuracy = t.history().get(2).testAccuracy();
        assertTrue(accuracy >= 0.9, "MLP on digits under bf16 autocast: test accuracy " + accuracy);
        var ex = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> train("--model", "mlp", "--dataset", "digits", "--epochs", "1", "--amp", "fp16", "--plot", "none"));
        assertTrue(ex.getMessage().contains("--amp fp16 needs a CUDA device"), ex.getMessage());
    }

    @Test
    void mistakesAreReportedWithStatusTwo() {
        var err = new ByteArrayOutputStream();
        PrintStream saved = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            assertEquals(2, Main.run(new String[] {"train", "--model", "vgg"}));
            assertEquals(2, Main.run(new String[] {"train", "--device", "cuda:0"}));
            assertEquals(2, Main.run(new String[] {"train", "--epochs", "0"}));
            assertEquals(2, Main.run(new String[] {"train", "--seed", "x1"}));
        } finally {
            System.setErr(saved);
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("option '--model' must be one of mlp, lenet"), text);
        assertTrue(text.contains("device cuda:0 is not available"), text);
        assertTrue(text.contains("option '--epochs' must be positive, got 0"), text);
        assertTrue(text.contains("option '--seed' needs an integer, got 'x1'"), text);
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = new String[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
