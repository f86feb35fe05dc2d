package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.jtorch.cuda.cudnn.CudnnConstants.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The cuDNN constants' internal consistency. The values come from NVIDIA's headers (cited in
 * {@code CudnnConstants}); none is installed here, so this checks what can be checked without one: the
 * perf-result offsets against the C layout rules applied to the declared members, and distinct
 * enumerators within each enum.
 */
class CudnnConstantsTest {
    /**
     * {@code { int algo; int status; float time; size_t memory; int determinism; int mathType; int reserved[3]; }}
     * laid out by the C rules: 4 bytes of padding before {@code memory} and after {@code reserved}.
     */
    private static final StructLayout PERF = MemoryLayout.structLayout(
            JAVA_INT.withName("algo"),
            JAVA_INT.withName("status"),
            JAVA_FLOAT.withName("time"),
            MemoryLayout.paddingLayout(4),
            JAVA_LONG.withName("memory"),
            JAVA_INT.withName("determinism"),
            JAVA_INT.withName("mathType"),
            MemoryLayout.sequenceLayout(3, JAVA_INT).withName("reserved"),
            MemoryLayout.paddingLayout(4));

    @Test
    void perfResultOffsetsFollowTheCLayoutOfItsMembers() {
        assertEquals(PERF.byteSize(), PERF_SIZE);
        assertEquals(PERF.byteAlignment(), PERF_ALIGNMENT);
        assertEquals(PERF.byteOffset(PathElement.groupElement("algo")), PERF_ALGO_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("status")), PERF_STATUS_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("time")), PERF_TIME_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("memory")), PERF_MEMORY_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("determinism")), PERF_DETERMINISM_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("mathType")), PERF_MATH_TYPE_OFFSET);
        assertEquals(PERF.byteOffset(PathElement.groupElement("reserved")), PERF_RESERVED_OFFSET);
        assertEquals(PERF.select(PathElement.groupElement("reserved")).byteSize(), 4 * PERF_RESERVED_INTS);
        assertEquals(0, PERF_SIZE % PERF_ALIGNMENT, "arrays of results stay aligned");
    }

    @Test
    void enumeratorsAreDistinctWithinEachEnum() {
        assertEquals(4, Set.of(CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16).size());
        assertEquals(4, Set.of(CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH).size());
        assertEquals(2, Set.of(CUDNN_CONVOLUTION, CUDNN_CROSS_CORRELATION).size());
        assertEquals(2, Set.of(CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC).size());
        assertTrue(CUDNN_CONVOLUTION_FWD_ALGO_COUNT > 0 && CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT > 0
                && CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT > 0);
    }
}
