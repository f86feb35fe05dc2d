package org.jtorch.op;

import org.jtorch.types.DType;

/**
 * A backend's kernel for one pointwise op: {@code out = op(inputs)} elementwise, every view already of
 * {@code out}'s shape (inputs broadcast with zero strides) and on the backend's device {@code deviceIndex};
 * {@code compute} is the dtype the op evaluates in (inputs convert to it on load, the result to
 * {@code out}'s dtype on store). {@code p0, p1} are the op's scalar parameters (a binary op's alpha is p0).
 */
@FunctionalInterface
public interface PointwiseKernel {
    void run(int deviceIndex, DType compute, StridedView out, StridedView a, StridedView b, double p0, double p1);
}
