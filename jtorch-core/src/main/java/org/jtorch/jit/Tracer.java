package org.jtorch.jit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.Storage;
import org.jtorch.ops.Dispatcher;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.Shapes;
import org.jtorch.op.TraceHook;
import org.jtorch.types.Generator;

/**
 * Records the ops a function dispatches into a {@link Graph}, and notes anything the graph could not replay:
 * a tensor made by an op the dispatcher does not see yet (views, matmul, convolution, ...), a read of values on
 * the host, or an in-place change. Any of these makes the trace unusable; the function then runs eagerly
 * ({@link #breakReason}), so a result is never wrong.
 */
final class Tracer implements TraceHook<Tensor> {
    final Graph graph = new Graph();
    private final Map<Tensor, Graph.Value> values = new IdentityHashMap<>();
    private final Set<Tensor> created = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Each tensor's version when the trace first saw it: a change by the end is an in-place op the trace missed. */
    private final Map<Tensor, Integer> versions = new IdentityHashMap<>();
    /** A tensor just written in place whose op has not reported itself yet ({@link #mutated}). */
    private Tensor pendingMutation;
    /** Memory allocated during the trace (a created tensor holding its storage's only reference). */
    private final Set<Storage> freshStorages = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Memory some recorded op read or wrote. */
    private final Set<Storage> seenStorages = Collections.newSetFromMap(new IdentityHashMap<>());
    private String breakReason;
    /** Generators made from here on are made by the traced function: a replay would keep drawing from the first call's. */
    private final long firstNewGenerator = Generator.nextId();
    /** Whether a random op ran: a CUDA graph would replay its draws unchanged. */
    private boolean drewRandomNumbers;

    Tracer(Tensor[] inputs) {
        for (int i = 0; i < inputs.length; i++) {
            Graph.Input in = new Graph.Input(i, inputs[i].shape(), inputs[i].dtype());
            graph.inputs.add(in);
            // The same tensor passed twice is one value: the first input.
            values.putIfAbsent(inputs[i], in);
            versions.put(inputs[i], inputs[i].version());
        }
    }

    @Override
    public void record(OpDef op, List<Tensor> inputs, double[] scalars, ReduceArgs reduce, Tensor output) {
        checkMutations();
        checkGenerator(op, scalars);
        List<Graph.Value> args = new ArrayList<>(inputs.size());
        for (Tensor t : inputs) args.add(t == null ? null : valueOf(t));
        Graph.Node node = new Graph.Node(graph.nodes.size(), op, args, scalars, reduce, output);
        graph.nodes.add(node);
        seenStorages.add(output.storage());
        values.put(output, node);
        versions.put(output, output.version());
    }

    /**
     * An op with several outputs: one node standing for the first, with the others as its {@link Graph.Output}s, so
     * that a program reading an LSTM cell's {@code cy} or max pooling's indices is still one graph.
     */
    @Override
    public void recordAll(OpDef op, List<Tensor> inputs, double[] scalars, List<Tensor> outputs) {
        if (outputs.isEmpty() || outputs.get(0) == null) {
            breakAt(op.pyName() + " returned no first output");
            return;
        }
        record(op, inputs, scalars, null, outputs.get(0));
        Graph.Node node = graph.nodes.getLast();
        node.outputs = new Graph.Output[outputs.size() - 1];
        for (int i = 1; i < outputs.size(); i++) {
            Tensor t = outputs.get(i);
            if (t == null) continue;
            Graph.Output o = new Graph.Output(node, i, t);
            node.outputs[i - 1] = o;
            seenStorages.add(t.storage());
            values.put(t, o);
            versions.put(t, t.version());
        }
    }

    @Override
    public void created(Tensor tensor) {
        checkMutations();
        created.add(tensor);
        if (tensor.storage().refCount() == 1) freshStorages.add(tensor.storage());
    }

    @Override
    public void mutated(Tensor tensor) {
        checkMutations();
        pendingMutation = tensor;
    }

    /**
     * A pointwise or structured op in place: recorded as a node that writes into its first input's value, replayed in trace
     * order.
     * Written tensors that require grad are not traced (their autograd history would have to be rewritten).
     */
    @Override
    public void recordInPlace(OpDef op, List<Tensor> inputs, double[] scalars) {
        Tensor self = inputs.get(0);
        if (pendingMutation == self) pendingMutation = null;
        checkMutations();
        checkGenerator(op, scalars);
        for (Tensor t : inputs) {
            if (t != null && t.requiresGrad()) {
                breakAt(op.pyName() + "_ changed a tensor of shape " + Shapes.format(self.shape()) + " in place with autograd recording");
                return;
            }
        }
        List<Graph.Value> args = new ArrayList<>(inputs.size());
        for (Tensor t : inputs) args.add(t == null ? null : valueOf(t)); // null: an optional input or a None index left out
        graph.nodes.add(new Graph.Node(graph.nodes.size(), op, args, scalars, null, self, true));
        graph.mutated.add(args.get(0));
        versions.put(self, self.version());
    }

    /**
     * Breaks the trace at a random op drawing from a generator the function made: each eager call draws from a new one
     * (the same numbers again when it is seeded alike), which a replay of the traced graph cannot do.
     */
    private void checkGenerator(OpDef op, double[] scalars) {
        if (!op.isRandom()) return;
        drewRandomNumbers = true;
        if ((long) scalars[op.generatorScalar()] >= firstNewGenerator) {
            breakAt(op.pyName() + " drew from a generator made by the traced function");
        }
    }

    /**
     * Breaks the trace if a tensor was written in place by an op that did not report itself, unless the write went into
     * memory allocated during the trace that no recorded op has touched yet: that is part of making a tensor (a CUDA
     * wrapped number is allocated and then filled), and a tensor made so is refused when an op reads it.
     */
    private void checkMutations() {
        if (pendingMutation == null) return;
        Tensor t = pendingMutation;
        pendingMutation = null;
        if (freshStorages.contains(t.storage()) && !seenStorages.contains(t.storage())) return;
        breakAt("a tensor of shape " + Shapes.format(t.shape()) + " was changed in place by an op the trace does not see");
    }

    @Override
    public void hostRead(Tensor tensor, String what) {
        checkMutations();
        breakAt(what + " read a tensor of shape " + Shapes.format(tensor.shape()) + " on the host");
    }

    private Graph.Value valueOf(Tensor t) {
        seenStorages.add(t.storage());
        Graph.Value v = values.get(t);
        if (v != null) return v;
        if (created.contains(t) && !t.isWrappedNumber()) {
            breakAt("a tensor of shape " + Shapes.format(t.shape()) + " (" + t.dtype() + ") was made by an op the trace does not see");
        }
        // Another handle on memory the trace knows (an autograd node's saved tensor, unpacked in a traced backward): at
        // a value's very place it is that value; elsewhere in its memory, a constant would freeze the trace's data.
        Graph.Value same = null;
        boolean overlaps = false;
        for (Map.Entry<Tensor, Graph.Value> e : values.entrySet()) {
            Tensor k = e.getKey();
            if (k.storage() != t.storage()) continue;
            if (k.storageOffset() == t.storageOffset() && Arrays.equals(k.shape(), t.shape()) && Arrays.equals(k.strides(), t.strides())
                    && k.dtype() == t.dtype()) {
                same = e.getValue();
                break;
            }
            overlaps |= !(e.getValue() instanceof Graph.Constant);
        }
        if (same != null) {
            values.put(t, same);
            versions.put(t, t.version());
            return same;
        }
        if (overlaps) {
            breakAt("a tensor of shape " + Shapes.format(t.shape()) + " reads a traced value's memory through a handle the trace did"
                    + " not see (a saved tensor in a traced backward?)");
        }
        // A wrapped Java number is copied now: the scope of the op that made it (a composite's) may close it at once.
        Graph.Constant c = new Graph.Constant(t.isWrappedNumber() && t.dim() == 0 ? Dispatcher.withoutTrace(() -> ownedCopy(t)) : t);
        values.put(t, c);
        versions.put(t, t.version());
        return c;
    }

    /** A copy of a wrapped number, outside every memory scope. */
    private static Tensor ownedCopy(Tensor t) {
        Tensor copy = t.dtype().isFloatingPoint() ? Torch.full(new long[0], t.item(), t.dtype(), t.device())
                : Torch.full(new long[0], t.itemLong(), t.dtype(), t.device());
        copy.markWrappedNumber();
        for (var s = copy.scope(); s != null; s = copy.scope()) s.keep(copy);
        return copy;
    }

    /** Ends the trace with the function's result. */
    void finish(Tensor result) {
        checkMutations();
        if (result == null) {
            breakAt("the function returned null");
            return;
        }
        graph.output = valueOf(result);
        graph.seal();
        for (Map.Entry<Tensor, Integer> e : versions.entrySet()) {
            Tensor t = e.getKey();
            if (!t.isClosed() && t.version() != e.getValue()) {
                breakAt("a tensor of shape " + Shapes.format(t.shape()) + " was changed in place (in-place ops are not traced yet)");
            }
        }
    }

    private void breakAt(String reason) {
        if (breakReason == null) breakReason = reason;
    }

    /** Whether the traced call ran a random op ({@link OpDef#isRandom}). */
    boolean drewRandomNumbers() {
        return drewRandomNumbers;
    }

    /** Why the trace cannot be replayed, or null when it can. */
    String breakReason() {
        return breakReason;
    }
}
