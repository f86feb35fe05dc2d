package org.jtorch.autograd;

/**
 * Thread-scoped gradient modes, as {@code torch.no_grad}, {@code torch.enable_grad} and
 * {@code torch.inference_mode}:
 *
 * <pre>{@code
 * try (var g = Grad.noGrad()) {
 *     y = model.forward(x);   // records no graph
 * }
 * }</pre>
 *
 * Scopes nest and restore the previous mode on close; they must be closed on the thread that opened them.
 */
public final class Grad {
    private static final ThreadLocal<boolean[]> ENABLED = ThreadLocal.withInitial(() -> new boolean[] {true});
    private static final ThreadLocal<boolean[]> INFERENCE = ThreadLocal.withInitial(() -> new boolean[] {false});

    private Grad() {}

    /** A restorable mode change. */
    public static final class Mode implements AutoCloseable {
        private final boolean previousEnabled;
        private final boolean previousInference;
        private boolean closed;

        private Mode(boolean enabled, boolean inference) {
            boolean[] e = ENABLED.get();
            boolean[] i = INFERENCE.get();
            previousEnabled = e[0];
            previousInference = i[0];
            e[0] = enabled;
            i[0] = inference;
        }

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            ENABLED.get()[0] = previousEnabled;
            INFERENCE.get()[0] = previousInference;
        }
    }

    /** Disables graph recording until closed. */
    public static Mode noGrad() {
        return new Mode(false, INFERENCE.get()[0]);
    }

    /** Enables graph recording until closed (inside a no-grad scope, for example). */
    public static Mode enableGrad() {
        return new Mode(true, false);
    }

    /**
     * Like {@link #noGrad()}; tensors made inside are inference tensors: they can never require grad,
     * and an op that would save one for backward fails with a clear error instead of recording.
     */
    public static Mode inferenceMode() {
        return new Mode(false, true);
    }

    /** Whether ops on this thread record the graph now. */
    public static boolean isEnabled() {
        return ENABLED.get()[0];
    }

    public static boolean isInferenceMode() {
        return INFERENCE.get()[0];
    }
}
