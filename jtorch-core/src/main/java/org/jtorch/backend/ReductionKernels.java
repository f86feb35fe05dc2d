package org.jtorch.backend;

/** Reductions over dimensions (sum, mean, max with indices, var, cumulative ops, softmax). */
public interface ReductionKernels {
}
