package org.jtorch.backend;

import org.jtorch.Device;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;

/**
 * The kernels of the declared indexing ops ({@link IndexingOps}) for one backend, from its {@link IndexKernels}: the
 * out-of-place scatters copy {@code self} into the result and scatter into that. A 0-d operand is seen as 1-d of size 1.
 */
public final class IndexingOpKernels {
    private IndexingOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
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
            if (out.numel() > 0) backend.copy(in[0], out);
            StridedView src = atLeast1d(in[2]);
            // only the index-shaped corner of src is read
            backend.indexing().scatter("scatter_add", atLeast1d(out), d, index, src.restrided(index.shape(), src.strides(), src.offset()),
                    true);
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
            if (out.numel() > 0) backend.copy(in[0], out);
            backend.indexing().indexAccumulate("index_add", atLeast1d(out), d, atLeast1d(in[1]), atLeast1d(in[2]), true,
                    g.length > 1 ? g[1] : 1, false);
        });
    }

    /** A 0-d view seen as 1-d of size 1 (a 0-d tensor indexes as one of size 1); others as they are. */
    private static StridedView atLeast1d(StridedView v) {
        return v.dim() > 0 ? v : v.restrided(new long[] {1}, new long[] {1}, v.offset());
    }
}
