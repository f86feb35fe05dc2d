package org.jtorch.distributed;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The signal that is stopping this launcher, so that it stops its workers with that same signal, as torchrun's agent
 * does (a worker's SIGINT handler, say one that saves a checkpoint on Ctrl-C, sees SIGINT, not SIGTERM).
 *
 * <p>{@link #watch()} replaces the JVM's own handlers of SIGINT, SIGTERM and SIGHUP by ones that record the signal
 * and then exit as the JVM's would ({@code 128 + N}, shutdown hooks run). A signal this process ignores (SIGHUP under
 * {@code nohup}, SIGINT in a shell's background job) stays ignored: the JVM does not install a handler for it.
 * Stops for any other reason (a worker failed) use SIGTERM.
 */
public final class StopSignal {
    public static final int SIGHUP = 1;
    public static final int SIGINT = 2;
    public static final int SIGTERM = 15;

    private static volatile int received;
    private static boolean watching;
    /** libc's {@code kill(pid, signal)}; null where it cannot be bound (native access denied), then SIGTERM only. */
    private static final MethodHandle KILL = bindKill();

    private StopSignal() {}

    /** Records SIGINT, SIGTERM and SIGHUP from now on; idempotent. */
    public static synchronized void watch() {
        if (watching) return;
        watching = true;
        for (String name : new String[] {"INT", "TERM", "HUP"}) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), signal -> {
                    received = signal.getNumber();
                    System.exit(128 + signal.getNumber());
                });
            } catch (IllegalArgumentException usedByTheVm) {
                // -Xrs or a signal the JVM keeps for itself: its default stays, and a stop through it forwards SIGTERM
            }
        }
    }

    /** The signal to stop workers with: the one this process received, or SIGTERM when it received none. */
    public static int toForward() {
        int s = received;
        return s == 0 ? SIGTERM : s;
    }

    /** Sends {@code signal} to {@code process}; SIGTERM through the JDK, others through libc's {@code kill}. */
    public static void send(ProcessHandle process, int signal) {
        if (signal == SIGTERM || KILL == null) {
            process.destroy();
            return;
        }
        try {
            int rc = (int) KILL.invokeExact((int) process.pid(), signal);
            if (rc != 0 && process.isAlive()) process.destroy();
        } catch (Throwable t) {
            process.destroy();
        }
    }

    /** The name torchrun and shells print for a signal number. */
    public static String name(int signal) {
        return switch (signal) {
            case SIGHUP -> "SIGHUP";
            case SIGINT -> "SIGINT";
            case 6 -> "SIGABRT";
            case 9 -> "SIGKILL";
            case 11 -> "SIGSEGV";
            case SIGTERM -> "SIGTERM";
            default -> "signal " + signal;
        };
    }

    private static MethodHandle bindKill() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.downcallHandle(linker.defaultLookup().find("kill").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        } catch (RuntimeException nativeAccessDenied) {
            return null;
        }
    }
}
