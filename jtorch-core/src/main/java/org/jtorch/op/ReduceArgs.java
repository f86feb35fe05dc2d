package org.jtorch.op;

import java.util.Arrays;

/**
 * The dimensions of one reduction call: {@code dims} as the caller gave them (empty for all), and
 * {@code keepdim}. Reported with the call to the trace layer.
 */
public record ReduceArgs(int[] dims, boolean keepdim) {
    public ReduceArgs {
        dims = dims == null ? new int[0] : dims.clone();
    }

    @Override
    public int[] dims() {
        return dims.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReduceArgs r && r.keepdim == keepdim && Arrays.equals(r.dims, dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims) * 31 + Boolean.hashCode(keepdim);
    }

    @Override
    public String toString() {
        return "dim=" + Arrays.toString(dims) + ", keepdim=" + keepdim;
    }
}
