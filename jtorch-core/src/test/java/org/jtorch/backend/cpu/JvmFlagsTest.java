package org.jtorch.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jtorch.Torch;
import org.jtorch.testing.ChildJvm;
import org.junit.jupiter.api.Test;

/** A JVM without -XX:-UseProfiledLoopPredicate is told so once, with the cost, when the CPU backend starts. */
class JvmFlagsTest {
    /** The child: two ops on the CPU backend. */
    public static void main(String[] args) {
        Torch.ones(4).add(Torch.ones(4)).sum().item();
        Torch.ones(4).mul(2.0).sum().item();
        System.out.println("done");
    }

    private static String childOutput(List<String> jvmOptions) throws IOException, InterruptedException {
        Process p = ChildJvm.command(null, jvmOptions, JvmFlagsTest.class).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    @Test
    void withoutTheFlagTheFirstUseOfTheCpuBackendWarnsOnceWithTheCost() throws Exception {
        String out = childOutput(List.of());
        assertTrue(out.contains("-XX:-UseProfiledLoopPredicate") && out.contains(JvmFlags.PROFILED_LOOP_PREDICATE_COST), out);
        assertEquals(1, out.split("UseProfiledLoopPredicate is on", -1).length - 1, out);
        assertTrue(out.contains("done"), out);
    }

    @Test
    void withTheFlagOrWithoutC2NothingIsSaid() throws Exception {
        for (List<String> options : List.of(List.of("-XX:-UseProfiledLoopPredicate"), List.of("-XX:TieredStopAtLevel=1"))) {
            String out = childOutput(options);
            assertFalse(out.contains("UseProfiledLoopPredicate"), options + ": " + out);
            assertTrue(out.contains("done"), out);
        }
    }
}
