package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

/**
 * Java mirrors of the structs the kernels take by value, for building launch parameters. Field order,
 * sizes and padding follow the C declarations; {@code KernelStructsTest} checks the constants against
 * the sources and the sizes against the parameter sizes nvcc emits in the PTX.
 */
public final class KernelStructs {
    private KernelStructs() {}

    /** {@code JT_MAX_DIMS} of {@code jtorch_cuda.cuh}. */
    public static final int MAX_DIMS = 8;
    /** {@code JT_MT_LISTS}, {@code JT_MT_TENSORS}, {@code JT_MT_BLOCKS}, {@code JT_MT_CHUNK} of {@code optim.cu}. */
    public static final int MT_LISTS = 5;
    public static final int MT_TENSORS = 24;
    public static final int MT_BLOCKS = 320;
    public static final int MT_CHUNK = 65536;

    /** {@code jt::Strided}: int ndim; int dtype[3]; long long size[8]; long long stride[3][8]. */
    public static final StructLayout STRIDED = MemoryLayout.structLayout(
            JAVA_INT.withName("ndim"),
            MemoryLayout.sequenceLayout(3, JAVA_INT).withName("dtype"),
            MemoryLayout.sequenceLayout(MAX_DIMS, JAVA_LONG).withName("size"),
            MemoryLayout.sequenceLayout(3, MemoryLayout.sequenceLayout(MAX_DIMS, JAVA_LONG)).withName("stride"));

    /** {@code jt::TensorChunks}: u64 lists[5][24]; i64 numel[24]; int block_tensor[320]; int block_chunk[320]. */
    public static final StructLayout TENSOR_CHUNKS = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(MT_LISTS, MemoryLayout.sequenceLayout(MT_TENSORS, JAVA_LONG)).withName("lists"),
            MemoryLayout.sequenceLayout(MT_TENSORS, JAVA_LONG).withName("numel"),
            MemoryLayout.sequenceLayout(MT_BLOCKS, JAVA_INT).withName("block_tensor"),
            MemoryLayout.sequenceLayout(MT_BLOCKS, JAVA_INT).withName("block_chunk"));
}
