package org.jtorch.cli.report;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress bar for a loop of known length: on a terminal one line redrawn in place (bar, count,
 * iterations per second, ETA and the latest metric); when the output is piped, a plain line at every
 * tenth of the work, so logs stay readable.
 */
public final class ProgressBar {
    private static final long REDRAW_NANOS = 100_000_000L;

    private final PrintStream out;
    private final String label;
    private final long total;
    private final boolean terminal;
    private final long start = System.nanoTime();
    private long lastDraw;
    private long lastPlainTenth;
    private String lastLine = "";

    public ProgressBar(PrintStream out, String label, long total, boolean terminal) {
        this.out = out;
        this.label = label;
        this.total = total;
        this.terminal = terminal;
    }

    /** Whether standard output is an interactive terminal (not a pipe or file). */
    public static boolean stdoutIsTerminal() {
        var console = System.console();
        return console != null && console.isTerminal();
    }

    /** Reports {@code done} of {@code total} iterations with a metric text such as {@code "loss 0.213"}. */
    public void update(long done, String metric) {
        long now = System.nanoTime();
        if (terminal) {
            if (done < total && now - lastDraw < REDRAW_NANOS) return;
            lastDraw = now;
            String line = line(done, metric, now, true);
            out.print("\r" + line + " ".repeat(Math.max(0, lastLine.length() - line.length())));
            out.flush();
            lastLine = line;
        } else {
            long tenth = total == 0 ? 10 : done * 10 / total;
            if (tenth > lastPlainTenth) {
                lastPlainTenth = tenth;
                out.println(line(done, metric, now, false));
            }
        }
    }

    /** Ends the bar's line (on a terminal). */
    public void finish() {
        if (terminal && !lastLine.isEmpty()) out.println();
    }

    String line(long done, String metric, long now, boolean withBar) {
        double seconds = (now - start) / 1e9;
        double rate = seconds > 0 ? done / seconds : 0;
        StringBuilder sb = new StringBuilder(label).append(' ');
        if (withBar) {
            int width = 24;
            int filled = total == 0 ? width : (int) (width * done / total);
            sb.append('[').append("#".repeat(filled)).append(".".repeat(width - filled)).append("] ");
        }
        int digits = Long.toString(total).length();
        sb.append(String.format(Locale.ROOT, "%" + digits + "d/%d", done, total));
        sb.append(String.format(Locale.ROOT, " %.1f it/s", rate));
        if (done < total && rate > 0) sb.append(" ETA ").append(duration((total - done) / rate));
        else sb.append(" in ").append(duration(seconds));
        if (metric != null && !metric.isEmpty()) sb.append("  ").append(metric);
        return sb.toString();
    }

    /** {@code m:ss} or {@code h:mm:ss}. */
    public static String duration(double seconds) {
        long s = Math.round(seconds);
        if (s >= 3600) return String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
        return String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
    }
}
