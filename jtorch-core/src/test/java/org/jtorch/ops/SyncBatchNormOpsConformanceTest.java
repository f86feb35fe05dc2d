package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.OpDef;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The synchronised batch norm's declared parts ({@code batch_norm_stats}, {@code _gather_stats_with_counts},
 * {@code _elemt}, {@code _backward_reduce}, {@code _backward_elemt}) through the dispatcher against
 * tools/fixtures/gen_sync_batch_norm.py (PyTorch 1.13: the ops' definitions in float64, the ranks' chain checked there
 * against PyTorch's batch norm on the whole batch), on the fixtures' device.
 */
class SyncBatchNormOpsConformanceTest {
    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("sync_batch_norm").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        List<Tensor> in = c.inputTensors();
        Tensor[] got = null;
        Tensor[] running = null;
        try {
            double eps = c.doubleArg("eps", 1e-5);
            boolean affine = c.boolArg("affine", true);
            switch (c.op()) {
                case "batch_norm_stats" -> got = Dispatcher.callAll(NormalizationOps.BATCH_NORM_STATS, new Tensor[] {in.get(0)}, eps);
                case "batch_norm_elemt" -> got = new Tensor[] {Dispatcher.call(NormalizationOps.BATCH_NORM_ELEMT, affine
                        ? new Tensor[] {in.get(0), in.get(1), in.get(2), in.get(3), in.get(4)}
                        : new Tensor[] {in.get(0), null, null, in.get(1), in.get(2)}, eps)};
                case "batch_norm_backward_reduce" -> got = Dispatcher.callAll(NormalizationOps.BATCH_NORM_BACKWARD_REDUCE,
                        new Tensor[] {in.get(0), in.get(1), in.get(2), in.get(3), affine ? in.get(4) : null}, 1, 1, 1);
                case "batch_norm_backward_elemt" -> got = new Tensor[] {Dispatcher.call(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT,
                        in.toArray(new Tensor[0]))};
                case "batch_norm_gather_stats_with_counts" -> {
                    Tensor[] stats = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS, in.toArray(new Tensor[0]),
                            c.doubleArg("momentum", 0.1), eps);
                    // the running statistics, moved in place, are outputs 2 and 3 of the fixture
                    got = new Tensor[] {stats[0], stats[1], in.get(3).clone(), in.get(4).clone()};
                }
                default -> throw new AssertionError("no such op in the fixtures: " + c.op());
            }
            DType data = in.get(c.op().startsWith("batch_norm_backward") ? 1 : 0).dtype();
            boolean f64 = data == DType.FLOAT64, half = data == DType.FLOAT16;
            double rtol = f64 ? 1e-12 : half ? 2e-3 : 2e-5, atol = f64 ? 1e-12 : half ? 2e-3 : 2e-5;
            for (int i = 0; i < got.length; i++) {
                var expected = got.length == 1 ? c.expectedTensor() : c.expectedTensor(i);
                assertEquals(expected.get("dtype").getAsString(), got[i].dtype().toString().replace("torch.", ""), c + " output " + i + "'s dtype");
                Fixtures.assertMatches(expected, got[i], rtol, atol, c + " output " + i);
            }
        } finally {
            if (got != null) for (Tensor t : got) t.close();
            for (Tensor t : in) t.close();
        }
    }

    /**
     * A rank without rows (zero statistics, as SyncBatchNorm gives it, and a count of zero) leaves the merge and the
     * running statistics as if it were absent, as PyTorch's masking of such ranks does: no NaN from its invstd of 0.
     */
    @Test
    void aRankWithoutRowsIsLeftOutOfTheMerge() {
        var d = Fixtures.device();
        try (Tensor x = Torch.ones(new long[] {4, 3}, DType.FLOAT32, d);
             Tensor means = Torch.tensor(new float[] {1f, 2f, -3f, 0f, 0f, 0f, 0.5f, 4f, 1f}).view(3, 3).to(d);
             Tensor invstds = Torch.tensor(new float[] {2f, 0.5f, 1f, 0f, 0f, 0f, 1.5f, 0.25f, 3f}).view(3, 3).to(d);
             Tensor counts = Torch.tensor(new float[] {5f, 0f, 7f}).to(d);
             Tensor means2 = Torch.tensor(new float[] {1f, 2f, -3f, 0.5f, 4f, 1f}).view(2, 3).to(d);
             Tensor invstds2 = Torch.tensor(new float[] {2f, 0.5f, 1f, 1.5f, 0.25f, 3f}).view(2, 3).to(d);
             Tensor counts2 = Torch.tensor(new float[] {5f, 7f}).to(d);
             Tensor rm = Torch.zeros(new long[] {3}, DType.FLOAT32, d); Tensor rv = Torch.ones(new long[] {3}, DType.FLOAT32, d);
             Tensor rm2 = Torch.zeros(new long[] {3}, DType.FLOAT32, d); Tensor rv2 = Torch.ones(new long[] {3}, DType.FLOAT32, d)) {
            Tensor[] with = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS,
                    new Tensor[] {x, means, invstds, rm, rv, counts}, 0.1, 1e-5);
            Tensor[] without = Dispatcher.callAll(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS,
                    new Tensor[] {x, means2, invstds2, rm2, rv2, counts2}, 0.1, 1e-5);
            try {
                Tensor[][] pairs = {{with[0], without[0]}, {with[1], without[1]}, {rm, rm2}, {rv, rv2}};
                for (Tensor[] p : pairs) {
                    float[] a = p[0].toFloatArray(), b = p[1].toFloatArray();
                    for (int i = 0; i < a.length; i++) {
                        assertTrue(Float.isFinite(a[i]), "a rank without rows made a non-finite statistic: " + java.util.Arrays.toString(a));
                    }
                    org.junit.jupiter.api.Assertions.assertArrayEquals(b, a);
                }
            } finally {
                for (Tensor t : with) t.close();
                for (Tensor t : without) t.close();
            }
        }
    }

    /** A user's mistake is an error naming the op and the shapes, not a crash. */
    @Test
    void badInputNamesTheOpAndTheShapes() {
        var d = Fixtures.device();
        try (Tensor x = Torch.ones(new long[] {4, 3}, DType.FLOAT32, d); Tensor c2 = Torch.ones(new long[] {2}, DType.FLOAT32, d);
                Tensor c3 = Torch.ones(new long[] {3}, DType.FLOAT32, d); Tensor ranks = Torch.ones(new long[] {2, 3}, DType.FLOAT32, d);
                Tensor vector = Torch.ones(new long[] {4}, DType.FLOAT32, d); Tensor counts = Torch.ones(new long[] {3}, DType.FLOAT32, d)) {
            expectError(NormalizationOps.BATCH_NORM_STATS, new Tensor[] {vector}, "[4]", 1e-5);
            expectError(NormalizationOps.BATCH_NORM_ELEMT, new Tensor[] {x, null, null, c2, c3}, "[2]", 1e-5);
            expectError(NormalizationOps.BATCH_NORM_GATHER_STATS_WITH_COUNTS, new Tensor[] {x, ranks, ranks, null, null, counts}, "[3]",
                    0.1, 1e-5);
            expectError(NormalizationOps.BATCH_NORM_BACKWARD_REDUCE, new Tensor[] {vector, x, c3, c3, null}, "[4]", 1, 1, 1);
            expectError(NormalizationOps.BATCH_NORM_BACKWARD_ELEMT, new Tensor[] {x, x, c3, c3, null, c3, c2, counts}, "[2]");
        }
    }

    private static void expectError(OpDef op, Tensor[] in, String shape, double... scalars) {
        RuntimeException e = assertThrows(RuntimeException.class, () -> Dispatcher.callAll(op, in, scalars));
        assertTrue(e.getMessage().contains(op.name()) && e.getMessage().contains(shape), e.getMessage());
    }
}
