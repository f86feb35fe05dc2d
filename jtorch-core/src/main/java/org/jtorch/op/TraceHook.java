package org.jtorch.op;

import java.util.List;

/**
 * The dispatcher's trace layer: while a hook is installed on a thread ({@code Dispatcher.trace}), every
 * op that thread runs is reported after it ran, with its inputs and output as the tracer's handles
 * (the JIT records them into its graph). {@code T} is the front end's tensor type. {@code reduce} is a
 * reduction's dimensions, null for other ops.
 */
@FunctionalInterface
public interface TraceHook<T> {
    void record(OpDef op, List<T> inputs, double[] scalars, ReduceArgs reduce, T output);

    /**
     * An op with several outputs ran (a multi-output structured op, or a front end returning several tensors): {@code
     * outputs} in declared order, null where the op skipped one nobody asked for. A hook that ignores the others sees
     * them as made by an op it does not see.
     */
    default void recordAll(OpDef op, List<T> inputs, double[] scalars, List<T> outputs) {
        record(op, inputs, scalars, null, outputs.get(0));
    }

    /**
     * Every tensor the thread creates while the hook is installed, whether an op the hook sees made it or not: a
     * tensor used later that no recorded op made was made by an op the trace does not see.
     */
    default void created(T tensor) {}

    /** A read of {@code tensor}'s values on the host ({@code item}, {@code toFloatArray}, ...): data the trace cannot replay. */
    default void hostRead(T tensor, String what) {}

    /**
     * {@code tensor}'s memory was just written in place. A pointwise op that did it reports itself next
     * ({@link #recordInPlace}); any other event first means an op the trace does not see changed it.
     */
    default void mutated(T tensor) {}

    /** A pointwise or structured op ran in place: it wrote its result into {@code inputs.get(0)}. */
    default void recordInPlace(OpDef op, List<T> inputs, double[] scalars) {}
}
