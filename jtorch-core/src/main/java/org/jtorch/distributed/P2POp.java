package org.jtorch.distributed;

import org.jtorch.Tensor;

/**
 * One send or receive of a {@link ProcessGroup#batchIsendIrecv} batch, as PyTorch's {@code P2POp(dist.isend, tensor,
 * peer, tag=...)}.
 *
 * @param isSend true to send {@code tensor} to {@code peer}, false to receive into it from {@code peer}
 * @param tensor what is sent, or where the received values go (dtype and shape as the sender's)
 * @param peer the other rank
 * @param tag matches a send to its receive between the same pair of ranks (the mpi backend; NCCL matches in order)
 */
public record P2POp(boolean isSend, Tensor tensor, int peer, int tag) {
    public P2POp {
        if (tensor == null) throw new NullPointerException("P2POp: tensor is null");
    }

    /** Sends {@code tensor} to rank {@code peer} (tag 0). */
    public static P2POp isend(Tensor tensor, int peer) {
        return new P2POp(true, tensor, peer, 0);
    }

    /** Receives into {@code tensor} from rank {@code peer} (tag 0). */
    public static P2POp irecv(Tensor tensor, int peer) {
        return new P2POp(false, tensor, peer, 0);
    }

    /** E.g. {@code isend to 1}. */
    public String describe() {
        return (isSend ? "isend to " : "irecv from ") + peer;
    }
}
