package org.jtorch.backend;

/** Spatial kernels over NC(D)HW images: pooling, padding, interpolation, pixel shuffle. */
public interface SpatialKernels {}
