package org.jtorch.autograd;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;

/**
 * A recorded operation in the autograd graph: the backward formula of one forward call, the edges to
 * the nodes that produced its inputs, and the tensors it saved. Nodes are created by ops through
 * {@link Autograd#record}; users see them as {@link Tensor#gradFn()}.
 */
public class Node {
    private static final AtomicLong SEQUENCE = new AtomicLong();

    private final String name;
    final Edge[] next;
    final int numOutputs;
    final long sequenceNr;
    private final BackwardFunction function;
    private final List<SavedTensor> saved;
    private final long[][] outputShapes;
    private final org.jtorch.DType[] outputTypes;
    private final org.jtorch.Device[] outputDevices;
    final StackTraceElement[] creationTrace;
    /** Hooks on this node's outputs' gradients (tensor hooks of non-leaf tensors), by output index. */
    List<UnaryOperator<Tensor>>[] preHooks;
    boolean released;

    Node(String name, Edge[] next, int numOutputs, BackwardFunction function, List<SavedTensor> saved,
         long[][] outputShapes, org.jtorch.DType[] outputTypes, org.jtorch.Device[] outputDevices) {
        this.name = name;
        this.next = next;
        this.numOutputs = numOutputs;
        this.function = function;
        this.saved = saved;
        this.outputShapes = outputShapes;
        this.outputTypes = outputTypes;
        this.outputDevices = outputDevices;
        this.sequenceNr = SEQUENCE.incrementAndGet();
        this.creationTrace = Autograd.isAnomalyEnabled() ? new Throwable().getStackTrace() : null;
        for (SavedTensor s : saved) s.setOwner(this);
    }

    /** PyTorch-style name of the backward node, e.g. {@code MulBackward0}. */
    public String name() {
        return name;
    }

    /** The nodes this one sends gradients to (null entries for inputs that need no gradient). */
    public List<Edge> nextFunctions() {
        List<Edge> l = new ArrayList<>();
        for (Edge e : next) l.add(e);
        return l;
    }

    Tensor[] apply(Tensor[] gradOutputs) {
        if (released) {
            throw new IllegalStateException("Trying to backward through the graph a second time (or directly access saved tensors"
                    + " after they have already been freed) in " + name
                    + ". Specify retainGraph=true if you need to backward through the graph a second time.");
        }
        return function.apply(gradOutputs);
    }

    /** Shape of forward output {@code i} (for zero-filling a missing gradient). */
    long[] outputShape(int i) {
        return outputShapes[i];
    }

    org.jtorch.DType outputType(int i) {
        return outputTypes[i];
    }

    org.jtorch.Device outputDevice(int i) {
        return outputDevices[i];
    }

    @SuppressWarnings("unchecked")
    void addPreHook(int output, UnaryOperator<Tensor> hook) {
        if (preHooks == null) preHooks = new List[numOutputs];
        if (preHooks[output] == null) preHooks[output] = new ArrayList<>();
        preHooks[output].add(hook);
    }

    void releaseSaved() {
        for (SavedTensor s : saved) s.release();
        released = !saved.isEmpty();
    }

    @Override
    public String toString() {
        return name;
    }
}
