package org.jtorch.distributed;

/**
 * A collective or point-to-point operation failed: ranks disagreed on the call, a peer failed, the
 * communication library reported an error, or a wait timed out. After a failed or timed-out collective the
 * process group's communicator is in an unknown state; the process should exit (a launcher then stops the
 * other ranks).
 */
public class DistributedException extends RuntimeException {
    public DistributedException(String message) {
        super(message);
    }

    public DistributedException(String message, Throwable cause) {
        super(message, cause);
    }
}
