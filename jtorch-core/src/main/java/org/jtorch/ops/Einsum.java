package org.jtorch.ops;

import org.jtorch.op.Shapes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.op.FrontEndOps;
import org.jtorch.Tensor;
import org.jtorch.Torch;

/**
 * {@code torch.einsum} for explicit labels ({@code "bij,bjk->bik"}, {@code "ii->i"}, {@code "ij->"}, implicit
 * output when {@code ->} is absent). Every contraction is reduced to permutes, views and one batched
 * GEMM per pair of operands (left to right); labels summed away from a single operand are contracted
 * with a vector of ones. Ellipsis ({@code ...}) is not supported yet and is rejected with a clear error.
 */
public final class Einsum {
    private Einsum() {}

    public static Tensor einsum(String equation, Tensor... operands) {
        if (Dispatcher.wrapsFrontEnds()) return Dispatcher.frontEnd(FrontEndOps.EINSUM, operands, null, t -> contract(equation, t));
        return contract(equation, operands);
    }

    private static Tensor contract(String equation, Tensor... operands) {
        String eq = equation.replace(" ", "");
        if (eq.contains(".")) {
            throw new IllegalArgumentException("einsum: ellipsis ('...') is not supported yet in '" + equation + "'");
        }
        String lhs = eq.contains("->") ? eq.substring(0, eq.indexOf("->")) : eq;
        String[] terms = lhs.split(",", -1);
        if (terms.length != operands.length) {
            throw new IllegalArgumentException("einsum: the equation '" + equation + "' names " + terms.length
                    + " operands but " + operands.length + " were given");
        }
        String out = eq.contains("->") ? eq.substring(eq.indexOf("->") + 2) : implicitOutput(terms);
        for (char ch : out.toCharArray()) {
            if (!Character.isLetter(ch)) throw new IllegalArgumentException("einsum: invalid label '" + ch + "' in '" + equation + "'");
            if (!lhs.contains(String.valueOf(ch))) {
                throw new IllegalArgumentException("einsum: output label '" + ch + "' does not appear in any operand of '" + equation + "'");
            }
            if (out.indexOf(ch) != out.lastIndexOf(ch)) {
                throw new IllegalArgumentException("einsum: output label '" + ch + "' appears more than once in '" + equation + "'");
            }
        }
        List<Term> work = new ArrayList<>();
        for (int i = 0; i < terms.length; i++) {
            if (terms[i].length() != operands[i].dim()) {
                throw new IllegalArgumentException("einsum: operand " + i + " has " + operands[i].dim() + " dimensions (shape "
                        + Shapes.format(operands[i].shape()) + ") but its subscript '" + terms[i] + "' names " + terms[i].length());
            }
            work.add(diagonal(new Term(terms[i], operands[i].alias())));
        }
        try {
            // Sum away labels that only one operand has and the output lacks.
            for (int i = 0; i < work.size(); i++) work.set(i, sumPrivateLabels(work, i, out));
            Term acc = work.get(0);
            for (int i = 1; i < work.size(); i++) {
                String needed = out + labelsOf(work.subList(i + 1, work.size()));
                Term next = contract(acc, work.get(i), needed);
                acc.tensor.close();
                work.get(i).tensor.close();
                acc = next;
                work.set(i, new Term("", null));
            }
            Term result = sumPrivateLabels(List.of(acc), 0, out);
            return permuteTo(result, out);
        } finally {
            for (Term t : work) if (t.tensor != null) t.tensor.close();
        }
    }

    private record Term(String labels, Tensor tensor) {}

    private static String implicitOutput(String[] terms) {
        StringBuilder all = new StringBuilder();
        for (String t : terms) all.append(t);
        StringBuilder out = new StringBuilder();
        all.chars().sorted().distinct().forEach(c -> {
            if (all.indexOf(String.valueOf((char) c)) == all.lastIndexOf(String.valueOf((char) c))) out.append((char) c);
        });
        return out.toString();
    }

    private static String labelsOf(List<Term> terms) {
        StringBuilder sb = new StringBuilder();
        for (Term t : terms) sb.append(t.labels);
        return sb.toString();
    }

    /** Repeated labels in one operand select its diagonal: a strided view, no copy. */
    private static Term diagonal(Term t) {
        String labels = t.labels;
        Tensor x = t.tensor;
        for (int i = 0; i < labels.length(); i++) {
            int j = labels.indexOf(labels.charAt(i), i + 1);
            if (j < 0) continue;
            long[] shape = x.shape();
            long[] strides = x.strides();
            if (shape[i] != shape[j]) {
                throw new IllegalArgumentException("einsum: label '" + labels.charAt(i) + "' has sizes " + shape[i] + " and "
                        + shape[j] + " in one operand");
            }
            strides[i] += strides[j];
            long[] s2 = remove(shape, j);
            long[] st2 = remove(strides, j);
            Tensor d = x.asStrided(s2, st2, x.storageOffset());
            x.close();
            x = d;
            labels = labels.substring(0, j) + labels.substring(j + 1);
            i--;
        }
        return new Term(labels, x);
    }

    private static Term sumPrivateLabels(List<Term> terms, int index, String out) {
        Term t = terms.get(index);
        StringBuilder keep = new StringBuilder();
        StringBuilder drop = new StringBuilder();
        for (char ch : t.labels.toCharArray()) {
            boolean elsewhere = out.indexOf(ch) >= 0;
            for (int k = 0; k < terms.size() && !elsewhere; k++) {
                if (k != index && terms.get(k).labels.indexOf(ch) >= 0) elsewhere = true;
            }
            (elsewhere ? keep : drop).append(ch);
        }
        if (drop.isEmpty()) return t;
        Tensor x = t.tensor;
        long[] keepShape = sizes(t, keep.toString());
        long dropSize = Shapes.numel(sizes(t, drop.toString()));
        try (Tensor p = x.permute(order(t.labels, keep.toString() + drop)); Tensor flat = p.reshape(Shapes.numel(keepShape), dropSize);
             Tensor ones = Torch.ones(new long[] {dropSize}, x.dtype(), x.device()); Tensor summed = Linalg.mv(flat, ones)) {
            x.close();
            return new Term(keep.toString(), summed.reshape(keepShape));
        }
    }

    /** Contracts two operands, keeping the labels in {@code needed}, with one batched GEMM. */
    private static Term contract(Term a, Term b, String needed) {
        StringBuilder batch = new StringBuilder();
        StringBuilder left = new StringBuilder();
        StringBuilder right = new StringBuilder();
        StringBuilder inner = new StringBuilder();
        for (char ch : a.labels.toCharArray()) {
            boolean inB = b.labels.indexOf(ch) >= 0;
            boolean keep = needed.indexOf(ch) >= 0;
            if (inB && keep) batch.append(ch);
            else if (inB) inner.append(ch);
            else left.append(ch);
        }
        for (char ch : b.labels.toCharArray()) if (a.labels.indexOf(ch) < 0) right.append(ch);
        for (char ch : (batch.toString() + inner).toCharArray()) {
            long sa = a.tensor.size(a.labels.indexOf(ch));
            long sb = b.tensor.size(b.labels.indexOf(ch));
            if (sa != sb) {
                throw new IllegalArgumentException("einsum: label '" + ch + "' has size " + sa + " in one operand and " + sb
                        + " in another");
            }
        }
        long nb = Shapes.numel(sizes(a, batch.toString()));
        long nl = Shapes.numel(sizes(a, left.toString()));
        long nk = Shapes.numel(sizes(a, inner.toString()));
        long nr = Shapes.numel(sizes(b, right.toString()));
        long[] outShape = concat(sizes(a, batch.toString()), concat(sizes(a, left.toString()), sizes(b, right.toString())));
        try (Tensor ap = a.tensor.permute(order(a.labels, batch.toString() + left + inner));
             Tensor bp = b.tensor.permute(order(b.labels, batch.toString() + inner + right));
             Tensor a3 = ap.reshape(nb, nl, nk); Tensor b3 = bp.reshape(nb, nk, nr); Tensor r = Linalg.bmm(a3, b3)) {
            return new Term(batch.toString() + left + right, r.reshape(outShape));
        }
    }

    private static Tensor permuteTo(Term t, String out) {
        try (Tensor x = t.tensor) {
            if (t.labels.equals(out)) return x.alias();
            try (Tensor p = x.permute(order(t.labels, out))) {
                return p.contiguous();
            }
        }
    }

    private static int[] order(String labels, String target) {
        int[] p = new int[target.length()];
        for (int i = 0; i < p.length; i++) p[i] = labels.indexOf(target.charAt(i));
        return p;
    }

    private static long[] sizes(Term t, String labels) {
        long[] s = new long[labels.length()];
        for (int i = 0; i < s.length; i++) s[i] = t.tensor.size(t.labels.indexOf(labels.charAt(i)));
        return s;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static long[] remove(long[] a, int i) {
        long[] r = new long[a.length - 1];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }
}
