package org.jtorch.autograd;

import org.jtorch.Tensor;

/**
 * An op's backward formula: given the gradients of its outputs (null for an output that received
 * none, already replaced by zeros when the op asked for it), returns the gradient of each input, or
 * null where an input needs none. Runs with grad mode off unless a higher-order graph is requested.
 * Returned tensors are owned by the engine; returning an incoming gradient object itself is allowed.
 */
@FunctionalInterface
public interface BackwardFunction {
    Tensor[] apply(Tensor[] gradOutputs);
}
