package org.jtorch.nn;

/** PyTorch's {@code extra_repr} spelling of sizes given as one int ({@code 3}) or a tuple ({@code (3, 3)}). */
final class SpatialRepr {
    private SpatialRepr() {}

    static String of(int[] v) {
        if (v.length == 1) return String.valueOf(v[0]);
        StringBuilder b = new StringBuilder("(");
        for (int i = 0; i < v.length; i++) b.append(i == 0 ? "" : ", ").append(v[i]);
        return b.append(v.length == 1 ? ",)" : ")").toString();
    }

    static String of(long[] v) {
        StringBuilder b = new StringBuilder(v.length == 1 ? "" : "(");
        for (int i = 0; i < v.length; i++) b.append(i == 0 ? "" : ", ").append(v[i] < 0 ? "None" : String.valueOf(v[i]));
        return b.append(v.length == 1 ? "" : ")").toString();
    }

    static String bool(boolean b) {
        return b ? "True" : "False";
    }
}
