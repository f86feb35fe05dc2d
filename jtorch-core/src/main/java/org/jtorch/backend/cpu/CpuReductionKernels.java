package org.jtorch.backend.cpu;

import org.jtorch.backend.ReductionKernels;

/** CPU implementation of {@link ReductionKernels}. */
final class CpuReductionKernels implements ReductionKernels {
}
