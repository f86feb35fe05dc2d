package org.jtorch.ops;

import static org.jtorch.ops.OpTestSupport.firstGradient;
import static org.jtorch.ops.OpTestSupport.traced;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.jit.Jit;
import org.jtorch.jit.TensorFunction;
import org.jtorch.nn.F;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.RandomOps;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The dropout family as declared random front ends ({@link RandomOps#DROPOUT}, {@link RandomOps#FEATURE_DROPOUT}, {@link
 * RandomOps#ALPHA_DROPOUT}, {@link RandomOps#FEATURE_ALPHA_DROPOUT}). Values against PyTorch 1.13
 * ({@code tools/fixtures/gen_dropout.py}): its generator is not jtorch's, so a case holds several draws of one call, and
 * every value jtorch gives at an index must be, bit for bit, one PyTorch gave there. The draws themselves: one decision per
 * element or per channel, kept with probability {@code 1 - p} (a binomial count within 5 sigma), nothing drawn out of
 * training; one traced op each (dropout: the {@code native_dropout} it runs), replayed with fresh draws.
 */
@ExtendWith(ScopePerTest.class)
class DropoutOpsTest {
    private static final List<Case> CASES = Fixtures.load("dropout");
    private static final Device DEVICE = Fixtures.device();
    private static final Generator GEN = new Generator(271);
    private static final List<String> FEATURE = List.of("feature_dropout", "feature_alpha_dropout");

    private static long[] bits(Tensor t) {
        return Arrays.stream(t.to(Device.cpu()).to(DType.FLOAT64).reshape(-1).toDoubleArray()).mapToLong(Double::doubleToRawLongBits).toArray();
    }

    /** The op called by its own signature, drawing from a generator seeded with {@code seed}. */
    private static Tensor call(OpDef op, Tensor x, double p, boolean train, long seed) {
        Generator g = new Generator(seed);
        Tensor y = Dispatcher.call(op, new Tensor[] {x}, p, train ? 1 : 0, g.id());
        Reference.reachabilityFence(g);
        return y;
    }

    @Test
    void everyValueIsOneThatPyTorchGaveAtItsIndex() {
        int checked = 0;
        for (Case c : CASES) {
            if (c.expectsError()) continue;
            OpDef op = OpRegistry.get(c.op());
            Tensor x = c.input(0);
            double p = c.doubleArg("p", Double.NaN);
            boolean train = c.boolArg("train", false);
            int draws = c.expected().getAsJsonArray().size();
            List<Set<Long>> allowed = new ArrayList<>();
            for (int d = 0; d < draws; d++) {
                long[] b = bits(Fixtures.decode(c.expectedTensor(d)));
                for (int i = 0; i < b.length; i++) {
                    if (d == 0) allowed.add(new HashSet<>());
                    allowed.get(i).add(b[i]);
                }
            }
            for (long seed = 0; seed < 12; seed++) {
                Tensor y = call(op, x, p, train, seed);
                assertEquals(x.dtype(), y.dtype(), c.toString());
                assertArrayEquals(x.shape(), y.shape(), c.toString());
                long[] b = bits(y);
                for (int i = 0; i < b.length; i++) {
                    assertTrue(allowed.get(i).contains(b[i]), c + " draw " + seed + " at " + i + ": " + Double.longBitsToDouble(b[i])
                            + " is none of PyTorch's " + allowed.get(i).stream().map(Double::longBitsToDouble).toList());
                }
            }
            checked++;
        }
        assertEquals(26, checked);
    }

    @Test
    void pytorchsErrorsAreRefusedNamingTheOpShapeDtypeAndDevice() {
        int checked = 0;
        for (Case c : CASES) {
            if (!c.expectsError()) continue;
            OpDef op = OpRegistry.get(c.op());
            Tensor x = c.input(0);
            for (boolean trace : new boolean[] {false, true}) {
                Runnable run = () -> call(op, x, c.doubleArg("p", Double.NaN), c.boolArg("train", false), 1);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> { if (trace) traced(run); else run.run(); },
                        c.toString());
                String m = e.getMessage();
                assertTrue(m.startsWith(c.op() + ": ") && m.contains(org.jtorch.op.Shapes.format(x.shape())) && m.contains(x.dtype().toString())
                        && m.contains(x.device().toString()), m);
            }
            checked++;
        }
        assertEquals(10, checked);
        Tensor ints = Torch.arange(0, 12, 1, DType.INT64, DEVICE).reshape(3, 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.alphaDropout(ints, 0.5, true, GEN));
        assertEquals("alpha_dropout: expected a floating point input in training, got torch.int64 of shape [3, 4] (" + DEVICE + ")", e.getMessage());
        assertArrayEquals(ints.toLongArray(), F.alphaDropout(ints, 0.5, false, GEN).toLongArray());
    }

    /**
     * Ones in, so that kept and dropped values tell apart by sign: each unit (element, or channel for the feature ops) is
     * kept or dropped whole, with the count of dropped units binomial (2000 units, p = 0.3: within 5 sigma, about 100).
     */
    @Test
    void eachUnitIsKeptWithProbabilityOneMinusPAndAChannelIsKeptOrDroppedWhole() {
        double p = 0.3;
        for (OpDef op : List.of(RandomOps.DROPOUT, RandomOps.FEATURE_DROPOUT, RandomOps.ALPHA_DROPOUT, RandomOps.FEATURE_ALPHA_DROPOUT)) {
            boolean feature = FEATURE.contains(op.name());
            long[] shape = feature ? new long[] {40, 50, 3, 2} : new long[] {2000};
            int unit = feature ? 6 : 1;
            Tensor x = Torch.ones(shape, DType.FLOAT32, DEVICE);
            float[] v = call(op, x, p, true, 17).to(Device.cpu()).toFloatArray();
            int dropped = 0;
            for (int u = 0; u < 2000; u++) {
                for (int k = 1; k < unit; k++) assertEquals(v[u * unit], v[u * unit + k], op.name() + ": unit " + u + " is not kept or dropped whole");
                if (op == RandomOps.DROPOUT || op == RandomOps.FEATURE_DROPOUT) {
                    if (v[u * unit] == 0) dropped++;
                    else assertEquals((float) (1 / (1 - p)), v[u * unit], 1e-6f, op.name());
                } else if (v[u * unit] < 0) {
                    dropped++;
                }
            }
            assertEquals(2000 * p, dropped, 5 * Math.sqrt(2000 * p * (1 - p)), op.name() + ": dropped units");
        }
    }

    @Test
    void outOfTrainingOrAtPZeroTheInputIsReturnedAndNothingIsDrawn() {
        Tensor x = Torch.randn(new long[] {3, 4, 5}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        for (String name : List.of("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")) {
            for (double[] pTrain : new double[][] {{0.5, 0}, {0, 1}}) {
                Generator g = new Generator(4);
                long[] state = g.getState();
                Tensor y = Dispatcher.call(OpRegistry.get(name), new Tensor[] {x}, pTrain[0], pTrain[1], g.id());
                assertArrayEquals(bits(x), bits(y), name);
                assertArrayEquals(state, g.getState(), name + " drew");
            }
        }
    }

    /** F's functions reach the ops: dropout1d/3d on an unbatched input as one sample, dropout2d on 3-d as (N, C, L). */
    @Test
    void fsChannelDropoutsAreFeatureDropoutOfTheirInputs() {
        record Channel(Function<Generator, Tensor> f, Function<Generator, Tensor> op, long[] shape) {}
        Tensor x2 = Torch.randn(new long[] {6, 9}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        Tensor x3 = Torch.randn(new long[] {6, 4, 9}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        Tensor x4 = Torch.randn(new long[] {6, 4, 2, 3}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        Tensor x5 = Torch.randn(new long[] {2, 6, 4, 2, 3}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        for (Channel c : List.of(
                new Channel(g -> F.dropout1d(x2, 0.4, true, g), g -> Dropouts.featureDropout(x2.unsqueeze(0), 0.4, true, g).squeeze(0), x2.shape()),
                new Channel(g -> F.dropout1d(x3, 0.4, true, g), g -> Dropouts.featureDropout(x3, 0.4, true, g), x3.shape()),
                new Channel(g -> F.dropout2d(x3, 0.4, true, g), g -> Dropouts.featureDropout(x3, 0.4, true, g), x3.shape()),
                new Channel(g -> F.dropout3d(x4, 0.4, true, g), g -> Dropouts.featureDropout(x4.unsqueeze(0), 0.4, true, g).squeeze(0), x4.shape()),
                new Channel(g -> F.dropout3d(x5, 0.4, true, g), g -> Dropouts.featureDropout(x5, 0.4, true, g), x5.shape()))) {
            Tensor y = c.f().apply(new Generator(8));
            assertArrayEquals(c.shape(), y.shape());
            assertArrayEquals(bits(c.op().apply(new Generator(8))), bits(y));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.dropout1d(x4, 0.5, true, GEN));
        assertTrue(e.getMessage().startsWith("dropout1d: expected 2D or 3D input, but received a 4D input of shape [6, 4, 2, 3]"), e.getMessage());
    }

    @Test
    void traceRecordsOneRandomOpUnderPyTorchsNameAndAReplayDrawsAsTheEagerCall() {
        Tensor x = Torch.randn(new long[] {4, 5, 3}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE).requiresGrad_(true);
        record Traced(String op, Function<Generator, Tensor> f) {}
        for (Traced c : List.of(new Traced("feature_dropout", g -> F.dropout2d(x, 0.3, true, g)),
                new Traced("feature_dropout", g -> F.dropout3d(x, 0.3, true, g)),
                new Traced("alpha_dropout", g -> F.alphaDropout(x, 0.3, true, g)),
                new Traced("feature_alpha_dropout", g -> F.featureAlphaDropout(x, 0.3, true, g)),
                // dropout is traced as the native_dropout it runs, which the JIT fuses
                new Traced("native_dropout", g -> F.dropout(x, 0.3, true, g)))) {
            Generator g = new Generator(6);
            assertEquals(List.of(c.op()), traced(() -> c.f().apply(g)), c.op());
            OpDef op = OpRegistry.get(c.op());
            assertTrue(op.isRandom() && op.isDifferentiable(), c.op());
            assertNull(op.autocast(Device.Type.CPU), c.op());
            assertNull(op.autocast(Device.Type.CUDA), c.op());
            g.manualSeed(6);
            long[] eager = bits(c.f().apply(g));
            g.manualSeed(6);
            String name = c.op().equals("native_dropout") ? "dropout" : c.op();
            assertArrayEquals(eager, bits(Dispatcher.call(OpRegistry.get(name), new Tensor[] {x}, 0.3, 1, g.id())), c.op());
        }
    }

    /** As RandomOpsTest's dropout: a compiled function's replays draw what eager calls draw, and advance the generator alike. */
    @Test
    void aCompiledFunctionReplaysFreshDrawsAsEagerCallsDraw() {
        Tensor x = Torch.randn(new long[] {8, 6, 4}, DType.FLOAT32, Device.cpu(), GEN).to(DEVICE);
        for (TensorFunction f : List.<TensorFunction>of(in -> F.dropout2d(in[0], 0.5, true).mul(2.0),
                in -> F.alphaDropout(in[0], 0.5, true, Generator.defaultGenerator()).mul(2.0),
                in -> F.featureAlphaDropout(in[0], 0.5, true, Generator.defaultGenerator()).mul(2.0))) {
            String plan = Jit.explain(f, x);
            assertFalse(plan.contains("runs eagerly"), plan);
            assertTrue(plan.contains("dropout("), plan);
            assertFalse(plan.contains("= uniform(") || plan.contains("= rand("), plan);
            TensorFunction compiled = Jit.trace(f, x);
            compiled.apply(x);
            Torch.manualSeed(21);
            long[] r1 = bits(compiled.apply(x)), r2 = bits(compiled.apply(x));
            long[] afterReplays = Generator.defaultGenerator().getState();
            Torch.manualSeed(21);
            assertArrayEquals(bits(f.apply(new Tensor[] {x})), r1);
            assertArrayEquals(bits(f.apply(new Tensor[] {x})), r2);
            assertFalse(Arrays.equals(r1, r2), "two replays drew the same mask");
            assertArrayEquals(Generator.defaultGenerator().getState(), afterReplays);
        }
    }

    @Test
    void autocastLeavesThemInTheInputsDtype() {
        Tensor x = Torch.randn(new long[] {4, 5, 3}, DType.FLOAT32, Device.cpu(), GEN).to(DType.BFLOAT16);
        for (String name : List.of("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")) {
            OpDef op = OpRegistry.get(name);
            Tensor y;
            try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
                y = call(op, x, 0.3, true, 9);
            }
            assertEquals(DType.BFLOAT16, y.dtype(), name);
            assertArrayEquals(bits(call(op, x, 0.3, true, 9)), bits(y), name);
        }
    }

    /** With the generator's state fixed per evaluation (the same mask for every finite difference): gradcheck and gradgradcheck. */
    @Test
    void gradientsOfBothOrdersAgreeWithFiniteDifferences() {
        for (String name : List.of("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")) {
            OpDef op = OpRegistry.get(name);
            Function<Tensor[], Tensor> fn = a -> call(op, a[0], 0.4, true, 12);
            Tensor x = Torch.randn(new long[] {3, 4, 2}, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
            assertTrue(Gradcheck.check(fn, x), name);
            assertTrue(Gradcheck.check(firstGradient(a -> fn.apply(a).pow(2.0)), x), name);
        }
    }
}
