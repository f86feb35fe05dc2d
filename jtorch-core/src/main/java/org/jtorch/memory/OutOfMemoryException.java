package org.jtorch.memory;

/** An allocation failed even after the cache was emptied and the garbage collector was asked once. */
public final class OutOfMemoryException extends RuntimeException {
    public OutOfMemoryException(String message) {
        super(message);
    }
}
