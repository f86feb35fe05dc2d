package org.jtorch.backend.cpu;

import org.jtorch.backend.SpatialKernels;

/** The CPU's {@link SpatialKernels}. */
final class CpuSpatialKernels implements SpatialKernels {}
