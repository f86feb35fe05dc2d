package org.jtorch.op;

import org.jtorch.DType;

/**
 * A structured op's meta function ({@link OpDef.Kind#STRUCTURED}): checks the inputs and says the result's shape and
 * dtype from the inputs' shapes, dtypes and devices, without reading their memory. Errors name the op, the shapes,
 * dtypes and devices involved. The result lives on the inputs' device (the meta function checks that they share one).
 */
@FunctionalInterface
public interface Meta {
    /** The result of a call with tensor inputs {@code inputs} (null where an optional one is left out) and {@code scalars}. */
    Output infer(StridedView[] inputs, double[] scalars);

    /** The result's shape and dtype. */
    record Output(long[] shape, DType dtype) {}

    /**
     * A multi-output op's meta function ({@link OpDef#outputCount} above 1): one {@link Output} per declared output, in
     * order, all on the inputs' device.
     */
    @FunctionalInterface
    interface Multi {
        Output[] infer(StridedView[] inputs, double[] scalars);
    }
}
