package org.jtorch.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.jtorch.Device;

/**
 * The devices every device conformance suite runs on: the CPU always, cuda:0 when available, its cases
 * otherwise skipped with the reason (never passed silently). gpu-check counts a skipped cuda:0 case as a failure.
 */
final class DeviceCases {
    static final Device CUDA = Device.cuda(0);
    static final List<Device> DEVICES = List.of(Device.cpu(), CUDA);

    private DeviceCases() {}

    /** Skips the calling test, naming why, when {@code d} is a CUDA device that is not available. */
    static void assumeAvailable(Device d) {
        if (d.isCuda()) assumeTrue(Cuda.isAvailable(), "cuda:0 unavailable: " + Cuda.unavailableReason());
    }
}
