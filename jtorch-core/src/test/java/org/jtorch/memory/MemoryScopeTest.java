package org.jtorch.memory;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Device;
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

    @Test
    void aScopeClosedTensorSaysSoAndHowToKeepIt() {
        Tensor h;
        try (MemoryScope scope = new MemoryScope()) {
            h = Torch.ones(35, 35).mul(2.0);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, h::alias);
        assertTrue(e.getMessage().startsWith("alias: tensor of shape [35, 35] and dtype torch.float32 was used after close() by the"
                + " MemoryScope that created it"), e.getMessage());
        assertTrue(e.getMessage().contains("scope.keep(t)") && e.getMessage().contains("JTORCH_DEBUG_CLOSE=1"), e.getMessage());
    }

    @Test
    void closeTrackingNamesWhereTheScopeOpenedAndClosed() {
        boolean before = MemoryScope.isCloseTracking();
        MemoryScope.setCloseTracking(true);
        try {
            Tensor h;
            try (MemoryScope scope = new MemoryScope()) {
                h = Torch.ones(3).mul(2.0);
            }
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.add(1.0));
            String m = e.getMessage();
            assertTrue(m.contains("(opened at org.jtorch.memory.MemoryScopeTest.closeTrackingNamesWhereTheScopeOpenedAndClosed(MemoryScopeTest.java:"), m);
            assertTrue(m.contains("closed at org.jtorch.memory.MemoryScopeTest.closeTrackingNamesWhereTheScopeOpenedAndClosed(MemoryScopeTest.java:"), m);
            assertFalse(m.contains("JTORCH_DEBUG_CLOSE"), m);
            Tensor t = Torch.ones(2);
            t.close();
            IllegalStateException explicit = assertThrows(IllegalStateException.class, t::sum);
            assertTrue(explicit.getMessage().contains("was used after close(), closed at org.jtorch.memory.MemoryScopeTest."), explicit.getMessage());
        } finally {
            MemoryScope.setCloseTracking(before);
        }
    }

    @Test
    void aHiddenStateCarriedAcrossStepsSurvivesWithKeepOrUntrack() {
        Tensor kept = Torch.zeros(4);
        Tensor untracked = Torch.zeros(4);
        for (int step = 0; step < 3; step++) {
            try (MemoryScope outer = new MemoryScope(); MemoryScope inner = new MemoryScope()) {
                Tensor nextKept = kept.add(1.0);
                Tensor nextUntracked = untracked.add(1.0);
                kept.close();
                untracked.close();
                // keep moves the tensor to the enclosing scope only; untrack takes it out of every scope.
                kept = outer.keep(inner.keep(nextKept));
                untracked = nextUntracked.untrack();
            }
        }
        assertEquals(12.0, kept.sum().item());
        assertEquals(12.0, untracked.sum().item());
    }

    @Test
    void aModuleBuiltOrFilledInsideAScopeOwnsItsParametersAndBuffers() {
        org.jtorch.nn.Linear model;
        try (MemoryScope scope = new MemoryScope()) {
            model = new org.jtorch.nn.Linear(3, 2);
            model.registerBuffer("mask", Torch.ones(2).gt(0.0));
        }
        assertFalse(model.weight().isClosed());
        assertFalse(model.buffers().get(0).isClosed());
        try (MemoryScope scope = new MemoryScope()) {
            assertEquals(2, model.forward(Torch.ones(1, 3)).size(1));
        }
    }
}
