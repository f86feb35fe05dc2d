package org.jtorch.distributed;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The handle of an asynchronous collective, as {@code torch.distributed.Work}. The tensors passed to the
 * operation must stay open and unmodified until it completes; {@link #waitFor()} returns once the results are
 * in them. ({@code wait} is {@code Object}'s, hence {@code waitFor}, as {@link Process#waitFor()}.)
 *
 * <p>Thread safety: any thread may wait on or poll a work handle.
 */
public final class Work {
    private final String description;
    private final CompletableFuture<Void> future;
    private final Duration defaultTimeout;
    private final Runnable onTimeout;

    /** {@code onTimeout} runs when a wait times out (the group marks itself unusable). */
    Work(String description, CompletableFuture<Void> future, Duration defaultTimeout, Runnable onTimeout) {
        this.description = description;
        this.future = future;
        this.defaultTimeout = defaultTimeout;
        this.onTimeout = onTimeout;
    }

    /** True once the operation has finished, successfully or not. */
    public boolean isCompleted() {
        return future.isDone();
    }

    /** True once the operation has finished without error. */
    public boolean isSuccess() {
        return future.isDone() && !future.isCompletedExceptionally();
    }

    /** Waits up to the process group's timeout; see {@link #waitFor(Duration)}. */
    public void waitFor() {
        waitFor(defaultTimeout);
    }

    /**
     * Waits until the operation has completed. Throws {@link DistributedException} with the operation's error,
     * or naming the operation, this rank and the timeout when it did not complete in time (then a peer has
     * probably failed or called a different collective; the group is unusable afterwards).
     */
    public void waitFor(Duration timeout) {
        try {
            future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            onTimeout.run();
            throw new DistributedException(description + " did not complete within " + formatDuration(timeout)
                    + ": a peer rank may have failed, be stuck, or have called a different collective");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof DistributedException d) throw new DistributedException(d.getMessage(), d);
            throw new DistributedException(description + " failed: " + cause, cause);
        } catch (CancellationException e) {
            throw new DistributedException(description + " was cancelled: its process group was closed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DistributedException(description + ": interrupted while waiting", e);
        }
    }

    @Override
    public String toString() {
        return "Work(" + description + (isCompleted() ? (isSuccess() ? ", done)" : ", failed)") : ", pending)");
    }

    static String formatDuration(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? (ms / 1000) + " s" : ms + " ms";
    }
}
