package org.jtorch.backend.cpu;

import org.jtorch.backend.LinalgKernels;

/** CPU implementation of {@link LinalgKernels}. */
final class CpuLinalgKernels implements LinalgKernels {
}
