package org.jtorch.backend;

/** Gather/scatter-style kernels: index select, gather, scatter, masked ops, concatenation. */
public interface IndexKernels {
}
