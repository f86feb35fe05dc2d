package org.jtorch.memory;

import java.util.ArrayList;
import java.util.function.Supplier;

/**
 * Releases, on close, every tensor created inside it on this thread, except those passed to
 * {@link #keep} (which move to the enclosing scope, or to no scope).
 *
 * <pre>{@code
 * Tensor y;
 * try (var scope = new MemoryScope()) {
 *     Tensor h = x.matmul(w).relu();     // closed when the scope closes
 *     y = scope.keep(h.sum());            // survives
 * }
 * }</pre>
 *
 * Scopes nest and are thread-confined: a scope must be closed on the thread that opened it, in
 * reverse order of opening.
 */
public final class MemoryScope implements AutoCloseable {
    private static final ThreadLocal<MemoryScope> CURRENT = new ThreadLocal<>();

    /**
     * Whether scopes record where they were opened and tensors where they were closed, for use-after-close
     * errors: {@code JTORCH_DEBUG_CLOSE=1}, {@code -Djtorch.debugClose=true} or {@link #setCloseTracking}.
     * Off by default (a stack walk per close).
     */
    private static volatile boolean tracking = "1".equals(System.getenv("JTORCH_DEBUG_CLOSE"))
            || Boolean.getBoolean("jtorch.debugClose");

    private final MemoryScope parent;
    private final Thread owner;
    private final String openedAt;
    /** Presized: a training step creates dozens of tensors, and regrowing the list showed in profiles. */
    private final ArrayList<Scoped> tracked = new ArrayList<>(64);
    private boolean closed;

    public MemoryScope() {
        this.parent = CURRENT.get();
        this.owner = Thread.currentThread();
        this.openedAt = tracking ? callSite() : null;
        CURRENT.set(this);
    }

    /** Turns the recording of open and close sites on or off (see {@code JTORCH_DEBUG_CLOSE}). */
    public static void setCloseTracking(boolean on) {
        tracking = on;
    }

    public static boolean isCloseTracking() {
        return tracking;
    }

    /** Whether this scope has closed (its tensors are closed, or are closing). */
    public boolean isClosed() {
        return closed;
    }

    /** Where this scope was opened ({@code Class.method(File.java:line)}), or null when tracking was off. */
    public String openedAt() {
        return openedAt;
    }

    /** The first frame outside this class and the tracked objects' ({@code Tensor}): the code that opened a scope or closed a tensor. */
    public static String callSite() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE).walk(frames -> frames
                .filter(f -> f.getDeclaringClass() != MemoryScope.class && !Scoped.class.isAssignableFrom(f.getDeclaringClass()))
                .findFirst()
                .map(f -> f.getClassName() + "." + f.getMethodName() + "(" + f.getFileName() + ":" + f.getLineNumber() + ")")
                .orElse("unknown"));
    }

    /** The innermost open scope of this thread, or null. */
    public static MemoryScope current() {
        return CURRENT.get();
    }

    /** Runs {@code body} in a new scope and keeps its result. */
    public static <T extends Scoped> T run(Supplier<T> body) {
        MemoryStats.nonNull("MemoryScope.run", "body", body);
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(body.get());
        }
    }

    /** Called by tensor constructors: the tensor (any {@link Scoped}) now belongs to this scope. */
    public void track(Scoped t) {
        MemoryStats.nonNull("MemoryScope.track", "t", t);
        tracked.add(t);
        t.setScope(this);
    }

    /** Excludes {@code t} from this scope's release; it moves to the enclosing scope if there is one. */
    public <T extends Scoped> T keep(T t) {
        if (t == null) return null;
        if (t.scope() == this) {
            if (parent != null) parent.track(t);
            else t.setScope(null);
        }
        return t;
    }

    @Override
    public void close() {
        if (closed) return;
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("MemoryScope closed on thread " + Thread.currentThread().getName()
                    + " but opened on " + owner.getName());
        }
        if (CURRENT.get() != this) {
            throw new IllegalStateException("MemoryScope closed out of order: an inner scope is still open");
        }
        closed = true;
        CURRENT.set(parent);
        for (Scoped t : tracked) {
            if (t.scope() == this) t.close();
        }
        tracked.clear();
    }
}
