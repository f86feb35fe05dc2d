package org.jtorch.backend;

/** Normalisation kernels (batch, group, instance norm): statistics, forward and backward. */
public interface NormalizationKernels {}
