package org.jtorch.backend;

/** Service interface through which optional backends (e.g. jtorch-cuda) register with {@link Backends}. */
public interface BackendProvider {
    /** Creates the backend; must not fail when the device's libraries are missing (report it via {@link Backend#isAvailable()}). */
    Backend create();
}
