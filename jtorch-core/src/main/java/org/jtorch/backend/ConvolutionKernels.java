package org.jtorch.backend;

/** Convolution kernels (conv1d/2d, transposed convolution, im2col/col2im): forward and the two backwards. */
public interface ConvolutionKernels {}
