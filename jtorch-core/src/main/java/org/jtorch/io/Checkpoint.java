package org.jtorch.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;
import org.jtorch.types.Generator;

/**
 * A training checkpoint: the state of a model, its optimizers, schedulers, random generators and any
 * other component, with the epoch and step, in one safetensors file written atomically (temporary
 * file, fsync, rename), so a crash during {@link #save} leaves the previous checkpoint intact.
 *
 * <pre>{@code
 * var ckpt = new Checkpoint()
 *         .model(model).optimizer(optimizer).scheduler(scheduler)
 *         .generator("default", Generator.defaultGenerator());
 * ckpt.save(path, epoch, step);
 * ...
 * Checkpoint.Position at = ckpt.load(path);   // restores everything registered; returns epoch and step
 * }</pre>
 *
 * <p>File layout: every tensor of component {@code c} is stored under {@code c/<path>} (a model's
 * under {@code model/<state-dict key>}, so the file is also a readable safetensors state dict); the
 * rest of each component's state (numbers, lists, option maps) is JSON in the metadata entry
 * {@code jtorch.checkpoint}, with tensors referenced by name. Loading validates every component before
 * it changes any: a checkpoint from another model or optimizer fails with the component's own error
 * and leaves the registered objects as they were where the component allows it.
 */
public final class Checkpoint {
    /** Metadata key of the JSON state; also marks a file as a jtorch checkpoint. */
    public static final String METADATA_KEY = "jtorch.checkpoint";
    static final int FORMAT_VERSION = 1;

    /** Where training stood when the checkpoint was written. */
    public record Position(long epoch, long step) {}

    private record Component(Supplier<Map<String, Object>> save, Consumer<Map<String, Object>> load, Runnable release) {}

    private final Map<String, Component> components = new LinkedHashMap<>();

    /** Registers {@code model} as component {@code "model"}. */
    public Checkpoint model(TensorState<?> model) {
        return model("model", model);
    }

    public Checkpoint model(String name, TensorState<?> model) {
        Arguments.nonNull("Checkpoint.model", "name", name);
        Arguments.nonNull("Checkpoint.model", "model", model);
        Map<String, Tensor>[] last = newHolder();
        return component(name, () -> {
            last[0] = model.stateDict();
            return new LinkedHashMap<>(last[0]);
        }, state -> {
            Map<String, Tensor> tensors = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : state.entrySet()) {
                if (!(e.getValue() instanceof Tensor t)) {
                    throw new IllegalArgumentException("Checkpoint.load: model entry '" + e.getKey() + "' must be a tensor, found "
                            + StateReader.describe(e.getValue()));
                }
                tensors.put(e.getKey(), t);
            }
            model.loadStateDict(tensors, true);
        }, () -> {
            if (last[0] != null) last[0].values().forEach(Tensor::close);
            last[0] = null;
        });
    }

    /** Registers {@code optimizer} as component {@code "optimizer"}. */
    public Checkpoint optimizer(Stateful optimizer) {
        return optimizer("optimizer", optimizer);
    }

    public Checkpoint optimizer(String name, Stateful optimizer) {
        Arguments.nonNull("Checkpoint.optimizer", "name", name);
        Arguments.nonNull("Checkpoint.optimizer", "optimizer", optimizer);
        List<Map<String, Object>> last = new ArrayList<>(1);
        return component(name, () -> {
            Map<String, Object> sd = optimizer.stateDict();
            last.add(sd);
            return sd;
        }, optimizer::loadStateDict, () -> {
            last.forEach(optimizer::releaseStateDict);
            last.clear();
        });
    }

    /** Registers {@code scheduler} as component {@code "scheduler"}. */
    public Checkpoint scheduler(Stateful scheduler) {
        return scheduler("scheduler", scheduler);
    }

    public Checkpoint scheduler(String name, Stateful scheduler) {
        Arguments.nonNull("Checkpoint.scheduler", "name", name);
        Arguments.nonNull("Checkpoint.scheduler", "scheduler", scheduler);
        return component(name, scheduler::stateDict, scheduler::loadStateDict, () -> {});
    }

    /** Registers a random generator under {@code "rng/<name>"}: its seed and position in the stream. */
    public Checkpoint generator(String name, Generator generator) {
        Arguments.nonNull("Checkpoint.generator", "name", name);
        Arguments.nonNull("Checkpoint.generator", "generator", generator);
        return component("rng/" + name, () -> {
            long[] s = generator.getState();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("seed", s[0]);
            m.put("offset", s[1]);
            return m;
        }, m -> {
            StateReader r = new StateReader("Checkpoint.load: generator '" + name + "'", m);
            generator.setState(new long[] {r.requireLong("seed"), r.requireLong("offset")});
        }, () -> {});
    }

    /**
     * Registers any component by its state functions: {@code save} returns a map of tensors, numbers,
     * booleans, strings, lists and maps (string or integer keys); {@code load} receives the same
     * structure (tensors are read-only views valid during the call: copy what you keep).
     */
    public Checkpoint component(String name, Supplier<Map<String, Object>> save, Consumer<Map<String, Object>> load) {
        Arguments.nonNull("Checkpoint.component", "name", name);
        Arguments.nonNull("Checkpoint.component", "save", save);
        Arguments.nonNull("Checkpoint.component", "load", load);
        return component(name, save, load, () -> {});
    }

    private Checkpoint component(String name, Supplier<Map<String, Object>> save, Consumer<Map<String, Object>> load, Runnable release) {
        if (name == null || name.isEmpty() || name.contains("$")) {
            throw new IllegalArgumentException("Checkpoint: invalid component name '" + name + "'");
        }
        if (components.containsKey(name)) throw new IllegalArgumentException("Checkpoint: component '" + name + "' registered twice");
        components.put(name, new Component(save, load, release));
        return this;
    }

    /** Writes every registered component with {@code epoch} and {@code step} to {@code path}, atomically. */
    public void save(Path path, long epoch, long step) throws IOException {
        Arguments.nonNull("Checkpoint.save", "path", path);
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("format", FORMAT_VERSION);
        json.put("epoch", epoch);
        json.put("step", step);
        Map<String, Object> states = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, Component> c : components.entrySet()) {
                Map<String, Object> state = c.getValue().save.get();
                states.put(c.getKey(), StateCodec.encode(state, c.getKey(), tensors));
            }
            json.put("components", states);
            StringBuilder sb = new StringBuilder();
            StateCodec.writeJson(sb, json);
            SafeTensors.save(path, tensors, Map.of(METADATA_KEY, sb.toString()));
        } finally {
            for (Component c : components.values()) c.release.run();
        }
    }

    /**
     * Restores every registered component from {@code path} and returns the saved epoch and step.
     * A registered component missing from the file is an error naming it (components in the file that
     * are not registered are ignored, so a checkpoint can be read partially by registering less).
     */
    public Position load(Path path) throws IOException {
        Arguments.nonNull("Checkpoint.load", "path", path);
        try (SafeTensors.Loaded file = SafeTensors.load(path)) {
            String text = file.metadata().get(METADATA_KEY);
            if (text == null) {
                throw new SafeTensors.FormatException(path + ": not a jtorch checkpoint (no '" + METADATA_KEY + "' metadata)");
            }
            Object parsed;
            try {
                parsed = Json.parse(text);
            } catch (IllegalArgumentException ex) {
                throw new SafeTensors.FormatException(path + ": corrupt checkpoint metadata: " + ex.getMessage());
            }
            if (!(parsed instanceof Map<?, ?> json)) {
                throw new SafeTensors.FormatException(path + ": corrupt checkpoint metadata: '" + METADATA_KEY + "' must be a JSON object, found "
                        + StateReader.describe(parsed));
            }
            StateReader r = new StateReader("Checkpoint.load(" + path + ")", json);
            Object format = r.require("format", "the format version " + FORMAT_VERSION);
            if (!(format instanceof Long f) || f != FORMAT_VERSION) {
                throw new SafeTensors.FormatException(path + ": unsupported checkpoint format " + StateReader.describe(format)
                        + " (this jtorch reads format " + FORMAT_VERSION + ")");
            }
            Position position = new Position(r.requireLong("epoch"), r.requireLong("step"));
            StateReader states = r.requireMap("components");
            for (String name : components.keySet()) {
                if (!states.has(name)) {
                    throw new IllegalArgumentException("Checkpoint.load: " + path + " has no component '" + name
                            + "' (it has " + states.entries().keySet() + ")");
                }
            }
            for (Map.Entry<String, Component> c : components.entrySet()) {
                Object decoded = StateCodec.decode(states.get(c.getKey()), file);
                c.getValue().load.accept(asMap(states.map("components." + c.getKey(), decoded)));
            }
            return position;
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(StateReader r) {
        return (Map<String, Object>) r.entries();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Tensor>[] newHolder() {
        return (Map<String, Tensor>[]) new Map[1];
    }
}
