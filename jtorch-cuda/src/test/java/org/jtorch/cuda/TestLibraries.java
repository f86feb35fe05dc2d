package org.jtorch.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Locates the optional no-GPU CUDA libraries that {@code scripts/fetch-cuda-libs} unpacks into
 * {@code .cuda-libs/} at the repository root (Debian's NVRTC 11.8 and a Tesla-driver libcuda).
 */
final class TestLibraries {
    private TestLibraries() {}

    static Optional<Path> root() {
        String explicit = System.getProperty("jtorch.cudaTestLibs");
        if (explicit != null) return Optional.of(Path.of(explicit)).filter(Files::isDirectory);
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolve(".cuda-libs");
            if (Files.isDirectory(candidate)) return Optional.of(candidate);
        }
        return Optional.empty();
    }

    /** The folder holding libnvrtc, if fetched. */
    static Optional<Path> nvrtcDir() {
        return root().map(r -> r.resolve("nvrtc")).filter(Files::isDirectory);
    }

    /** The folder holding a libcuda.so.1 that runs without a GPU, if fetched. */
    static Optional<Path> driverWithoutGpuDir() {
        return root().map(r -> r.resolve("driver-no-gpu")).filter(Files::isDirectory);
    }

    static final String SKIP = "no .cuda-libs folder: run scripts/fetch-cuda-libs to unpack Debian's NVRTC and libcuda for this test";
}
