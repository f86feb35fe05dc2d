package org.jtorch.op;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.ops.Dispatcher;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The OpInfo-style table of the ops declared with a formula: every case of the registry_pointwise fixtures
 * (PyTorch 1.13, tools/fixtures/gen_registry_pointwise.py) checks the forward value and the gradient of
 * {@code sum(op(...))} of each input, through {@link Dispatcher#call}; every differentiable one passes
 * gradcheck in float64; and docs/OPS.md must be what the registry prints.
 */
class PointwiseOpTableTest {
    /** The scalar parameters of each op, from the fixture's args, in signature order (NaN = None). */
    private static final Map<String, List<String>> SCALARS = Map.of(
            "logit", List.of("eps"), "hardtanh", List.of("min_val", "max_val"));

    @TestFactory
    List<DynamicTest> matchesPyTorch() {
        List<DynamicTest> tests = new ArrayList<>();
        Device device = Fixtures.device();
        for (Fixtures.Case c : Fixtures.load("registry_pointwise")) {
            tests.add(DynamicTest.dynamicTest(c.name(), () -> {
                OpDef op = OpRegistry.get(c.op());
                Tensor[] in = new Tensor[c.op().equals("clamp_tensor") ? 3 : c.inputs().size()];
                for (int i = 0; i < c.inputs().size(); i++) {
                    Tensor t = Fixtures.decode(c.inputs().get(i).getAsJsonObject(), device);
                    in[i] = t.dtype().isFloatingPoint() && op.isDifferentiable() ? t.requiresGrad_(true) : t;
                }
                double[] scalars = scalars(op, c);
                Tensor y = Dispatcher.call(op, in, scalars);
                Fixtures.assertMatches(c.expectedTensor(0), y.detach(), c.name() + " value");
                int expected = c.expected().getAsJsonArray().size();
                if (expected > 1) {
                    y.sum().backward();
                    for (int i = 0; i + 1 < expected; i++) {
                        Fixtures.assertMatches(c.expectedTensor(i + 1), in[i].grad(), c.name() + " grad of input " + i);
                    }
                }
            }));
        }
        return tests;
    }

    private static double[] scalars(OpDef op, Fixtures.Case c) {
        List<String> names = SCALARS.getOrDefault(op.name(), List.of());
        if (op.name().equals("hardtanh")) return new double[] {c.doubleArg("min_val", -1), c.doubleArg("max_val", 1)};
        if (op.name().equals("logit")) return new double[] {c.doubleArg("eps", Double.NaN)};
        if (op.name().equals("leaky_relu_backward")) return new double[] {c.doubleArg("negative_slope", Double.NaN)};
        return new double[names.size()];
    }

    private static final Map<String, double[]> GRADCHECK_SCALARS = Map.of("hardtanh", new double[] {-1.5, 2}, "pow_scalar",
            new double[] {2.5}, "leaky_relu", new double[] {0.2}, "leaky_relu_backward", new double[] {0.2}, "softplus", new double[] {1.5, 3}, "clamp", new double[] {-1, 2},
            "elu", new double[] {1.3}, "elu_backward", new double[] {1.3});
    private static final java.util.Set<String> POSITIVE_DOMAIN = java.util.Set.of("pow", "pow_scalar", "log", "log1p", "sqrt", "rsqrt");

    @Test
    void gradcheckEveryDifferentiableFormulaOpInFloat64() {
        Torch.manualSeed(15);
        for (OpDef op : OpRegistry.all()) {
            if (!op.hasGeneratedKernels() || !op.isDifferentiable()) continue;
            // Inside the domain: logit's (0, 1), positive arguments of the logarithms and roots, positive bases of the
            // powers (a negative one to a fractional power is NaN).
            Tensor x = op.name().equals("logit") ? Torch.rand(7).mul(0.8).add(0.1).to(DType.FLOAT64)
                    : POSITIVE_DOMAIN.contains(op.name()) ? Torch.rand(7).add(0.5).to(DType.FLOAT64)
                    : Torch.randn(7).mul(3.0).to(DType.FLOAT64);
            x.requiresGrad_(true);
            try {
                if (op.kind() == OpDef.Kind.UNARY) {
                    double[] s = GRADCHECK_SCALARS.getOrDefault(op.name(), new double[] {Double.NaN});
                    assertTrue(Gradcheck.check(t -> Dispatcher.call(op, t, s), new Tensor[] {x}), op.name());
                } else {
                    Tensor b = Torch.rand(7).add(0.5).to(DType.FLOAT64).requiresGrad_(true);
                    double[] s = GRADCHECK_SCALARS.get(op.name());
                    assertTrue(Gradcheck.check(t -> s == null ? Dispatcher.call(op, t) : Dispatcher.call(op, t, s),
                            new Tensor[] {x, b}), op.name());
                }
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError(op.name() + ": " + e.getMessage(), e);
            }
        }
    }

    @Test
    void integerFmodByZeroThrowsNamingTheOp() {
        Tensor a = Torch.tensor(new long[] {3, 4});
        Tensor b = Torch.tensor(new long[] {1, 0});
        ArithmeticException e = assertThrows(ArithmeticException.class, () -> a.fmod(b));
        assertTrue(e.getMessage().contains("fmod"), e.getMessage());
    }

    @Test
    void mishRejectsIntegersNamingTheOpAndDtype() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Torch.tensor(new long[] {1}).mish());
        assertTrue(e.getMessage().contains("mish") && e.getMessage().contains("int64"), e.getMessage());
    }

    @Test
    void traceHookRecordsEveryDispatchedOpInOrder() {
        List<String> trace = new ArrayList<>();
        Tensor x = Torch.tensor(new float[] {1, -2, 3});
        Tensor y;
        try (var scope = Dispatcher.trace((op, inputs, scalars, reduce, out) ->
                trace.add(op.name() + "(" + inputs.size() + ") -> " + Arrays2.shape(out)))) {
            y = x.mul(2.0).relu6().add(x);
        }
        x.neg();
        assertEquals(List.of("mul(2) -> [3]", "relu6(1) -> [3]", "add(2) -> [3]"), trace);
        assertEquals("[3.0, -2.0, 9.0]", java.util.Arrays.toString(y.toFloatArray()));
    }

    @Test
    void everyDeclaredPointwiseOpHasACpuKernel() {
        for (OpDef op : OpRegistry.all()) {
            if (op.kind().isPointwise()) assertTrue(KernelRegistry.has(op, Device.Type.CPU), op.name());
        }
    }

    @Test
    void opsDocIsGeneratedFromTheRegistry() throws Exception {
        // Maven runs the test in jtorch-core, the CUDA suites' launcher in the repository root.
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        Path doc = (Files.isDirectory(dir.resolve("jtorch-core")) ? dir : dir.getParent()).resolve("docs/OPS.md");
        String expected = OpsDoc.render();
        if (Boolean.getBoolean("jtorch.regenerateDocs")) Files.writeString(doc, expected);
        assertTrue(Files.exists(doc), "docs/OPS.md is missing: run with -Djtorch.regenerateDocs=true");
        assertEquals(expected, Files.readString(doc), "docs/OPS.md is stale: rerun this test with -Djtorch.regenerateDocs=true");
        assertFalse(expected.isEmpty());
    }

    private static final class Arrays2 {
        static String shape(Tensor t) {
            return java.util.Arrays.toString(t.shape());
        }
    }
}
