package org.jtorch.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystemLoopException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Replaces a file atomically: the new content goes to a temporary file beside the target, is fsynced,
 * then renamed over the target, so a reader (or a crash) sees the old file or the new one, never a mix.
 *
 * <p><b>Temporary files</b> are named {@code <target name>.jtorch-tmp-<pid>-<random>} and their writer
 * holds an exclusive lock on them until the rename. A process killed mid-write leaves its temporary
 * file behind; the next write or {@link #removeStaleTemporaries load} of the same target removes it.
 * Stale means the writer is gone: the file's pid is this process's but no write of this process owns
 * it (a previous process with the same pid, as after a container restart), or it belongs to another
 * pid and its lock is free (locks die with their process, whatever happened to the pid since). A file
 * whose lock is held is another process's write in progress and is left alone, so two processes may
 * write the same target at once: each rename is atomic and the last one wins. Where the file system
 * has no locks, only files untouched for {@link #STALE_WITHOUT_LOCKS} are removed. Temporary files of
 * jtorch versions before this scheme ({@code .<target name>.<digits>.tmp}) are removed after the same
 * time.
 *
 * <p><b>Links.</b> A symbolic link is followed: its target is replaced (the temporary file is made in
 * the target's directory, so the rename stays within one file system) and the link is kept.
 */
final class AtomicFile {
    /** The marker between a target's name and the writer's pid in a temporary file's name. */
    static final String MARKER = ".jtorch-tmp-";
    /** Age after which a temporary file is removed where its writer's liveness cannot be told. */
    static final Duration STALE_WITHOUT_LOCKS = Duration.ofHours(1);

    private static final long PID = ProcessHandle.current().pid();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final boolean WINDOWS = System.getProperty("os.name", "").startsWith("Windows");
    /** This process's temporary files being written (absolute paths). */
    private static final Set<Path> WRITING = ConcurrentHashMap.newKeySet();

    private AtomicFile() {}

    /** Writes the content to an open, positioned-at-zero channel. */
    @FunctionalInterface
    interface Content {
        void writeTo(FileChannel channel) throws IOException;
    }

    /**
     * Replaces {@code path} (or the file a symbolic link {@code path} points to) with what {@code content}
     * writes. An {@link IOException} names {@code op}, the file and the cause, and leaves an existing
     * file unchanged; so does a runtime exception from {@code content}, which is rethrown as is.
     */
    static void write(String op, Path path, Content content) throws IOException {
        Path target = resolveLinks(op, path);
        Path dir = target.getParent();
        removeStaleTemporaries(target);
        Path tmp = null;
        FileChannel ch = null;
        boolean done = false;
        try {
            tmp = newTemporary(target);
            ch = openLocked(tmp);
            if (ch == null) { // a cleaner in another process removed it between creation and locking: once more
                tmp = newTemporary(target);
                ch = openLocked(tmp);
                if (ch == null) throw new IOException("temporary file " + tmp + " was removed while it was being created");
            }
            keepPermissions(tmp, target);
            content.writeTo(ch);
            ch.force(true);
            if (WINDOWS) { // Windows cannot rename an open file; the unlocked window lasts one rename
                ch.close();
                ch = null;
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            done = true;
        } catch (IOException ex) {
            throw failure(op, path, target, ex);
        } finally {
            if (ch != null) {
                try {
                    ch.close(); // releases the lock, after the rename
                } catch (IOException ignored) {
                    // the data was forced before; a failed close cannot undo the rename
                }
            }
            if (tmp != null) {
                if (!done) {
                    try {
                        Files.deleteIfExists(tmp);
                    } catch (IOException ignored) {
                        // left for the next write's clean-up
                    }
                }
                WRITING.remove(tmp);
            }
        }
        syncDirectory(dir);
    }

    /** A new, empty temporary file for {@code target}, registered as written by this process. */
    private static Path newTemporary(Path target) throws IOException {
        byte[] r = new byte[6];
        RANDOM.nextBytes(r);
        Path tmp = target.resolveSibling(target.getFileName() + MARKER + PID + "-" + HexFormat.of().formatHex(r));
        WRITING.add(tmp);
        try {
            Files.createFile(tmp);
        } catch (IOException ex) {
            WRITING.remove(tmp);
            throw ex;
        }
        return tmp;
    }

    /**
     * Opens {@code tmp} for writing under an exclusive lock; null if it no longer exists once locked (a
     * cleaner in another process saw it unlocked in the instant after its creation and removed it).
     */
    private static FileChannel openLocked(Path tmp) throws IOException {
        FileChannel ch;
        try {
            ch = FileChannel.open(tmp, StandardOpenOption.WRITE);
        } catch (NoSuchFileException ex) {
            return null;
        }
        try {
            ch.lock();
        } catch (IOException ex) {
            // No locks on this file system: the age rule protects the file instead.
        }
        if (!Files.exists(tmp, LinkOption.NOFOLLOW_LINKS)) {
            ch.close();
            return null;
        }
        return ch;
    }

    /**
     * Removes the temporary files of {@code target} whose writer is gone (see the class comment). Best
     * effort: a directory that cannot be listed or a file that cannot be removed is left as it is.
     */
    static void removeStaleTemporaries(Path path) {
        Path target;
        try {
            target = path.toRealPath();
        } catch (IOException ex) {
            target = path.toAbsolutePath(); // not there (yet): its temporary files may be
        }
        Path dir = target.getParent();
        if (dir == null) return;
        String name = target.getFileName().toString();
        Pattern current = Pattern.compile(Pattern.quote(name + MARKER) + "(\\d+)-[0-9a-f]+");
        Pattern legacy = Pattern.compile(Pattern.quote("." + name + ".") + "\\d+\\.tmp");
        DirectoryStream.Filter<Path> candidates = f -> {
            String n = f.getFileName().toString();
            return n.startsWith(name + MARKER) || n.startsWith("." + name + ".") && n.endsWith(".tmp");
        };
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, candidates)) {
            for (Path f : files) {
                String fileName = f.getFileName().toString();
                Matcher m = current.matcher(fileName);
                if (m.matches()) {
                    if (writerIsGone(f, m.group(1))) delete(f);
                } else if (legacy.matcher(fileName).matches() && untouchedFor(f, STALE_WITHOUT_LOCKS)) {
                    delete(f);
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // Clean-up is an extra: never let it fail a save or a load.
        }
    }

    private static boolean writerIsGone(Path file, String pid) throws IOException {
        if (pid.equals(Long.toString(PID))) {
            // Ours: gone unless one of this process's writes owns it. Never lock-probed: closing a second
            // channel to a file would drop this process's own POSIX lock on it.
            return !WRITING.contains(file);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            FileLock lock = ch.tryLock(0, Long.MAX_VALUE, true);
            if (lock == null) return false; // its writer holds it
            lock.release();
            return true;
        } catch (NoSuchFileException ex) {
            return false; // renamed or removed meanwhile
        } catch (OverlappingFileLockException ex) {
            return false;
        } catch (IOException ex) {
            return untouchedFor(file, STALE_WITHOUT_LOCKS); // no locks here (or no access): only the clearly old
        }
    }

    private static boolean untouchedFor(Path file, Duration age) throws IOException {
        FileTime modified = Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS);
        return modified.toInstant().isBefore(Instant.now().minus(age));
    }

    private static void delete(Path f) {
        try {
            Files.deleteIfExists(f);
        } catch (IOException ignored) {
            // not ours to remove (permissions) or already gone
        }
    }

    /** The file {@code path} names once symbolic links are followed (it need not exist). */
    static Path resolveLinks(String op, Path path) throws IOException {
        Path p = path.toAbsolutePath();
        for (int hops = 0; Files.isSymbolicLink(p); hops++) {
            if (hops == 40) throw new FileSystemLoopException(op + ": " + path + ": too many levels of symbolic links");
            Path parent = p.getParent();
            p = parent.resolve(Files.readSymbolicLink(p));
        }
        return p;
    }

    /**
     * Temporary files are created with the umask's permissions; give the new file the replaced file's,
     * or {@code rw-r--r--} for a new one. No-op where POSIX permissions are unknown.
     */
    private static void keepPermissions(Path tmp, Path target) throws IOException {
        try {
            Files.setPosixFilePermissions(tmp, Files.exists(target)
                    ? Files.getPosixFilePermissions(target) : PosixFilePermissions.fromString("rw-r--r--"));
        } catch (UnsupportedOperationException ignored) {
            // not a POSIX file system
        }
    }

    /** Makes the rename durable (best effort: not every platform can fsync a directory). */
    private static void syncDirectory(Path dir) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // Windows and some file systems cannot open or sync directories; the data itself is synced.
        }
    }

    /** {@code ex} as an error naming the operation and the file, and saying the old file is intact. */
    private static IOException failure(String op, Path path, Path target, IOException ex) {
        String reason;
        if (ex instanceof NoSuchFileException && !Files.isDirectory(target.getParent())) {
            reason = "the directory " + target.getParent() + " does not exist";
        } else if (ex instanceof AccessDeniedException) {
            reason = "permission denied (" + ((FileSystemException) ex).getFile() + ")";
        } else if (ex instanceof FileSystemException fse && fse.getReason() != null) {
            reason = fse.getReason() + (fse.getFile() != null ? " (" + fse.getFile() + ")" : "");
        } else {
            reason = ex.getMessage() != null ? ex.getMessage() : ex.getClass().getSimpleName();
        }
        String file = path.toAbsolutePath().equals(target) ? target.toString() : target + " (the target of the link " + path + ")";
        String kept = Files.exists(target) ? "; the existing file is unchanged" : "";
        return new IOException(op + ": cannot write " + file + ": " + reason + kept, ex);
    }
}
