package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The library search order and file choice (DESIGN.md section 6, issue 5), on a temporary file tree. */
class CudaLibrariesTest {
    @TempDir
    Path tmp;

    private Path dir(String relative) throws IOException {
        return Files.createDirectories(tmp.resolve(relative));
    }

    private Path file(String relative) throws IOException {
        Path p = tmp.resolve(relative);
        Files.createDirectories(p.getParent());
        return Files.writeString(p, "");
    }

    @Test
    void searchOrderIsExplicitPathThenLdLibraryPathThenCudaToolkitsThenSystemThenPythonWheels() throws IOException {
        Path explicit = dir("opt/mycuda");
        Path explicitLib64 = dir("opt/mycuda/lib64");
        Path ld = dir("ld");
        Path cuda = dir("fs/usr/local/cuda/lib64");
        Path cuda118 = dir("fs/usr/local/cuda-11.8/lib64");
        Path cuda124 = dir("fs/usr/local/cuda-12.4/lib64");
        Path system = dir("fs/usr/lib/x86_64-linux-gnu");
        Path venvCudnn = dir("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
        Path venvCublas = dir("venv/lib/python3.11/site-packages/nvidia/cublas/lib");
        Path userNvrtc = dir("home/.local/lib/python3.10/site-packages/nvidia/cuda_nvrtc/lib");
        Map<String, String> env = Map.of("JTORCH_CUDA_PATH", explicit.toString(),
                "LD_LIBRARY_PATH", ld + ":" + tmp.resolve("missing"), "VIRTUAL_ENV", tmp.resolve("venv").toString());
        List<Path> dirs = CudaLibraries.searchDirectories(env, tmp.resolve("fs"), tmp.resolve("home"));
        assertEquals(List.of(explicit, explicitLib64, ld, cuda, cuda124, cuda118, system, venvCublas, venvCudnn, userNvrtc), dirs);
    }

    @Test
    void theFirstDirectoryHoldingALibraryWinsAndThereTheHighestSonameVersion() throws IOException {
        file("a/libcudnn.so.8");
        file("a/libcudnn.so.9");
        file("a/libcudnn.so.9.1.0");
        file("b/libcudnn.so.10");
        file("a/libnvrtc-builtins.so.12.4");
        file("b/libnvrtc.so.12");
        CudaLibraries libs = new CudaLibraries(List.of(tmp.resolve("a"), tmp.resolve("b")));
        assertEquals(tmp.resolve("a/libcudnn.so.9.1.0"), libs.locate(CudaLibraries.Kind.CUDNN).orElseThrow());
        assertEquals(tmp.resolve("b/libnvrtc.so.12"), libs.locate(CudaLibraries.Kind.NVRTC).orElseThrow(),
                "libnvrtc-builtins is not NVRTC itself");
    }

    @Test
    void driverPatternMatchesLibcudaButNotTheRuntimeLibrary() {
        assertTrue(CudaLibraries.Kind.DRIVER.matches("libcuda.so.1"));
        assertTrue(CudaLibraries.Kind.DRIVER.matches("libcuda.so"));
        assertFalse(CudaLibraries.Kind.DRIVER.matches("libcudart.so.13"));
        assertFalse(CudaLibraries.Kind.CUBLAS.matches("libcublasLt.so.12"));
        assertTrue(CudaLibraries.Kind.CUBLASLT.matches("libcublasLt.so.12"));
    }

    @Test
    void aMissingLibraryIsReportedWithEveryDirectorySearched() throws IOException {
        Path a = dir("a"), b = dir("b");
        CudaLibraries libs = new CudaLibraries(List.of(a, b));
        CudaLibraries.Status s = libs.status(CudaLibraries.Kind.CUBLASLT);
        assertFalse(s.found());
        assertEquals("not found: no libcublasLt.so* in " + List.of(a, b), s.problem());
        assertEquals("cuBLASLt  not found: no libcublasLt.so* in " + List.of(a, b), s.describe());
    }

    @Test
    void aFileThatIsNotALibraryIsReportedNotLoadableWithTheLoadersMessage() throws IOException {
        file("a/libcudnn.so.9");
        CudaLibraries.Status s = new CudaLibraries(List.of(tmp.resolve("a"))).status(CudaLibraries.Kind.CUDNN);
        assertFalse(s.found());
        assertTrue(s.problem().startsWith("not loadable: cannot load " + tmp.resolve("a/libcudnn.so.9")), s.problem());
    }
}
