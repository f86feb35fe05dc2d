package org.jtorch.backend;

import org.jtorch.op.KernelRegistry;
import org.jtorch.op.Shapes;
import org.jtorch.op.SortingOps;
import org.jtorch.types.Device;

/** The kernels of the sorting primitives ({@link SortingOps}) for one backend, from its {@link ReductionKernels}. */
public final class SortingOpKernels {
    private SortingOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, SortingOps.SORT_INDICES.kernel(), (out, in, g) -> {
            int d = in[0].dim() == 0 ? 0 : Shapes.wrapDim("argsort", (long) g[0], in[0].dim());
            backend.reductions().argsort(in[0], out, d, g[1] != 0);
        });
        KernelRegistry.register(type, SortingOps.SEARCHSORTED_ROWS.kernel(),
                (out, in, g) -> backend.reductions().searchsorted(in[0], in[1], out, g[0] != 0));
    }
}
