package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kernel sources: each compiles as is with {@code nvcc -arch=sm_90 --ptx} with every warning an
 * error (skipped, saying so, where nvcc is not installed); the dtype codes of the shared header
 * are {@link DType}'s ordinals; every {@code .cu} file is listed in {@link KernelSources#FILES}.
 */
class KernelSourcesTest {
    private static Path kernelDir() throws URISyntaxException {
        return Path.of(KernelSources.class.getResource("kernels/" + KernelSources.HEADER).toURI()).getParent();
    }

    static Optional<Path> nvcc() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "nvcc");
            if (Files.isExecutable(p)) return Optional.of(p);
        }
        Path p = Path.of("/usr/local/cuda/bin/nvcc");
        return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
    }

    @Test
    void dtypeCodesAreTheOrdinalsOfDType() {
        String header = KernelSources.read(KernelSources.HEADER);
        Matcher m = Pattern.compile("#define JT_DTYPE_([A-Z0-9]+) ([0-9]+)").matcher(header);
        int n = 0;
        while (m.find()) {
            assertEquals(DType.valueOf(m.group(1)).ordinal(), Integer.parseInt(m.group(2)), "JT_DTYPE_" + m.group(1));
            n++;
        }
        assertEquals(DType.values().length, n, "one code per dtype");
    }

    @Test
    void everyKernelFileIsListed() throws Exception {
        try (var files = Files.list(kernelDir())) {
            assertEquals(new TreeSet<>(KernelSources.FILES),
                    new TreeSet<>(files.map(p -> p.getFileName().toString()).filter(s -> s.endsWith(".cu")).toList()));
        }
    }

    @TestFactory
    List<DynamicTest> everyKernelFileCompilesWithNvccForSm90(@TempDir Path out) throws Exception {
        Optional<Path> nvcc = nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        Path dir = kernelDir();
        List<DynamicTest> tests = new ArrayList<>();
        for (String file : KernelSources.FILES) {
            tests.add(DynamicTest.dynamicTest(file, () -> {
                Path ptx = out.resolve(file + ".ptx");
                Process p = new ProcessBuilder(nvcc.get().toString(), "-arch=sm_90", "--ptx", "-std=c++17",
                        "-Werror", "all-warnings", "-o", ptx.toString(), dir.resolve(file).toString())
                        .redirectErrorStream(true).start();
                String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(0, p.waitFor(), "nvcc " + file + ":\n" + output);
                assertTrue(Files.readString(ptx).contains(".entry jt_"), "entry points in " + ptx);
            }));
        }
        return tests;
    }

    @Test
    void aDeviceNvrtcKnowsGetsACubinForItsExactArchitecture() {
        int[] nvrtc118 = {35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
        KernelSources.Target t = KernelSources.target(9, 0, nvrtc118);
        assertEquals(new KernelSources.Target(org.jtorch.cuda.nvrtc.Nvrtc.Output.CUBIN, 90), t);
        assertEquals(List.of("--gpu-architecture=sm_90", "-std=c++17"), t.options());
    }

    @Test
    void aDeviceNewerThanNvrtcGetsPtxOfTheNewestArchitectureBelowIt() {
        int[] nvrtc118 = {35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
        KernelSources.Target t = KernelSources.target(10, 0, nvrtc118);
        assertEquals(new KernelSources.Target(org.jtorch.cuda.nvrtc.Nvrtc.Output.PTX, 90), t);
        assertEquals(List.of("--gpu-architecture=compute_90", "-std=c++17"), t.options());
        // NVRTC before 11.2 cannot list its architectures: PTX for the device's own.
        assertEquals(new KernelSources.Target(org.jtorch.cuda.nvrtc.Nvrtc.Output.PTX, 86), KernelSources.target(8, 6, new int[0]));
    }

    @Test
    void aDeviceOlderThanEveryNvrtcArchitectureIsRefusedNamingBoth() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> KernelSources.target(6, 0, new int[] {75, 80, 90}));
        assertTrue(e.getMessage().contains("[75, 80, 90]") && e.getMessage().contains("6.0"), e.getMessage());
    }
}
