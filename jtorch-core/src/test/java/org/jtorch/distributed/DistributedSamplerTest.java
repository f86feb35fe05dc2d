package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.testing.Fixtures;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** PyTorch 1.13's randperm and DistributedSampler indices (fixtures from tools/fixtures/gen_distributed.py). */
class DistributedSamplerTest {
    private static int[] expectedInts(com.google.gson.JsonObject tensor) {
        JsonArray data = tensor.getAsJsonArray("data");
        int[] out = new int[data.size()];
        for (int i = 0; i < out.length; i++) out[i] = data.get(i).getAsInt();
        return out;
    }

    @TestFactory
    List<DynamicTest> randpermMatchesPyTorchsSeededCpuGenerator() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fixtures.Case c : Fixtures.load("distributed")) {
            if (c.op().equals("randperm")) {
                tests.add(DynamicTest.dynamicTest(c.name(), () -> assertArrayEquals(expectedInts(c.expectedTensor()),
                        new MersenneTwister(c.longArg("seed", 0)).randperm((int) c.longArg("n", 0)), c.toString())));
            } else if (c.op().equals("randperm_twice")) {
                tests.add(DynamicTest.dynamicTest(c.name(), () -> {
                    MersenneTwister g = new MersenneTwister(c.longArg("seed", 0));
                    long[] ns = c.longsArg("n");
                    assertArrayEquals(expectedInts(c.expectedTensor(0)), g.randperm((int) ns[0]));
                    assertArrayEquals(expectedInts(c.expectedTensor(1)), g.randperm((int) ns[1]), "the state advances");
                }));
            }
        }
        assertEquals(29, tests.size());
        return tests;
    }

    @TestFactory
    List<DynamicTest> indicesMatchPyTorchsForEveryRankEpochAndOption() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Fixtures.Case c : Fixtures.load("distributed")) {
            if (!c.op().equals("distributed_sampler")) continue;
            tests.add(DynamicTest.dynamicTest(c.name(), () -> {
                DistributedSampler s = new DistributedSampler((int) c.longArg("n", 0), (int) c.longArg("num_replicas", 1),
                        (int) c.longArg("rank", 0), c.boolArg("shuffle", true), c.longArg("seed", 0), c.boolArg("drop_last", false));
                s.setEpoch(c.longArg("epoch", 0));
                int[] expected = expectedInts(c.expectedTensor());
                assertArrayEquals(expected, s.indices(), c.toString());
                assertEquals(expected.length, s.size());
                List<Integer> iterated = new ArrayList<>();
                s.forEach(iterated::add);
                assertEquals(expected.length, iterated.size());
            }));
        }
        assertTrue(tests.size() > 300, "cases: " + tests.size());
        return tests;
    }

    @Test
    void anInvalidRankIsNamed() {
        var e = assertThrows(IllegalArgumentException.class, () -> new DistributedSampler(10, 2, 2, true, 0, false));
        assertEquals("DistributedSampler: Invalid rank 2, rank should be in the interval [0, 1]", e.getMessage());
    }
}
