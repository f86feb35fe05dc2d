package org.jtorch.backend.cpu;

import org.jtorch.backend.NormalizationKernels;

/** The CPU's {@link NormalizationKernels}. */
final class CpuNormalizationKernels implements NormalizationKernels {}
