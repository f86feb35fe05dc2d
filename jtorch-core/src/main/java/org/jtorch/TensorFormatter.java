package org.jtorch;

import java.util.Locale;

/**
 * Prints tensors as PyTorch's {@code repr} does: {@code tensor([[1., 2.], [3., 4.]])} with a common
 * element width, fixed or scientific notation chosen from the value range (precision 4), summaries
 * with {@code ...} beyond 1000 elements, and the dtype named when it is not the default for its kind.
 */
final class TensorFormatter {
    private static final int PRECISION = 4;
    private static final int THRESHOLD = 1000;
    private static final int EDGE_ITEMS = 3;
    private static final int LINE_WIDTH = 80;

    private TensorFormatter() {}

    static String format(Tensor t) {
        String prefix = "tensor(";
        StringBuilder sb = new StringBuilder(prefix);
        double[] values;
        try (Tensor host = t.cpu()) {
            values = host.toDoubleArray();
        }
        long[] shape = t.shape();
        boolean summarize = t.numel() > THRESHOLD;
        ElementFormat fmt = new ElementFormat(t.dtype(), values, summarize ? summaryIndices(shape) : null);
        if (t.numel() == 0 && shape.length > 0) {
            sb.append("[]");
        } else {
            long[] strides = org.jtorch.ops.Shapes.contiguousStrides(shape);
            formatDim(sb, values, shape, strides, 0, 0, fmt, prefix.length(), summarize);
        }
        String suffix = suffix(t);
        if (!suffix.isEmpty()) sb.append(", ").append(suffix);
        return sb.append(')').toString();
    }

    private static String suffix(Tensor t) {
        StringBuilder s = new StringBuilder();
        if (t.numel() == 0 && t.dim() != 1) s.append("size=").append(org.jtorch.ops.Shapes.format(t.shape())).append(", ");
        DType d = t.dtype();
        boolean defaultType = d == Torch.defaultDtype() || d == DType.INT64 || d == DType.BOOL;
        if (!defaultType || t.numel() == 0 && d != Torch.defaultDtype()) s.append("dtype=").append(d).append(", ");
        if (!t.device().isCpu()) s.append("device='").append(t.device()).append("', ");
        if (s.length() > 0) s.setLength(s.length() - 2);
        return s.toString();
    }

    private static void formatDim(StringBuilder sb, double[] v, long[] shape, long[] strides, int dim, long base,
                                  ElementFormat fmt, int indent, boolean summarize) {
        if (dim == shape.length) {
            sb.append(fmt.format(v[(int) base]));
            return;
        }
        long n = shape[dim];
        sb.append('[');
        boolean last = dim == shape.length - 1;
        int perLine = last ? Math.max(1, (LINE_WIDTH - indent) / (fmt.width + 2)) : 1;
        int printed = 0;
        for (long i = 0; i < n; i++) {
            if (summarize && n > 2 * EDGE_ITEMS && i == EDGE_ITEMS) {
                sb.append("...");
                if (last) sb.append(", ");
                else sb.append(",\n".repeat(shape.length - dim - 1)).append(" ".repeat(indent + dim + 1));
                i = n - EDGE_ITEMS - 1;
                continue;
            }
            if (printed > 0 && last && printed % perLine == 0) {
                sb.setLength(sb.length() - 1);
                sb.append('\n').append(" ".repeat(indent + dim + 1));
            }
            formatDim(sb, v, shape, strides, dim + 1, base + i * strides[dim], fmt, indent, summarize);
            printed++;
            if (i < n - 1) {
                if (last) sb.append(", ");
                else sb.append(",").append("\n".repeat(shape.length - dim - 1)).append(" ".repeat(indent + dim + 1));
            }
        }
        sb.append(']');
    }

    /** Indices of the elements a summarised print shows (to size the format from them only). */
    private static boolean[] summaryIndices(long[] shape) {
        long n = org.jtorch.ops.Shapes.numel(shape);
        boolean[] shown = new boolean[(int) n];
        long[] strides = org.jtorch.ops.Shapes.contiguousStrides(shape);
        for (int i = 0; i < n; i++) {
            boolean ok = true;
            for (int d = 0; d < shape.length; d++) {
                long idx = (i / strides[d]) % shape[d];
                if (shape[d] > 2 * EDGE_ITEMS && idx >= EDGE_ITEMS && idx < shape[d] - EDGE_ITEMS) {
                    ok = false;
                    break;
                }
            }
            shown[i] = ok;
        }
        return shown;
    }

    /** Chooses integer, fixed or scientific notation and a common width, as PyTorch's _Formatter. */
    private static final class ElementFormat {
        final DType dtype;
        boolean intMode;
        boolean sciMode;
        int width;

        ElementFormat(DType dtype, double[] values, boolean[] shown) {
            this.dtype = dtype;
            if (!dtype.isFloatingPoint()) {
                for (int i = 0; i < values.length; i++) {
                    if (shown == null || shown[i]) width = Math.max(width, format(values[i]).length());
                }
                return;
            }
            intMode = true;
            double maxAbs = 0;
            double minAbs = Double.POSITIVE_INFINITY;
            boolean any = false;
            for (int i = 0; i < values.length; i++) {
                if (shown != null && !shown[i]) continue;
                double x = values[i];
                if (!Double.isFinite(x)) continue;
                if (x != Math.rint(x)) intMode = false;
                double a = Math.abs(x);
                if (a != 0) {
                    any = true;
                    maxAbs = Math.max(maxAbs, a);
                    minAbs = Math.min(minAbs, a);
                }
            }
            if (intMode) {
                if (any && maxAbs > 1e8) sciMode = true;
            } else if (any && (maxAbs / minAbs > 1000 || maxAbs > 1e8 || minAbs < 1e-4)) {
                sciMode = true;
            }
            for (int i = 0; i < values.length; i++) {
                if (shown == null || shown[i]) width = Math.max(width, raw(values[i]).length());
            }
        }

        String raw(double x) {
            if (!dtype.isFloatingPoint()) {
                if (dtype == DType.BOOL) return x != 0 ? "True" : "False";
                return Long.toString((long) x);
            }
            if (Double.isNaN(x)) return "nan";
            if (Double.isInfinite(x)) return x > 0 ? "inf" : "-inf";
            if (sciMode) {
                String s = String.format(Locale.ROOT, "%." + PRECISION + "e", x);
                // Java prints e+01 as e+01 already; PyTorch uses two-digit exponents too.
                return s;
            }
            if (intMode) return String.format(Locale.ROOT, "%.0f", x) + ".";
            return String.format(Locale.ROOT, "%." + PRECISION + "f", x);
        }

        String format(double x) {
            String s = raw(x);
            return s.length() >= width ? s : " ".repeat(width - s.length()) + s;
        }
    }
}
