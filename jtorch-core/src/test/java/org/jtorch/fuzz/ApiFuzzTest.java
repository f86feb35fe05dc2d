package org.jtorch.fuzz;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/**
 * The standing API fuzzer (issue 19): batches of {@link ApiFuzzer} calls, each batch in a child JVM with a timeout,
 * counting crashes, hangs, exceptions of the wrong kind (thrown from inside the JDK, or of a bug's type, or naming no
 * op), meaningless results (a call that returns where PyTorch raises, or a result no valid call returns) and refusals
 * (an error where PyTorch returns a result the oracle knows the shape of). Every count must be zero.
 *
 * <p>CI runs fixed seeds for a bounded time. {@code -Djtorch.fuzz.seconds=600} runs batches of new seeds from
 * {@code -Djtorch.fuzz.seed} (default 1) until the time is up; {@code -Djtorch.fuzz.seed=S -Djtorch.fuzz.call=I}
 * replays call I of seed S alone, with its arguments and stack trace.
 */
class ApiFuzzTest {
    /** Calls per single-thread batch, and per thread in a threads batch: about a minute in all on 2 cores. */
    private static final int SINGLE_CALLS = 3000;
    private static final int THREAD_CALLS = 1000;
    private static final long[] CI_SEEDS = {1, 2, 3, 4, 5, 6};
    private static final long[] CI_THREAD_SEEDS = {1, 2};
    private static final Duration BATCH_TIMEOUT = Duration.ofMinutes(3);
    /** Calls may legitimately ask for gigabytes (a size of 2^31-1): past 6 GiB they fail in the child, as on a small machine. */
    private static final long MAX_VIRTUAL_KIB = 6L << 20;

    @Test
    void randomCallsNeitherCrashNorHangNorThrowTheWrongKindNorReturnMeaninglessResults() throws Exception {
        String replay = System.getProperty("jtorch.fuzz.call");
        long firstSeed = Long.getLong("jtorch.fuzz.seed", 1);
        if (replay != null) {
            ChildJvm.Result r = ChildJvm.run(ApiFuzzer.class, BATCH_TIMEOUT, Map.of(), MAX_VIRTUAL_KIB, "single", String.valueOf(firstSeed), "1", replay);
            System.out.println(r.output());
            assertTrue(r.exitCode() == 0 && !r.output().contains("FINDING "), r.output());
            return;
        }
        long seconds = Long.getLong("jtorch.fuzz.seconds", 0);
        Tally tally = new Tally();
        if (seconds == 0) {
            for (long seed : CI_SEEDS) tally.batch("single", seed, SINGLE_CALLS);
            for (long seed : CI_THREAD_SEEDS) tally.batch("threads", seed, THREAD_CALLS);
        } else {
            long deadline = System.nanoTime() + seconds * 1_000_000_000L;
            for (long seed = firstSeed; System.nanoTime() < deadline; seed++) {
                tally.batch(seed % 4 == 0 ? "threads" : "single", seed, seed % 4 == 0 ? THREAD_CALLS : SINGLE_CALLS);
            }
        }
        System.out.println("api fuzzer: " + tally.totals());
        assertTrue(tally.failures.isEmpty(), tally.totals() + "\n" + String.join("\n", tally.failures));
    }

    /** The counts over all batches, and a report line (with the command that reproduces it) for each failure. */
    static final class Tally {
        long batches, calls, crashes, hangs, jdkInternal, noOpName, meaningless, refused, knownResults, devicesUnnamed, mixed;
        final List<String> failures = new ArrayList<>();
        private final Map<String, String> env;
        private final long maxVirtualKiB;

        Tally() {
            this(Map.of(), MAX_VIRTUAL_KIB);
        }

        Tally(Map<String, String> env, long maxVirtualKiB) {
            this.env = env;
            this.maxVirtualKiB = maxVirtualKiB;
        }

        void batch(String mode, long seed, int count) throws Exception {
            ChildJvm.Result r = ChildJvm.run(ApiFuzzer.class, BATCH_TIMEOUT, env, maxVirtualKiB, mode, String.valueOf(seed), String.valueOf(count));
            batches++;
            String summary = r.output().lines().filter(l -> l.startsWith("SUMMARY ")).findFirst().orElse(null);
            String lastCall = r.output().lines().filter(l -> l.startsWith("CALL ")).reduce((a, b) -> b).orElse("CALL ?");
            String replay = reproduce(mode, seed, lastCall.substring(5));
            if (r.timedOut()) {
                hangs++;
                failures.add("HANG " + mode + " seed " + seed + " at " + lastCall + "; " + replay + "\n" + tail(r.output()));
            } else if (r.exitCode() != 0 || r.crashed() || summary == null) {
                crashes++;
                failures.add("CRASH " + mode + " seed " + seed + " (exit " + r.exitCode() + ") at " + lastCall + "; " + replay + "\n"
                        + tail(r.output()));
            }
            if (summary != null) {
                calls += field(summary, "calls");
                jdkInternal += field(summary, "jdk-internal");
                noOpName += field(summary, "no-op-name");
                meaningless += field(summary, "meaningless");
                refused += field(summary, "refused");
                knownResults += field(summary, "pytorch-returns");
                devicesUnnamed += field(summary, "devices-unnamed");
                mixed += field(summary, "mixed-devices");
            }
            r.output().lines().filter(l -> l.startsWith("FINDING ")).forEach(l -> failures.add(l + "\n    "
                    + reproduce(mode, seed, l.replaceAll(".* call=(\\d+).*", "$1"))
                    + (mode.equals("threads") ? " (threads mode: the call alone may pass)" : "")));
        }

        private static String reproduce(String mode, long seed, String call) {
            String properties = " -Djtorch.fuzz.seed=" + seed + " -Djtorch.fuzz.call=" + call;
            return mode.equals("mixed") ? "reproduce: MixedDeviceFuzzTest with" + properties + " on the CUDA simulator (scripts/cuda-sim)"
                    : "reproduce: mvn -B -q -pl jtorch-core test -Dtest=ApiFuzzTest" + properties;
        }

        private static long field(String summary, String name) {
            for (String part : summary.split(" ")) if (part.startsWith(name + "=")) return Long.parseLong(part.substring(name.length() + 1));
            return 0;
        }

        private static String tail(String output) {
            List<String> lines = output.lines().toList();
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        }

        String totals() {
            return batches + " batches, " + calls + " calls: " + crashes + " crashes, " + hangs + " hangs, " + jdkInternal
                    + " JDK-internal exceptions, " + noOpName + " exceptions without an op name, " + meaningless + " meaningless results, " + refused
                    + " errors where PyTorch returns (of " + knownResults + " calls with a known PyTorch result)"
                    + (mixed == 0 ? "" : ", " + devicesUnnamed + " device errors not naming both devices (of " + mixed
                    + " mixed-device calls)");
        }
    }
}
