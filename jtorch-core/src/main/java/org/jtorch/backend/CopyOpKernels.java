package org.jtorch.backend;

import org.jtorch.op.CopyOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.types.Device;

/** The kernels of {@link CopyOps} for one backend: its strided copy (which converts dtypes, and moves data to or from its devices) and its fill. */
public final class CopyOpKernels {
    private CopyOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, CopyOps.CLONE.kernel(), (out, in, g) -> backend.copy(in[0], out));
        // Across devices the accelerator's backend runs these (OpDef.acrossDevices): its copy goes either way.
        KernelRegistry.register(type, CopyOps.TO_COPY.kernel(), (out, in, g) -> backend.copy(in[0], out, g.length > 2 && g[2] != 0));
        KernelRegistry.register(type, CopyOps.COPY.kernel(),
                (out, in, g) -> backend.copy(in[1].expand("copy_", out.shape()), out, g.length > 0 && g[0] != 0));
        KernelRegistry.register(type, CopyOps.FILL.kernel(), (out, in, g) -> backend.fill(out, g[0], CopyOps.fillExact(g)));
        KernelRegistry.register(type, CopyOps.ZERO.kernel(), (out, in, g) -> backend.fill(out, 0, 0));
    }
}
