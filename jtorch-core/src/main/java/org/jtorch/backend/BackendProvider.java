package org.jtorch.backend;

/**
 * Service interface through which backends register with {@link Backends}: the CPU backend (jtorch-core's provider in
 * {@code backend.cpu}) and optional ones (e.g. jtorch-cuda).
 */
public interface BackendProvider {
    /** Creates the backend; must not fail when the device's libraries are missing (report it via {@link Backend#isAvailable()}). */
    Backend create();

    /** Whether this provider's backend serves the CPU: {@link Backends} creates that one first, without the others. */
    default boolean providesCpu() {
        return false;
    }
}
