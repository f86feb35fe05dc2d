package org.jtorch.cuda;

import org.jtorch.backend.Backend;
import org.jtorch.backend.BackendProvider;

/** Registers {@link CudaBackend} with core's {@code Backends} (META-INF/services). Never fails: a machine without CUDA gets an unavailable backend. */
public final class CudaBackendProvider implements BackendProvider {
    @Override
    public Backend create() {
        return CudaBackend.get();
    }
}
