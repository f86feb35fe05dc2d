package org.jtorch.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.LSTM;
import org.jtorch.nn.Linear;
import org.jtorch.nn.Module;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.nn.TupleModule;
import org.jtorch.nn.parallel.DistributedDataParallel;
import org.junit.jupiter.api.Test;

/** DDP's bookkeeping in one process ({@link WorldOfOne}): buckets, state dict, noSync, and the errors it raises. */
class DistributedDataParallelLocalTest {
    private static Module mlp() {
        Torch.manualSeed(0);
        return new Sequential(new Linear(256, 1024), new ReLU(), new Linear(1024, 512), new ReLU(), new Linear(512, 10));
    }

    private static void step(DistributedDataParallel ddp) {
        try (Tensor x = Torch.randn(4, 256)) {
            ddp.forward(x).sum().backward();
        }
    }

    @Test
    void bucketsFillInReverseOrderTheFirstClosingAtOneMebibyte() {
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(), new WorldOfOne());
        // 4.bias, 4.weight (20 KB) and 2.bias stay under 1 MiB; 2.weight (2 MiB) closes the first bucket.
        assertEquals(List.of(List.of("4.bias", "4.weight", "2.bias", "2.weight"), List.of("0.bias", "0.weight")),
                ddp.bucketParameterNames());
    }

    /** Registers its last layer first, so that reverse registration order is not the order backward produces gradients. */
    private static final class HeadRegisteredFirst extends Module {
        HeadRegisteredFirst() {
            Torch.manualSeed(0);
            registerModule("head", new Linear(16, 4));
            registerModule("body", new Linear(8, 16));
        }

        @Override
        public Tensor forward(Tensor input) {
            try (Tensor hidden = child("body").forward(input)) {
                return child("head").forward(hidden.tanh());
            }
        }
    }

    /**
     * Buckets start in reverse registration order (the body's layer first here) and are rebuilt after the first
     * backward in the order gradients arrived: the head's first, as backward reaches it first.
     */
    @Test
    void bucketsAreRebuiltAfterTheFirstBackwardInTheOrderGradientsArrived() {
        // About 100 bytes a bucket: each closes with its layer's weight.
        DistributedDataParallel ddp = new DistributedDataParallel(new HeadRegisteredFirst(), new WorldOfOne(),
                DistributedDataParallel.options().bucketCapMb(0.0001).firstBucketCapMb(0.0001));
        assertEquals(List.of(List.of("body.bias", "body.weight"), List.of("head.bias", "head.weight")), ddp.bucketParameterNames());
        try (Tensor x = Torch.randn(4, 8)) {
            ddp.forward(x).sum().backward();
        }
        assertEquals(List.of(List.of("head.bias", "head.weight"), List.of("body.bias", "body.weight")), ddp.bucketParameterNames());
        try (Tensor x = Torch.randn(4, 8)) {
            ddp.forward(x).sum().backward();
        }
        assertEquals(List.of(List.of("head.bias", "head.weight"), List.of("body.bias", "body.weight")), ddp.bucketParameterNames(),
                "rebuilt once");
    }

    @Test
    void everySynchronisedBackwardReducesEachBucketOnceAndNoSyncReducesNothing() {
        WorldOfOne world = new WorldOfOne();
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(), world);
        step(ddp);
        assertEquals(2, world.allReduces);
        try (var s = ddp.noSync()) {
            step(ddp);
        }
        assertEquals(2, world.allReduces);
        step(ddp);
        assertEquals(4, world.allReduces);
        ddp.eval();
        try (Tensor x = Torch.randn(4, 256)) {
            ddp.forward(x).sum().backward(); // eval mode: no reduction, as PyTorch
        }
        assertEquals(4, world.allReduces);
    }

    @Test
    void gradientsAfterBackwardAreTheLocalOnesInAWorldOfOne() {
        Module plain = mlp();
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(), new WorldOfOne());
        Torch.manualSeed(5);
        try (Tensor x = Torch.randn(4, 256)) {
            plain.forward(x).sum().backward();
            ddp.forward(x).sum().backward();
        }
        List<Tensor> a = plain.parameters();
        List<Tensor> b = ddp.module().parameters();
        for (int i = 0; i < a.size(); i++) assertArrayEquals(a.get(i).grad().toDoubleArray(), b.get(i).grad().toDoubleArray(), 0);
    }

    @Test
    void theStateDictHasTheModulesKeysAndLoadsPyTorchDdpsPrefixedOnes() {
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(), new WorldOfOne());
        Map<String, Tensor> state = ddp.stateDict();
        assertEquals(mlp().stateDict().keySet(), state.keySet());
        assertTrue(ddp.namedParameters().containsKey("module.0.weight"), "namedParameters shows the wrapper, as PyTorch");
        Map<String, Tensor> prefixed = new LinkedHashMap<>();
        for (Map.Entry<String, Tensor> e : state.entrySet()) prefixed.put("module." + e.getKey(), Torch.zerosLike(e.getValue()));
        ddp.loadStateDict(prefixed);
        assertEquals(0.0, ddp.module().parameters().get(0).abs().sum().item());
    }

    /** A model with a layer that forward never uses. */
    private static final class Branchy extends Module {
        Branchy() {
            registerModule("used", new Linear(4, 2));
            registerModule("skipped", new Linear(4, 2));
        }

        @Override
        public Tensor forward(Tensor input) {
            return child("used").forward(input);
        }
    }

    @Test
    void aParameterWithoutGradientIsAnErrorNamingItAtTheEndOfBackward() {
        DistributedDataParallel ddp = new DistributedDataParallel(new Branchy(), new WorldOfOne());
        try (Tensor x = Torch.randn(3, 4)) {
            DistributedException e = assertThrows(DistributedException.class, () -> ddp.forward(x).sum().backward());
            assertTrue(e.getMessage().startsWith("DistributedDataParallel: rank 0: 2 of 4 parameters got no gradient in this backward: "
                    + "skipped.weight, skipped.bias. They were not used to compute the loss"), e.getMessage());
        }
    }

    @Test
    void withFindUnusedParametersTheSkippedLayerKeepsNoGradient() {
        DistributedDataParallel ddp = new DistributedDataParallel(new Branchy(), new WorldOfOne(),
                DistributedDataParallel.options().findUnusedParameters(true));
        try (Tensor x = Torch.randn(3, 4)) {
            ddp.forward(x).sum().backward();
        }
        assertNull(ddp.module().child("skipped").parameter("weight").grad());
        assertEquals(List.of(3.0, 3.0), List.of(ddp.module().child("used").parameter("bias").grad().toDoubleArray()[0],
                ddp.module().child("used").parameter("bias").grad().toDoubleArray()[1]));
    }

    // ------------------------------------------------------------------ several inputs and outputs

    @Test
    void theTypedFormRunsLstmsInputAndStateWithTheSameGradientsAsThePlainModule() {
        Torch.manualSeed(7);
        LSTM plain = new LSTM(3, 4);
        Torch.manualSeed(7);
        LSTM wrapped = new LSTM(3, 4);
        WorldOfOne world = new WorldOfOne();
        DistributedDataParallel ddp = new DistributedDataParallel(wrapped, world);
        TupleModule<LSTM.Input, LSTM.Output> typed = ddp.typed(wrapped);
        try (Tensor x = Torch.randn(5, 2, 3); Tensor h = Torch.randn(1, 2, 4); Tensor c = Torch.randn(1, 2, 4)) {
            LSTM.State state = new LSTM.State(h, c);
            try (LSTM.Output a = plain.forward(new LSTM.Input(x, state)); LSTM.Output b = typed.forward(new LSTM.Input(x, state))) {
                a.output().sum().add(a.cN().sum()).backward();
                b.output().sum().add(b.cN().sum()).backward();
            }
        }
        assertEquals(1, world.allReduces, "one synchronised backward: one bucket reduced");
        List<Tensor> pa = plain.parameters();
        List<Tensor> pb = wrapped.parameters();
        for (int i = 0; i < pa.size(); i++) assertArrayEquals(pa.get(i).grad().toDoubleArray(), pb.get(i).grad().toDoubleArray(), 0);
    }

    @Test
    void theTypedFormIsTheWrappedModulesOnly() {
        LSTM wrapped = new LSTM(3, 4);
        DistributedDataParallel ddp = new DistributedDataParallel(wrapped, new WorldOfOne());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ddp.typed(new LSTM(3, 4)));
        assertTrue(e.getMessage().contains("wrapped module"), e.getMessage());
    }

    /** Two inputs, two outputs: {@code (a, b) -> (left(a), right(b))}. */
    record Pair(Tensor a, Tensor b) {}

    static final class TwoHeads extends Module implements TupleModule<Pair, Pair> {
        final Linear left = registerModule("left", new Linear(3, 2));
        final Linear right = registerModule("right", new Linear(3, 2));

        @Override
        public Pair forward(Pair in) {
            return new Pair(left.forward(in.a()), right.forward(in.b()));
        }

        @Override
        public Tensor forward(Tensor input) {
            throw new UnsupportedOperationException("TwoHeads takes a Pair");
        }
    }

    @Test
    void findUnusedParametersCountsEveryTensorOfARecordOutputAsUsed() {
        // Only the second output reaches right's parameters: counted unused, they would get a zero and then a gradient.
        TwoHeads heads = new TwoHeads();
        DistributedDataParallel ddp = new DistributedDataParallel(heads, new WorldOfOne(),
                DistributedDataParallel.options().findUnusedParameters(true));
        try (Tensor a = Torch.randn(4, 3); Tensor b = Torch.randn(4, 3)) {
            Pair out = ddp.typed(heads).forward(new Pair(a, b));
            out.a().sum().add(out.b().mul(2.0).sum()).backward();
        }
        assertArrayEquals(new double[] {8, 8}, heads.right.parameter("bias").grad().toDoubleArray(), 0);
        assertArrayEquals(new double[] {4, 4}, heads.left.parameter("bias").grad().toDoubleArray(), 0);
    }

    @Test
    void aDdpIsNotCopiedItsModuleIs() {
        DistributedDataParallel ddp = new DistributedDataParallel(mlp(), new WorldOfOne());
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, ddp::deepCopy);
        assertTrue(e.getMessage().contains("copy module()"), e.getMessage());
        Module copy = ddp.module().deepCopy();
        assertEquals(ddp.module().stateDict().keySet(), copy.stateDict().keySet());
    }
}
