package org.jtorch.op;

import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * A structured op's meta function ({@link OpDef.Kind#STRUCTURED}): checks the inputs and says the result's shape and
 * dtype from the inputs' shapes, dtypes and devices, without reading their memory. Errors name the op, the shapes,
 * dtypes and devices involved. The result lives on the inputs' device (the meta function checks that they share one).
 */
@FunctionalInterface
public interface Meta {
    /** The result of a call with tensor inputs {@code inputs} (null where an optional one is left out) and {@code scalars}. */
    Output infer(StridedView[] inputs, double[] scalars);

    /**
     * The result's shape and dtype, and where not null the order in which its dimensions lie in memory, outermost first
     * (a permutation of the dimensions; null: contiguous). ATen's meta functions give strides: the CPU flash attention's
     * output follows the query's layout, so that merging the heads of a transposed projection back is a view.
     * {@code device}: where the result lives, when it is not the inputs' device (only an op declared {@link
     * OpDef#acrossDevices} gives one); null otherwise.
     */
    record Output(long[] shape, DType dtype, int[] memoryOrder, Device device) {
        public Output(long[] shape, DType dtype) {
            this(shape, dtype, null, null);
        }

        public Output(long[] shape, DType dtype, int[] memoryOrder) {
            this(shape, dtype, memoryOrder, null);
        }
    }

    /**
     * A multi-output op's meta function ({@link OpDef#outputCount} above 1): one {@link Output} per declared output, in
     * order, all on the inputs' device.
     */
    @FunctionalInterface
    interface Multi {
        Output[] infer(StridedView[] inputs, double[] scalars);
    }
}
