package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Init;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.RandomOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * The random ops as registry ops ({@link RandomOps}): kernels bit for bit with the compositions of tensor ops they replace,
 * the generator's state reserved by the dispatcher when the op runs (so that a replayed trace draws fresh numbers and
 * advances the generator exactly as eager calls do), dropout's backward as an op, and errors naming the op.
 */
class RandomOpsTest {
    private static final Device DEVICE = Fixtures.device();
    private static final DType[] FLOATS = {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16};

    private static long[] bits(Tensor t) {
        try (Tensor c = t.to(Device.cpu())) {
            return Arrays.stream(c.toDoubleArray()).mapToLong(Double::doubleToRawLongBits).toArray();
        }
    }

    @Test
    void everyRandomOpIsDeclared() {
        for (String name : new String[] {"uniform", "normal", "random_from", "bernoulli", "bernoulli_p", "native_dropout",
                "native_dropout_backward", "rand", "randn", "randint", "randperm", "multinomial"}) {
            assertEquals(name, OpRegistry.get(name).name());
        }
        assertTrue(RandomOps.NATIVE_DROPOUT.isRandom());
        assertFalse(RandomOps.NATIVE_DROPOUT_BACKWARD.isRandom());
    }

    /** The composition F.dropout ran before it was an op: a uniform draw of x's dtype, lt, to, mul by 1 / (1 - p), mul. */
    @Test
    void dropoutIsBitForBitTheCompositionItReplaced() {
        try (MemoryScope scope = new MemoryScope()) {
            for (DType t : FLOATS) {
                for (double p : new double[] {0.1, 0.5, 0.8}) {
                    Tensor x = Torch.randn(new long[] {17, 23}, t, DEVICE, new Generator(3));
                    Tensor y = F.dropout(x, p, true, new Generator(11));
                    Tensor u = Torch.rand(x.shape(), t, DEVICE, new Generator(11));
                    Tensor expected = x.mul(u.lt(1 - p).to(t).mul(1.0 / (1 - p)));
                    assertArrayEquals(bits(expected), bits(y), t + " p=" + p);
                }
            }
        }
    }

    @Test
    void bernoulliIsBitForBitAFloat64UniformBelowTheProbability() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor probs = Torch.rand(new long[] {9, 31}, DType.FLOAT32, DEVICE, new Generator(1));
            Tensor drawn = probs.bernoulli(new Generator(5));
            Tensor u = Torch.rand(probs.shape(), DType.FLOAT64, DEVICE, new Generator(5));
            assertArrayEquals(bits(u.lt(probs).to(DType.FLOAT32)), bits(drawn));
            Tensor fixed = probs.bernoulli(0.25, new Generator(6));
            Tensor v = Torch.rand(probs.shape(), DType.FLOAT64, DEVICE, new Generator(6));
            assertArrayEquals(bits(v.lt(0.25).to(DType.FLOAT32)), bits(fixed));
        }
    }

    /** Element i of a fill lands at logical index i, whatever self's strides (as the fill of a contiguous copy did). */
    @Test
    void aStridedInPlaceFillMatchesTheContiguousFill() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor t = Torch.zeros(new long[] {6, 5}, DType.FLOAT32, DEVICE).transpose(0, 1);
            Init.normal_(t, 1, 2, new Generator(4));
            Tensor c = Init.normal_(Torch.zeros(new long[] {5, 6}, DType.FLOAT32, DEVICE), 1, 2, new Generator(4));
            assertArrayEquals(bits(c), bits(t));
        }
    }

    @Test
    void aTracedDropoutReplaysFreshMasksAsEagerCallsDraw() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {64}, DType.FLOAT32, DEVICE);
            TensorFunction f = in -> F.dropout(in[0], 0.5, true).mul(2.0);
            String plan = Jit.explain(f, x);
            assertFalse(plan.contains("runs eagerly"), plan);
            assertTrue(plan.contains("native_dropout("), plan);
            // One op in the graph (no uniform, lt and cast of the old composition); the CPU's fused kernel draws inside.
            assertFalse(plan.contains("= lt(") || plan.contains("= uniform("), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x); // the first call traces; the next ones replay
            Torch.manualSeed(21);
            long[] r1 = bits(compiled.apply(x)), r2 = bits(compiled.apply(x));
            long[] afterReplays = Generator.defaultGenerator().getState();
            Torch.manualSeed(21);
            long[] e1 = bits(f.apply(new Tensor[] {x})), e2 = bits(f.apply(new Tensor[] {x}));
            assertArrayEquals(e1, r1);
            assertArrayEquals(e2, r2);
            assertFalse(Arrays.equals(r1, r2), "two replays drew the same mask");
            assertArrayEquals(Generator.defaultGenerator().getState(), afterReplays);
        }
    }

    @Test
    void replayedFactoriesAndInPlaceFillsDrawAnewAndAreNeverMerged() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {8}, DType.FLOAT32, DEVICE);
            Generator g = new Generator(77);
            TensorFunction f = in -> {
                Torch.randn(new long[] {5}, DType.FLOAT32, DEVICE, g); // unread: still advances the generator
                Tensor a = Torch.rand(new long[] {8}, DType.FLOAT32, DEVICE, g);
                Tensor b = Torch.rand(new long[] {8}, DType.FLOAT32, DEVICE, g);
                Tensor c = Init.uniform_(Torch.zeros(new long[] {8}, DType.FLOAT32, DEVICE), -1, 1, g);
                Tensor n = Torch.randint(0, 9, new long[] {8}, DType.INT64, DEVICE, g).to(DType.FLOAT32);
                // Joined, not combined: the draws compared exactly, whatever a fused formula's rounding on the device.
                return Torch.cat(new Tensor[] {in[0], a, b, c, n}, 0);
            };
            String plan = Jit.explain(f, x);
            assertFalse(plan.contains("runs eagerly"), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x);
            g.manualSeed(5);
            long[] r1 = bits(compiled.apply(x)), r2 = bits(compiled.apply(x));
            long[] state = g.getState();
            g.manualSeed(5);
            assertArrayEquals(bits(f.apply(new Tensor[] {x})), r1);
            assertArrayEquals(bits(f.apply(new Tensor[] {x})), r2);
            assertArrayEquals(state, g.getState());
            assertFalse(Arrays.equals(r1, r2));
        }
    }

    @Test
    void aGeneratorMadeByTheTracedFunctionRunsItEagerly() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.ones(new long[] {32}, DType.FLOAT32, DEVICE);
            TensorFunction f = in -> F.dropout(in[0], 0.5, true, new Generator(9));
            assertTrue(Jit.explain(f, x).contains("drew from a generator made by the traced function"));
            TensorFunction compiled = Jit.trace(f, x);
            long[] first = bits(compiled.apply(x));
            assertArrayEquals(first, bits(compiled.apply(x)));
            assertArrayEquals(first, bits(f.apply(new Tensor[] {x})));
        }
    }

    @Test
    void dropoutRecordsItsBackwardOp() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(new long[] {40}, DType.FLOAT32, DEVICE, new Generator(2)).requiresGrad_(true);
            Tensor y = F.dropout(x, 0.3, true, new Generator(8));
            assertEquals("NativeDropoutBackward0", y.gradFn().name());
            Tensor g = Torch.randn(new long[] {40}, DType.FLOAT32, DEVICE, new Generator(3));
            y.backward(g);
            // The gradient is g times the multiplier the output got: y / x where x is not zero.
            Tensor scale = Torch.rand(x.shape(), DType.FLOAT32, DEVICE, new Generator(8)).lt(0.7).to(DType.FLOAT32).mul(1 / 0.7);
            assertArrayEquals(bits(g.mul(scale)), bits(x.grad()));
        }
    }

    /** With a fixed mask, native_dropout_backward is linear in grad_output: gradcheck of first and second order in float64. */
    @Test
    void nativeDropoutBackwardPassesGradcheck() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor mask = Torch.rand(new long[] {3, 4}, DType.FLOAT64, DEVICE, new Generator(1)).lt(0.6);
            Tensor grad = Torch.randn(new long[] {3, 4}, DType.FLOAT64, DEVICE, new Generator(2)).requiresGrad_(true);
            assertTrue(Gradcheck.check(in -> Dispatcher.call(RandomOps.NATIVE_DROPOUT_BACKWARD, new Tensor[] {in[0], mask}, 1 / 0.6), grad));
            Tensor x = Torch.randn(new long[] {3, 4}, DType.FLOAT64, DEVICE, new Generator(4)).requiresGrad_(true);
            // A fixed generator state per evaluation: the same mask for every finite difference.
            assertTrue(Gradcheck.check(in -> F.dropout(in[0], 0.4, true, new Generator(12)), x));
        }
    }

    @Test
    void outOfTrainingNativeDropoutCopiesAndDrawsNothing() {
        try (MemoryScope scope = new MemoryScope()) {
            Generator g = new Generator(3);
            Tensor x = Torch.randn(new long[] {10}, DType.FLOAT32, DEVICE, g);
            long[] state = g.getState();
            Tensor[] out = Dispatcher.callAll(RandomOps.NATIVE_DROPOUT, new Tensor[] {x}, 0.5, 0, g.id());
            assertArrayEquals(bits(x), bits(out[0]));
            assertEquals(10, out[1].sum().itemLong());
            assertArrayEquals(state, g.getState());
        }
    }

    @Test
    void badArgumentsNameTheOpShapesAndDtypes() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.zeros(new long[] {2, 3}, DType.FLOAT32, DEVICE);
            Tensor i = Torch.zeros(new long[] {3}, DType.INT64, DEVICE);
            long id = Generator.defaultGenerator().id();
            String m = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(RandomOps.NATIVE_DROPOUT, new Tensor[] {x}, 1.5, 1, id)).getMessage();
            assertTrue(m.startsWith("native_dropout: dropout probability has to be between 0 and 1, but got 1.5") && m.contains("[2, 3]"), m);
            m = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.call(RandomOps.NATIVE_DROPOUT, new Tensor[] {i}, 0.5, 1, id)).getMessage();
            assertTrue(m.startsWith("native_dropout: expected a floating point input, got torch.int64"), m);
            m = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.callInPlace(RandomOps.NORMAL, new Tensor[] {i}, 0, 1, id)).getMessage();
            assertTrue(m.startsWith("normal_: expected a floating point tensor, got torch.int64 of shape [3]"), m);
            m = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.callInPlace(RandomOps.NORMAL, new Tensor[] {x}, 0, -1, id)).getMessage();
            assertTrue(m.startsWith("normal_: expects std >= 0.0, but found std -1.0"), m);
            m = assertThrows(IllegalArgumentException.class,
                    () -> Dispatcher.callInPlace(RandomOps.RANDOM, new Tensor[] {i}, RandomOps.randomScalars(4, 4, id))).getMessage();
            assertTrue(m.startsWith("random_: expects 'from' < 'to', but got from=4 and to=4") && m.contains("[3]"), m);
            m = assertThrows(IllegalArgumentException.class, () -> x.bernoulli(1.5, Generator.defaultGenerator())).getMessage();
            assertTrue(m.startsWith("bernoulli: expects p to be in [0, 1], but got p=1.5") && m.contains("[2, 3]"), m);
            m = assertThrows(IllegalArgumentException.class, () -> i.bernoulli()).getMessage();
            assertTrue(m.startsWith("bernoulli(): expected a floating tensor of probabilities, got torch.int64"), m);
        }
    }

    @Test
    void aRefusedCallDrawsNothing() {
        Generator g = new Generator(1);
        try (Tensor i = Torch.zeros(new long[] {3}, DType.INT64, DEVICE)) {
            assertThrows(IllegalArgumentException.class, () -> Init.normal_(i, 0, 1, g));
            assertArrayEquals(new long[] {1, 0}, g.getState());
        }
    }
}
