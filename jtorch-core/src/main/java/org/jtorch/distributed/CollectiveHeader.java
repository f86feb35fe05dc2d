package org.jtorch.distributed;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.types.DType;

/**
 * What a rank says about an operation before any data moves, so that ranks that disagree fail with a message
 * naming the collective and every rank's dtype and shape instead of corrupting memory or hanging. Backends exchange
 * the {@link #LONGS} longs of {@link #of} (an all-gather for collectives, a message ahead of the data for send/recv)
 * and compare them with {@link #disagreement}.
 */
public final class CollectiveHeader {
    /** A header's length in longs: {call, dtype, op or root or tag, ndim, numel, dims[0..9], hash of the whole shape}. */
    public static final int LONGS = 16;
    private static final int DIMS = 10;

    /** The operations, in the order their ordinals are encoded. */
    public enum Call {
        ALL_REDUCE("allReduce"), BROADCAST("broadcast"), ALL_GATHER("allGather"), REDUCE_SCATTER("reduceScatter"),
        BARRIER("barrier"), SEND("send"), RECV("recv"), BATCH_P2P("batchIsendIrecv");

        private final String pyName;

        Call(String pyName) {
            this.pyName = pyName;
        }

        /** The collective's name in messages. */
        public String displayName() {
            return pyName;
        }
    }

    private CollectiveHeader() {}

    /** The header of {@code call} on {@code t} (null for a barrier); a recv is encoded as the send it must match. */
    public static long[] of(Call call, Tensor t, long param) {
        long[] h = new long[LONGS];
        h[0] = call == Call.RECV ? Call.SEND.ordinal() : call.ordinal();
        h[1] = t == null ? -1 : t.dtype().ordinal();
        h[2] = param;
        if (t != null) {
            long[] shape = t.shape();
            h[3] = shape.length;
            h[4] = t.numel();
            for (int d = 0; d < Math.min(DIMS, shape.length); d++) h[5 + d] = shape[d];
            h[LONGS - 1] = Arrays.hashCode(shape);
        }
        return h;
    }

    /** E.g. {@code allReduce(SUM) float32 [4, 3]}. */
    public static String describe(long[] h) {
        Call call = Call.values()[(int) h[0]];
        StringBuilder sb = new StringBuilder(call.pyName);
        switch (call) {
            case ALL_REDUCE, REDUCE_SCATTER -> sb.append('(').append(ReduceOp.values()[(int) h[2]]).append(')');
            case BROADCAST -> sb.append("(src=").append(h[2]).append(')');
            case SEND, RECV -> sb.append("(tag=").append(h[2]).append(')');
            default -> { }
        }
        if (h[1] < 0) return sb.toString();
        sb.append(' ').append(DType.values()[(int) h[1]].pyName()).append(" [");
        int ndim = (int) h[3];
        for (int d = 0; d < ndim; d++) {
            if (d > 0) sb.append(", ");
            if (d == DIMS) {
                sb.append("... (").append(h[4]).append(" elements)");
                break;
            }
            sb.append(h[5 + d]);
        }
        return sb.append(']').toString();
    }

    /** The element count a header announces (what a receiver must drain when the headers differ). */
    public static long numel(long[] h) {
        return h[4];
    }

    /** The dtype a header announces. */
    public static DType dtype(long[] h) {
        return DType.values()[(int) h[1]];
    }

    /**
     * Null when the {@code size} headers in {@code all} (rank r's at {@code r * LONGS}) agree, else the message naming
     * the collective, {@code where} it was issued, and each rank's header.
     */
    public static String disagreement(Call call, String where, long[] all, int size) {
        boolean same = true;
        for (int r = 1; r < size && same; r++) same = Arrays.equals(all, 0, LONGS, all, r * LONGS, (r + 1) * LONGS);
        if (same) return null;
        StringBuilder sb = new StringBuilder(call.pyName).append(": the ranks disagree (").append(where).append(')');
        for (int r = 0; r < size; r++) {
            sb.append(r == 0 ? ": " : "; ").append("rank ").append(r).append(' ').append(describe(Arrays.copyOfRange(all, r * LONGS, (r + 1) * LONGS)));
        }
        return sb.toString();
    }
}
