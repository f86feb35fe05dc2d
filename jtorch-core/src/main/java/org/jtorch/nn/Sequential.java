package org.jtorch.nn;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.Arguments;

/**
 * Modules applied in order, each to the previous one's output; children are named {@code 0, 1, ...} as in PyTorch.
 *
 * <p>A {@code Sequential} passes one tensor along. Where the first step takes several values (a {@link TupleModule}: an
 * LSTM's {@code (input, (h, c))}, an encoder's {@code (src, mask)}), {@link #of} starts a typed {@link Chain} instead,
 * which passes whatever each step returns to the next (records too) and checks the types at compile time:
 * <pre>{@code
 * Sequential.Chain<LSTM.Input, Tensor> model = Sequential.of(lstm)   // (input, (h, c)) -> LSTM.Output
 *         .map(LSTM.Output::output)                                // a function step: keep the sequence
 *         .then(head);                                              // a Module step: Tensor -> Tensor
 * Tensor y = model.forward(new LSTM.Input(x, state));
 * }</pre>
 */
public class Sequential extends ModuleList {
    public Sequential(Module... modules) {
        Arguments.nonNullElements("Sequential", "modules", modules);
        super(modules);
    }

    /** Appends a module (named by its position). */
    @Override
    public Sequential add(Module module) {
        Arguments.nonNull("Sequential.add", "module", module);
        super.add(module);
        return this;
    }

    /** Runs the modules in order; intermediate results are closed as soon as the next module has consumed them. */
    @Override
    public Tensor forward(Tensor input) {
        Arguments.nonNull("Sequential.forward", "input", input);
        Tensor x = input;
        for (Module m : children()) {
            Tensor y = m.forward(x);
            if (x != input && x != y) x.close();
            x = y;
        }
        return x == input ? input.alias() : x;
    }

    /** A typed chain starting with a {@link TupleModule} (registered as child {@code 0}). */
    public static <I, O, M extends Module & TupleModule<I, O>> Chain<I, O> of(M first) {
        Arguments.nonNull("Sequential.of", "first", first);
        Chain<I, I> start = new Chain<>();
        return start.then(first);
    }

    /**
     * Steps applied in order, each to what the previous returned: {@link TupleModule}s, single-tensor {@link Module}s and
     * plain functions ({@link #map}, which pick a member of a record, or build the next step's input). Step {@code k} is child
     * {@code "k"} when it is a module; a function takes its index too, as the parameterless module PyTorch would need
     * there, so state-dict names match such a port. {@link #forward(Object)} runs inside a {@link MemoryScope}: every
     * intermediate value is closed, and the tensors of the result ({@link TensorTree#flatten}) are kept for the caller.
     *
     * <p>The builder methods add a step to this chain and return it retyped; build a chain once, then use it.
     */
    public static final class Chain<I, O> extends Module implements TupleModule<I, O> {
        /** A step: the child module {@code index} (typed or single-tensor), or a function. */
        private record Step(int index, String name, boolean typed, Function<Object, Object> function) {}

        private final List<Step> steps = new ArrayList<>();

        private Chain() {}

        /** Appends a several-value step; its input type must accept this chain's output. */
        @SuppressWarnings("unchecked")
        public <N, M extends Module & TupleModule<? super O, N>> Chain<I, N> then(M next) {
            Arguments.nonNull("Sequential.then", "next", next);
            addModule(next, true);
            return (Chain<I, N>) this;
        }

        /**
         * Appends single-tensor steps: this chain's output must then be a tensor (checked when the chain runs). A
         * {@link TupleModule} whose input type does not match arrives here too, and runs its single-tensor form.
         */
        @SuppressWarnings("unchecked")
        public Chain<I, Tensor> then(Module... next) {
            Arguments.nonNullElements("Sequential.then", "next", next);
            for (Module m : next) addModule(m, false);
            return (Chain<I, Tensor>) this;
        }

        /** Appends a function step (no parameters): {@code map(LSTM.Output::output)}, {@code map(x -> new Input(x, mask))}. */
        @SuppressWarnings("unchecked")
        public <N> Chain<I, N> map(Function<? super O, ? extends N> next) {
            Arguments.nonNull("Sequential.then", "next", next);
            steps.add(new Step(steps.size(), "function", false, value -> next.apply((O) value)));
            return (Chain<I, N>) this;
        }

        private void addModule(Module module, boolean typed) {
            // The step names its child rather than capturing it, so that a deepCopy of the chain runs the copies.
            registerModule(Integer.toString(steps.size()), module);
            steps.add(new Step(steps.size(), module.getClass().getSimpleName(), typed, null));
        }

        @SuppressWarnings("unchecked")
        private Object run(Step step, Object value) {
            if (step.function() != null) return step.function().apply(value);
            Module m = child(Integer.toString(step.index()));
            if (step.typed()) return ((TupleModule<Object, Object>) m).forward(value);
            if (!(value instanceof Tensor t)) {
                throw new IllegalArgumentException("Sequential: step " + step.index() + " (" + step.name() + ") takes a tensor, but step "
                        + (step.index() - 1) + " returned " + (value == null ? "null" : value.getClass().getSimpleName())
                        + "; add a function step that picks the tensor, e.g. map(LSTM.Output::output)");
            }
            return m.forward(t);
        }

        /** Runs every step; the caller owns the tensors of the result (which may include the input's, as PyTorch's). */
        @Override
        @SuppressWarnings("unchecked")
        public O forward(I input) {
            Arguments.nonNull("Sequential.forward", "input", input);
            try (MemoryScope scope = new MemoryScope()) {
                Object value = input;
                for (Step step : steps) value = run(step, value);
                return TensorTree.keep(scope, (O) value);
            }
        }

        /**
         * Unsupported: a chain starts with a {@link TupleModule}, whose input is a record (a module cannot declare a
         * second {@code forward(Tensor)}); a chain of single-tensor modules is a plain {@code Sequential}.
         */
        @Override
        public Tensor forward(Tensor input) {
            throw new UnsupportedOperationException("Sequential: this chain starts with " + steps.get(0).name()
                    + ", which takes several inputs: call forward with its input record");
        }
    }
}
