package org.jtorch.cuda.nvrtc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Compiled kernels on disk, keyed by a SHA-256 of everything that determines the image: the compiler
 * version, the source, its headers, the options (which name the architecture) and the output kind.
 * A hit skips NVRTC (hundreds of milliseconds a file); files are written to a temporary name and
 * renamed, so concurrent processes never read a partial image. A miss compiles under a lock on
 * {@code <key>.lock} (a file lock between processes, a monitor between threads), so that ranks of one job
 * starting together on one machine compile each kernel once and the others read it: on the CUDA simulator,
 * where a compile is a g++ run of seconds, two ranks each compiling every kernel took 187 s to one's 4 s warm.
 * Unwritable directories only lose the caching, never the compile.
 */
public final class KernelCache {
    /** The compile step, {@link Nvrtc#compile} in production. */
    @FunctionalInterface
    public interface Compiler {
        Nvrtc.Compiled compile(String name, String source, Map<String, String> headers, List<String> options, Nvrtc.Output output);
    }

    /**
     * How long a miss waits for another process's compile of the same kernel before compiling it itself: past the
     * slowest compile seen (the simulator's g++ at load 25), short of a hang.
     */
    private static final long LOCK_WAIT_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(10);
    /** One monitor per entry for this JVM's threads: a file lock is the process's, and a second one in the JVM throws. */
    private static final ConcurrentHashMap<Path, Object> COMPILING = new ConcurrentHashMap<>();

    private final Path directory;
    private final String compilerVersion;
    private final Compiler compiler;
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong compiles = new AtomicLong();

    public KernelCache(Path directory, String compilerVersion, Compiler compiler) {
        this.directory = directory;
        this.compilerVersion = compilerVersion;
        this.compiler = compiler;
    }

    /** {@code JTORCH_KERNEL_CACHE}, else {@code $XDG_CACHE_HOME/jtorch/kernels}, else {@code ~/.cache/jtorch/kernels}. */
    public static Path defaultDirectory(Map<String, String> env, Path home) {
        String explicit = env.get("JTORCH_KERNEL_CACHE");
        if (explicit != null && !explicit.isBlank()) return Path.of(explicit);
        String xdg = env.get("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : home.resolve(".cache");
        return base.resolve("jtorch").resolve("kernels");
    }

    public Path directory() {
        return directory;
    }

    /** The cache key: hex SHA-256 over the compiler version, source, headers (by name), options and output. */
    public String key(String source, Map<String, String> headers, List<String> options, Nvrtc.Output output) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            update(sha, "compiler " + compilerVersion);
            update(sha, "output " + output);
            for (String o : options) update(sha, "option " + o);
            for (Map.Entry<String, String> h : new TreeMap<>(headers).entrySet()) {
                update(sha, "header " + h.getKey());
                update(sha, h.getValue());
            }
            update(sha, "source");
            update(sha, source);
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    private static void update(MessageDigest sha, String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        sha.update((byte) (b.length >>> 24));
        sha.update((byte) (b.length >>> 16));
        sha.update((byte) (b.length >>> 8));
        sha.update((byte) b.length);
        sha.update(b);
    }

    /** The image for this source and these options: from disk when cached, else compiled and stored. */
    public byte[] get(String name, String source, Map<String, String> headers, List<String> options, Nvrtc.Output output) {
        String key = key(source, headers, options, output);
        Path file = directory.resolve(key + (output == Nvrtc.Output.PTX ? ".ptx" : ".cubin"));
        byte[] cached = read(file);
        if (cached != null) return cached;
        synchronized (COMPILING.computeIfAbsent(file.toAbsolutePath().normalize(), f -> new Object())) {
            try (CompileLock held = CompileLock.take(directory, directory.resolve(key + ".lock"))) {
                // Another thread or process may have stored it while this one waited.
                cached = read(file);
                if (cached != null) return cached;
                byte[] image = compiler.compile(name, source, headers, options, output).image();
                compiles.incrementAndGet();
                store(file, image);
                return image;
            }
        }
    }

    /** The stored image, or null when absent or unreadable (then it is compiled again and replaced). */
    private byte[] read(Path file) {
        if (!Files.isRegularFile(file)) return null;
        try {
            byte[] image = Files.readAllBytes(file);
            hits.incrementAndGet();
            return image;
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The file lock on {@code <key>.lock}, or none where it cannot be had (an unwritable directory, an interrupt, or
     * another process holding it past {@link #LOCK_WAIT_NANOS}): then the caller compiles unlocked, as before locks.
     * Closing deletes the lock file while still holding it: a waiter has the old file open, takes the lock on it and
     * finds the image; a later miss finds the image before it makes a new lock file.
     */
    private record CompileLock(Path lockFile, FileChannel channel, FileLock lock) implements AutoCloseable {
        static CompileLock take(Path directory, Path lockFile) {
            FileChannel channel;
            try {
                Files.createDirectories(directory);
                channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            } catch (IOException | UncheckedIOException e) {
                return new CompileLock(lockFile, null, null);
            }
            long deadline = System.nanoTime() + LOCK_WAIT_NANOS;
            try {
                FileLock lock;
                while ((lock = channel.tryLock()) == null && System.nanoTime() < deadline) Thread.sleep(20);
                return new CompileLock(lockFile, channel, lock);
            } catch (IOException | java.nio.channels.OverlappingFileLockException e) {
                // OverlappingFileLockException: this JVM holds it under another spelling of the directory.
                return new CompileLock(lockFile, channel, null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new CompileLock(lockFile, channel, null);
            }
        }

        @Override
        public void close() {
            try {
                if (lock != null) Files.deleteIfExists(lockFile);
            } catch (IOException e) {
                // A lock file left behind costs nothing: the next miss locks it again.
            }
            try {
                if (channel != null) channel.close(); // releases the lock
            } catch (IOException e) {
                // Closing a lock file's channel cannot lose data.
            }
        }
    }

    private void store(Path file, byte[] image) {
        try {
            Files.createDirectories(directory);
            Path tmp = Files.createTempFile(directory, file.getFileName().toString(), ".tmp");
            try {
                Files.write(tmp, image);
                try {
                    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
                }
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException | UncheckedIOException e) {
            // A read-only or full disk costs a recompile next time, nothing else.
        }
    }

    /** Requests served from disk. */
    public long hits() {
        return hits.get();
    }

    /** Requests that ran the compiler. */
    public long compiles() {
        return compiles.get();
    }
}
