package org.jtorch.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Zeroed 8-byte cells of native memory for the CPU's small constants (the wrapped numbers of {@code x * 0.5}), cut from
 * per-thread slabs of automatic memory: the garbage collector frees a slab once none of its cells is referenced.
 *
 * <p>Native rather than {@code MemorySegment.ofArray(new long[1])}, though that costs no allocation either: a kernel reads
 * and writes every segment through the JDK's shared memory access code (var handles, the Vector API's loads and
 * stores), whose type profiles C2 uses when it inlines that code into each kernel. A heap segment in one op's operands
 * makes those profiles bimorphic, and C2 then compiles every kernel's accesses for both kinds: larger code, later
 * (BENCHMARKS.md, issue 20, fourteenth session).
 */
public final class ScalarCells {
    private static final long CELL = 8;
    private static final long SLAB = 4096;
    private static final ThreadLocal<ScalarCells> CURRENT = ThreadLocal.withInitial(ScalarCells::new);

    private MemorySegment slab = MemorySegment.NULL;
    private long next;

    private ScalarCells() {}

    /** A fresh zeroed cell of 8 bytes, 8-byte aligned. */
    public static MemorySegment allocate() {
        ScalarCells cells = CURRENT.get();
        if (cells.next == cells.slab.byteSize()) {
            cells.slab = Arena.ofAuto().allocate(SLAB, CELL);
            cells.next = 0;
        }
        MemorySegment cell = cells.slab.asSlice(cells.next, CELL);
        cells.next += CELL;
        return cell;
    }
}
