package org.jtorch.op;

/**
 * A callback argument of an op (a {@code Callback? name=None} parameter of its signature, {@link Param#callback}): code
 * the caller hands through the dispatcher to the kernel, which calls it with the view of the output it is about to write
 * and runs what it returns on each block of that output as it finishes it (a backend's epilogue,
 * {@code LinalgKernels.Epilogue} or {@code ConvolutionKernels.Epilogue}: {@code E}). The JIT makes these for its fused
 * GEMM and convolution epilogues. An op taking one ({@link OpDef#takesCallback}) is JIT-internal: autocast leaves it
 * alone, the trace never records it (a closure cannot be replayed from a trace, so a trace that meets one sees its
 * output as made by an op it does not see and runs the function eagerly), and its autograd is the op's as declared, of
 * the output as the kernel wrote it before the callback's work.
 */
@FunctionalInterface
public interface Callback<E> {
    /** The work to run on each finished block of {@code out}, the view of the output as the op's kernel sees it. */
    E at(StridedView out);

    /**
     * {@code callback}'s work for {@code out}, of the type {@code type} the kernel of {@code op} runs; null for a null
     * callback (the op without it); an error naming the op and both types for a callback whose work is of another type.
     */
    static <E> E work(String op, Callback<?> callback, StridedView out, Class<E> type) {
        if (callback == null) return null;
        Object work = callback.at(out);
        if (work == null || type.isInstance(work)) return type.cast(work);
        throw new IllegalArgumentException(op + ": expected a callback returning " + type.getName() + ", got one returning "
                + work.getClass().getName());
    }
}
