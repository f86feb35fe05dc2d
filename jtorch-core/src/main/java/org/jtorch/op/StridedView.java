package org.jtorch.op;

import java.lang.foreign.MemorySegment;
import org.jtorch.DType;

/**
 * What a kernel sees of a tensor: its memory (host memory on the CPU; on a device, a segment whose
 * address is the device pointer), the element offset into it, shape and element strides (zero where
 * broadcast), and dtype. Never a {@code Tensor}: kernels cannot call back into the front end.
 * The arrays are the tensor's own and must not be modified.
 */
public record StridedView(MemorySegment memory, long offset, long[] shape, long[] strides, DType dtype) {
    /** The byte address of element 0 (for device kernels, which take raw pointers). */
    public long address() {
        return memory.address() + offset * dtype.byteSize();
    }

    public boolean isContiguous() {
        return Shapes.isContiguous(shape, strides);
    }
}
