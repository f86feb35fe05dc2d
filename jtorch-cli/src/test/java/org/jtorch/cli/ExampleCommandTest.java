package org.jtorch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.jtorch.examples.Example;
import org.jtorch.examples.Examples;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code jtorch example}: listing, option errors, and short runs that write what their originals write. */
class ExampleCommandTest {
    @TempDir
    Path dir;

    private record Run(int status, String out, String err) {}

    private static Run run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        PrintStream savedOut = System.out, savedErr = System.err;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            int status = Main.run(args);
            return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(savedOut);
            System.setErr(savedErr);
        }
    }

    @Test
    void helpListsEveryExample() {
        Run r = run("example", "--help");
        assertEquals(0, r.status());
        for (Example e : Examples.all()) assertTrue(r.out().contains(e.name()), r.out());
        assertEquals(2, run("example").status());
    }

    @Test
    void unknownExamplesAndBadOptionsAreUsageErrors() {
        Run unknown = run("example", "resnet");
        assertEquals(2, unknown.status());
        assertTrue(unknown.err().contains("unknown example 'resnet'"), unknown.err());
        Run steps = run("example", "mnist", "--steps", "0");
        assertEquals(2, steps.status());
        assertTrue(steps.err().contains("option '--steps' must be positive, got 0"), steps.err());
        assertEquals(2, run("example", "vae", "--dataset", "cifar10").status());
    }

    @Test
    void regressionStopsAtTheStepCapAndPrintsBothFunctions() {
        Run r = run("example", "regression", "--steps", "5");
        assertEquals(0, r.status(), r.err());
        assertTrue(r.out().contains("after 5 batches"), r.out());
        assertTrue(r.out().contains("==> Learned function:\ty = ") && r.out().contains("==> Actual function:\ty = "), r.out());
    }

    @Test
    void vaeAndDcganWriteTheirImageGrids() {
        Run vae = run("example", "vae", "--dataset", "digits", "--steps", "2", "--out", dir.toString());
        assertEquals(0, vae.status(), vae.err());
        assertTrue(vae.out().contains("====> Test set loss: "), vae.out());
        assertTrue(Files.exists(dir.resolve("results/reconstruction_1.png")) && Files.exists(dir.resolve("results/sample_1.png")));
        Run dcgan = run("example", "dcgan", "--dataset", "digits", "--steps", "1", "--out", dir.toString());
        assertEquals(0, dcgan.status(), dcgan.err());
        assertTrue(dcgan.out().contains("[0/25][0/"), dcgan.out());
        assertTrue(Files.exists(dir.resolve("real_samples.png")) && Files.exists(dir.resolve("fake_samples_epoch_000.png"))
                && Files.exists(dir.resolve("netG_epoch_0.pth")));
    }
}
