package org.jtorch.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The cases of a test class of CUDA's deferred device-side checks ({@link IndexCheckLog}), registered with
 * {@code @RegisterExtension}: each needs cuda:0, runs with checks deferred and its tensors in a {@link MemoryScope}; after
 * it, what is left in flight is reported (so that the next case starts with none), the tensors released and the checks'
 * mode restored.
 */
final class DeferredCheckCase implements BeforeEachCallback, AfterEachCallback {
    private boolean previous;
    private MemoryScope scope;

    @Override
    public void beforeEach(ExtensionContext context) {
        assumeTrue(Cuda.isAvailable(), () -> "cuda:0 unavailable: " + Cuda.unavailableReason());
        previous = Cuda.setSynchronousIndexChecks(false);
        scope = new MemoryScope();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (scope == null) return;
        try {
            Cuda.synchronize(DeviceCases.CUDA);
        } catch (RuntimeException leftOverByAFailedCase) {
            // reported, so that the next case starts with no check in flight
        }
        scope.close();
        scope = null;
        Cuda.setSynchronousIndexChecks(previous);
    }
}
