package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemoryLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java mirrors of by-value kernel structs agree with the CUDA sources: the constants by text, the
 * layouts by the parameter sizes nvcc emits ({@code .param .align 8 .b8 name[bytes]}; skipped without nvcc).
 */
class KernelStructsTest {
    private static int define(String file, String name) {
        Matcher m = Pattern.compile("#define " + name + " ([0-9]+)").matcher(KernelSources.read(file));
        assertTrue(m.find(), name + " in " + file);
        return Integer.parseInt(m.group(1));
    }

    @Test
    void constantsMatchTheSources() {
        assertEquals(define(KernelSources.HEADER, "JT_MAX_DIMS"), KernelStructs.MAX_DIMS);
        assertEquals(define("optim.cu", "JT_MT_LISTS"), KernelStructs.MT_LISTS);
        assertEquals(define("optim.cu", "JT_MT_TENSORS"), KernelStructs.MT_TENSORS);
        assertEquals(define("optim.cu", "JT_MT_BLOCKS"), KernelStructs.MT_BLOCKS);
        assertEquals(define("optim.cu", "JT_MT_CHUNK"), KernelStructs.MT_CHUNK);
    }

    @Test
    void fieldOffsetsFollowCLayoutRules() {
        assertEquals(4, KernelStructs.STRIDED.byteOffset(MemoryLayout.PathElement.groupElement("dtype")));
        assertEquals(16, KernelStructs.STRIDED.byteOffset(MemoryLayout.PathElement.groupElement("size")));
        assertEquals(80, KernelStructs.STRIDED.byteOffset(MemoryLayout.PathElement.groupElement("stride")));
        assertEquals(8 * 5 * 24 + 8 * 24, KernelStructs.TENSOR_CHUNKS.byteOffset(MemoryLayout.PathElement.groupElement("block_tensor")));
    }

    private static long ptxParamBytes(String ptx, String param) {
        Matcher m = Pattern.compile("\\.param \\.align 8 \\.b8 " + param + "\\[([0-9]+)\\]").matcher(ptx);
        assertTrue(m.find(), param + " in the PTX");
        return Long.parseLong(m.group(1));
    }

    @Test
    void sizesMatchTheParameterSizesInNvccsPtx(@TempDir Path out) throws Exception {
        Optional<Path> nvcc = KernelSourcesTest.nvcc();
        assumeTrue(nvcc.isPresent(), "nvcc not found on PATH or in /usr/local/cuda/bin");
        Path dir = Path.of(KernelSources.class.getResource("kernels/" + KernelSources.HEADER).toURI()).getParent();
        String copy = compile(nvcc.get(), dir.resolve("copy.cu"), out.resolve("copy.ptx"));
        assertEquals(KernelStructs.STRIDED.byteSize(), ptxParamBytes(copy, "jt_copy_strided_param_3"));
        String optim = compile(nvcc.get(), dir.resolve("optim.cu"), out.resolve("optim.ptx"));
        assertEquals(KernelStructs.TENSOR_CHUNKS.byteSize(), ptxParamBytes(optim, "jt_sgd_step_f32_param_0"));
        assertTrue(KernelStructs.TENSOR_CHUNKS.byteSize() + 64 <= 4096, "fits the 4 KiB kernel-parameter limit with the scalars");
    }

    private static String compile(Path nvcc, Path source, Path ptx) throws Exception {
        Process p = new ProcessBuilder(nvcc.toString(), "-arch=sm_90", "--ptx", "-std=c++17", "-o", ptx.toString(), source.toString())
                .redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), log);
        return Files.readString(ptx);
    }
}
