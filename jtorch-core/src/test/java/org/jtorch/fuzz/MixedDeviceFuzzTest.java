package org.jtorch.fuzz;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.time.Duration;
import java.util.Map;
import org.jtorch.testing.ChildJvm;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The API fuzzer with operands on two devices (issue 19): about half of each call's tensors on the CPU and the others
 * on {@code cuda:0}. Every such call either works as in PyTorch 1.13 (a 0-dim CPU tensor is a scalar beside CUDA
 * tensors in pointwise ops, copies cross devices) or raises an error naming the op and both devices; no crash, hang
 * or JDK-internal exception, and the single-device counts of {@link ApiFuzzTest} stay zero too. Runs in the
 * simulator pass ({@code -Djtorch.test.device=cuda:0}, {@code scripts/lib/cuda-suites}); skipped on the CPU alone.
 * {@code -Djtorch.fuzz.seconds=600} runs batches of new seeds from {@code -Djtorch.fuzz.seed} until the time is up;
 * {@code -Djtorch.fuzz.seed=S -Djtorch.fuzz.call=I} replays call I of seed S alone.
 */
class MixedDeviceFuzzTest {
    private static final long[] CI_SEEDS = {1, 2, 3, 4};
    /** About 10 s a batch on the simulator. */
    private static final int CALLS = 3000;
    /**
     * Calls may ask for gigabytes: jtorch's CPU limit and the simulator's memory make them fail in the child. No address
     * space limit: a real GPU's driver reserves far more address space than it uses.
     */
    private static final Map<String, String> LIMITS = Map.of("JTORCH_CPU_MEMORY_LIMIT", "2g", "JTSIM_MEMORY", "1g");

    @Test
    void mixedDeviceCallsWorkAsInPyTorchOrNameBothDevices() throws Exception {
        Device device = Fixtures.device();
        assumeFalse(device.isCpu(), "needs a second device (-Djtorch.test.device=cuda:0)");
        assertTrue(device.equals(Device.cuda(0)), "the fuzzer mixes the CPU with cuda:0, not " + device);
        String replay = System.getProperty("jtorch.fuzz.call");
        if (replay != null) {
            ChildJvm.Result r = ChildJvm.run(ApiFuzzer.class, Duration.ofMinutes(3), LIMITS, 0, "mixed",
                    System.getProperty("jtorch.fuzz.seed", "1"), "1", replay);
            System.out.println(r.output());
            assertTrue(r.exitCode() == 0 && !r.output().contains("FINDING "), r.output());
            return;
        }
        ApiFuzzTest.Tally tally = new ApiFuzzTest.Tally(LIMITS, 0);
        long seconds = Long.getLong("jtorch.fuzz.seconds", 0);
        if (seconds == 0) {
            for (long seed : CI_SEEDS) tally.batch("mixed", seed, CALLS);
        } else {
            long deadline = System.nanoTime() + seconds * 1_000_000_000L;
            for (long seed = Long.getLong("jtorch.fuzz.seed", 1); System.nanoTime() < deadline; seed++) tally.batch("mixed", seed, CALLS);
        }
        System.out.println("mixed-device fuzzer: " + tally.totals());
        assertTrue(tally.mixed > 1000, "calls mixing devices: " + tally.mixed);
        assertTrue(tally.failures.isEmpty(), tally.totals() + "\n" + String.join("\n", tally.failures));
    }
}
