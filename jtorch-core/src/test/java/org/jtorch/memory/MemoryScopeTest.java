package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The lifetime contract of {@link MemoryScope} and {@link Tensor#close()} (DESIGN.md section 4). */
class MemoryScopeTest {
    @Test
    void scopeClosesTensorsCreatedInsideIt() {
        Tensor a;
        Tensor b;
        try (MemoryScope scope = new MemoryScope()) {
            a = Torch.ones(3);
            b = a.add(a);
            assertSame(scope, a.scope());
            assertFalse(a.isClosed());
        }
        assertTrue(a.isClosed());
        assertTrue(b.isClosed());
    }

    @Test
    void keptTensorSurvivesAndBelongsToNoScope() {
        Tensor kept;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor tmp = Torch.ones(4);
            kept = scope.keep(tmp.mul(2.0));
        }
        try (kept) {
            assertFalse(kept.isClosed());
            assertNull(kept.scope());
            assertEquals(4.0, kept.toDoubleArray()[0] + kept.toDoubleArray()[3]);
        }
    }

    @Test
    void keepInNestedScopeMovesTheTensorToTheEnclosingScope() {
        Tensor kept;
        Tensor innerTemp;
        try (MemoryScope outer = new MemoryScope()) {
            try (MemoryScope inner = new MemoryScope()) {
                innerTemp = Torch.zeros(2);
                kept = inner.keep(Torch.ones(2));
            }
            assertTrue(innerTemp.isClosed());
            assertFalse(kept.isClosed());
            assertSame(outer, kept.scope());
        }
        assertTrue(kept.isClosed(), "the outer scope releases what the inner one kept");
    }

    @Test
    void tensorsCreatedOutsideAScopeAreUntouched() {
        try (Tensor outside = Torch.ones(2)) {
            try (MemoryScope scope = new MemoryScope()) {
                try (Tensor r = outside.add(1.0)) {
                    assertEquals(2.0, r.toDoubleArray()[0]);
                }
            }
            assertFalse(outside.isClosed());
        }
    }

    @Test
    void viewKeepsStorageAliveAfterItsBaseIsClosedByTheScope() {
        Tensor row;
        try (MemoryScope scope = new MemoryScope()) {
            Tensor m = Torch.arange(0.0, 6.0, 1.0).reshape(2, 3);
            row = scope.keep(m.select(0, 1));
        }
        try (row) {
            assertEquals(3.0, row.toDoubleArray()[0]);
            assertEquals(5.0, row.toDoubleArray()[2]);
        }
    }

    @Test
    void closeIsIdempotent() {
        MemoryScope scope = new MemoryScope();
        Tensor t = Torch.ones(2);
        scope.close();
        assertDoesNotThrow(scope::close);
        assertDoesNotThrow(t::close);
        assertTrue(t.isClosed());
    }

    @Test
    void runKeepsTheResult() {
        Tensor r = MemoryScope.run(() -> Torch.ones(3).mul(3.0));
        try (r) {
            assertFalse(r.isClosed());
            assertEquals(3.0, r.toDoubleArray()[1]);
        }
    }

    @Test
    void closingOutOfOrderThrows() {
        MemoryScope outer = new MemoryScope();
        MemoryScope inner = new MemoryScope();
        assertThrows(IllegalStateException.class, outer::close);
        inner.close();
        outer.close();
    }

    private static void assertUseAfterCloseNames(String op, Executable call) {
        IllegalStateException e = assertThrows(IllegalStateException.class, call, op + " after close");
        assertTrue(e.getMessage().startsWith(op + ":"), "message should name " + op + ": " + e.getMessage());
    }

    @Test
    void useAfterCloseThrowsNamingTheOp() {
        Tensor t = Torch.ones(2, 3);
        Tensor other = Torch.ones(2, 3);
        t.close();
        assertUseAfterCloseNames("add", () -> t.add(other));
        assertUseAfterCloseNames("exp", t::exp);
        assertUseAfterCloseNames("view", () -> t.view(6));
        assertUseAfterCloseNames("item", t::item);
        assertUseAfterCloseNames("copy_", () -> other.copy_(t));
        assertUseAfterCloseNames("add_", () -> other.add_(t));
        other.close();
    }

    @Test
    void useOfAClosedTensorThrowsEvenWhileAViewKeepsItsStorageAlive() {
        Tensor t = Torch.ones(2, 3);
        Tensor view = t.narrow(0, 0, 1);
        t.close();
        assertFalse(t.storage().isReleased(), "the view still holds the storage");
        assertUseAfterCloseNames("t", t::t);
        assertUseAfterCloseNames("mT", t::mT);
        assertUseAfterCloseNames("mul", () -> t.mul(2.0));
        assertUseAfterCloseNames("expand", () -> t.expand(2, 3));
        try (view) {
            assertEquals(1.0, view.toDoubleArray()[0]);
        }
        Tensor vector = Torch.ones(3);
        Tensor alias = vector.alias();
        vector.close();
        assertUseAfterCloseNames("t", vector::t); // 1-d t() is a plain view: no other check catches it
        alias.close();
    }

    @Test
    void unreachableTensorsAreReleasedByTheCleanerAndCountedAsLeaks() throws InterruptedException {
        Allocator alloc = Torch.memoryStats(Device.cpu()) == null ? null : CpuCachingAllocator.get();
        long before = alloc.stats().leakedStorages();
        long allocatedBefore = alloc.stats().allocatedBytes();
        for (int i = 0; i < 10; i++) Torch.zeros(1024); // never closed, unreachable at once
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (alloc.stats().leakedStorages() < before + 10 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertTrue(alloc.stats().leakedStorages() >= before + 10, "10 leaks counted: " + alloc.stats());
        assertTrue(alloc.stats().allocatedBytes() <= allocatedBefore, "leaked blocks returned: " + alloc.stats());
    }

    @Test
    void closedTensorsAreNotCountedAsLeaks() throws InterruptedException {
        Allocator alloc = CpuCachingAllocator.get();
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(5);
        }
        long before = alloc.stats().leakedStorages();
        for (int i = 0; i < 10; i++) Torch.zeros(1024).close();
        for (int i = 0; i < 20; i++) {
            System.gc();
            Thread.sleep(5);
        }
        assertEquals(before, alloc.stats().leakedStorages());
    }
}
