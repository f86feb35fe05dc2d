package org.jtorch.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.jtorch.cuda.nvrtc.Nvrtc;

/**
 * The CUDA C++ kernel sources shipped as resources under {@code org/jtorch/cuda/kernels/}: each
 * {@code .cu} file includes the shared header {@value #HEADER}, which NVRTC receives as a named header.
 */
public final class KernelSources {
    public static final String HEADER = "jtorch_cuda.cuh";
    /** Every kernel file, in the order the smoke test and docs list them. */
    public static final List<String> FILES = List.of("elementwise.cu", "copy.cu", "reduce.cu", "optim.cu", "random.cu", "index.cu",
            "conv.cu", "pool.cu", "norm.cu", "recurrent.cu", "layernorm.cu",
            "multinomial.cu", "syncbn.cu", "valuecheck.cu");

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

    /** The elementwise kernels' shared machinery, included by {@code elementwise.cu} and the generated formula kernels. */
    public static final String ELEMENTWISE_HEADER = "elementwise.cuh";

    /** Layer norm's row normalisation, included by {@code layernorm.cu} and the JIT's kernels of a formula fused into a layer norm. */
    public static final String LAYER_NORM_HEADER = "layernorm.cuh";

    /**
     * The block reductions of a row and the row softmax, included by {@code reduce.cu} and the JIT's kernels of a formula
     * fused into a softmax.
     */
    public static final String ROW_REDUCE_HEADER = "rowreduce.cuh";

    /** The headers the kernel files need, by include name. */
    public static Map<String, String> headers() {
        return Map.of(HEADER, read(HEADER), ELEMENTWISE_HEADER, read(ELEMENTWISE_HEADER), LAYER_NORM_HEADER, read(LAYER_NORM_HEADER),
                ROW_REDUCE_HEADER, read(ROW_REDUCE_HEADER));
    }

    /**
     * How kernels are compiled for one device: {@code output} for architecture {@code arch} (compute
     * capability times ten).
     */
    public record Target(Nvrtc.Output output, int arch) {
        /** The NVRTC options: {@code sm_XY} for CUBIN, {@code compute_XY} for PTX. */
        public List<String> options() {
            return KernelSources.options(arch / 10, arch % 10, output == Nvrtc.Output.PTX);
        }
    }

    /**
     * The target for a device of compute capability {@code major.minor} given the real architectures an NVRTC
     * supports ({@link Nvrtc#supportedArchs()}): CUBIN for the device's exact architecture when NVRTC knows it
     * (no JIT step when a module loads); otherwise PTX for the newest architecture it knows below the device's,
     * which the driver compiles for the device; PTX for the device's own when NVRTC cannot list its
     * architectures (before 11.2). An NVRTC whose every architecture is newer than the device cannot serve it.
     */
    public static Target target(int major, int minor, int[] supportedArchs) {
        int device = major * 10 + minor;
        if (supportedArchs.length == 0) return new Target(Nvrtc.Output.PTX, device);
        int best = -1;
        for (int a : supportedArchs) {
            if (a == device) return new Target(Nvrtc.Output.CUBIN, device);
            if (a < device) best = Math.max(best, a);
        }
        if (best < 0) {
            throw new IllegalStateException("NVRTC compiles for compute capabilities " + java.util.Arrays.toString(supportedArchs)
                    + " (times ten), none of which a device of compute capability " + major + "." + minor + " runs");
        }
        return new Target(Nvrtc.Output.PTX, best);
    }

    /** NVRTC options for a device of compute capability {@code major.minor}. */
    public static List<String> options(int major, int minor, boolean ptx) {
        String arch = (ptx ? "compute_" : "sm_") + major + minor;
        return List.of("--gpu-architecture=" + arch, "-std=c++17");
    }
}
