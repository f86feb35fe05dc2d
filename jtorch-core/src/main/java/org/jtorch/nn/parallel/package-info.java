/**
 * Modules that run a model across processes, as {@code torch.nn.parallel}:
 * {@link org.jtorch.nn.parallel.DistributedDataParallel} averages gradients across the ranks of an
 * {@link org.jtorch.distributed.ProcessGroup} while backward runs. The process groups, collectives, launcher and
 * sampler are {@code org.jtorch.distributed}'s (as {@code torch.distributed}), which names nothing of {@code nn}.
 */
package org.jtorch.nn.parallel;
