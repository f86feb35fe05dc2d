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
 * <p>On a device backend (nccl) the future completes once the operation is enqueued on the device, with a
 * {@link DeviceCompletion}: {@link #waitFor()} then makes the caller's current stream wait for it, without
 * blocking the host, as PyTorch's {@code work.wait()} on CUDA tensors.
 *
 * <p>Thread safety: any thread may wait on or poll a work handle.
 */
public final class Work {
    private final String description;
    private final CompletableFuture<?> future;
    private final Duration defaultTimeout;
    private final Runnable onTimeout;

    /** What a device backend's operation leaves for its waiters: the device work after which its results are ready. */
    public interface DeviceCompletion {
        /** True once the device has finished the operation (does not block). */
        boolean isDone();

        /** Orders the calling thread's current stream after the operation (does not block the host). */
        void makeCurrentStreamWait();
    }

    /**
     * For {@link ProcessGroup} implementations: {@code future} completes when the operation has finished on the host
     * (with a {@link DeviceCompletion} when device work remains); {@code onTimeout} runs when a wait times out (the
     * group marks itself unusable).
     */
    public Work(String description, CompletableFuture<?> future, Duration defaultTimeout, Runnable onTimeout) {
        this.description = description;
        this.future = future;
        this.defaultTimeout = defaultTimeout;
        this.onTimeout = onTimeout;
    }

    /** True once the operation has finished, successfully or not (on the device too). */
    public boolean isCompleted() {
        return future.isDone() && (future.isCompletedExceptionally() || deviceDone());
    }

    /** True once the operation has finished without error. */
    public boolean isSuccess() {
        return future.isDone() && !future.isCompletedExceptionally() && deviceDone();
    }

    private boolean deviceDone() {
        return !(future.getNow(null) instanceof DeviceCompletion d) || d.isDone();
    }

    /** Waits up to the process group's timeout; see {@link #waitFor(Duration)}. */
    public void waitFor() {
        waitFor(defaultTimeout);
    }

    /**
     * Waits until the operation has completed (on a device backend: until it is enqueued, then orders the current
     * stream after it). Throws {@link DistributedException} with the operation's error,
     * or naming the operation, this rank and the timeout when it did not complete in time (then a peer has
     * probably failed or called a different collective; the group is unusable afterwards).
     */
    public void waitFor(Duration timeout) {
        try {
            if (future.get(timeout.toNanos(), TimeUnit.NANOSECONDS) instanceof DeviceCompletion d) d.makeCurrentStreamWait();
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
