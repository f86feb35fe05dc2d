package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Dropout;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.SGD;
import org.jtorch.optim.lr.LRScheduler;
import org.jtorch.optim.lr.ReduceLROnPlateau;
import org.jtorch.optim.lr.StepLR;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Checkpoints restore a training run exactly: resuming continues the loss curve bit for bit. */
class CheckpointTest {
    @TempDir
    Path dir;

    /** One training run's moving parts; dropout and the batches draw from {@code rng}. */
    private static final class Run {
        final Generator rng = new Generator(7);
        final Sequential model;
        final Optimizer optimizer;
        final LRScheduler scheduler;
        final Tensor x;
        final Tensor y;

        Run(long initSeed, boolean adam) {
            Generator init = new Generator(initSeed);
            model = new Sequential(new Linear(8, 16, true, DType.FLOAT32, Device.cpu(), init), new ReLU(),
                    new Dropout(0.25, rng), new Linear(16, 3, true, DType.FLOAT32, Device.cpu(), init));
            optimizer = adam ? new Adam(model.parameters(), Adam.options().lr(0.01))
                    : new SGD(model.parameters(), SGD.options().lr(0.1).momentum(0.9).nesterov(true));
            scheduler = new StepLR(optimizer, 2, 0.5);
            Generator data = new Generator(3);
            x = Torch.randn(new long[] {64, 8}, DType.FLOAT32, Device.cpu(), data);
            y = Torch.randint(0, 3, new long[] {64}, DType.INT64, Device.cpu(), data);
        }

        Checkpoint checkpoint() {
            return new Checkpoint().model(model).optimizer(optimizer).scheduler(scheduler).generator("train", rng);
        }

        /** One epoch of 4 shuffled batches; returns the losses. */
        List<Double> epoch() {
            List<Double> losses = new ArrayList<>();
            try (MemoryScope scope = new MemoryScope()) {
                Tensor order = Torch.randperm(64, rng);
                for (int b = 0; b < 4; b++) {
                    Tensor idx = order.narrow(0, b * 16, 16);
                    Tensor loss = F.crossEntropy(model.forward(x.indexSelect(0, idx)), y.indexSelect(0, idx));
                    optimizer.zeroGrad();
                    loss.backward();
                    optimizer.step();
                    losses.add(loss.item());
                }
            }
            scheduler.step();
            return losses;
        }
    }

    private void resumeContinuesExactly(boolean adam) throws IOException {
        Run straight = new Run(1, adam);
        List<Double> expected = new ArrayList<>();
        for (int e = 0; e < 6; e++) expected.addAll(straight.epoch());

        Run first = new Run(1, adam);
        List<Double> actual = new ArrayList<>();
        for (int e = 0; e < 3; e++) actual.addAll(first.epoch());
        Path file = dir.resolve("run.ckpt");
        first.checkpoint().save(file, 3, 12);

        Run resumed = new Run(99, adam); // different initial weights, fresh optimizer state, generator at its start
        resumed.rng.manualSeed(1234);
        Checkpoint.Position at = resumed.checkpoint().load(file);
        assertEquals(new Checkpoint.Position(3, 12), at);
        for (int e = 3; e < 6; e++) actual.addAll(resumed.epoch());
        assertEquals(expected, actual, "losses of the resumed run");
        assertEquals(straight.optimizer.paramGroups().get(0).getDouble("lr"), resumed.optimizer.paramGroups().get(0).getDouble("lr"));
    }

    @Test
    void resumingSgdWithNesterovContinuesTheLossCurveExactly() throws IOException {
        resumeContinuesExactly(false);
    }

    @Test
    void resumingAdamContinuesTheLossCurveExactly() throws IOException {
        resumeContinuesExactly(true);
    }

    @Test
    void theModelIsStoredAsAReadableStateDict() throws IOException {
        Run run = new Run(1, false);
        Path file = dir.resolve("m.ckpt");
        run.checkpoint().save(file, 0, 0);
        try (SafeTensors.Loaded l = SafeTensors.load(file)) {
            assertTrue(l.tensors().containsKey("model/0.weight"), l.tensors().keySet().toString());
            assertArrayEquals(new long[] {3, 16}, l.get("model/3.weight").shape());
            assertTrue(l.metadata().containsKey(Checkpoint.METADATA_KEY));
        }
    }

    @Test
    void aFailedSaveLeavesThePreviousCheckpointIntact() throws IOException {
        Run run = new Run(1, false);
        Path file = dir.resolve("keep.ckpt");
        run.checkpoint().save(file, 1, 4);
        byte[] before = Files.readAllBytes(file);
        Checkpoint failing = run.checkpoint().component("broken", () -> {
            throw new IllegalStateException("disk full (simulated)");
        }, m -> {});
        assertThrows(IllegalStateException.class, () -> failing.save(file, 2, 8));
        assertArrayEquals(before, Files.readAllBytes(file));
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count(), "no temporary file is left behind");
        }
    }

    @Test
    void everyKindOfStateValueRoundTrips() throws IOException {
        Map<String, Object> state = new LinkedHashMap<>();
        state.put("int", 3);
        state.put("long", 1L << 40);
        state.put("double", 0.1);
        state.put("inf", Double.POSITIVE_INFINITY);
        state.put("nan", Double.NaN);
        state.put("flag", true);
        state.put("none", null);
        state.put("text", "a \"quoted\" line\n");
        state.put("list", List.of(1.5, 2.5));
        Map<Integer, Object> byId = new LinkedHashMap<>();
        byId.put(0, Torch.tensor(new float[] {1, 2, 3}));
        byId.put(5, Map.of("nested", Torch.tensor(new long[] {4, 5})));
        state.put("byId", byId);
        Map<String, Object>[] loaded = newHolder();
        Path file = dir.resolve("values.ckpt");
        new Checkpoint().component("c", () -> state, m -> {}).save(file, 0, 0);
        new Checkpoint().component("c", () -> state, m -> loaded[0] = deepCopyNumbers(m)).load(file);
        Map<String, Object> m = loaded[0];
        assertEquals(3, m.get("int"));
        assertEquals(1L << 40, m.get("long"));
        assertEquals(0.1, m.get("double"));
        assertEquals(Double.POSITIVE_INFINITY, m.get("inf"));
        assertTrue(Double.isNaN((Double) m.get("nan")));
        assertEquals(true, m.get("flag"));
        assertTrue(m.containsKey("none") && m.get("none") == null);
        assertEquals("a \"quoted\" line\n", m.get("text"));
        assertEquals(List.of(1.5, 2.5), m.get("list"));
        Map<?, ?> ids = (Map<?, ?>) m.get("byId");
        assertEquals(List.of(0, 5), new ArrayList<>(ids.keySet()));
        assertEquals("tensor([1., 2., 3.])", ids.get(0).toString());
        assertEquals("{nested=tensor([4, 5])}", ids.get(5).toString());
    }

    @Test
    void reduceOnPlateauStateWithInfiniteBestRoundTrips() throws IOException {
        Run run = new Run(1, false);
        ReduceLROnPlateau plateau = new ReduceLROnPlateau(run.optimizer);
        Path file = dir.resolve("plateau.ckpt");
        Checkpoint ckpt = new Checkpoint().component("plateau", plateau::stateDict, plateau::loadStateDict);
        ckpt.save(file, 0, 0); // best is +inf before the first step
        plateau.step(1.0);
        ckpt.load(file);
        assertEquals(Double.POSITIVE_INFINITY, ((Number) plateau.stateDict().get("best")).doubleValue());
    }

    @Test
    void loadingIntoADifferentModelFailsNamingTheKeys() throws IOException {
        Run run = new Run(1, false);
        Path file = dir.resolve("other.ckpt");
        run.checkpoint().save(file, 0, 0);
        Sequential other = new Sequential(new Linear(8, 4));
        var ex = assertThrows(RuntimeException.class, () -> new Checkpoint().model(other).load(file));
        assertTrue(ex.getMessage().contains("0.weight") || ex.getMessage().contains("size mismatch") || ex.getMessage().contains("Missing"),
                ex.getMessage());
    }

    @Test
    void aMissingComponentOrAPlainSafetensorsFileIsAClearError() throws IOException {
        Run run = new Run(1, false);
        Path file = dir.resolve("model-only.ckpt");
        new Checkpoint().model(run.model).save(file, 0, 0);
        var missing = assertThrows(IllegalArgumentException.class, () -> run.checkpoint().load(file));
        assertTrue(missing.getMessage().contains("no component 'optimizer'"), missing.getMessage());

        Path plain = dir.resolve("plain.safetensors");
        SafeTensors.saveStateDict(plain, run.model);
        var notCkpt = assertThrows(SafeTensors.FormatException.class, () -> run.checkpoint().load(plain));
        assertTrue(notCkpt.getMessage().contains("not a jtorch checkpoint"), notCkpt.getMessage());
    }

    /** Copies numbers and structure, and tensors (the file's views die when load returns). */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> deepCopyNumbers(Map<String, Object> m) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : m.entrySet()) out.put(e.getKey(), copy(e.getValue()));
        return out;
    }

    private static Object copy(Object v) {
        if (v instanceof Tensor t) return t.clone();
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) out.put(e.getKey(), copy(e.getValue()));
            return out;
        }
        if (v instanceof List<?> l) return l.stream().map(CheckpointTest::copy).toList();
        return v;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object>[] newHolder() {
        return (Map<String, Object>[]) new Map[1];
    }
}
