package org.jtorch.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The CUDA C++ kernel sources shipped as resources under {@code org/jtorch/cuda/kernels/}: each
 * {@code .cu} file includes the shared header {@value #HEADER}, which NVRTC receives as a named header.
 */
public final class KernelSources {
    public static final String HEADER = "jtorch_cuda.cuh";
    /** Every kernel file, in the order the smoke test and docs list them. */
    public static final List<String> FILES = List.of("elementwise.cu", "copy.cu", "reduce.cu", "optim.cu", "random.cu", "index.cu",
            "conv.cu", "pool.cu", "norm.cu");

    private KernelSources() {}

    /** The text of resource {@code name} ({@code elementwise.cu}, {@value #HEADER}). */
    public static String read(String name) {
        try (InputStream in = KernelSources.class.getResourceAsStream("kernels/" + name)) {
            if (in == null) throw new IllegalArgumentException("no kernel source " + name + " in org/jtorch/cuda/kernels");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The headers every kernel file needs, by include name. */
    public static Map<String, String> headers() {
        return Map.of(HEADER, read(HEADER));
    }

    /** NVRTC options for a device of compute capability {@code major.minor}. */
    public static List<String> options(int major, int minor, boolean ptx) {
        String arch = (ptx ? "compute_" : "sm_") + major + minor;
        return List.of("--gpu-architecture=" + arch, "-std=c++17");
    }
}
