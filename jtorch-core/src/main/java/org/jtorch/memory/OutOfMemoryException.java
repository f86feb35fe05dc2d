package org.jtorch.memory;

/** An allocation failed even after the cache was emptied and the garbage collector was asked once. */
public final class OutOfMemoryException extends RuntimeException {
    public OutOfMemoryException(String message) {
        super(message);
    }

    private OutOfMemoryException(String message, OutOfMemoryException cause) {
        super(message, cause);
    }

    /** This failure with the op that asked for the memory named at the end: {@code ...; while running matmul}. */
    public OutOfMemoryException whileRunning(String op) {
        return new OutOfMemoryException(getMessage() + "; while running " + op, this);
    }
}
