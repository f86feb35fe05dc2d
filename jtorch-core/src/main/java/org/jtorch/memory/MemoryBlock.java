package org.jtorch.memory;

/**
 * A block handed out by an {@link Allocator}: a device address and the block's (rounded) size.
 * {@code requested} is the size the caller asked for.
 */
public record MemoryBlock(long address, long size, long requested) {}
