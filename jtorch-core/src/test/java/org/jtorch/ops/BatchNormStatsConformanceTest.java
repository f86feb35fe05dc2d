package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.NormalizationOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Batch norm's statistics against PyTorch 1.13 (tools/fixtures/gen_batch_norm_stats.py): the declared
 * {@link NormalizationOps#BATCH_NORM_MEAN_VAR} through the dispatcher, and {@code batch_norm_stats}'s mean and
 * {@code invstd} as {@link Normalization#batchNormStatistics} returns them, on the fixtures' device.
 */
class BatchNormStatsConformanceTest {
    @TestFactory
    Stream<DynamicTest> matchesPyTorch() {
        return Fixtures.load("batch_norm_stats").stream().map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        try (Tensor x = c.input(0)) {
            Tensor[] r = c.op().equals("batch_norm_mean_var") ? Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {x})
                    : Normalization.batchNormStatistics(x, null, null, 0.1, c.doubleArg("eps", 1e-5));
            try {
                assertEquals(2, r.length, c.toString());
                boolean f64 = x.dtype() == DType.FLOAT64;
                for (int i = 0; i < 2; i++) {
                    Fixtures.assertMatches(c.expectedTensor(i), r[i], f64 ? 1e-12 : 1e-5, f64 ? 1e-14 : 1e-6, c + " output " + i);
                }
            } finally {
                for (Tensor t : r) t.close();
            }
        }
    }

    @Test
    void badInputNamesTheOp() {
        try (Tensor x = Torch.ones(new long[] {4}, DType.FLOAT32, Fixtures.device()); Tensor i = Torch.ones(new long[] {4, 3}, DType.INT32, Fixtures.device())) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {x}));
            assertTrue(e.getMessage().contains("batch_norm_mean_var") && e.getMessage().contains("[4]"), e.getMessage());
            e = assertThrows(RuntimeException.class, () -> Dispatcher.callAll(NormalizationOps.BATCH_NORM_MEAN_VAR, new Tensor[] {i}));
            assertTrue(e.getMessage().contains("batch_norm_mean_var"), e.getMessage());
        }
    }
}
