package org.jtorch.jit;

import org.jtorch.Tensor;

/** A function of tensors to one tensor: what {@link Jit#trace} traces, and what it returns. */
@FunctionalInterface
public interface TensorFunction {
    Tensor apply(Tensor... inputs);
}
