package org.jtorch.backend;

import org.jtorch.op.KernelRegistry;
import org.jtorch.op.SelectingReductionOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * The kernels of the selecting reductions ({@link SelectingReductionOps}) for one backend, from its reduction kernel
 * ({@link ReductionKernels#argReduce}, which writes through outputs broadcast over the reduced dimension) and its
 * gather and scatter. A reduced operand without the dimension ({@code keepdim} false) is seen with it, of size 1.
 */
public final class SelectingReductionOpKernels {
    private SelectingReductionOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        registerExtremum(backend, type, SelectingReductionOps.MAX_DIM.kernel(), true);
        registerExtremum(backend, type, SelectingReductionOps.MIN_DIM.kernel(), false);
        registerIndexOnly(backend, type, SelectingReductionOps.ARGMAX.kernel(), true);
        registerIndexOnly(backend, type, SelectingReductionOps.ARGMIN.kernel(), false);
        KernelRegistry.register(type, SelectingReductionOps.VALUE_SELECTING_REDUCTION_BACKWARD.kernel(), (out, in, g) -> {
            int d = dim("value_selecting_reduction_backward", in[2], g);
            if (out.numel() == 0) return;
            backend.fill(out, 0, 0);
            StridedView self = atLeast1d(out);
            backend.indexing().scatter("value_selecting_reduction_backward", self, d, withDim(in[1], self, d),
                    withDim(in[0], self, d), true);
        });
        KernelRegistry.register(type, SelectingReductionOps.SELECT_AT_INDICES.kernel(), (out, in, g) -> {
            int d = dim("select_at_indices", in[0], g);
            StridedView self = atLeast1d(in[0]);
            if (out.numel() > 0) backend.indexing().gather(self, d, withDim(in[1], self, d), withDim(out, self, d));
        });
    }

    private static void registerExtremum(Backend backend, Device.Type type, String kernel, boolean max) {
        KernelRegistry.registerMulti(type, kernel, (outs, in, g) -> {
            StridedView x = in[0];
            int d = dim(kernel, x, g);
            backend.reductions().argReduce(max, x, broadcast(outs[0], x, d), broadcast(outs[1], x, d), d);
        });
    }

    private static void registerIndexOnly(Backend backend, Device.Type type, String kernel, boolean max) {
        KernelRegistry.register(type, kernel, (out, in, g) -> {
            StridedView x = in[0];
            int d = dim(kernel, x, g);
            backend.reductions().argReduce(max, x, null, broadcast(out, x, d), d);
        });
    }

    /** The call's dimension, wrapped (0 for a 0-d tensor). */
    private static int dim(String op, StridedView self, double[] g) {
        return self.dim() == 0 ? 0 : Shapes.wrapDim(op, (long) g[0], self.dim());
    }

    /** A reduced-shaped output seen with {@code x}'s shape: the dimension restored and broadcast (stride 0) over it. */
    private static StridedView broadcast(StridedView reduced, StridedView x, int d) {
        if (x.dim() == 0) return reduced;
        StridedView kept = withDim(reduced, x, d);
        long[] strides = kept.strides().clone();
        strides[d] = 0;
        return kept.restrided(x.shape(), strides, kept.offset());
    }

    /** A reduced-shaped view with the dimension {@code d} of {@code like} present, of size 1 ({@code keepdim} false dropped it). */
    private static StridedView withDim(StridedView reduced, StridedView like, int d) {
        if (reduced.dim() == like.dim()) return reduced;
        long[] shape = new long[reduced.dim() + 1];
        long[] strides = new long[shape.length];
        for (int k = 0, j = 0; k < shape.length; k++) {
            if (k == d) {
                shape[k] = 1;
                strides[k] = 1;
            } else {
                shape[k] = reduced.shape()[j];
                strides[k] = reduced.strides()[j++];
            }
        }
        return reduced.restrided(shape, strides, reduced.offset());
    }

    /** A 0-d view seen as 1-d of size 1; others as they are. */
    private static StridedView atLeast1d(StridedView v) {
        return v.dim() > 0 ? v : v.restrided(new long[] {1}, new long[] {1}, v.offset());
    }
}
