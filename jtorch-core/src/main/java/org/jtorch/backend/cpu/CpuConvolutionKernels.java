package org.jtorch.backend.cpu;

import org.jtorch.backend.ConvolutionKernels;

/** The CPU's {@link ConvolutionKernels}. */
final class CpuConvolutionKernels implements ConvolutionKernels {}
