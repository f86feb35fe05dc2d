package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.Backends;
import org.jtorch.backend.LinalgKernels.Activation;
import org.jtorch.nn.F;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The declared {@link LinalgOps#LINEAR_ACTIVATION} ({@code _linear_activation}): its outputs and gradients against
 * PyTorch 1.13's composition (tools/fixtures/gen_linear_activation.py), gradcheck in float64 for each activation with and
 * without the kept input, the empty {@code pre} where the gradient does not read it, the registered test that tells
 * whether the backend runs it as one kernel (none on the CPU; cuBLASLt's epilogues on CUDA), and errors naming the op.
 * The simulator pass runs this class on cuda:0, where the float operands take cuBLASLt's fused epilogues.
 */
@ExtendWith(ScopePerTest.class)
class LinearActivationOpTest {
    private static final Device DEVICE = Fixtures.device();

    @TestFactory
    Stream<DynamicTest> matchesPyTorchsComposition() {
        return Fixtures.load("linear_activation").stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> check(c)));
    }

    private static void check(Case c) {
        boolean withBias = c.inputs().size() > 3;
        boolean f64 = c.name().endsWith("f64");
        Tensor x = c.input(0).requiresGrad_(true);
        Tensor w = c.input(1).requiresGrad_(true);
        Tensor g = c.input(2);
        Tensor b = withBias ? c.input(3).requiresGrad_(true) : null;
        Activation act = Activation.values()[(int) c.doubleArg("activation", -1)];
        double rtol = f64 ? 1e-12 : 2e-5, atol = f64 ? 1e-12 : 2e-5;
        for (boolean keep : new boolean[] {false, true}) {
            String what = c.name() + (keep ? " keeping the input" : "");
            Tensor[] r = Linalg.linearActivation(x, w, b, act, keep);
            assertEquals(2, r.length, what);
            Fixtures.assertMatches(c.expectedTensor(0), r[0], rtol, atol, what + ": out");
            if (keep && act == Activation.GELU_TANH) {
                Fixtures.assertClose(F.linear(x, w, b).detach(), r[1].detach(), rtol, atol, what + ": pre");
            } else {
                assertEquals(0, r[1].numel(), what + ": pre is empty where the gradient does not read it");
            }
            assertEquals("LinearActivationBackward0", r[0].gradFn().name(), what);
            Tensor[] grads = org.jtorch.autograd.Autograd.grad(new Tensor[] {r[0]}, withBias ? new Tensor[] {x, w, b} : new Tensor[] {x, w},
                    new Tensor[] {g}, false, false, false);
            for (int i = 0; i < grads.length; i++) {
                Fixtures.assertMatches(c.expectedTensor(1 + i), grads[i], rtol, atol, what + ": gradient " + i);
            }
        }
    }

    @Test
    void declaredWithKernelsAndATestOnTheTestDevice() {
        OpDef op = LinalgOps.LINEAR_ACTIVATION;
        assertEquals(op, OpRegistry.get(op.name()));
        assertEquals("_linear_activation", op.pyName());
        assertEquals(2, op.outputCount());
        assertTrue(op.isDifferentiable());
        assertNull(op.autocast(DEVICE.type()));
        assertTrue(op.signature().toString().contains("int activation"), op.signature().toString());
        Backends.of(DEVICE);
        assertTrue(KernelRegistry.hasStructured(op, DEVICE.type()), "a kernel on " + DEVICE);
        Tensor x = Torch.randn(16, 8).to(DEVICE);
        Tensor w = Torch.randn(24, 8).to(DEVICE);
        Tensor b = Torch.randn(24).to(DEVICE);
        if (DEVICE.isCpu()) {
            // The CPU's GEMM applies no activation itself: the JIT keeps its own epilogue there.
            for (Activation act : Activation.values()) assertFalse(Linalg.fusesLinearActivation(x, w, b, act, true), act.name());
        } else {
            assertTrue(Linalg.fusesLinearActivation(x, w, b, Activation.RELU, true));
            assertTrue(Linalg.fusesLinearActivation(x, w, b, Activation.GELU_TANH, true));
            assertTrue(Linalg.fusesLinearActivation(x, w, null, Activation.GELU_TANH, false));
            // GELU's kept input with a row of 12 (not a multiple of 8), a strided bias, a batch that is not one matrix.
            Tensor w12 = Torch.randn(12, 8).to(DEVICE);
            assertFalse(Linalg.fusesLinearActivation(x, w12, null, Activation.GELU_TANH, true));
            assertTrue(Linalg.fusesLinearActivation(x, w12, null, Activation.GELU_TANH, false));
            Tensor strided = Torch.randn(48).to(DEVICE).slice(0, 0, 48, 2);
            assertFalse(Linalg.fusesLinearActivation(x, w, strided, Activation.RELU, false));
            assertFalse(Linalg.fusesLinearActivation(Torch.randn(3, 8, 5).to(DEVICE).transpose(0, 1), w, b, Activation.RELU, false));
        }
    }

    @Test
    void operandsTheFusedKernelDeclinesGiveTheSameValues() {
        Torch.manualSeed(5);
        Tensor x = Torch.randn(5, 8).to(DEVICE);
        Tensor w = Torch.randn(12, 8).to(DEVICE);
        Tensor strided = Torch.randn(24).to(DEVICE).slice(0, 0, 24, 2);
        Tensor xs = Torch.randn(8, 5).to(DEVICE).t();
        for (Activation act : Activation.values()) {
            Tensor want = activation(F.linear(x, w, strided), act);
            Tensor[] r = Linalg.linearActivation(x, w, strided, act, true);
            Fixtures.assertClose(want, r[0], 1e-5, 1e-5, act + ", strided bias");
            Tensor[] s = Linalg.linearActivation(xs, w, strided, act, true);
            Fixtures.assertClose(activation(F.linear(xs, w, strided), act), s[0], 1e-5, 1e-5, act + ", transposed input");
            if (act == Activation.GELU_TANH) Fixtures.assertClose(F.linear(x, w, strided), r[1], 1e-5, 1e-5, "kept input");
        }
    }

    private static Tensor activation(Tensor t, Activation act) {
        return switch (act) {
            case NONE -> t;
            case RELU -> t.relu();
            case GELU_TANH -> F.gelu(t, "tanh");
        };
    }

    @Test
    void passesGradcheckInFloat64ForEachActivationWithAndWithoutTheKeptInput() {
        Torch.manualSeed(6);
        Tensor x = Torch.randn(4, 3, 5).to(DType.FLOAT64).to(DEVICE).requiresGrad_(true);
        Tensor w = Torch.randn(8, 5).to(DType.FLOAT64).to(DEVICE).requiresGrad_(true);
        Tensor b = Torch.randn(8).to(DType.FLOAT64).to(DEVICE).requiresGrad_(true);
        for (Activation act : Activation.values()) {
            for (boolean keep : new boolean[] {false, true}) {
                assertTrue(Gradcheck.check(t -> Linalg.linearActivation(t[0], t[1], t[2], act, keep)[0], x, w, b), act + " keep " + keep);
                assertTrue(Gradcheck.check(t -> Linalg.linearActivation(t[0], t[1], null, act, keep)[0], x, w), act + " keep " + keep
                        + " without bias");
            }
        }
    }

    @Test
    void withoutGradModeNothingIsRecorded() {
        Tensor x = Torch.randn(3, 4).to(DEVICE).requiresGrad_(true);
        Tensor w = Torch.randn(8, 4).to(DEVICE);
        try (Grad.Mode off = Grad.noGrad()) {
            Tensor[] r = Linalg.linearActivation(x, w, null, Activation.GELU_TANH, false);
            assertNull(r[0].gradFn());
            assertFalse(r[0].requiresGrad());
        }
    }

    @Test
    void badArgumentsNameTheOp() {
        Tensor x = Torch.randn(3, 4).to(DEVICE);
        Tensor w = Torch.randn(8, 5).to(DEVICE);
        RuntimeException e = assertThrows(RuntimeException.class, () -> Linalg.linearActivation(x, w, null, Activation.RELU, false));
        assertTrue(e.getMessage().contains("linear") && e.getMessage().contains("[3, 4]") && e.getMessage().contains("[8, 5]"), e.getMessage());
        Tensor w4 = Torch.randn(8, 4).to(DEVICE);
        e = assertThrows(RuntimeException.class,
                () -> Dispatcher.callAll(LinalgOps.LINEAR_ACTIVATION, new Tensor[] {x, w4, null}, 7, 0));
        assertTrue(e.getMessage().contains("_linear_activation") && e.getMessage().contains("activation"), e.getMessage());
        Tensor xi = Torch.ones(new long[] {3, 4}, DType.INT64, DEVICE);
        Tensor wi = Torch.ones(new long[] {8, 4}, DType.INT64, DEVICE);
        e = assertThrows(RuntimeException.class, () -> Linalg.linearActivation(xi, wi, null, Activation.GELU_TANH, false));
        assertTrue(e.getMessage().contains("_linear_activation") && e.getMessage().contains("int64"), e.getMessage());
        Tensor x64 = Torch.randn(3, 4).to(DType.FLOAT64).to(DEVICE);
        e = assertThrows(RuntimeException.class, () -> Linalg.linearActivation(x64, w4, null, Activation.RELU, false));
        assertTrue(e.getMessage().contains("linear") && e.getMessage().contains("float64") && e.getMessage().contains("float32"), e.getMessage());
        if (!DEVICE.isCpu()) {
            Tensor wc = Torch.randn(8, 4);
            e = assertThrows(RuntimeException.class, () -> Linalg.linearActivation(x, wc, null, Activation.RELU, false));
            assertTrue(e.getMessage().contains("linear") && e.getMessage().contains("cpu"), e.getMessage());
        }
    }

    @Test
    void reluOfTheProductEqualsEagerBitForBit() {
        Torch.manualSeed(7);
        Tensor x = Torch.randn(33, 17).to(DEVICE);
        Tensor w = Torch.randn(29, 17).to(DEVICE);
        Tensor b = Torch.randn(29).to(DEVICE);
        Tensor[] r = Linalg.linearActivation(x, w, b, Activation.RELU, false);
        assertArrayEquals(F.linear(x, w, b).relu().toFloatArray(), r[0].toFloatArray());
    }
}
