package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.OpDef;

/**
 * Calls of the ops declared with hand-written front ends ({@link FrontEndOps}) from a generic call: the op, its
 * tensors and its integer arguments as doubles, in signature order (what the trace records). The JIT replays
 * such ops through here.
 */
public final class FrontEnds {
    private FrontEnds() {}

    static Tensor call(OpDef op, Tensor[] in, double[] args) {
        if (op == FrontEndOps.VIEW) return in[0].view(longs(args));
        if (op == FrontEndOps.RESHAPE) return in[0].reshape(longs(args));
        if (op == FrontEndOps.PERMUTE) return in[0].permute(ints(args));
        if (op == FrontEndOps.TRANSPOSE) return in[0].transpose((int) args[0], (int) args[1]);
        if (op == FrontEndOps.SQUEEZE) return in[0].squeeze();
        if (op == FrontEndOps.SQUEEZE_DIM) return in[0].squeeze((int) args[0]);
        if (op == FrontEndOps.UNSQUEEZE) return in[0].unsqueeze((int) args[0]);
        if (op == FrontEndOps.EXPAND) return in[0].expand(longs(args));
        if (op == FrontEndOps.CONTIGUOUS) return in[0].contiguous();
        if (op == FrontEndOps.MATMUL) return Linalg.matmul(in[0], in[1]);
        if (op == FrontEndOps.LINEAR) return Linalg.linear(in[0], in[1], in.length > 2 ? in[2] : null);
        throw new IllegalStateException(op.name() + " has no front end to call");
    }

    private static long[] longs(double[] args) {
        long[] v = new long[args.length];
        for (int i = 0; i < v.length; i++) v[i] = (long) args[i];
        return v;
    }

    private static int[] ints(double[] args) {
        int[] v = new int[args.length];
        for (int i = 0; i < v.length; i++) v[i] = (int) args[i];
        return v;
    }

    /** A list of integer arguments as the trace records them. */
    public static double[] args(long[] values) {
        double[] d = new double[values.length];
        for (int i = 0; i < d.length; i++) d[i] = values[i];
        return d;
    }

    public static double[] args(int... values) {
        double[] d = new double[values.length];
        for (int i = 0; i < d.length; i++) d[i] = values[i];
        return d;
    }
}
