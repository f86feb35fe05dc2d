package org.jtorch.backend;

import java.util.function.Supplier;

/**
 * What an op built on the index kernels adds to their errors, for backends that report a bad index later
 * than the call ({@link IndexKernels}): {@code crossEntropy} runs its gather within {@code "crossEntropy: a
 * target is out of bounds (10 classes): "}, so that an error surfacing at {@code loss.item()} still names
 * the loss. A backend that throws from the call needs none of this: the op catches and words it itself.
 */
public final class IndexErrorContext {
    private static final ThreadLocal<String> PREFIX = new ThreadLocal<>();

    private IndexErrorContext() {}

    /** Runs {@code body} with {@code prefix} (nested contexts concatenate) before the index errors reported for it. */
    public static <T> T run(String prefix, Supplier<T> body) {
        String outer = PREFIX.get();
        PREFIX.set(outer == null ? prefix : outer + prefix);
        try {
            return body.get();
        } finally {
            if (outer == null) PREFIX.remove();
            else PREFIX.set(outer);
        }
    }

    /** The calling thread's prefix; empty outside {@link #run}. */
    public static String prefix() {
        String p = PREFIX.get();
        return p == null ? "" : p;
    }
}
