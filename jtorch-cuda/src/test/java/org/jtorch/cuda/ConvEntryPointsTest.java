package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.cuda.KernelEntryPointsTest.Compiler;
import org.jtorch.cuda.kernels.ConvPlan;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code CudaConvolutionKernels} launches exists with the signature it packs: {@code conv.cu}
 * compiled whole (with {@code nvcc -arch=sm_90 --ptx}, and with NVRTC and the launcher's options for an
 * sm_90 device) contains exactly the entries {@link ConvPlan#entry} names for its four ops and four
 * dtypes, and each entry's PTX parameter sizes equal what {@link ConvPlan} packs (the 52-byte
 * {@code jt::ConvShape} included). Each compiler's case is skipped, saying so, where it is missing.
 */
class ConvEntryPointsTest {
    private static final List<String> OPS = List.of("im2col", "col2im", "bias_add", "bias_grad");
    private static final List<DType> DTYPES = List.of(DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64);

    @Test
    void withNvcc(@TempDir Path out) throws Exception {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        check(KernelEntryPointsTest.nvcc(nvcc.get(), out));
    }

    @Test
    void withNvrtc() throws Exception {
        Optional<Path> dir = TestLibraries.nvrtcDir();
        assumeTrue(dir.isPresent(), TestLibraries.SKIP);
        check(KernelEntryPointsTest.nvrtc(new Nvrtc(new CudaLibraries(List.of(dir.get())).load(CudaLibraries.Kind.NVRTC))));
    }

    private static void check(Compiler compiler) throws Exception {
        Map<String, long[]> entries = KernelEntryPointsTest.entries(compiler, "conv.cu", CudaKernels.selectOptions(null));
        Set<String> planned = new HashSet<>();
        Geometry g = new Geometry(2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 8, 8);
        try (Arena arena = Arena.ofConfined()) {
            for (String op : OPS) {
                for (DType t : DTYPES) {
                    String entry = ConvPlan.entry(op, t);
                    planned.add(entry);
                    KernelArgs args = op.equals("im2col") || op.equals("col2im")
                            ? ConvPlan.columns(arena, 1, 2, 3, ConvPlan.packShape(arena, 3, g))
                            : ConvPlan.bias(arena, 1, 2, 3, 4, 5);
                    long[] params = entries.get(entry);
                    assertNotNull(params, entry + " missing; entries: " + entries.keySet());
                    assertEquals(Arrays.toString(params), Arrays.toString(args.sizes()), "parameter sizes of " + entry);
                }
            }
        }
        assertEquals(planned, entries.keySet(), "entries of conv.cu");
        assertEquals(ConvPlan.SHAPE_BYTES, entries.get("jt_conv_im2col_f32")[3], "jt::ConvShape bytes");
    }
}
