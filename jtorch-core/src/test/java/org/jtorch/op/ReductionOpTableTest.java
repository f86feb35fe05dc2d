package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.memory.StorageCleaner;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The declared reductions, driven by the registry (on the test device: the CUDA suites run it on cuda:0): every differentiable one passes gradcheck in float64 over
 * all dims, one dim, several dims with keepdim, and a negative dim, and its gradient is itself differentiable
 * (its derivative is written with ops); every admitted dtype gives the rule's result dtype. Values against
 * PyTorch are the reductions fixtures' (ReductionsConformanceTest), which now run through these declarations.
 */
class ReductionOpTableTest {
    private static final ReduceArgs[] CALLS = {
            new ReduceArgs(null, false), new ReduceArgs(new int[] {1}, false),
            new ReduceArgs(new int[] {0, 2}, true), new ReduceArgs(new int[] {-1}, true)};

    /** The op's scalar parameter values to check: norm's orders, var's and std's corrections. */
    private static double[] scalars(OpDef op) {
        return switch (op.name()) {
            case "norm" -> new double[] {2, 1, 3, 0.5, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
            case "var", "std" -> new double[] {1, 0};
            default -> new double[] {0};
        };
    }

    private static List<OpDef> reductions() {
        List<OpDef> ops = new ArrayList<>();
        for (OpDef op : OpRegistry.all()) if (op.kind() == OpDef.Kind.REDUCTION) ops.add(op);
        return ops;
    }

    @Test
    void theRegistryDeclaresTheAccumulatingReductions() {
        List<String> names = reductions().stream().map(OpDef::name).toList();
        assertTrue(names.containsAll(List.of("sum", "prod", "mean", "amax", "amin", "norm", "logsumexp", "var", "std", "any", "all")),
                names.toString());
    }

    @Test
    void gradcheckEveryDifferentiableReductionInFloat64() {
        Torch.manualSeed(15);
        for (OpDef op : reductions()) {
            if (!op.isDifferentiable()) continue;
            // Away from zero, so that prod's quotient form is well conditioned.
            Tensor x = Torch.rand(2, 3, 4).add(0.5).to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
            for (ReduceArgs call : CALLS) {
                for (double p : scalars(op)) {
                    assertTrue(Gradcheck.check(t -> Dispatcher.reduce(op, t[0], call, null, p), new Tensor[] {x}),
                            op.name() + " " + call + " p=" + p);
                }
            }
        }
    }

    @Test
    void gradientsOfReductionsAreDifferentiable() {
        Torch.manualSeed(16);
        for (OpDef op : reductions()) {
            if (!op.isDifferentiable()) continue;
            Tensor x = Torch.rand(3, 4).add(0.5).to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
            ReduceArgs call = new ReduceArgs(new int[] {1}, false);
            double p = scalars(op)[0];
            // d/dx of sum(reduce(x)^2 * x-independent weights) through the gradient's own graph.
            assertTrue(Gradcheck.check(t -> {
                Tensor y = Dispatcher.reduce(op, t[0], call, null, p);
                Tensor g = Autograd.grad(new Tensor[] {y.mul(y).sum()}, new Tensor[] {t[0]}, null, true, true, false)[0];
                return g.mul(g).sum();
            }, new Tensor[] {x}), op.name());
        }
    }

    @Test
    void gradcheckEveryOpAlongADimensionInFloat64() {
        Torch.manualSeed(17);
        List<OpDef> ops = OpRegistry.all().stream().filter(op -> op.kind() == OpDef.Kind.ALONG_DIM).toList();
        assertEquals(List.of("softmax", "log_softmax", "cumsum", "cumprod"), ops.stream().map(OpDef::name).toList());
        Tensor x = Torch.randn(2, 3, 4).to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
        Tensor scalar = Torch.randn().to(DType.FLOAT64).to(Fixtures.device()).requiresGrad_(true);
        for (OpDef op : ops) {
            for (int dim : new int[] {0, 1, -1}) {
                assertTrue(Gradcheck.check(t -> Dispatcher.alongDim(op, t[0], dim, null), new Tensor[] {x}), op.name() + " " + dim);
            }
            assertTrue(Gradcheck.check(t -> Dispatcher.alongDim(op, t[0], -1, null), new Tensor[] {scalar}), op.name() + " 0-d");
        }
    }

    @Test
    void prodGradientWithZerosMatchesPyTorch() {
        // PyTorch 1.13: x = [[1, 0, 3], [0, 0, 2]], prod(x, 1).sum().backward() gives [[0, 3, 0], [0, 0, 0]].
        Tensor x = Torch.tensor(new double[] {1, 0, 3, 0, 0, 2}, 2, 3).to(Fixtures.device()).requiresGrad_(true);
        Dispatcher.reduce(ReductionOps.PROD, x, new ReduceArgs(new int[] {1}, false), null, 0).sum().backward();
        assertArrayEquals(new double[] {0, 3, 0, 0, 0, 0}, x.grad().toDoubleArray());
    }

    @Test
    void tiedExtremaShareTheGradientEvenly() {
        Tensor x = Torch.tensor(new double[] {2, 5, 5, 1}).to(Fixtures.device()).requiresGrad_(true);
        Dispatcher.reduce(ReductionOps.AMAX, x, new ReduceArgs(null, false), null, 0).backward();
        assertArrayEquals(new double[] {0, 0.5, 0.5, 0}, x.grad().toDoubleArray());
    }

    @Test
    void everyAdmittedDtypeGivesTheRulesResultDtype() {
        for (OpDef op : reductions()) {
            for (DType t : DType.values()) {
                if (!op.rule().admits(t)) continue;
                try (Tensor x = Torch.ones(new long[] {2, 3}, t, Fixtures.device());
                     Tensor r = Dispatcher.reduce(op, x, new ReduceArgs(new int[] {0}, false), null, scalars(op)[0])) {
                    assertEquals(op.resultType(op.computeType(t, Torch.defaultDtype())), r.dtype(), op.name() + " " + t);
                    assertArrayEquals(new long[] {3}, r.shape(), op.name() + " " + t);
                }
            }
        }
    }

    @Test
    void anExplicitDtypeIsTheResultsDtypeAsPyTorch() {
        // PyTorch 1.13: torch.sum(torch.ones(3), dtype=torch.int32).dtype == torch.int32, and prod keeps int16.
        assertEquals(DType.INT32, Torch.ones(3).sum(new int[0], false, DType.INT32).dtype());
        assertEquals(DType.INT16, Torch.ones(new long[] {3}, DType.INT16, Device.cpu()).prod(new int[0], false, DType.INT16).dtype());
        assertEquals(6L, Torch.ones(new long[] {2, 3}, DType.INT32, Device.cpu()).sum(new int[0], false, DType.INT32).itemLong());
    }

    @Test
    void meanOfIntegersNeedsAFloatingDtypeNamingTheOp() {
        Tensor x = Torch.tensor(new long[] {1, 2});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> x.mean());
        assertTrue(e.getMessage().contains("mean") && e.getMessage().contains("int64"), e.getMessage());
        assertEquals(1.5, x.mean(new int[0], false, DType.FLOAT64).item(), 0);
    }

    @Test
    void traceHookReportsTheReductionsDimensions() {
        List<String> trace = new ArrayList<>();
        Tensor x = Torch.ones(2, 3);
        try (var scope = Dispatcher.trace((op, inputs, scalars, reduce, out) -> trace.add(op.name() + " " + reduce))) {
            x.sum(new int[] {1}, true, null);
            x.mean();
        }
        // mean is composite: the trace sees through it, to its sum and division.
        assertEquals(List.of("sum dim=[1], keepdim=true", "sum dim=[], keepdim=false", "div null"), trace);
    }

    @Test
    void aCompositeReductionReleasesItsIntermediates() {
        try (Tensor x = Torch.ones(64, 64)) {
            // Earlier tests' unreachable tensors are returned first, so that no collection frees them mid-count.
            StorageCleaner.collect();
            long before = Torch.memoryStats(Device.cpu()).activeBlocks();
            x.mean(new int[] {0}, false, null).close();
            assertEquals(before, Torch.memoryStats(Device.cpu()).activeBlocks());
            assertFalse(x.isClosed());
        }
    }
}
