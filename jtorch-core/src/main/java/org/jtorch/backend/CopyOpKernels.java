package org.jtorch.backend;

import org.jtorch.Device;
import org.jtorch.op.CopyOps;
import org.jtorch.op.KernelRegistry;

/** The kernels of {@code clone} and {@code _to_copy} ({@link CopyOps}) for one backend: its strided copy, which converts dtypes. */
public final class CopyOpKernels {
    private CopyOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, CopyOps.CLONE.kernel(), (out, in, g) -> backend.copy(in[0], out));
        KernelRegistry.register(type, CopyOps.TO_COPY.kernel(), (out, in, g) -> backend.copy(in[0], out));
    }
}
