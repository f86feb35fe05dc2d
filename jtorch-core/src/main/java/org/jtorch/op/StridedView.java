package org.jtorch.op;

import java.lang.foreign.MemorySegment;
import org.jtorch.memory.Storage;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * What a kernel sees of a tensor: its memory (host memory on the CPU; on a device, a segment whose
 * address is the device pointer), the element offset into it, shape and element strides (zero where
 * broadcast), dtype, and the {@link Storage} that owns the memory (which says the device, and which the
 * backend holds for the length of a kernel call). Never a {@code Tensor}: kernels cannot call back into
 * the front end. The arrays are the tensor's own and must not be modified.
 */
public record StridedView(MemorySegment memory, long offset, long[] shape, long[] strides, DType dtype, Storage storage) {
    /** A view of host memory that no storage owns (generated CPU kernels' own operands, tests). */
    public StridedView(MemorySegment memory, long offset, long[] shape, long[] strides, DType dtype) {
        this(memory, offset, shape, strides, dtype, null);
    }

    /** A contiguous view of the whole of {@code storage} (kernel scratch from the backend's allocator). */
    public static StridedView contiguous(Storage storage, long[] shape, DType dtype) {
        return new StridedView(storage.segment(), 0, shape, Shapes.contiguousStrides(shape), dtype, storage);
    }

    /** The same memory seen with another shape, strides and element offset (what {@code asStrided} is to a tensor). */
    public StridedView restrided(long[] shape, long[] strides, long offset) {
        return new StridedView(memory, offset, shape, strides, dtype, storage);
    }

    /** The same elements seen with shape {@code newShape}, or null where strides cannot express it (a reshape would copy). */
    public StridedView view(long... newShape) {
        long[] st = Shapes.viewStrides(shape, strides, newShape);
        return st == null ? null : new StridedView(memory, offset, newShape, st, dtype, storage);
    }

    /** This view broadcast to {@code target} (stride 0 along broadcast dimensions); an error naming {@code op} when it cannot be. */
    public StridedView expand(String op, long[] target) {
        return new StridedView(memory, offset, target, Shapes.broadcastStrides(op, shape, strides, target), dtype, storage);
    }

    /** The dimensions reordered as {@code dims} lists them (what {@code permute} is to a tensor). */
    public StridedView permute(int... dims) {
        long[] sh = new long[dims.length], st = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            sh[i] = shape[dims[i]];
            st[i] = strides[dims[i]];
        }
        return new StridedView(memory, offset, sh, st, dtype, storage);
    }

    /** The device whose memory this is: the storage's, or the CPU for bare host memory. */
    public Device device() {
        return storage == null ? Device.cpu() : storage.device();
    }

    /** The byte address of element 0 (for device kernels, which take raw pointers). */
    public long address() {
        return memory.address() + offset * dtype.byteSize();
    }

    public long numel() {
        return Shapes.numel(shape);
    }

    public int dim() {
        return shape.length;
    }

    /** Size of dimension {@code d} (negative counts from the end). */
    public long size(int d) {
        return shape[d < 0 ? d + shape.length : d];
    }

    /** Stride of dimension {@code d} in elements (negative counts from the end). */
    public long stride(int d) {
        return strides[d < 0 ? d + strides.length : d];
    }

    public boolean isContiguous() {
        return Shapes.isContiguous(shape, strides);
    }
}
