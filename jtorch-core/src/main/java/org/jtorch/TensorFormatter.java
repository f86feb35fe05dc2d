package org.jtorch;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;

/**
 * Prints tensors as PyTorch's {@code repr} does (torch/_tensor_str.py, default print options):
 * {@code tensor([[1., 2.], [3., 4.]])} with a common element width, integer, fixed or scientific
 * notation chosen from the nonzero finite values (precision 4), summaries with {@code ...} beyond 1000
 * elements, rows wrapped at 80 columns, and the dtype named when it is not the default for its kind.
 * Numbers are rounded from their exact binary value, half to even, as Python's {@code format}.
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
        if (t.numel() == 0) {
            sb.append("[]");
        } else {
            sb.append(formatDim(values, shape, Shapes.contiguousStrides(shape), 0, 0, fmt, prefix.length(), summarize));
        }
        String suffix = suffix(t);
        if (!suffix.isEmpty()) sb.append(", ").append(suffix);
        return sb.append(')').toString();
    }

    private static String suffix(Tensor t) {
        List<String> s = new ArrayList<>();
        if (t.numel() == 0 && t.dim() != 1) s.add("size=" + pythonTuple(t.shape()));
        DType d = t.dtype();
        boolean defaultType = d == Torch.defaultDtype() || d == DType.INT64 || d == DType.BOOL;
        if (!defaultType || t.numel() == 0 && d != Torch.defaultDtype()) s.add("dtype=" + d);
        if (!t.device().isCpu()) s.add("device='" + t.device() + "'");
        return String.join(", ", s);
    }

    private static String pythonTuple(long[] shape) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) sb.append(", ");
            sb.append(shape[i]);
        }
        return sb.append(shape.length == 1 ? ",)" : ")").toString();
    }

    /** {@code _tensor_str_with_formatter}: {@code indent} is the column of this dimension's opening bracket. */
    private static String formatDim(double[] v, long[] shape, long[] strides, int dim, long base, ElementFormat fmt,
                                    int indent, boolean summarize) {
        if (dim == shape.length) return fmt.format(v[(int) base]);
        long n = shape[dim];
        boolean cut = summarize && n > 2 * EDGE_ITEMS;
        List<String> items = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            if (cut && i == EDGE_ITEMS) {
                items.add(dim == shape.length - 1 ? " ..." : "...");
                i = n - EDGE_ITEMS - 1;
                continue;
            }
            items.add(formatDim(v, shape, strides, dim + 1, base + i * strides[dim], fmt, indent + 1, summarize));
        }
        if (dim == shape.length - 1) {
            // _vector_str: as many elements per line as fit, the summary marker counting as one.
            int perLine = Math.max(1, (LINE_WIDTH - indent) / (fmt.width + 2));
            List<String> lines = new ArrayList<>();
            for (int i = 0; i < items.size(); i += perLine) {
                lines.add(String.join(", ", items.subList(i, Math.min(items.size(), i + perLine))));
            }
            return "[" + String.join(",\n" + " ".repeat(indent + 1), lines) + "]";
        }
        String sep = "," + "\n".repeat(shape.length - dim - 1) + " ".repeat(indent + 1);
        return "[" + String.join(sep, items) + "]";
    }

    /** Indices of the elements a summarised print shows (to size the format from them only). */
    private static boolean[] summaryIndices(long[] shape) {
        long n = Shapes.numel(shape);
        boolean[] shown = new boolean[(int) n];
        long[] strides = Shapes.contiguousStrides(shape);
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

    /**
     * PyTorch's {@code _Formatter}: for floats, the mode and width come from the nonzero finite values
     * only (so nan, inf and zeros neither widen nor switch notation); integer-valued floats print as
     * {@code 1.} unless their range calls for scientific notation.
     */
    private static final class ElementFormat {
        final DType dtype;
        boolean intMode = true;
        boolean sciMode;
        int width = 1;

        ElementFormat(DType dtype, double[] values, boolean[] shown) {
            this.dtype = dtype;
            if (!dtype.isFloatingPoint()) {
                for (int i = 0; i < values.length; i++) {
                    if (shown == null || shown[i]) width = Math.max(width, raw(values[i]).length());
                }
                return;
            }
            double maxAbs = 0;
            double minAbs = Double.POSITIVE_INFINITY;
            boolean any = false;
            for (int i = 0; i < values.length; i++) {
                double x = values[i];
                if ((shown != null && !shown[i]) || !Double.isFinite(x) || x == 0) continue;
                any = true;
                if (x != Math.ceil(x)) intMode = false;
                maxAbs = Math.max(maxAbs, Math.abs(x));
                minAbs = Math.min(minAbs, Math.abs(x));
            }
            if (!any) return;
            sciMode = maxAbs / minAbs > 1000 || maxAbs > 1e8 || (!intMode && minAbs < 1e-4);
            for (int i = 0; i < values.length; i++) {
                double x = values[i];
                if ((shown != null && !shown[i]) || !Double.isFinite(x) || x == 0) continue;
                width = Math.max(width, raw(x).length());
            }
        }

        String raw(double x) {
            if (!dtype.isFloatingPoint()) {
                if (dtype == DType.BOOL) return x != 0 ? "True" : "False";
                return Long.toString((long) x);
            }
            if (Double.isNaN(x)) return "nan";
            if (Double.isInfinite(x)) return x > 0 ? "inf" : "-inf";
            if (sciMode) return scientific(x);
            if (intMode) return fixed(x, 0) + ".";
            return fixed(x, PRECISION);
        }

        String format(double x) {
            String s = raw(x);
            return s.length() >= width ? s : " ".repeat(width - s.length()) + s;
        }
    }

    /** Python's {@code '{:.Nf}'}: the exact value rounded half to even; the sign of -0.0 and of negatives rounding to 0 kept. */
    static String fixed(double x, int digits) {
        String s = new BigDecimal(Math.abs(x)).setScale(digits, RoundingMode.HALF_EVEN).toPlainString();
        return (Double.doubleToRawLongBits(x) < 0 ? "-" : "") + s;
    }

    /** Python's {@code '{:.4e}'}: {@code 1.2346e-05}, at least two exponent digits. */
    static String scientific(double x) {
        String sign = Double.doubleToRawLongBits(x) < 0 ? "-" : "";
        BigDecimal a = new BigDecimal(Math.abs(x));
        int exponent = 0;
        if (a.signum() != 0) {
            a = a.round(new MathContext(PRECISION + 1, RoundingMode.HALF_EVEN));
            exponent = a.precision() - a.scale() - 1;
            a = a.movePointLeft(exponent);
        }
        String mantissa = a.setScale(PRECISION, RoundingMode.HALF_EVEN).toPlainString();
        int e = Math.abs(exponent);
        return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + (e < 10 ? "0" : "") + e;
    }
}
