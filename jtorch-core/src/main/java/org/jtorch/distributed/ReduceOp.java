package org.jtorch.distributed;

/**
 * How {@link ProcessGroup#allReduce} and {@link ProcessGroup#reduceScatterTensor} combine the ranks' values, as
 * {@code torch.distributed.ReduceOp}. {@code AVG} is the sum divided by the world size and needs a floating-point
 * tensor. On {@code bool} tensors {@code SUM} and {@code MAX} are a logical or, {@code MIN} a logical and (as
 * PyTorch's NCCL backend).
 */
public enum ReduceOp {
    SUM, AVG, MAX, MIN
}
