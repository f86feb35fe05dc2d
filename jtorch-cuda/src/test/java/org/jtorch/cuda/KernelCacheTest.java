package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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
}
