package org.jtorch.cuda;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;

/**
 * The devices every device conformance suite runs on: the CPU always, cuda:0 when available, its cases
 * otherwise skipped with the reason (never passed silently). gpu-check counts a skipped cuda:0 case as a failure.
 */
final class DeviceCases {
    static final Device CUDA = Device.cuda(0);
    static final List<Device> DEVICES = List.of(Device.cpu(), CUDA);

    private DeviceCases() {}

    /** The machine epsilon of a floating dtype (the gap between 1 and the next value). */
    static double epsilon(DType t) {
        return switch (t) {
            case FLOAT64 -> 0x1p-52;
            case FLOAT32 -> 0x1p-23;
            case FLOAT16 -> 0x1p-10;
            case BFLOAT16 -> 0x1p-7;
            default -> throw new IllegalArgumentException("epsilon: " + t + " is not a floating dtype");
        };
    }

    /** A case's body, run once per device. */
    interface Body {
        void run(Device d);
    }

    /**
     * Adds one test per device, named {@code <device>/<name>}: skipped with the reason where the device is an
     * unavailable CUDA device, else {@code body} in a {@link MemoryScope} (its temporaries released after it).
     */
    static void add(List<DynamicTest> tests, String name, Body body) {
        for (Device d : DEVICES) {
            tests.add(DynamicTest.dynamicTest(d + "/" + name, () -> {
                assumeAvailable(d);
                try (MemoryScope scope = new MemoryScope()) {
                    body.run(d);
                }
            }));
        }
    }

    /** Skips the calling test, naming why, when {@code d} is a CUDA device that is not available. */
    static void assumeAvailable(Device d) {
        if (d.isCuda()) assumeTrue(Cuda.isAvailable(), "cuda:0 unavailable: " + Cuda.unavailableReason());
    }
}
