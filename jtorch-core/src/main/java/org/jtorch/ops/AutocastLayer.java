package org.jtorch.ops;

import java.util.function.Function;
import org.jtorch.Tensor;

/**
 * The autocast layer around the dispatcher's ops. {@code amp.Autocast} installs its own when it is first used
 * ({@link Dispatcher#installAutocast}), so that the dispatcher names nothing above it; until then no op is autocast.
 */
public interface AutocastLayer {
    /** The layer before {@code amp.Autocast} is loaded: never active. */
    AutocastLayer NONE = new AutocastLayer() {
        @Override
        public boolean isActive() {
            return false;
        }

        @Override
        public Tensor run(String op, boolean dtypeGiven, Function<Tensor[], Tensor> fn, Tensor... args) {
            return null;
        }
    };

    /** The cheap test every covered op makes first: whether autocast may apply to an op on this thread now. */
    boolean isActive();

    /**
     * Runs covered op {@code op} under autocast with its inputs cast per the op's policy, or returns null when autocast
     * does not apply (the op then runs its own body); {@code dtypeGiven}: a reduction's explicit {@code dtype}.
     */
    Tensor run(String op, boolean dtypeGiven, Function<Tensor[], Tensor> fn, Tensor... args);

    /** {@link #run(String, boolean, Function, Tensor...)} for an op without a {@code dtype} argument. */
    default Tensor run(String op, Function<Tensor[], Tensor> fn, Tensor... args) {
        return run(op, false, fn, args);
    }
}
