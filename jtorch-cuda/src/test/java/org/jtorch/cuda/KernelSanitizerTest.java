package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jtorch.cuda.driver.CudaDriver;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.junit.jupiter.api.Test;

/**
 * The CUDA simulator's AddressSanitizer pass (JTSIM_ASAN=1, libasan preloaded; {@code scripts/cuda-sim test}
 * runs the device suites that way): a kernel writing one element past its buffer must stop the process with a
 * report that names the kernel. Skipped outside that pass.
 */
class KernelSanitizerTest {
    @Test
    void aKernelWritingPastItsBufferIsReportedByName() throws IOException, InterruptedException {
        assumeTrue(System.getenv("JTSIM_ASAN") != null && Cuda.isAvailable(), "runs in the simulator's AddressSanitizer pass");
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-cp",
                location(WritePastEnd.class) + File.pathSeparator + location(CudaRuntime.class) + File.pathSeparator
                        + location(org.jtorch.Tensor.class), WritePastEnd.class.getName());
        Path log = Files.createTempFile("write-past-end", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the child JVM did not finish");
            String output = Files.readString(log, StandardCharsets.UTF_8);
            assertNotEquals(0, p.exitValue(), output);
            assertTrue(output.contains("AddressSanitizer: heap-buffer-overflow"), output);
            assertTrue(output.contains(" in write_past_end "), output);
        } finally {
            Files.deleteIfExists(log);
        }
    }

    private static String location(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The child JVM: one thread writes out[n] of an n-element device buffer. */
    static final class WritePastEnd {
        public static void main(String[] args) {
            CudaRuntime rt = CudaRuntime.system();
            rt.makeCurrent(0);
            CudaDriver d = rt.driver();
            Nvrtc nvrtc = new Nvrtc(rt.libraries().load(CudaLibraries.Kind.NVRTC));
            CudaRuntime.DeviceInfo info = rt.devices().get(0);
            KernelSources.Target target = KernelSources.target(info.major(), info.minor(), nvrtc.supportedArchs());
            String source = "extern \"C\" __global__ void write_past_end(int* out, int n) { out[n] = 1; }";
            byte[] image = nvrtc.compile("write_past_end.cu", source, Map.of(), target.options(), target.output()).image();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment segment = arena.allocate(image.length + 1);
                segment.copyFrom(MemorySegment.ofArray(image));
                long f = d.moduleGetFunction(d.moduleLoadData(segment), "write_past_end");
                int n = 1024;
                long out = d.memAlloc(4L * n);
                MemorySegment params = arena.allocate(ADDRESS, 2);
                params.setAtIndex(ADDRESS, 0, arena.allocateFrom(JAVA_LONG, out));
                params.setAtIndex(ADDRESS, 1, arena.allocateFrom(JAVA_INT, n));
                d.launchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params);
                d.streamSynchronize(0);
            }
            System.out.println("no report: the write past the end went unnoticed");
        }
    }
}
