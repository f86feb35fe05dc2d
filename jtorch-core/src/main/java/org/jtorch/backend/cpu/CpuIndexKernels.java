package org.jtorch.backend.cpu;

import org.jtorch.backend.IndexKernels;

/** CPU implementation of {@link IndexKernels}. */
final class CpuIndexKernels implements IndexKernels {
}
