package org.jtorch.backend.cpu;

import org.jtorch.backend.Backend;
import org.jtorch.backend.BackendProvider;

/** Registers the CPU backend with {@code Backends} as a service, so that the backend package names no implementation. */
public final class CpuBackendProvider implements BackendProvider {
    @Override
    public Backend create() {
        return CpuBackend.get();
    }

    @Override
    public boolean providesCpu() {
        return true;
    }
}
