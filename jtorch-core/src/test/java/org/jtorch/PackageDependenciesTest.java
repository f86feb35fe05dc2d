package org.jtorch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The layering of issue 15 that holds so far, read from the sources: the op registry ({@code op}) and the backends
 * ({@code backend}) sit below the front end and never name {@code Tensor} or the packages above them, and {@code Tensor}
 * names none of the front-end packages above it ({@code data}, {@code nn}, ...: pinned memory comes from the backends);
 * {@code memory} (storages, allocators, scopes) names only the value types ({@code DType}, {@code Device}): a scope tracks
 * any {@code memory.Scoped}. (Still to cut: {@code ops}, {@code amp.Autocast} and {@code autograd} name {@code Tensor}
 * and each other.)
 */
class PackageDependenciesTest {
    private static final Pattern REFERENCE = Pattern.compile("\\borg\\.jtorch\\.(Tensor\\b|[a-z]+\\b)");

    private static Path sources() {
        for (String p : new String[] {"src/main/java/org/jtorch", "jtorch-core/src/main/java/org/jtorch"}) {
            if (Files.isDirectory(Path.of(p))) return Path.of(p);
        }
        throw new IllegalStateException("jtorch-core's sources are not under the working directory " + Path.of("").toAbsolutePath());
    }

    /** A source file without its comments: comments may name anything, only code counts. */
    private static String code(Path f) throws IOException {
        return Files.readString(f).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
    }

    /** The files of {@code pkg} (and its subpackages) that refer to any of {@code forbidden}, with what they refer to. */
    private static List<String> references(String pkg, List<String> forbidden) throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(pkg.isEmpty() ? sources() : sources().resolve(pkg))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = REFERENCE.matcher(code(f));
                while (m.find()) {
                    if (forbidden.contains(m.group(1))) found.add(sources().relativize(f) + " -> " + m.group(1));
                }
            }
        }
        return found.stream().distinct().toList();
    }

    @Test
    void theOpRegistryNamesNothingAboveIt() throws IOException {
        assertEquals(List.of(), references("op", List.of("Tensor", "ops", "backend", "amp", "autograd", "data", "jit", "nn", "optim")));
    }

    @Test
    void theBackendsNameNeitherTensorNorTheFrontEnd() throws IOException {
        assertEquals(List.of(), references("backend", List.of("Tensor", "ops", "amp", "autograd", "data", "jit", "nn", "optim")));
    }

    @Test
    void memoryNamesNeitherTensorNorAnythingAboveIt() throws IOException {
        assertEquals(List.of(), references("memory", List.of("Tensor", "Torch", "op", "ops", "backend", "amp", "autograd", "data", "jit",
                "nn", "optim")));
    }

    /** What {@code file} (directly in package {@code org.jtorch}) refers to among {@code forbidden}. */
    private static List<String> referencesOf(String file, List<String> forbidden) throws IOException {
        return references("", forbidden).stream().filter(r -> r.startsWith(file + " -> ")).toList();
    }

    @Test
    void tensorNamesNoFrontEndPackageAboveIt() throws IOException {
        assertEquals(List.of(), referencesOf("Tensor.java", List.of("data", "nn", "optim", "jit", "io", "distributed", "vision",
                "backend", "amp")));
    }

    @Test
    void theFrontEndNamesOnlyTheCpuBackendsThreadPool() throws IOException {
        // element reads and writes go through memory.ElementCodec; the CPU backend's kernels are reached through the
        // dispatcher. Its thread pool is the one CPU setting the front end owns (Torch.setNumThreads, DataLoader workers).
        Pattern cpuBackend = Pattern.compile("\\borg\\.jtorch\\.backend\\.cpu\\.(\\w+)");
        List<String> found = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sources())) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java") && !sources().relativize(p).startsWith("backend")).toList()) {
                Matcher m = cpuBackend.matcher(code(f));
                while (m.find()) {
                    if (!m.group(1).equals("Parallel")) found.add(sources().relativize(f) + " -> backend.cpu." + m.group(1));
                }
            }
        }
        assertEquals(List.of(), found);
    }

    @Test
    void theCheckSeesAReference() throws IOException {
        // the check itself: Tensor.java does refer to the front end's ops
        assertTrue(references("", List.of("ops")).stream().anyMatch(r -> r.startsWith("Tensor.java")));
    }
}
