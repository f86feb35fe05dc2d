package org.jtorch.autograd;

import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * The autograd entry points: recording of ops (for op implementations), {@link #grad} and anomaly
 * detection. {@link Tensor#backward()} is the usual way in.
 */
public final class Autograd {
    private static final ThreadLocal<boolean[]> ANOMALY = ThreadLocal.withInitial(() -> new boolean[] {false});

    private Autograd() {}

    /** Whether an op with these inputs must record a node: grad mode is on and some input requires grad. */
    public static boolean needsGrad(Tensor a) {
        return a.requiresGrad() && Grad.isEnabled();
    }

    public static boolean needsGrad(Tensor a, Tensor b) {
        return (a.requiresGrad() || b.requiresGrad()) && Grad.isEnabled();
    }

    public static boolean needsGrad(Tensor... inputs) {
        if (!Grad.isEnabled()) return false;
        for (Tensor t : inputs) if (t != null && t.requiresGrad()) return true;
        return false;
    }

    /** The accumulator node of a leaf (called once per leaf by {@link Tensor#gradAccumulator()}). */
    public static Node accumulatorFor(Tensor leaf) {
        return new AccumulateGrad(leaf);
    }

    /**
     * For {@link Tensor}: a tensor now has {@code node} as its {@code gradFn} and keeps it alive until
     * {@link #dropGraphOwner} (see {@link Node}'s lifetime).
     */
    public static void addGraphOwner(Node node) {
        Arguments.nonNull("Autograd.addGraphOwner", "node", node);
        node.addOwner();
    }

    /** For {@link Tensor}: a tensor closed, or its {@code gradFn} changed; the node may now free its saved tensors. */
    public static void dropGraphOwner(Node node) {
        Arguments.nonNull("Autograd.dropGraphOwner", "node", node);
        node.removeOwner();
    }

    /** Adds a hook on output {@code outputNr}'s gradient of {@code node} (tensor hooks of non-leaf tensors). */
    public static void addPreHook(Node node, int outputNr, java.util.function.UnaryOperator<Tensor> hook) {
        node.addPreHook(outputNr, hook);
    }

    /** Saves a tensor for backward (own storage reference, version checked on use). */
    public static SavedTensor save(Tensor t) {
        if (t.isInference()) {
            throw new IllegalStateException("Inference tensors cannot be saved for backward: a tensor of shape "
                    + org.jtorch.op.Shapes.format(t.shape()) + " made in Grad.inferenceMode() is used by an op that records a"
                    + " graph; clone() it outside inference mode to use it in autograd");
        }
        return new SavedTensor(t);
    }

    /**
     * Records one op: {@code outputs} get a node named {@code name} whose backward is {@code fn}, with
     * edges to {@code inputs} (null inputs and inputs that need no gradient get no edge). The node
     * releases {@code saved} when a backward pass through it finishes without {@code retainGraph}.
     */
    public static Node record(String name, Tensor[] inputs, Tensor[] outputs, BackwardFunction fn, SavedTensor... saved) {
        if (outputs.length == 1 && outputs[0].viewBase() != null) {
            // An in-place op (its output is one of its inputs) on a view: the history goes on the view's base.
            for (int i = 0; i < inputs.length; i++) {
                if (inputs[i] == outputs[0]) return CopySlices.record(name, inputs, i, outputs[0], fn, saved);
            }
        }
        Edge[] edges = new Edge[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t == null || !t.requiresGrad()) continue;
            edges[i] = t.gradFn() != null ? new Edge(t.gradFn(), t.outputNr()) : new Edge(t.gradAccumulator(), 0);
        }
        long[][] shapes = new long[outputs.length][];
        org.jtorch.types.DType[] types = new org.jtorch.types.DType[outputs.length];
        org.jtorch.types.Device[] devices = new org.jtorch.types.Device[outputs.length];
        for (int i = 0; i < outputs.length; i++) {
            shapes[i] = outputs[i].shape();
            types[i] = outputs[i].dtype();
            devices[i] = outputs[i].device();
        }
        Node node = new Node(name, edges, outputs.length, fn, List.of(saved), shapes, types, devices);
        for (int i = 0; i < outputs.length; i++) {
            if (outputs[i].dtype().isFloatingPoint()) outputs[i].setGradFn(node, i);
        }
        for (SavedTensor s : saved) s.recorded(node, outputs);
        return node;
    }

    /** Single-output convenience form of {@link #record(String, Tensor[], Tensor[], BackwardFunction, SavedTensor...)}. */
    public static Tensor record(String name, Tensor output, BackwardFunction fn, Tensor[] inputs, SavedTensor... saved) {
        record(name, inputs, new Tensor[] {output}, fn, saved);
        return output;
    }

    /**
     * Gradients of {@code outputs} with respect to {@code inputs}, as {@code torch.autograd.grad}: nothing is
     * accumulated into {@code .grad}. {@code gradOutputs} may be null for scalar outputs. With
     * {@code allowUnused} an input the outputs do not depend on gets null, otherwise an error.
     */
    public static Tensor[] grad(Tensor[] outputs, Tensor[] inputs, Tensor[] gradOutputs, boolean retainGraph,
                                boolean createGraph, boolean allowUnused) {
        Arguments.nonNullElements("Autograd.grad", "outputs", outputs);
        Arguments.nonNullElements("Autograd.grad", "inputs", inputs);
        return Engine.run(outputs, gradOutputs, retainGraph, createGraph, inputs, allowUnused);
    }

    public static Tensor[] grad(Tensor[] outputs, Tensor[] inputs) {
        return grad(outputs, inputs, null, false, false, false);
    }

    public static Tensor grad(Tensor output, Tensor input) {
        Arguments.nonNull("Autograd.grad", "output", output);
        Arguments.nonNull("Autograd.grad", "input", input);
        return grad(new Tensor[] {output}, new Tensor[] {input})[0];
    }

    /**
     * Runs {@code callback} once the backward pass now running on this thread has processed its whole graph,
     * before {@code backward()} returns (PyTorch's {@code Variable._execution_engine.queue_callback}); callbacks run
     * in the order queued and are dropped if the pass fails. For hooks that start work during backward and must
     * finish it at the end (DDP waits for its gradient all-reduces there). Throws outside a backward pass.
     */
    public static void queueCallback(Runnable callback) {
        Arguments.nonNull("queueCallback", "callback", callback);
        Engine.queueCallback(callback);
    }

    /** Runs backward from {@code roots}, accumulating into the leaves' {@code .grad}. */
    public static void backward(Tensor[] roots, Tensor[] gradRoots, boolean retainGraph, boolean createGraph) {
        Arguments.nonNullElements("Autograd.backward", "roots", roots);
        Engine.run(roots, gradRoots, retainGraph, createGraph, null, true);
    }

    /**
     * Anomaly detection until closed: nodes remember where they were created, and the first backward
     * formula that produces a NaN fails with the forward op's name and creation stack.
     */
    public static AnomalyMode detectAnomaly() {
        return new AnomalyMode();
    }

    /** Scope of {@link #detectAnomaly()}; restores the previous setting on close. */
    public static final class AnomalyMode implements AutoCloseable {
        private final boolean previous;

        private AnomalyMode() {
            boolean[] flag = ANOMALY.get();
            previous = flag[0];
            flag[0] = true;
        }

        @Override
        public void close() {
            ANOMALY.get()[0] = previous;
        }
    }

    public static boolean isAnomalyEnabled() {
        return ANOMALY.get()[0];
    }
}
