/**
 * Data-parallel training across processes, as {@code torch.distributed}: a {@link org.jtorch.distributed.ProcessGroup}
 * of ranks running collectives ({@link org.jtorch.distributed.MpiProcessGroup}: CPU tensors over Open MPI, bound
 * through FFM; jtorch-cuda's {@code NcclProcessGroup}: CUDA tensors over NCCL, found through a
 * {@link org.jtorch.distributed.ProcessGroupProvider}), started by {@link org.jtorch.distributed.Distributed#initProcessGroup} from the launcher's
 * {@link org.jtorch.distributed.LaunchEnvironment}; {@link org.jtorch.nn.parallel.DistributedDataParallel}, which
 * averages gradients across ranks while backward runs ({@link org.jtorch.nn.SyncBatchNorm} for batch statistics over
 * every rank); {@link org.jtorch.distributed.DistributedSampler}, each
 * rank's share of a dataset with PyTorch's indices; a rendezvous {@link org.jtorch.distributed.TcpStore}; and
 * {@link org.jtorch.distributed.LearningRateScaling} for the larger global batch.
 *
 * <p>Failure model: a collective whose ranks disagree (call, dtype, shape) fails on every rank with a message naming
 * each rank's call and the group stays usable; any other failure, or a wait past the timeout, leaves the group
 * unusable and the process should exit, after which {@code jtorch launch} (or {@code mpirun}) stops the other ranks
 * and names the one that failed.
 */
package org.jtorch.distributed;
