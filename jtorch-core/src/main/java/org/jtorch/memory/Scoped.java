package org.jtorch.memory;

/**
 * What a {@link MemoryScope} tracks and releases: an object that knows the scope it belongs to and closes itself
 * ({@code org.jtorch.Tensor}). The scope names no tensor type, so the memory package stays below the front end.
 */
public interface Scoped extends AutoCloseable {
    /** The scope this object belongs to, or null. */
    MemoryScope scope();

    /** Moves the object to {@code scope} (null: none); called by {@link MemoryScope} only. */
    void setScope(MemoryScope scope);

    /** Releases the object (closing it twice is harmless). */
    @Override
    void close();
}
