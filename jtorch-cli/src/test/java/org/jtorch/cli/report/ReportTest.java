package org.jtorch.cli.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportTest {
    @TempDir
    Path dir;

    @Test
    void pipedProgressPrintsOneLinePerTenthWithRateAndMetric() {
        var bytes = new ByteArrayOutputStream();
        var bar = new ProgressBar(new PrintStream(bytes, true, StandardCharsets.UTF_8), "epoch 1/2", 100, false);
        for (int i = 1; i <= 100; i++) bar.update(i, "loss 0.5");
        bar.finish();
        String[] lines = bytes.toString(StandardCharsets.UTF_8).split("\n");
        assertEquals(10, lines.length, String.join("\n", lines));
        assertTrue(lines[9].startsWith("epoch 1/2 100/100 "), lines[9]);
        assertTrue(lines[9].contains(" it/s") && lines[9].contains(" in ") && lines[9].endsWith("loss 0.5"), lines[9]);
        assertTrue(lines[0].contains("ETA"), lines[0]);
    }

    @Test
    void terminalProgressRedrawsInPlace() {
        var bytes = new ByteArrayOutputStream();
        var bar = new ProgressBar(new PrintStream(bytes, true, StandardCharsets.UTF_8), "train", 4, true);
        bar.update(4, "loss 1");
        bar.finish();
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(out.startsWith("\rtrain [########################] 4/4 "), out);
        assertTrue(out.endsWith("\n"));
    }

    @Test
    void durationsUseMinutesOrHours() {
        assertEquals("0:05", ProgressBar.duration(4.6));
        assertEquals("2:03", ProgressBar.duration(123));
        assertEquals("1:00:01", ProgressBar.duration(3601));
    }

    @Test
    void tableAlignsColumnsAndRightAlignsNumbers() {
        String t = new Table("epoch", "loss", "note").row(1, "0.25", "first").row(10, "0.125", "").toString();
        assertEquals("""
                epoch  loss   note
                -----  -----  -----
                    1   0.25  first
                   10  0.125
                """, t);
    }

    @Test
    void plotWritesAPngWithOnePanelPerChart() throws IOException {
        Path png = dir.resolve("curves.png");
        var loss = new Plot.Series("train", new double[] {1, 2, 3}, new double[] {2.0, 1.0, 0.5}, Color.BLUE);
        var acc = new Plot.Series("test", new double[] {1, 2, 3}, new double[] {0.8, 0.9, Double.NaN}, Color.RED);
        Plot.write(png, List.of(new Plot.Panel("loss", "epoch", "loss", List.of(loss)),
                new Plot.Panel("accuracy", "epoch", "accuracy", List.of(acc))));
        BufferedImage img = ImageIO.read(png.toFile());
        assertEquals(1120, img.getWidth());
        assertEquals(400, img.getHeight());
        boolean blue = false;
        for (int x = 0; x < 560 && !blue; x++) for (int y = 0; y < 400 && !blue; y++) blue = img.getRGB(x, y) == Color.BLUE.getRGB();
        assertTrue(blue, "the loss curve is drawn in the left panel");
    }

    @Test
    void ticksAreRoundNumbers() {
        assertEquals(List.of(0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0), Plot.ticks(0, 1));
        assertEquals(List.of(0.0, 20.0, 40.0, 60.0, 80.0, 100.0), Plot.ticks(-3, 101));
    }
}
