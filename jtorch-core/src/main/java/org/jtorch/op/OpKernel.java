package org.jtorch.op;

/**
 * A structured op's kernel on one device type ({@link OpDef.Kind#STRUCTURED}), registered in {@link KernelRegistry}:
 * writes the result into {@code out} (allocated by the dispatcher from the op's {@link Meta}) from the tensor inputs
 * (null where an optional one is left out) and the call's scalars. Sees only views: it cannot call back into the
 * front end.
 */
@FunctionalInterface
public interface OpKernel {
    void run(StridedView out, StridedView[] inputs, double[] scalars);

    /**
     * The kernel of an op taking a callback ({@link OpDef#takesCallback}): {@link #run} with the call's callback (null where
     * none is given: the op without it), whose work ({@link Callback#work}) it runs on each block of {@code out} it finishes.
     */
    @FunctionalInterface
    interface WithCallback {
        void run(StridedView out, StridedView[] inputs, double[] scalars, Callback<?> callback);
    }

    /** A multi-output op's kernel: writes every output ({@code outs}, in the op's declared order, allocated from its meta function). */
    @FunctionalInterface
    interface Multi {
        void run(StridedView[] outs, StridedView[] inputs, double[] scalars);
    }

    /**
     * The argument forms a kernel takes (dtypes, ranks, shapes, scalars), registered beside it for an op with a
     * decomposition ({@link OpDef#hasDecomposition}): the dispatcher runs the decomposition for the others.
     */
    @FunctionalInterface
    interface Applies {
        boolean test(StridedView[] inputs, double[] scalars);
    }

    /**
     * A mutating op's kernel ({@link OpDef.Kind#MUTATING}): updates in place the views of the op's mutable lists and
     * tensors. {@code lists} holds one array per list parameter, {@code tensors} one view per tensor parameter (null where
     * an optional one is left out), both in signature order, already checked by the op's {@link OpDef#check}.
     */
    @FunctionalInterface
    interface Mutating {
        void run(StridedView[][] lists, StridedView[] tensors, double[] scalars);
    }
}
