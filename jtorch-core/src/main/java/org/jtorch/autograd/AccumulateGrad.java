package org.jtorch.autograd;

import java.util.List;
import org.jtorch.Tensor;

/** The sink of a leaf tensor: adds incoming gradients into {@link Tensor#grad()}. One per leaf. */
final class AccumulateGrad extends Node {
    final Tensor variable;

    AccumulateGrad(Tensor variable) {
        super("AccumulateGrad", new Edge[0], 1, g -> new Tensor[0], List.of(), new long[][] {variable.shape()},
                new org.jtorch.types.DType[] {variable.dtype()}, new org.jtorch.types.Device[] {variable.device()});
        this.variable = variable;
    }
}
