package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The cuBLASLt constants' internal consistency. The values themselves come from NVIDIA's headers (cited
 * in {@code CublasLtConstants}); no header is available in CI, so these tests check what can be checked
 * without one: the heuristic-result offsets against the C layout rules applied to the declared members,
 * and distinct enumerators within each enum.
 */
class CublasLtConstantsTest {
    /** {@code { uint64_t algo[8]; size_t workspaceSize; int state; float wavesCount; int reserved[4]; }} laid out by FFM's C rules. */
    private static final StructLayout HEURISTIC = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(8, JAVA_LONG).withName("algo"),
            JAVA_LONG.withName("workspaceSize"),
            JAVA_INT.withName("state"),
            JAVA_FLOAT.withName("wavesCount"),
            MemoryLayout.sequenceLayout(4, JAVA_INT).withName("reserved"));

    @Test
    void heuristicResultOffsetsFollowTheCLayoutOfItsMembers() {
        assertEquals(HEURISTIC.byteSize(), HEURISTIC_RESULT_SIZE);
        assertEquals(HEURISTIC.byteAlignment(), HEURISTIC_RESULT_ALIGNMENT);
        assertEquals(HEURISTIC.byteOffset(PathElement.groupElement("algo")), HEURISTIC_ALGO_OFFSET);
        assertEquals(HEURISTIC.byteOffset(PathElement.groupElement("workspaceSize")), HEURISTIC_WORKSPACE_SIZE_OFFSET);
        assertEquals(HEURISTIC.byteOffset(PathElement.groupElement("state")), HEURISTIC_STATE_OFFSET);
        assertEquals(HEURISTIC.byteOffset(PathElement.groupElement("wavesCount")), HEURISTIC_WAVES_COUNT_OFFSET);
        assertEquals(HEURISTIC.byteOffset(PathElement.groupElement("reserved")), HEURISTIC_RESERVED_OFFSET);
    }

    @Test
    void heuristicResultFieldsLieInsideTheStructAndAreAligned() {
        assertEquals(ALGO_SIZE, HEURISTIC_WORKSPACE_SIZE_OFFSET - HEURISTIC_ALGO_OFFSET);
        assertEquals(0, HEURISTIC_WORKSPACE_SIZE_OFFSET % 8);
        assertEquals(0, HEURISTIC_STATE_OFFSET % 4);
        assertEquals(0, HEURISTIC_WAVES_COUNT_OFFSET % 4);
        assertTrue(HEURISTIC_RESERVED_OFFSET + 4 * HEURISTIC_RESERVED_INTS <= HEURISTIC_RESULT_SIZE);
        assertEquals(0, HEURISTIC_RESULT_SIZE % HEURISTIC_RESULT_ALIGNMENT, "arrays of results stay aligned");
    }

    @Test
    void enumeratorsAreDistinctWithinEachEnum() {
        assertEquals(4, Set.of(CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF).size());
        assertEquals(5, Set.of(CUBLAS_COMPUTE_16F, CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_64F,
                CUBLAS_COMPUTE_32F_FAST_TF32).size());
        assertEquals(7, Set.of(CUBLASLT_MATRIX_LAYOUT_TYPE, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_MATRIX_LAYOUT_ROWS,
                CUBLASLT_MATRIX_LAYOUT_COLS, CUBLASLT_MATRIX_LAYOUT_LD, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET).size());
        assertEquals(6, Set.of(CUBLASLT_MATMUL_PREF_SEARCH_MODE, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES).size());
        assertEquals(5, Set.of(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, CUBLASLT_MATMUL_DESC_SCALE_TYPE,
                CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSB).size());
    }

    /** {@code cudaDataType_t} against the toolkit's {@code library_types.h} where one is installed (text parsed). */
    @Test
    void dataTypesMatchLibraryTypesHeader() throws Exception {
        Path h = null;
        for (String dir : new String[] {System.getenv("CUDA_HOME"), "/usr/local/cuda", "/usr"}) {
            if (dir != null && Files.isRegularFile(Path.of(dir, "include", "library_types.h"))) {
                h = Path.of(dir, "include", "library_types.h");
                break;
            }
        }
        assumeTrue(h != null, "no library_types.h in $CUDA_HOME/include, /usr/local/cuda/include or /usr/include");
        String text = Files.readString(h);
        for (Map.Entry<String, Integer> e : Map.of("CUDA_R_32F", CUDA_R_32F, "CUDA_R_64F", CUDA_R_64F, "CUDA_R_16F", CUDA_R_16F,
                "CUDA_R_16BF", CUDA_R_16BF).entrySet()) {
            Matcher m = Pattern.compile("\\b" + e.getKey() + "\\s*=\\s*(\\d+)").matcher(text);
            assertTrue(m.find(), e.getKey() + " not declared in " + h);
            assertEquals(Integer.parseInt(m.group(1)), e.getValue(), e.getKey() + " in " + h);
        }
    }

    @Test
    void statusNamesAreTheHeadersEnumerators() {
        assertEquals("CUBLAS_STATUS_SUCCESS", statusName(CUBLAS_STATUS_SUCCESS));
        assertEquals("CUBLAS_STATUS_NOT_SUPPORTED", statusName(15));
        assertEquals("cublasStatus_t 99", statusName(99));
    }
}
