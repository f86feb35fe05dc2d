package org.jtorch.memory;

import java.security.CodeSource;

/**
 * An allocation failed even after the cache was emptied and the garbage collector was asked once. The message ends
 * with the op that asked for the memory: {@code ...; while running conv2d}. That is the jtorch call the user's code
 * made (found on the stack when the allocator gives up, so every front end is covered, hand-written or not), or the
 * op a front end names with {@link #whileRunning} when it differs: {@code ...; while running mul (in crossEntropy)}.
 */
public final class OutOfMemoryException extends RuntimeException {
    /** The allocator's message, without the op. */
    private final String failure;
    /** The jtorch call the user's code made, or null when none is on the stack (a jtorch-internal thread). */
    private final String entry;

    public OutOfMemoryException(String message) {
        this(message, entryCall(), null);
    }

    private OutOfMemoryException(String failure, String entry, OutOfMemoryException cause) {
        super(failure + (entry == null ? "" : "; while running " + entry), cause);
        this.failure = failure;
        this.entry = entry;
    }

    /** This failure naming {@code op}, the op whose result could not be allocated, as well as the call it ran in. */
    public OutOfMemoryException whileRunning(String op) {
        if (op.equals(entry) || entry != null && entry.endsWith("." + op)) return this;
        return new OutOfMemoryException(failure, entry == null ? op : op + " (in " + entry + ")", this);
    }

    /**
     * The outermost jtorch method on this thread's stack below the first frame of other code (the user's; JDK frames,
     * such as reflection and streams, are passed over): {@code conv2d} for {@code F.conv2d}, {@code Linear.forward},
     * {@code new Linear}.
     */
    private static String entryCall() {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE).walk(frames -> {
            StackWalker.StackFrame outermost = null;
            for (StackWalker.StackFrame f : (Iterable<StackWalker.StackFrame>) frames::iterator) {
                Class<?> c = f.getDeclaringClass();
                if (isJdk(c)) continue;
                if (!isJtorch(c)) break;
                outermost = f;
            }
            return outermost == null ? null : name(outermost);
        });
    }

    private static boolean isJdk(Class<?> c) {
        String n = c.getName();
        return n.startsWith("java.") || n.startsWith("jdk.") || n.startsWith("sun.") || n.startsWith("javax.");
    }

    /** jtorch's own classes: its packages, not loaded from a test build (tests are the user here). */
    private static boolean isJtorch(Class<?> c) {
        if (!c.getName().startsWith("org.jtorch.")) return false;
        CodeSource source = c.getProtectionDomain().getCodeSource();
        return source == null || source.getLocation() == null || !source.getLocation().getPath().endsWith("/test-classes/");
    }

    private static String name(StackWalker.StackFrame f) {
        String owner = f.getDeclaringClass().getSimpleName();
        String method = f.getMethodName();
        if (method.equals("<init>")) return "new " + owner;
        // The public ops' own classes: the op's name as PyTorch's, without the class
        if (owner.equals("Tensor") || owner.equals("Torch") || owner.equals("F")) return method;
        return owner + "." + method;
    }
}
