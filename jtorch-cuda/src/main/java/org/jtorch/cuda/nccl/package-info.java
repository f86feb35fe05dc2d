/**
 * NCCL for jtorch: FFM bindings to {@code libnccl.so.2} ({@link org.jtorch.cuda.nccl.Nccl}) and the {@code nccl}
 * process-group backend for CUDA tensors ({@link org.jtorch.cuda.nccl.NcclProcessGroup}), selected by
 * {@code Distributed.initProcessGroup("nccl")}.
 */
package org.jtorch.cuda.nccl;
