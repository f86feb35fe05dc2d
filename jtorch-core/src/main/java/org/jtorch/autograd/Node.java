package org.jtorch.autograd;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;

/**
 * A recorded operation in the autograd graph: the backward formula of one forward call, the edges to
 * the nodes that produced its inputs, and the tensors it saved. Nodes are created by ops through
 * {@link Autograd#record}; users see them as {@link Tensor#gradFn()}.
 *
 * <p>Lifetime: a node counts its owners, the open tensors whose {@code gradFn} it is and the live nodes with
 * an edge to it. When the last one goes (the tensors were closed, by hand or by their {@code MemoryScope}),
 * no backward pass can reach the node any more, so it releases its saved tensors at once and drops its own
 * edges, as PyTorch frees a node with its last reference. Without this, a forward pass that is never
 * differentiated would keep every saved tensor until the garbage collector found the graph.
 */
public class Node {
    private static final AtomicLong SEQUENCE = new AtomicLong();
    private static final VarHandle OWNERS;
    /** Nodes whose last owner went, freed by a loop rather than by recursion (graphs can be very deep). */
    private static final ThreadLocal<ArrayDeque<Node>> DYING = ThreadLocal.withInitial(ArrayDeque::new);

    static {
        try {
            OWNERS = MethodHandles.lookup().findVarHandle(Node.class, "owners", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String name;
    final Edge[] next;
    final int numOutputs;
    final long sequenceNr;
    private final BackwardFunction function;
    private final List<SavedTensor> saved;
    private final long[][] outputShapes;
    private final org.jtorch.types.DType[] outputTypes;
    private final org.jtorch.types.Device[] outputDevices;
    final StackTraceElement[] creationTrace;
    /** Hooks on this node's outputs' gradients (tensor hooks of non-leaf tensors), by output index. */
    List<UnaryOperator<Tensor>>[] preHooks;
    boolean released;
    /** Open tensors and live nodes referring to this node (see the class comment). */
    private volatile int owners;
    /** Whether owners are counted at all: a node with nothing to release and no edges (a leaf's sink) needs none. */
    private final boolean counted;

    Node(String name, Edge[] next, int numOutputs, BackwardFunction function, List<SavedTensor> saved,
         long[][] outputShapes, org.jtorch.types.DType[] outputTypes, org.jtorch.types.Device[] outputDevices) {
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
        this.counted = next.length > 0 || !saved.isEmpty();
        for (Edge e : next) {
            if (e != null) e.node().addOwner();
        }
    }

    void addOwner() {
        if (counted) OWNERS.getAndAdd(this, 1);
    }

    /** Drops one owner; the last one frees this node and, in turn, the nodes only it referred to. */
    void removeOwner() {
        if (!counted || (int) OWNERS.getAndAdd(this, -1) != 1) return;
        ArrayDeque<Node> dying = DYING.get();
        boolean outermost = dying.isEmpty();
        dying.addLast(this);
        if (!outermost) return; // a free further up this thread's stack picks it up
        try {
            // Peek, free, then remove: the node stays queued while it frees, so nested drops only enqueue.
            for (Node n = dying.peekFirst(); n != null; n = dying.peekFirst()) {
                n.free();
                dying.pollFirst();
            }
        } finally {
            dying.clear();
        }
    }

    private void free() {
        releaseSaved();
        for (Edge e : next) {
            if (e != null) e.node().removeOwner();
        }
    }

    /** PyTorch-style name of the backward node, e.g. {@code MulBackward0}. */
    /** How many tensors the node saved for its backward (what it holds alive until it is released). */
    int savedCount() {
        return saved.size();
    }

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

    org.jtorch.types.DType outputType(int i) {
        return outputTypes[i];
    }

    org.jtorch.types.Device outputDevice(int i) {
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
