package org.jtorch.cli.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;

/**
 * Line charts side by side in one PNG (for example the loss and the accuracy of a training run),
 * drawn with Java 2D in headless mode. Needs the {@code java.desktop} module; {@link #available()}
 * says whether this runtime has it (a trimmed {@code jlink} runtime may not).
 */
public final class Plot {
    /** One curve: x and y values of equal length. */
    public record Series(String name, double[] x, double[] y, Color color) {}

    /** One chart: a title, axis labels and its curves. */
    public record Panel(String title, String xLabel, String yLabel, List<Series> series) {}

    private static final int PANEL_W = 560;
    private static final int PANEL_H = 400;
    private static final int LEFT = 70;
    private static final int RIGHT = 20;
    private static final int TOP = 40;
    private static final int BOTTOM = 50;

    private Plot() {}

    public static boolean available() {
        return ModuleLayer.boot().findModule("java.desktop").isPresent();
    }

    /** Draws {@code panels} left to right and writes the PNG atomically to {@code file}. */
    public static void write(Path file, List<Panel> panels) throws IOException {
        System.setProperty("java.awt.headless", "true");
        BufferedImage image = new BufferedImage(PANEL_W * panels.size(), PANEL_H, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, image.getWidth(), image.getHeight());
            for (int i = 0; i < panels.size(); i++) drawPanel(g, panels.get(i), i * PANEL_W);
        } finally {
            g.dispose();
        }
        Path target = file.toAbsolutePath();
        Path tmp = Files.createTempFile(target.getParent(), "." + target.getFileName(), ".tmp");
        try {
            if (!ImageIO.write(image, "png", tmp.toFile())) throw new IOException("no PNG writer in this runtime");
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void drawPanel(Graphics2D g, Panel p, int x0) {
        int plotW = PANEL_W - LEFT - RIGHT;
        int plotH = PANEL_H - TOP - BOTTOM;
        double xMin = Double.POSITIVE_INFINITY, xMax = Double.NEGATIVE_INFINITY;
        double yMin = Double.POSITIVE_INFINITY, yMax = Double.NEGATIVE_INFINITY;
        for (Series s : p.series()) {
            for (int i = 0; i < s.x().length; i++) {
                if (!Double.isFinite(s.y()[i])) continue;
                xMin = Math.min(xMin, s.x()[i]);
                xMax = Math.max(xMax, s.x()[i]);
                yMin = Math.min(yMin, s.y()[i]);
                yMax = Math.max(yMax, s.y()[i]);
            }
        }
        if (!(xMin <= xMax)) { xMin = 0; xMax = 1; yMin = 0; yMax = 1; }
        if (xMax == xMin) xMax = xMin + 1;
        if (yMax == yMin) { yMax += 0.5; yMin -= 0.5; }
        double pad = (yMax - yMin) * 0.05;
        yMin -= pad;
        yMax += pad;

        Font font = new Font(Font.SANS_SERIF, Font.PLAIN, 12);
        g.setFont(font);
        FontMetrics fm = g.getFontMetrics();
        g.setColor(Color.BLACK);
        g.setFont(font.deriveFont(Font.BOLD, 14f));
        g.drawString(p.title(), x0 + LEFT, TOP - 15);
        g.setFont(font);

        int px = x0 + LEFT;
        int py = TOP;
        for (double t : ticks(yMin, yMax)) {
            int y = py + plotH - (int) Math.round((t - yMin) / (yMax - yMin) * plotH);
            g.setColor(new Color(230, 230, 230));
            g.drawLine(px, y, px + plotW, y);
            g.setColor(Color.DARK_GRAY);
            String label = format(t);
            g.drawString(label, px - 6 - fm.stringWidth(label), y + fm.getAscent() / 2 - 1);
        }
        for (double t : ticks(xMin, xMax)) {
            int x = px + (int) Math.round((t - xMin) / (xMax - xMin) * plotW);
            g.setColor(new Color(230, 230, 230));
            g.drawLine(x, py, x, py + plotH);
            g.setColor(Color.DARK_GRAY);
            String label = format(t);
            g.drawString(label, x - fm.stringWidth(label) / 2, py + plotH + fm.getAscent() + 4);
        }
        g.setColor(Color.BLACK);
        g.drawRect(px, py, plotW, plotH);
        g.drawString(p.xLabel(), px + plotW / 2 - fm.stringWidth(p.xLabel()) / 2, PANEL_H - 10);
        var saved = g.getTransform();
        g.rotate(-Math.PI / 2);
        g.drawString(p.yLabel(), -(py + plotH / 2 + fm.stringWidth(p.yLabel()) / 2), x0 + 16);
        g.setTransform(saved);

        int legendY = py + 16;
        for (Series s : p.series()) {
            g.setColor(s.color());
            g.setStroke(new BasicStroke(2f));
            Path2D.Double path = new Path2D.Double();
            boolean started = false;
            for (int i = 0; i < s.x().length; i++) {
                if (!Double.isFinite(s.y()[i])) continue;
                double x = px + (s.x()[i] - xMin) / (xMax - xMin) * plotW;
                double y = py + plotH - (s.y()[i] - yMin) / (yMax - yMin) * plotH;
                if (started) path.lineTo(x, y);
                else path.moveTo(x, y);
                started = true;
                if (s.x().length <= 60) g.fillOval((int) x - 3, (int) y - 3, 6, 6);
            }
            g.draw(path);
            g.setStroke(new BasicStroke(1f));
            int lx = px + plotW - 150;
            g.drawLine(lx, legendY - 4, lx + 20, legendY - 4);
            g.setColor(Color.BLACK);
            g.drawString(s.name(), lx + 26, legendY);
            legendY += 16;
        }
    }

    /** About five round tick values covering [lo, hi]. */
    static List<Double> ticks(double lo, double hi) {
        double raw = (hi - lo) / 5;
        double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        double step = raw / mag >= 5 ? 5 * mag : raw / mag >= 2 ? 2 * mag : mag;
        List<Double> out = new ArrayList<>();
        for (double t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.add(Math.abs(t) < step * 1e-9 ? 0 : t);
        return out;
    }

    private static String format(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e6) return Long.toString((long) v);
        return String.format(Locale.ROOT, "%.3g", v);
    }
}
