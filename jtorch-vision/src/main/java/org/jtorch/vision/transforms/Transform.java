package org.jtorch.vision.transforms;

import java.util.function.UnaryOperator;
import org.jtorch.Tensor;

/**
 * An image (or target) transform, as torchvision's transform objects: a function from tensor to
 * tensor. Transforms do not close their input; the result is a new tensor (or a view of the input)
 * that the caller owns. Implementations are safe to call from several DataLoader workers at once.
 */
@FunctionalInterface
public interface Transform extends UnaryOperator<Tensor> {
    /** The identity. */
    static Transform identity() {
        return Tensor::alias;
    }
}
