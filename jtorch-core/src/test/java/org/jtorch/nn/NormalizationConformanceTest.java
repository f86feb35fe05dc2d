package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Batch, instance, group and local response norm, functional and as modules, against PyTorch 1.13
 * ({@code tools/fixtures/gen_normalization.py}): outputs, running statistics after each call, input,
 * weight and bias gradients of {@code sum(output * u)} with {@code u[i] = sin(0.7 i + 0.3)}, module
 * buffers after 1-3 training steps (momentum 0.1 and the cumulative average) and eval outputs, over
 * 2-D to 5-D, channels-last, transposed and sliced inputs, float64, float32 and bfloat16, and the
 * errors PyTorch raises.
 */
class NormalizationConformanceTest {
    private static final List<Case> CASES = Fixtures.load("normalization");
    private static final List<String> FUNCTIONAL = List.of("batch_norm", "instance_norm", "group_norm", "local_response_norm");

    /** PyTorch's group norm of an empty batch: an empty output and zero gradients for the weight and the bias. */
    @org.junit.jupiter.api.Test
    void groupNormOfAnEmptyBatchHasZeroAffineGradients() {
        for (DType dtype : new DType[] {DType.FLOAT32, DType.FLOAT64}) {
            try (Tensor x = Torch.randn(new long[] {0, 6, 5, 5}, dtype, Fixtures.device(), Torch.manualSeed(1)).requiresGrad_(true);
                 Tensor w = Torch.ones(new long[] {6}, dtype, Fixtures.device()).requiresGrad_(true);
                 Tensor b = Torch.zeros(new long[] {6}, dtype, Fixtures.device()).requiresGrad_(true);
                 Tensor y = F.groupNorm(x, 3, w, b, 1e-5); Tensor loss = y.sum()) {
                org.junit.jupiter.api.Assertions.assertArrayEquals(x.shape(), y.shape());
                org.junit.jupiter.api.Assertions.assertEquals(dtype, y.dtype());
                Tensor[] g = org.jtorch.autograd.Autograd.grad(new Tensor[] {loss}, new Tensor[] {x, w, b}, null, false, false, false);
                try (Tensor gx = g[0]; Tensor gw = g[1]; Tensor gb = g[2]; Tensor gwAbs = gw.abs(); Tensor gwMax = gwAbs.max();
                     Tensor gbAbs = gb.abs(); Tensor gbMax = gbAbs.max()) {
                    org.junit.jupiter.api.Assertions.assertArrayEquals(x.shape(), gx.shape());
                    org.junit.jupiter.api.Assertions.assertEquals(0.0, gwMax.item());
                    org.junit.jupiter.api.Assertions.assertEquals(0.0, gbMax.item());
                }
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> functionalOpsMatchPyTorch() {
        return CASES.stream().filter(c -> FUNCTIONAL.contains(c.op()))
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkFunctional(c)));
    }

    @TestFactory
    Stream<DynamicTest> modulesMatchPyTorchOverTrainingSteps() {
        return CASES.stream().filter(c -> !FUNCTIONAL.contains(c.op()))
                .map(c -> DynamicTest.dynamicTest(c.op() + "/" + c.name(), () -> checkModule(c)));
    }

    // ------------------------------------------------------------------ functional

    private static void checkFunctional(Case c) {
        List<Tensor> owned = new ArrayList<>();
        try {
            Map<String, Tensor> t = new HashMap<>();
            JsonArray present = c.args().getAsJsonArray("present");
            for (int i = 0; i < present.size(); i++) {
                String name = present.get(i).getAsString();
                Tensor x = c.input(i);
                owned.add(x);
                if ((name.equals("input") || name.equals("weight") || name.equals("bias")) && x.dtype().isFloatingPoint()) {
                    x.requiresGrad_(true);
                }
                t.put(name, x);
            }
            if (c.expectsError()) {
                RuntimeException e = assertThrows(RuntimeException.class, () -> runFunctional(c, t).close(), c.toString());
                assertTrue(e.getMessage().contains(Fixtures.javaName(c.op())), c + ": message should name the op: " + e.getMessage());
                return;
            }
            Tensor out = runFunctional(c, t);
            owned.add(out);
            Map<String, Tensor> actual = new HashMap<>();
            actual.put("output", out);
            actual.put("running_mean", t.get("running_mean"));
            actual.put("running_var", t.get("running_var"));
            List<String> names = names(c);
            if (names.stream().anyMatch(n -> n.startsWith("grad_"))) {
                try (Tensor u = upstream(out); Tensor prod = out.mul(u); Tensor loss = prod.sum()) {
                    loss.backward();
                }
                for (String k : List.of("input", "weight", "bias")) if (t.containsKey(k)) actual.put("grad_" + k, t.get(k).grad());
            }
            compare(c, names, actual);
        } finally {
            owned.forEach(Tensor::close);
        }
    }

    private static Tensor runFunctional(Case c, Map<String, Tensor> t) {
        Tensor x = t.get("input");
        Tensor w = t.get("weight");
        Tensor b = t.get("bias");
        return switch (c.op()) {
            case "batch_norm" -> F.batchNorm(x, t.get("running_mean"), t.get("running_var"), w, b, c.boolArg("training", false),
                    c.doubleArg("momentum", 0.1), c.doubleArg("eps", 1e-5));
            case "instance_norm" -> F.instanceNorm(x, t.get("running_mean"), t.get("running_var"), w, b,
                    c.boolArg("use_input_stats", true), c.doubleArg("momentum", 0.1), c.doubleArg("eps", 1e-5));
            case "group_norm" -> F.groupNorm(x, c.longArg("num_groups", 1), w, b, c.doubleArg("eps", 1e-5));
            case "local_response_norm" -> F.localResponseNorm(x, (int) c.longArg("size", 1), c.doubleArg("alpha", 1e-4),
                    c.doubleArg("beta", 0.75), c.doubleArg("k", 1.0));
            default -> throw new IllegalStateException("unknown op " + c.op());
        };
    }

    // ------------------------------------------------------------------ modules

    private static void checkModule(Case c) {
        List<Tensor> owned = new ArrayList<>();
        DType dtype = c.input(c.inputs().size() - 1).dtype();
        try (Module m = module(c, dtype)) {
            if (c.expectsError()) {
                try (Tensor x = c.input(0)) {
                    RuntimeException e = assertThrows(RuntimeException.class, () -> m.forward(x).close(), c.toString());
                    assertTrue(e.getMessage().contains(c.op()), c + ": message should name the module: " + e.getMessage());
                }
                return;
            }
            int next = 0;
            boolean affine = c.boolArg("affine", false);
            if (affine) {
                try (Grad.Mode g = Grad.noGrad(); Tensor w = c.input(0); Tensor b = c.input(1); Tensor wd = m.parameter("weight").detach();
                     Tensor bd = m.parameter("bias").detach()) {
                    wd.copy_(w);
                    bd.copy_(b);
                }
                next = 2;
            }
            Map<String, Tensor> actual = new HashMap<>();
            long steps = c.longArg("steps", 1);
            for (int i = 1; i <= steps; i++) {
                Tensor x = c.input(next++).requiresGrad_(true);
                owned.add(x);
                Tensor out = m.forward(x);
                owned.add(out);
                try (Tensor u = upstream(out); Tensor prod = out.mul(u); Tensor loss = prod.sum()) {
                    loss.backward();
                }
                actual.put("out" + i, out);
                actual.put("grad_input" + i, x.grad());
            }
            if (c.boolArg("eval", false)) {
                m.eval();
                Tensor x = c.input(next);
                owned.add(x);
                try (Grad.Mode g = Grad.noGrad()) {
                    Tensor out = m.forward(x);
                    owned.add(out);
                    actual.put("eval_out", out);
                }
            }
            for (Map.Entry<String, Tensor> e : m.namedBuffers().entrySet()) actual.put(e.getKey(), e.getValue());
            if (affine) {
                actual.put("weight.grad", m.parameter("weight").grad());
                actual.put("bias.grad", m.parameter("bias").grad());
            }
            compare(c, names(c), actual);
        } finally {
            owned.forEach(Tensor::close);
        }
    }

    private static Module module(Case c, DType dtype) {
        long n = c.longArg("num_features", 0);
        double eps = c.doubleArg("eps", 1e-5);
        JsonElement mom = c.args().get("momentum");
        Double momentum = mom == null || mom.isJsonNull() ? null : mom.getAsDouble();
        boolean affine = c.boolArg("affine", true);
        boolean track = c.boolArg("track", true);
        Device device = Fixtures.device();
        return switch (c.op()) {
            case "BatchNorm1d" -> new BatchNorm1d(n, eps, momentum, affine, track, dtype, device);
            case "BatchNorm2d" -> new BatchNorm2d(n, eps, momentum, affine, track, dtype, device);
            case "BatchNorm3d" -> new BatchNorm3d(n, eps, momentum, affine, track, dtype, device);
            case "InstanceNorm1d" -> new InstanceNorm1d(n, eps, momentum, affine, track, dtype, device);
            case "InstanceNorm2d" -> new InstanceNorm2d(n, eps, momentum, affine, track, dtype, device);
            case "InstanceNorm3d" -> new InstanceNorm3d(n, eps, momentum, affine, track, dtype, device);
            case "GroupNorm" -> new GroupNorm(c.longArg("num_groups", 1), c.longArg("num_channels", 1), eps, affine, dtype, device);
            case "LocalResponseNorm" -> new LocalResponseNorm((int) c.longArg("size", 1), c.doubleArg("alpha", 1e-4),
                    c.doubleArg("beta", 0.75), c.doubleArg("k", 1.0));
            default -> throw new IllegalStateException("unknown module " + c.op());
        };
    }

    // ------------------------------------------------------------------ helpers

    private static List<String> names(Case c) {
        List<String> names = new ArrayList<>();
        for (JsonElement e : c.args().getAsJsonArray("outputs")) names.add(e.getAsString());
        return names;
    }

    private static void compare(Case c, List<String> names, Map<String, Tensor> actual) {
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            Tensor a = actual.get(name);
            if (a == null) throw new AssertionError(c + ": no value for " + name);
            JsonObject expected = c.expectedTensor(i);
            DType dt = DType.parse(expected.get("dtype").getAsString());
            // Sums over a batch run in a different order than PyTorch's: float32 gets 1e-4 relative.
            double rtol = switch (dt) {
                case FLOAT64 -> 1e-9;
                case FLOAT32 -> 1e-4;
                case FLOAT16 -> 2e-3;
                case BFLOAT16 -> 1.6e-2;
                default -> 0;
            };
            double atol = switch (dt) {
                case FLOAT64 -> 1e-10;
                case FLOAT32 -> 2e-5;
                case FLOAT16 -> 2e-3;
                case BFLOAT16 -> 2e-2;
                default -> 0;
            };
            Fixtures.assertMatches(expected, a, rtol, c.doubleArg("atol", atol), c + " " + name);
        }
    }

    /** {@code u[i] = sin(0.7 i + 0.3)} over the flattened output, in its dtype. */
    private static Tensor upstream(Tensor out) {
        double[] u = new double[Math.toIntExact(out.numel())];
        for (int i = 0; i < u.length; i++) u[i] = Math.sin(0.7 * i + 0.3);
        try (Tensor d = Torch.tensor(u, out.shape())) {
            return d.to(out.device(), out.dtype());
        }
    }
}
