package org.jtorch.backend;

import org.jtorch.op.IndexingOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the declared indexing ops ({@link IndexingOps}) for one backend, from its {@link IndexKernels}: the
 * out-of-place scatters copy {@code self} into the result and scatter into that. A 0-d operand is seen as 1-d of size 1.
 */
public final class IndexingOpKernels {
    private IndexingOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, IndexingOps.COUNT_NONZERO.kernel(), (out, in, g) -> countNonzero(backend, out, in[0], g));
        KernelRegistry.register(type, IndexingOps.NONZERO.kernel(), (out, in, g) -> backend.indexing().nonzero(in[0], out));
        KernelRegistry.register(type, IndexingOps.INDEX_SELECT.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("index_select", (long) g[0], in[0].dim());
            backend.indexing().indexSelect(atLeast1d(in[0]), d, in[1], atLeast1d(out));
        });
        KernelRegistry.register(type, IndexingOps.GATHER.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("gather", (long) g[0], in[0].dim());
            backend.indexing().gather(atLeast1d(in[0]), d, atLeast1d(in[1]), atLeast1d(out));
        });
        KernelRegistry.register(type, IndexingOps.SCATTER_ADD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("scatter_add", (long) g[0], in[0].dim());
            StridedView index = atLeast1d(in[1]);
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out); // in place (Dispatcher.callInPlace): one view is both
            StridedView src = atLeast1d(in[2]);
            // only the index-shaped corner of src is read
            backend.indexing().scatter(out == in[0] ? "scatter_add_" : "scatter_add", atLeast1d(out), d, index,
                    src.restrided(index.shape(), src.strides(), src.offset()), true);
        });
        KernelRegistry.register(type, IndexingOps.INDEX_SELECT_BACKWARD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("index_select_backward", (long) g[0], in[0].dim());
            if (out.numel() > 0) backend.fill(out, 0, 0);
            backend.indexing().indexAccumulate("index_select_backward", atLeast1d(out), d, atLeast1d(in[1]), atLeast1d(in[2]), true, 1,
                    false);
        });
        KernelRegistry.register(type, IndexingOps.GATHER_BACKWARD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("gather_backward", (long) g[0], in[0].dim());
            if (out.numel() > 0) backend.fill(out, 0, 0);
            backend.indexing().scatter("gather_backward", atLeast1d(out), d, atLeast1d(in[1]), atLeast1d(in[2]), true);
        });
        KernelRegistry.register(type, IndexingOps.INDEX_ADD.kernel(), (out, in, g) -> {
            int d = Shapes.wrapDim("index_add", (long) g[0], in[0].dim());
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out); // in place (Dispatcher.callInPlace): one view is both
            backend.indexing().indexAccumulate(out == in[0] ? "index_add_" : "index_add", atLeast1d(out), d, atLeast1d(in[1]),
                    atLeast1d(in[2]), true, g.length > 1 ? g[1] : 1, false);
        });
        KernelRegistry.register(type, IndexingOps.SCATTER.kernel(), (out, in, g) -> {
            String op = out == in[0] ? "scatter_" : "scatter";
            int d = Shapes.wrapDim(op, (long) g[0], in[0].dim());
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out);
            StridedView index = atLeast1d(in[1]), src = atLeast1d(in[2]);
            backend.indexing().scatter(op, atLeast1d(out), d, index, src.restrided(index.shape(), src.strides(), src.offset()),
                    false);
        });
        KernelRegistry.register(type, IndexingOps.SCATTER_VALUE.kernel(), (out, in, g) -> {
            String op = out == in[0] ? "scatter_" : "scatter";
            int d = Shapes.wrapDim(op, (long) g[0], in[0].dim());
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out);
            StridedView index = atLeast1d(in[1]);
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView value = constant(backend, scratch, index, out.dtype(), g[1]);
                backend.indexing().scatter(op, atLeast1d(out), d, index, value, false);
            }
        });
        KernelRegistry.register(type, IndexingOps.INDEX_FILL.kernel(), (out, in, g) -> {
            String op = out == in[0] ? "index_fill_" : "index_fill";
            int d = Shapes.wrapDim(op, (long) g[0], in[0].dim());
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out);
            StridedView self = atLeast1d(out), index = atLeast1d(in[1]);
            long[] shape = self.shape().clone();
            shape[d] = index.numel();
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView slices = self.restrided(shape, self.strides(), self.offset());
                StridedView value = constant(backend, scratch, slices, out.dtype(), g[1]);
                backend.indexing().indexAccumulate(op, self, d, index, value, false, 1, true);
            }
        });
        KernelRegistry.register(type, IndexingOps.INDEX_COPY.kernel(), (out, in, g) -> {
            String op = out == in[0] ? "index_copy_" : "index_copy";
            int d = Shapes.wrapDim(op, (long) g[0], in[0].dim());
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out); // in place (Dispatcher.callInPlace): one view is both
            backend.indexing().indexAccumulate(op, atLeast1d(out), d, atLeast1d(in[1]), atLeast1d(in[2]), false, 1, false);
        });
        KernelRegistry.register(type, IndexingOps.INDEX_TENSOR.kernel(), (out, in, g) -> {
            IndexingOps.AdvancedIndex ai = IndexingOps.AdvancedIndex.forKernel("index", in[0], in, 1);
            if (ai.indices().length == 0) {
                if (out.numel() > 0) backend.copy(in[0], out);
                return;
            }
            backend.indexing().advancedIndex(ai.selfAsResult(), ai.indices(), ai.sizes(), ai.strides(), out);
        });
        KernelRegistry.register(type, IndexingOps.INDEX_BACKWARD.kernel(), (out, in, g) -> {
            if (out.numel() > 0) backend.fill(out, 0, 0);
            // the geometry of the result (self's shape, its own strides), into which grad is added
            indexPut(backend, "index_backward", out, in, true);
        });
        KernelRegistry.register(type, IndexingOps.INDEX_PUT.kernel(), (out, in, g) -> {
            if (out.numel() > 0 && out != in[0]) backend.copy(in[0], out); // in place (Dispatcher.callInPlace): one view is both
            indexPut(backend, "index_put", out, in, g[0] != 0);
        });
        KernelRegistry.register(type, IndexingOps.ONE_HOT.kernel(), (out, in, g) -> {
            if (out.numel() == 0) return;
            backend.fill(out, 0, 0);
            // each value is an index into the new last dimension: a scatter of ones along it, one write per value
            StridedView self = in[0];
            int last = self.dim();
            long[] shape = java.util.Arrays.copyOf(self.shape(), last + 1);
            shape[last] = 1;
            long[] strides = java.util.Arrays.copyOf(self.strides(), last + 1);
            StridedView index = self.restrided(shape, strides, self.offset());
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                backend.indexing().scatter("one_hot", out, last, index, constant(backend, scratch, index, DType.INT64, 1), false);
            }
        });
        KernelRegistry.register(type, IndexingOps.MASKED_SELECT.kernel(), (out, in, g) -> {
            long[] shape = Shapes.broadcast("masked_select", in[0].shape(), in[1].shape());
            backend.indexing().maskedSelect(in[0].expand("masked_select", shape), in[1].expand("masked_select", shape), out);
        });
        KernelRegistry.register(type, IndexingOps.MASKED_SELECT_BACKWARD.kernel(), (out, in, g) -> {
            if (out.numel() > 0) backend.fill(out, 0, 0);
            long n = in[0].numel();
            if (n == 0) return;
            // masked_scatter into zeros: the coordinates of the mask's true elements (as many as grad has) index the result
            StridedView result = atLeast1d(out);
            StridedView mask = atLeast1d(in[2]).expand("masked_select_backward", result.shape());
            int rank = result.dim();
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView coordinates = scratch.allocate(out.device(), new long[] {n, rank}, DType.INT64);
                backend.indexing().nonzero(mask, coordinates);
                StridedView[] indices = new StridedView[rank];
                long[] sizes = new long[rank];
                long[] strides = new long[rank];
                for (int k = 0; k < rank; k++) {
                    indices[k] = coordinates.restrided(new long[] {n}, new long[] {rank}, coordinates.offset() + k);
                    sizes[k] = result.size(k);
                    strides[k] = result.stride(k);
                }
                backend.indexing().indexPut(result.restrided(new long[] {n}, new long[] {0}, result.offset()), indices, sizes, strides,
                        in[0], false);
            }
        });
        KernelRegistry.register(type, IndexingOps.MASKED_FILL.kernel(), (out, in, g) -> {
            if (out.numel() == 0) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                backend.where(in[1].expand("masked_fill", out.shape()), constant(backend, scratch, out, g[0]),
                        in[0].expand("masked_fill", out.shape()), out);
            }
        });
        KernelRegistry.register(type, IndexingOps.WHERE.kernel(), (out, in, g) -> {
            if (out.numel() > 0) {
                long[] shape = out.shape();
                backend.where(in[0].expand("where", shape), in[1].expand("where", shape), in[2].expand("where", shape), out);
            }
        });
        KernelRegistry.register(type, IndexingOps.EMBEDDING.kernel(), (out, in, g) -> {
            long n = in[1].numel();
            if (n == 0) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                backend.indexing().indexSelect(in[0], 0, flat(scratch, in[1]), out.view(n, in[0].size(1)));
            }
        });
        KernelRegistry.register(type, IndexingOps.EMBEDDING_DENSE_BACKWARD.kernel(), (out, in, g) -> {
            if (out.numel() > 0) backend.fill(out, 0, 0);
            long n = in[1].numel();
            if (n == 0 || out.numel() == 0) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView index = flat(scratch, in[1]);
                StridedView rows = scratch.operand(in[0], in[0].dtype(), new long[] {n, out.size(1)});
                if (g[2] != 0) {
                    StridedView scaled = scratch.allocate(rows.device(), rows.shape(), rows.dtype());
                    rows = dividedByFrequency(backend, scratch, rows, index, out.size(0), scaled);
                }
                backend.indexing().indexAccumulate("embedding_dense_backward", out, 0, index, rows, true, 1, false);
                // the padding row's gradients were added with the others; it is zero, as if they had been masked first
                if (g[1] >= 0) backend.fill(row(out, (long) g[1]), 0, 0);
            }
        });
        KernelRegistry.register(type, IndexingOps.EMBEDDING_DENSE_DOUBLE_BACKWARD.kernel(), (out, in, g) -> {
            long n = in[1].numel();
            if (n == 0 || out.numel() == 0) return;
            try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
                StridedView index = flat(scratch, in[1]);
                StridedView rows = out.view(n, in[0].size(1));
                backend.indexing().indexSelect(in[0], 0, index, rows);
                if (g[1] != 0) dividedByFrequency(backend, scratch, rows, index, in[0].size(0), rows);
                if (g[0] >= 0) {
                    StridedView padding = scratch.allocate(out.device(), new long[] {n}, DType.BOOL);
                    pointwise(backend, PointwiseOps.EQ, index.dtype(), padding, index, constant(backend, scratch, index, g[0]));
                    StridedView wide = padding.restrided(rows.shape(), new long[] {1, 0}, padding.offset());
                    backend.where(wide, constant(backend, scratch, rows, 0), rows, rows);
                }
            }
        });
    }

    /**
     * {@code out[in[2..]] = in[1]}, or {@code +=} when {@code accumulate} (index_put's and index_backward's scatter): with no
     * index tensor, every element of {@code out} once.
     */
    private static void indexPut(Backend backend, String op, StridedView out, StridedView[] in, boolean accumulate) {
        IndexingOps.AdvancedIndex ai = IndexingOps.AdvancedIndex.forKernel(op, out, in, 2);
        StridedView values = in[1].expand(op, ai.resultShape());
        if (ai.indices().length > 0) {
            backend.indexing().indexPut(ai.selfAsResult(), ai.indices(), ai.sizes(), ai.strides(), values, accumulate);
        } else if (out.numel() == 0) {
            return;
        } else if (accumulate) {
            DType compute = PointwiseOps.ADD.computeType(out.dtype(), DType.FLOAT32);
            KernelRegistry.pointwise(PointwiseOps.ADD, backend.deviceType()).run(out.device().index(), compute, out, out, values, 1, 0);
        } else {
            backend.copy(values, out);
        }
    }

    /**
     * {@code rows[i] / count(index[i])} into {@code out} (may be {@code rows}), the count of each of the {@code num} rows
     * summed in {@code rows}' dtype as {@code zeros(num).index_add_(0, index, ones)} sums it: PyTorch's
     * {@code scale_grad_by_freq}. Returns {@code out}.
     */
    private static StridedView dividedByFrequency(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView rows,
                                                  StridedView index, long num, StridedView out) {
        DType dtype = rows.dtype();
        Device device = rows.device();
        long n = index.numel();
        StridedView counts = scratch.allocate(device, new long[] {num}, dtype);
        backend.fill(counts, 0, 0);
        StridedView ones = scratch.allocate(device, new long[] {n}, dtype);
        backend.fill(ones, 1, 1);
        backend.indexing().indexAccumulate("embedding_dense_backward", counts, 0, index, ones, true, 1, false);
        StridedView count = scratch.allocate(device, new long[] {n}, dtype);
        backend.indexing().indexSelect(counts, 0, index, count);
        pointwise(backend, PointwiseOps.DIV, PointwiseOps.DIV.computeType(dtype, DType.FLOAT32), out, rows,
                count.restrided(rows.shape(), new long[] {1, 0}, count.offset()));
        return out;
    }

    /** {@code v}'s elements as a vector: itself viewed, or a contiguous copy in scratch memory. */
    private static StridedView flat(ConvolutionOpKernels.Scratch scratch, StridedView v) {
        return scratch.operand(v, v.dtype(), new long[] {v.numel()});
    }

    /** Row {@code r} of a 2-d view, as a {@code [1, cols]} view. */
    private static StridedView row(StridedView v, long r) {
        return v.restrided(new long[] {1, v.size(1)}, v.strides(), v.offset() + r * v.stride(0));
    }

    /** A one-element scratch {@code value} of {@code like}'s dtype, broadcast to its shape ({@code fill_}'s conversion). */
    private static StridedView constant(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView like, double value) {
        return constant(backend, scratch, like, like.dtype(), value);
    }

    /** A one-element scratch {@code value} of {@code dtype}, broadcast to {@code like}'s shape ({@code fill_}'s conversion). */
    private static StridedView constant(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView like, DType dtype,
                                        double value) {
        StridedView s = scratch.allocate(like.device(), new long[0], dtype);
        backend.fill(s, value, (long) value);
        return s.restrided(like.shape(), new long[like.dim()], s.offset());
    }

    /** {@code out = op(a, b)} by the backend's kernel of pointwise {@code op}, computing in {@code compute}. */
    private static void pointwise(Backend backend, OpDef op, DType compute, StridedView out, StridedView a, StridedView b) {
        KernelRegistry.pointwise(op, backend.deviceType()).run(out.device().index(), compute, out, a, b, 0, 0);
    }

    /** A 0-d view seen as 1-d of size 1 (a 0-d tensor indexes as one of size 1); others as they are. */
    private static StridedView atLeast1d(StridedView v) {
        return v.dim() > 0 ? v : v.restrided(new long[] {1}, new long[] {1}, v.offset());
    }

    /**
     * {@link IndexingOps#COUNT_NONZERO}: the backend's count over the counted dimensions of {@code x}, one slice (a view
     * of those dimensions) per element of {@code out}, each count written by the backend's fill.
     */
    private static void countNonzero(Backend backend, StridedView out, StridedView x, double[] g) {
        boolean[] counted = IndexingOps.countedDims("count_nonzero", x.dim(), g);
        int nc = 0;
        for (boolean c : counted) if (c) nc++;
        long[] sliceShape = new long[nc], sliceStrides = new long[nc], keptShape = new long[x.dim() - nc], keptStrides = new long[x.dim() - nc];
        for (int d = 0, i = 0, j = 0; d < x.dim(); d++) {
            if (counted[d]) {
                sliceShape[i] = x.size(d);
                sliceStrides[i++] = x.stride(d);
            } else {
                keptShape[j] = x.size(d);
                keptStrides[j++] = x.stride(d);
            }
        }
        IndexKernels k = backend.indexing();
        long n = out.numel();
        long[] index = new long[keptShape.length];
        for (long e = 0; e < n; e++) {
            long at = x.offset(), outAt = out.offset();
            for (int d = 0; d < index.length; d++) {
                at += index[d] * keptStrides[d];
                outAt += index[d] * out.stride(d);
            }
            long count = k.countNonzero(x.restrided(sliceShape, sliceStrides, at));
            backend.fill(out.restrided(new long[0], new long[0], outAt), count, count);
            for (int d = index.length - 1; d >= 0 && ++index[d] == keptShape[d]; d--) index[d] = 0;
        }
    }
}
