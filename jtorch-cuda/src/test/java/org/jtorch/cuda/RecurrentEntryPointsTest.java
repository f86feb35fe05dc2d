package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jtorch.cuda.KernelEntryPointsTest.Compiler;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.nvrtc.Nvrtc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link CudaRecurrentKernels} launches exists with the signature it packs: {@code recurrent.cu} compiled whole (with
 * {@code nvcc -arch=sm_90 --ptx}, and with NVRTC and the launcher's options) holds exactly the four cell steps for float32
 * and float64, each taking its tensor pointers and two {@code jt_i64}s as {@link KernelArgs#recurrentCell} packs them.
 * Skipped, saying so, where a compiler is missing.
 */
class RecurrentEntryPointsTest {
    /** Entry name (without the dtype suffix) and its number of tensor pointers. */
    private static final Map<String, Integer> POINTERS = Map.of("jt_lstm_cell_forward", 6, "jt_lstm_cell_backward", 7,
            "jt_gru_cell_forward", 5, "jt_gru_cell_backward", 6);

    private static void check(Compiler compiler) throws Exception {
        Map<String, long[]> e = KernelEntryPointsTest.entries(compiler, "recurrent.cu", CudaKernels.selectOptions(null));
        Set<String> expected = new java.util.HashSet<>();
        try (Arena arena = Arena.ofConfined()) {
            for (Map.Entry<String, Integer> p : POINTERS.entrySet()) {
                for (String suffix : List.of("_f32", "_f64")) {
                    String entry = p.getKey() + suffix;
                    expected.add(entry);
                    long[] params = e.get(entry);
                    assertNotNull(params, entry + " missing; entries: " + e.keySet());
                    long[] pointers = new long[p.getValue()];
                    Arrays.fill(pointers, 1);
                    assertEquals(Arrays.toString(params), Arrays.toString(KernelArgs.recurrentCell(arena, 2, 3, pointers).sizes()),
                            "parameter sizes of " + entry);
                }
            }
        }
        assertEquals(expected, e.keySet(), "entries of recurrent.cu");
    }

    @Test
    void nvccBuildsEveryEntryWithThePackedSignature(@TempDir Path out) throws Exception {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        check(KernelEntryPointsTest.nvcc(nvcc.get(), out));
    }

    @Test
    void nvrtcBuildsEveryEntryWithThePackedSignature() throws Exception {
        Optional<Path> dir = TestLibraries.nvrtcDir();
        assumeTrue(dir.isPresent(), TestLibraries.SKIP);
        check(KernelEntryPointsTest.nvrtc(new Nvrtc(new CudaLibraries(List.of(dir.get())).load(CudaLibraries.Kind.NVRTC))));
    }
}
