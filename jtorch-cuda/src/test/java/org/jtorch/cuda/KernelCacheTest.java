package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jtorch.cuda.nvrtc.KernelCache;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The on-disk kernel cache's keying and storage, with a counting stand-in for the compiler. */
class KernelCacheTest {
    @TempDir
    Path dir;

    private final AtomicInteger compiles = new AtomicInteger();
    private final KernelCache.Compiler compiler = (name, source, headers, options, output) -> {
        compiles.incrementAndGet();
        return new Nvrtc.Compiled(output, (source + options + "\0").getBytes(StandardCharsets.UTF_8), "");
    };

    private static final List<String> SM90 = List.of("--gpu-architecture=compute_90");

    @Test
    void theKeyChangesWithSourceHeadersOptionsOutputAndCompilerVersion() {
        KernelCache c = new KernelCache(dir, "12.4", compiler);
        String base = c.key("src", Map.of("h.cuh", "x"), SM90, Nvrtc.Output.PTX);
        assertEquals(base, c.key("src", Map.of("h.cuh", "x"), SM90, Nvrtc.Output.PTX));
        assertNotEquals(base, c.key("src2", Map.of("h.cuh", "x"), SM90, Nvrtc.Output.PTX));
        assertNotEquals(base, c.key("src", Map.of("h.cuh", "y"), SM90, Nvrtc.Output.PTX));
        assertNotEquals(base, c.key("src", Map.of("h.cuh", "x"), List.of("--gpu-architecture=compute_80"), Nvrtc.Output.PTX));
        assertNotEquals(base, c.key("src", Map.of("h.cuh", "x"), SM90, Nvrtc.Output.CUBIN));
        assertNotEquals(base, new KernelCache(dir, "12.5", compiler).key("src", Map.of("h.cuh", "x"), SM90, Nvrtc.Output.PTX));
        // Boundaries between fields are unambiguous.
        assertNotEquals(c.key("ab", Map.of(), List.of("c"), Nvrtc.Output.PTX), c.key("a", Map.of(), List.of("bc"), Nvrtc.Output.PTX));
    }

    @Test
    void aSecondRequestIsServedFromDiskWithoutCompiling() throws Exception {
        byte[] first = new KernelCache(dir, "12.4", compiler).get("k.cu", "src", Map.of(), SM90, Nvrtc.Output.PTX);
        KernelCache later = new KernelCache(dir, "12.4", compiler);
        assertArrayEquals(first, later.get("k.cu", "src", Map.of(), SM90, Nvrtc.Output.PTX));
        assertEquals(1, compiles.get());
        assertEquals(1, later.hits());
        try (var files = Files.list(dir)) {
            assertEquals(List.of(later.key("src", Map.of(), SM90, Nvrtc.Output.PTX) + ".ptx"),
                    files.map(p -> p.getFileName().toString()).toList(), "one file, no temporaries left");
        }
    }

    @Test
    void anUnwritableDirectoryOnlyCostsTheCaching() throws Exception {
        Path notADir = Files.writeString(dir.resolve("file"), "");
        KernelCache c = new KernelCache(notADir.resolve("sub"), "12.4", compiler);
        c.get("k.cu", "src", Map.of(), SM90, Nvrtc.Output.PTX);
        c.get("k.cu", "src", Map.of(), SM90, Nvrtc.Output.PTX);
        assertEquals(2, compiles.get());
    }

    @Test
    void defaultDirectoryFollowsTheEnvironment() {
        Path home = Path.of("/home/u");
        assertEquals(Path.of("/k"), KernelCache.defaultDirectory(Map.of("JTORCH_KERNEL_CACHE", "/k", "XDG_CACHE_HOME", "/x"), home));
        assertEquals(Path.of("/x/jtorch/kernels"), KernelCache.defaultDirectory(Map.of("XDG_CACHE_HOME", "/x"), home));
        assertEquals(Path.of("/home/u/.cache/jtorch/kernels"), KernelCache.defaultDirectory(Map.of(), home));
    }

    /**
     * Two processes missing the same kernel at once (ranks of one job starting together): the second waits for the
     * first's compile and reads its image instead of compiling it again. The first's compile lasts until the second has
     * asked for the kernel, so without the lock both compile.
     */
    @Test
    void aSecondProcessWaitsForTheFirstsCompileInsteadOfCompilingAgain() throws Exception {
        Path cache = dir.resolve("cache");
        Path asked = dir.resolve("second-asked");
        Path firstLog = dir.resolve("first.txt");
        Path secondLog = dir.resolve("second.txt");
        Process first = child(cache, asked, "first", firstLog);
        Process second = null;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!Files.readString(firstLog).contains("compiling") && first.isAlive() && System.nanoTime() < deadline) Thread.sleep(20);
            assertTrue(Files.readString(firstLog).contains("compiling"), "the first process never compiled: " + Files.readString(firstLog));
            second = child(cache, asked, "second", secondLog);
            assertTrue(second.waitFor(180, TimeUnit.SECONDS) && first.waitFor(60, TimeUnit.SECONDS), "a child did not finish");
        } finally {
            first.destroyForcibly();
            if (second != null) second.destroyForcibly();
        }
        String out = Files.readString(firstLog) + Files.readString(secondLog);
        assertTrue(out.contains("first compiles=1 hits=0") && out.contains("second compiles=0 hits=1"), out);
        try (var files = Files.list(cache)) {
            assertEquals(1, files.count(), "the image only: no lock file or temporary left");
        }
    }

    private static Process child(Path cache, Path asked, String role, Path log) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-cp", location(CompilingProcess.class) + java.io.File.pathSeparator + location(KernelCache.class),
                CompilingProcess.class.getName(), cache.toString(), asked.toString(), role));
        Files.writeString(log, "");
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private static String location(Class<?> c) throws Exception {
        return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    /**
     * A child of {@link #aSecondProcessWaitsForTheFirstsCompileInsteadOfCompilingAgain}: {@code first} compiles until
     * the {@code asked} file exists (and a second more); {@code second} makes that file, then asks for the kernel.
     */
    static final class CompilingProcess {
        public static void main(String[] args) throws Exception {
            Path asked = Path.of(args[1]);
            boolean first = args[2].equals("first");
            KernelCache cache = new KernelCache(Path.of(args[0]), "12.4", (name, source, headers, options, output) -> {
                System.out.println(args[2] + " compiling");
                System.out.flush();
                try {
                    while (first && !Files.exists(asked)) Thread.sleep(20);
                    if (first) Thread.sleep(1000);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                return new Nvrtc.Compiled(output, "image".getBytes(StandardCharsets.UTF_8), "");
            });
            if (!first) Files.writeString(asked, "");
            cache.get("k.cu", "src", Map.of(), SM90, Nvrtc.Output.CUBIN);
            System.out.println(args[2] + " compiles=" + cache.compiles() + " hits=" + cache.hits());
        }
    }
}
