package org.jtorch.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.GradScaler;
import org.jtorch.nn.Linear;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.RMSprop;
import org.jtorch.optim.SGD;
import org.jtorch.optim.lr.MultiStepLR;
import org.jtorch.optim.lr.ReduceLROnPlateau;
import org.jtorch.optim.lr.SequentialLR;
import org.jtorch.optim.lr.StepLR;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading a state of the wrong shape of data (a string where a number belongs, a missing entry) fails
 * while loading, with an {@link IllegalArgumentException} naming the entry, what was expected and what
 * was found, and leaves the loaded object as it was; never a {@link ClassCastException} or a
 * {@link NullPointerException}, then or at the next step.
 */
class StateLoadingErrorsTest {
    @TempDir
    Path dir;

    private static Linear model() {
        Torch.manualSeed(0);
        return new Linear(3, 2);
    }

    /** One SGD step with momentum, so that the state holds momentum buffers. */
    private static SGD steppedSgd(Linear m) {
        SGD opt = new SGD(m.parameters(), SGD.options().lr(0.1).momentum(0.9));
        m.forward(Torch.ones(1, 3)).sum().backward();
        opt.step();
        return opt;
    }

    /** A deep, mutable copy of a state dict's structure (tensors shared). */
    @SuppressWarnings("unchecked")
    private static <T> T mutable(T v) {
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put(k, mutable(x)));
            return (T) out;
        }
        if (v instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            l.forEach(x -> out.add(mutable(x)));
            return (T) out;
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> group0(Map<String, Object> sd) {
        return ((List<Map<String, Object>>) sd.get("param_groups")).get(0);
    }

    private static void assertFails(String message, Runnable load) {
        IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, load::run);
        assertEquals(message, ex.getMessage());
    }

    // ------------------------------------------------------------------ optimizers

    @Test
    void aStringLearningRateFailsAtLoadNamingTheOption() {
        SGD opt = steppedSgd(model());
        Map<String, Object> sd = mutable(opt.stateDict());
        group0(sd).put("lr", "fast");
        assertFails("SGD.loadStateDict: 'param_groups[0].lr' must be a number, found the string \"fast\"", () -> opt.loadStateDict(sd));
        assertEquals(0.1, opt.paramGroups().get(0).lr(), "unchanged");
        opt.step(); // still steps
    }

    @Test
    void optionsOfTheWrongKindOrRangeFailAtLoad() {
        Adam opt = new Adam(model().parameters(), Adam.options());
        Map<String, Object> sd = mutable(opt.stateDict());
        group0(sd).put("betas", List.of(0.9));
        assertFails("Adam.loadStateDict: 'param_groups[0].betas' must be a list of 2 numbers, found a list of 1 element",
                () -> opt.loadStateDict(sd));
        group0(sd).put("betas", List.of(0.9, "x"));
        assertFails("Adam.loadStateDict: 'param_groups[0].betas[1]' must be a number, found the string \"x\"", () -> opt.loadStateDict(sd));
        group0(sd).put("betas", List.of(0.9, 0.999));
        group0(sd).put("amsgrad", 1);
        assertFails("Adam.loadStateDict: 'param_groups[0].amsgrad' must be a boolean, found the Integer 1", () -> opt.loadStateDict(sd));
        group0(sd).put("amsgrad", false);
        group0(sd).put("lr", -1.0);
        assertFails("Adam.loadStateDict: parameter group 0: Adam: Invalid learning rate: -1.0", () -> opt.loadStateDict(sd));
        group0(sd).put("lr", 0.5);
        group0(sd).put("name", "encoder"); // a user's own option, as PyTorch allows
        opt.loadStateDict(sd);
        assertEquals("encoder", opt.paramGroups().get(0).get("name"));
    }

    @Test
    void aStringParameterIndexFailsAtLoadNamingIt() {
        SGD opt = steppedSgd(model());
        Map<String, Object> sd = mutable(opt.stateDict());
        @SuppressWarnings("unchecked")
        Map<Object, Object> state = (Map<Object, Object>) sd.get("state");
        Object first = state.remove(0);
        state.put("0", first);
        assertFails("SGD.loadStateDict: 'state' must be keyed by integer parameter indices, found the string \"0\"", () -> opt.loadStateDict(sd));

        Map<String, Object> sd2 = mutable(opt.stateDict());
        group0(sd2).put("params", List.of("0", 1));
        assertFails("SGD.loadStateDict: 'param_groups[0].params[0]' must be an integer, found the string \"0\"", () -> opt.loadStateDict(sd2));
    }

    @Test
    void stateValuesOfTheWrongKindFailAtLoad() {
        SGD opt = steppedSgd(model());
        Map<String, Object> sd = mutable(opt.stateDict());
        @SuppressWarnings("unchecked")
        Map<Integer, Map<String, Object>> state = (Map<Integer, Map<String, Object>>) sd.get("state");
        state.get(1).put("momentum_buffer", 3.0);
        assertFails("SGD.loadStateDict: 'state[1].momentum_buffer' must be a tensor, found the Double 3.0", () -> opt.loadStateDict(sd));
        Map<String, Object> text = new LinkedHashMap<>();
        text.put("momentum_buffer", "x");
        state.put(1, text);
        assertFails("SGD.loadStateDict: 'state[1].momentum_buffer' must be a tensor, found the string \"x\"", () -> opt.loadStateDict(sd));
        sd.put("state", Map.of(0, List.of(1)));
        assertFails("SGD.loadStateDict: 'state[0]' must be a map, found a list of 1 element", () -> opt.loadStateDict(sd));
        sd.put("state", "none");
        assertFails("SGD.loadStateDict: 'state' must be a map, found the string \"none\"", () -> opt.loadStateDict(sd));
        sd.remove("state");
        assertFails("SGD.loadStateDict: the state dict has no 'state' (expected a map)", () -> opt.loadStateDict(sd));
    }

    @Test
    void aTensorStepLoadsIntoAnOptimizerThatCountsStepsAsNumbers() {
        Linear m = model();
        RMSprop opt = new RMSprop(m.parameters(), RMSprop.options());
        m.forward(Torch.ones(1, 3)).sum().backward();
        opt.step();
        Map<String, Object> sd = mutable(opt.stateDict());
        @SuppressWarnings("unchecked")
        Map<Integer, Map<String, Object>> state = (Map<Integer, Map<String, Object>>) sd.get("state");
        state.get(0).put("step", Torch.scalar(4.0)); // as PyTorch 2 saves it
        opt.loadStateDict(sd);
        opt.step();
        assertEquals(5L, opt.state(opt.paramGroups().get(0).params().get(0)).get("step"));
    }

    @Test
    void aStringOptionSetByHandIsAClearErrorAtStep() {
        SGD opt = steppedSgd(model());
        opt.paramGroups().get(0).set("lr", "fast");
        assertFails("param group option 'lr' must be a number, found the string \"fast\"", opt::step);
    }

    // ------------------------------------------------------------------ schedulers, scaler, module

    @Test
    void schedulerStatesOfTheWrongKindFailAtLoadAndChangeNothing() {
        SGD opt = steppedSgd(model());
        StepLR step = new StepLR(opt, 2, 0.5);
        Map<String, Object> sd = mutable(step.stateDict());
        sd.put("gamma", 0.25);
        sd.put("step_size", "2");
        assertFails("StepLR.loadStateDict: 'step_size' must be an integer, found the string \"2\"", () -> step.loadStateDict(sd));
        assertEquals(0.5, step.stateDict().get("gamma"), "nothing loaded");
        sd.put("step_size", 2);
        sd.put("last_epoch", 1.5);
        assertFails("StepLR.loadStateDict: 'last_epoch' must be an integer, found the Double 1.5", () -> step.loadStateDict(sd));
        sd.put("last_epoch", 1);
        sd.put("base_lrs", List.of(0.1, 0.2));
        assertFails("StepLR.loadStateDict: 'base_lrs' must be a list of 1 numbers, found a list of 2 elements", () -> step.loadStateDict(sd));

        MultiStepLR multi = new MultiStepLR(opt, new int[] {2, 4}, 0.1);
        Map<String, Object> msd = mutable(multi.stateDict());
        msd.put("milestones", List.of(2, "four"));
        assertFails("MultiStepLR.loadStateDict: 'milestones[1]' must be an integer, found the string \"four\"", () -> multi.loadStateDict(msd));

        ReduceLROnPlateau plateau = new ReduceLROnPlateau(opt);
        Map<String, Object> psd = mutable(plateau.stateDict());
        psd.put("patience", 3);
        psd.put("mode", 1);
        assertFails("ReduceLROnPlateau.loadStateDict: 'mode' must be a string, found the Integer 1", () -> plateau.loadStateDict(psd));
        assertEquals(10, plateau.stateDict().get("patience"), "nothing loaded");
    }

    @Test
    void aSequentialSchedulerRestoresItsPartsWhenOneFails() {
        SGD opt = steppedSgd(model());
        StepLR a = new StepLR(opt, 2, 0.5);
        StepLR b = new StepLR(opt, 3, 0.5);
        SequentialLR seq = new SequentialLR(opt, List.of(a, b), new int[] {2});
        Map<String, Object> sd = mutable(seq.stateDict());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> parts = (List<Map<String, Object>>) sd.get("_schedulers");
        parts.get(0).put("gamma", 0.1);
        parts.get(1).put("gamma", "x");
        assertFails("SequentialLR.loadStateDict: in _schedulers[1]: StepLR.loadStateDict: 'gamma' must be a number, found the string \"x\"",
                () -> seq.loadStateDict(sd));
        assertEquals(0.5, a.stateDict().get("gamma"), "the first part got its old state back");
    }

    @Test
    void gradScalerStatesOfTheWrongKindFailAtLoadAndChangeNothing() {
        GradScaler scaler = new GradScaler();
        Map<String, Object> sd = mutable(scaler.stateDict());
        sd.put("scale", 1024.0);
        sd.put("_growth_tracker", "x");
        assertFails("GradScaler.loadStateDict: '_growth_tracker' must be an integer, found the string \"x\"", () -> scaler.loadStateDict(sd));
        assertEquals(65536.0, scaler.stateDict().get("scale"), "nothing loaded");
        sd.put("_growth_tracker", 0);
        sd.put("growth_factor", 0.5);
        assertFails("GradScaler.loadStateDict: 'growth_factor' must be a number > 1.0, found the Double 0.5", () -> scaler.loadStateDict(sd));
        sd.remove("growth_factor");
        assertFails("GradScaler.loadStateDict: the state dict has no 'growth_factor' (expected a number)", () -> scaler.loadStateDict(sd));
    }

    @Test
    @SuppressWarnings({"unchecked", "rawtypes"})
    void aModuleStateDictHoldingANonTensorOrAClosedTensorFailsBeforeCopying() {
        Linear m = model();
        Map raw = new LinkedHashMap<>(m.stateDict());
        Tensor weightBefore = m.weight().clone();
        raw.put("bias", List.of(1.0, 2.0));
        assertFails("loadStateDict: 'bias' must be a tensor, found a list of 2 elements", () -> m.loadStateDict((Map<String, Tensor>) raw));
        Tensor closed = Torch.zeros(2);
        closed.close();
        raw.put("weight", Torch.zeros(2, 3));
        raw.put("bias", closed);
        IllegalStateException ex = assertThrows(IllegalStateException.class, () -> m.loadStateDict((Map<String, Tensor>) raw));
        assertEquals("loadStateDict('bias'): tensor of shape [2] and dtype torch.float32 was used after close()", ex.getMessage());
        assertEquals(weightBefore.toString(), m.weight().toString(), "nothing copied");
    }

    // ------------------------------------------------------------------ checkpoints

    /** Saves a checkpoint whose metadata is {@code edit}ed JSON of a valid one. */
    private Path checkpointWith(Consumer<Map<String, Object>> edit) throws IOException {
        Path file = dir.resolve("c.ckpt");
        new Checkpoint().component("c", () -> Map.of("x", 1), m -> {}).save(file, 3, 7);
        Map<String, Tensor> tensors;
        String json;
        try (SafeTensors.Loaded l = SafeTensors.load(file)) {
            json = l.metadata().get(Checkpoint.METADATA_KEY);
            tensors = new LinkedHashMap<>(l.tensors());
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> parsed = mutable((Map<String, Object>) Json.parse(json));
        edit.accept(parsed);
        StringBuilder sb = new StringBuilder();
        StateCodec.writeJson(sb, replaceNulls(parsed));
        SafeTensors.save(file, Map.of(), Map.of(Checkpoint.METADATA_KEY, sb.toString()));
        return file;
    }

    private static Object replaceNulls(Object v) {
        if (v == Json.NULL) return null;
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put(k, replaceNulls(x)));
            return out;
        }
        return v;
    }

    @Test
    void aCheckpointEpochOfTheWrongKindOrMissingFailsNamingIt() throws IOException {
        Checkpoint ckpt = new Checkpoint().component("c", () -> Map.of(), m -> {});
        Path stringEpoch = checkpointWith(j -> j.put("epoch", "x"));
        assertFails("Checkpoint.load(" + stringEpoch + "): 'epoch' must be an integer, found the string \"x\"", () -> load(ckpt, stringEpoch));
        Path noEpoch = checkpointWith(j -> j.remove("epoch"));
        assertFails("Checkpoint.load(" + noEpoch + "): the state dict has no 'epoch' (expected an integer)", () -> load(ckpt, noEpoch));
        Path nullStep = checkpointWith(j -> j.put("step", null));
        assertFails("Checkpoint.load(" + nullStep + "): 'step' must be an integer, found null", () -> load(ckpt, nullStep));
        Path badComponent = checkpointWith(j -> ((Map<String, Object>) j.get("components")).put("c", List.of()));
        assertFails("Checkpoint.load(" + badComponent + "): 'components.c' must be a map, found a list of 0 elements",
                () -> load(ckpt, badComponent));
    }

    @Test
    void aCheckpointGeneratorStateOfTheWrongKindFailsNamingIt() throws IOException {
        Generator g = new Generator(5);
        Path file = dir.resolve("g.ckpt");
        new Checkpoint().component("rng/g", () -> Map.of("seed", "5", "offset", 0), m -> {}).save(file, 0, 0);
        assertFails("Checkpoint.load: generator 'g': 'seed' must be an integer, found the string \"5\"",
                () -> load(new Checkpoint().generator("g", g), file));
    }

    private static void load(Checkpoint ckpt, Path file) {
        try {
            ckpt.load(file);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void anOptimizerInACheckpointWithAStringLearningRateFailsAtLoad() throws IOException {
        Linear m = model();
        SGD opt = steppedSgd(m);
        Path file = dir.resolve("o.ckpt");
        Map<String, Object> sd = mutable(opt.stateDict());
        group0(sd).put("lr", "fast");
        new Checkpoint().component("optimizer", () -> sd, x -> {}).save(file, 0, 0);
        Optimizer other = new SGD(m.parameters(), SGD.options().lr(0.1).momentum(0.9));
        assertFails("SGD.loadStateDict: 'param_groups[0].lr' must be a number, found the string \"fast\"",
                () -> load(new Checkpoint().optimizer(other), file));
    }
}
