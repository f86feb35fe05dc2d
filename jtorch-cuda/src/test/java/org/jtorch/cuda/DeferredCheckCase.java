package org.jtorch.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.memory.MemoryScope;

/**
 * A test case of CUDA's deferred device-side checks ({@link IndexCheckLog}): cuda:0 required, checks deferred for the case,
 * its tensors in a {@link MemoryScope}; closing reports what is left in flight (so that the next case starts with none),
 * releases the tensors and restores the checks' mode.
 */
final class DeferredCheckCase implements AutoCloseable {
    private final boolean previous;
    private final MemoryScope scope;

    DeferredCheckCase() {
        assumeTrue(Cuda.isAvailable(), () -> "cuda:0 unavailable: " + Cuda.unavailableReason());
        previous = Cuda.setSynchronousIndexChecks(false);
        scope = new MemoryScope();
    }

    @Override
    public void close() {
        try {
            Cuda.synchronize(DeviceCases.CUDA);
        } catch (RuntimeException leftOverByAFailedCase) {
            // reported, so that the next case starts with no check in flight
        }
        scope.close();
        Cuda.setSynchronousIndexChecks(previous);
    }
}
