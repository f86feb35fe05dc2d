package org.jtorch.cli.report;

import java.util.ArrayList;
import java.util.List;

/** A plain-text table with a header row, columns sized to their widest cell, numbers right-aligned. */
public final class Table {
    private final List<String> header;
    private final List<List<String>> rows = new ArrayList<>();

    public Table(String... header) {
        this.header = List.of(header);
    }

    public Table row(Object... cells) {
        if (cells.length != header.size()) throw new IllegalArgumentException("Table: row has " + cells.length + " cells, header " + header.size());
        List<String> r = new ArrayList<>();
        for (Object c : cells) r.add(String.valueOf(c));
        rows.add(r);
        return this;
    }

    @Override
    public String toString() {
        int[] w = new int[header.size()];
        for (int i = 0; i < w.length; i++) w[i] = header.get(i).length();
        for (List<String> r : rows) for (int i = 0; i < w.length; i++) w[i] = Math.max(w[i], r.get(i).length());
        StringBuilder sb = new StringBuilder();
        appendRow(sb, header, w, false);
        for (int i = 0; i < w.length; i++) sb.append(i > 0 ? "  " : "").append("-".repeat(w[i]));
        sb.append('\n');
        for (List<String> r : rows) appendRow(sb, r, w, true);
        return sb.toString();
    }

    private static void appendRow(StringBuilder sb, List<String> cells, int[] w, boolean alignNumbers) {
        for (int i = 0; i < w.length; i++) {
            String c = cells.get(i);
            boolean right = alignNumbers && !c.isEmpty() && (Character.isDigit(c.charAt(0)) || c.charAt(0) == '-' || c.charAt(0) == '.');
            if (i > 0) sb.append("  ");
            sb.append(right ? " ".repeat(w[i] - c.length()) + c : c + " ".repeat(w[i] - c.length()));
        }
        int end = sb.length();
        while (end > 0 && sb.charAt(end - 1) == ' ') end--;
        sb.setLength(end);
        sb.append('\n');
    }
}
