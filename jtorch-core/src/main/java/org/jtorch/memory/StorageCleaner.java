package org.jtorch.memory;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.util.ArrayList;
import java.util.List;

/**
 * Returns the blocks of storages that became unreachable without being released (tensors never closed), as a
 * {@link java.lang.ref.Cleaner} would, and lets an allocator under memory pressure wait for that:
 * {@link #collect()} runs the garbage collector and returns once the storages it found unreachable are back in
 * their allocators. A Cleaner gives no such signal, so the allocators used to sleep a fixed 50 ms after
 * {@code System.gc()}, which was both slow and, when its thread lagged, too short.
 *
 * <p>A daemon thread runs the actions of storages found by collections that no allocator asked for (the JVM's
 * own); after {@link #collect()} the allocator's thread runs them itself. Each action runs once.
 */
public final class StorageCleaner {
    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
    /** Head of the list that keeps registered references reachable until they are cleaned (as Cleaner's). */
    private static final Cleanable LIST = new Cleanable();
    /** One collection at a time: threads that hit pressure together share one garbage collection. */
    private static final Object COLLECTING = new Object();

    static {
        Thread thread = Thread.ofPlatform().daemon().name("jtorch-storage-cleaner").unstarted(() -> {
            while (true) {
                try {
                    Cleanable c = (Cleanable) QUEUE.remove();
                    // Not while a collect() runs: when it returns, no block may still be on its way back.
                    synchronized (COLLECTING) {
                        c.clean();
                    }
                } catch (InterruptedException ignored) {
                    // a daemon: runs as long as the JVM
                } catch (Throwable t) {
                    // An action that throws must not stop the cleaning of every later storage.
                }
            }
        });
        thread.start();
    }

    private StorageCleaner() {}

    /** A registration: runs its action once, on {@link #clean()} or after its referent became unreachable. */
    static final class Cleanable extends PhantomReference<Object> {
        private final Runnable action;
        private Cleanable prev = this;
        private Cleanable next = this;

        private Cleanable() {
            super(null, null);
            this.action = null;
        }

        private Cleanable(Object referent, Runnable action) {
            super(referent, QUEUE);
            this.action = action;
            synchronized (LIST) {
                next = LIST.next;
                prev = LIST;
                LIST.next.prev = this;
                LIST.next = this;
            }
        }

        /** Runs the action unless it already ran; unregisters. */
        void clean() {
            synchronized (LIST) {
                if (next == this) return; // already cleaned
                prev.next = next;
                next.prev = prev;
                next = this;
                prev = this;
            }
            clear();
            action.run();
        }
    }

    /** Runs {@code action} once, when {@link Cleanable#clean()} is called or {@code referent} becomes unreachable. */
    static Cleanable register(Object referent, Runnable action) {
        return new Cleanable(referent, action);
    }

    /**
     * Runs the garbage collector and returns once the storages it found unreachable have been returned to their
     * allocators. Called by allocators when off-heap memory runs short. (If the JVM runs with explicit
     * collections disabled or concurrent, fewer or none are found: {@link #awaitStragglers} waits for the rest.)
     */
    public static void collect() {
        synchronized (COLLECTING) {
            System.gc();
            cleanCleared();
        }
    }

    /** Waits {@code millis} ms for a collection still under way, then cleans what it found. */
    public static void awaitStragglers(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        cleanCleared();
    }

    /**
     * Cleans, on this thread, every registration whose referent the collector found unreachable. The collector
     * clears a phantom reference when it finds its referent unreachable, before the reference reaches the queue
     * (through the JDK's reference handler thread, a while later): looking at the references themselves needs
     * no waiting and misses none.
     */
    private static void cleanCleared() {
        List<Cleanable> cleared = new ArrayList<>();
        synchronized (LIST) {
            for (Cleanable c = LIST.next; c != LIST; c = c.next) {
                if (c.refersTo(null)) cleared.add(c);
            }
        }
        for (Cleanable c : cleared) c.clean();
    }
}
