package org.jtorch.autograd;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Shapes;

/**
 * Executes backward passes: finds the nodes reachable from the roots, counts their dependencies, and
 * runs each node once all its output gradients have arrived, latest-created first (as PyTorch's
 * engine), summing gradients that meet at one input.
 *
 * <p>Memory: every gradient routed to a node or leaf is an alias the engine owns; each node's inputs
 * and outputs are closed as soon as the node has run, so intermediate gradients live only as long as
 * needed. A leaf's first gradient is stolen into {@code .grad} when nothing else references its
 * storage. Saved tensors are released per node unless {@code retainGraph}. Each backward formula and
 * hook runs in its own {@link MemoryScope}, so the temporaries it creates are closed as soon as it
 * returns; only its results survive.
 */
final class Engine {
    /** Callbacks queued by the backward passes running on this thread, innermost pass last. */
    private static final ThreadLocal<ArrayDeque<List<Runnable>>> CALLBACKS = ThreadLocal.withInitial(ArrayDeque::new);

    private Engine() {}

    /** See {@link Autograd#queueCallback}. */
    static void queueCallback(Runnable callback) {
        List<Runnable> pass = CALLBACKS.get().peekLast();
        if (pass == null) throw new IllegalStateException("queueCallback: no backward pass is running on this thread");
        pass.add(callback);
    }

    static Tensor[] run(Tensor[] roots, Tensor[] gradRoots, boolean retainGraph, boolean createGraph, Tensor[] inputs,
                        boolean allowUnused) {
        ArrayDeque<List<Runnable>> stack = CALLBACKS.get();
        List<Runnable> callbacks = new ArrayList<>();
        stack.addLast(callbacks);
        try {
            Tensor[] result = runGraph(roots, gradRoots, retainGraph, createGraph, inputs, allowUnused);
            // A callback may queue another (run after it, in this pass).
            for (int i = 0; i < callbacks.size(); i++) callbacks.get(i).run();
            return result;
        } finally {
            stack.removeLast();
        }
    }

    /** Applies a gradient hook; a replacement it returns becomes a new engine-owned alias, its temporaries are closed. */
    private static Tensor applyHook(UnaryOperator<Tensor> hook, Tensor g) {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor out = hook.apply(g);
            return out == null || out == g ? null : scope.keep(out.alias());
        }
    }

    private static Tensor[] runGraph(Tensor[] roots, Tensor[] gradRoots, boolean retainGraph, boolean createGraph, Tensor[] inputs,
                                     boolean allowUnused) {
        boolean capture = inputs != null;
        Map<Node, Tensor[]> buffers = new IdentityHashMap<>();
        List<Node> rootNodes = new ArrayList<>();
        for (int i = 0; i < roots.length; i++) {
            Tensor r = roots[i];
            r.checkOpen("backward");
            if (!r.requiresGrad()) {
                throw new IllegalArgumentException("backward: element " + i + " of tensors does not require grad and does not have a grad_fn");
            }
            Tensor g = gradRoots == null ? null : gradRoots[i];
            Tensor owned;
            if (g == null) {
                if (r.numel() != 1) {
                    throw new IllegalArgumentException("backward: grad can be implicitly created only for scalar outputs (got shape "
                            + Shapes.format(r.shape()) + ")");
                }
                owned = Torch.ones(r.shape(), r.dtype(), r.device());
            } else {
                if (!Arrays.equals(g.shape(), r.shape())) {
                    throw new IllegalArgumentException("backward: mismatch in shape: grad_output[" + i + "] has a shape of "
                            + Shapes.format(g.shape()) + " and output[" + i + "] has a shape of " + Shapes.format(r.shape()));
                }
                owned = g.alias();
            }
            Edge e = edgeOf(r);
            accumulateInto(buffers, e, owned, createGraph);
            rootNodes.add(e.node());
        }

        Map<Node, Integer> captureIndex = new IdentityHashMap<>();
        Map<Node, int[]> captureOutputs = new IdentityHashMap<>();
        Tensor[] captured = capture ? new Tensor[inputs.length] : null;
        if (capture) {
            for (int i = 0; i < inputs.length; i++) {
                if (!inputs[i].requiresGrad()) {
                    throw new IllegalArgumentException("grad: input " + i + " does not require grad");
                }
                Edge e = edgeOf(inputs[i]);
                captureIndex.put(e.node(), i);
                int[] outs = captureOutputs.computeIfAbsent(e.node(), n -> new int[0]);
                int[] grown = Arrays.copyOf(outs, outs.length + 2);
                grown[outs.length] = e.inputNr();
                grown[outs.length + 1] = i;
                captureOutputs.put(e.node(), grown);
            }
        }

        Map<Node, Integer> deps = new IdentityHashMap<>();
        Map<Node, Boolean> needed = capture ? neededNodes(rootNodes, captureOutputs) : null;
        countDependencies(rootNodes, deps, needed);

        PriorityQueue<Node> ready = new PriorityQueue<>(Comparator.comparingLong((Node n) -> n.sequenceNr).reversed());
        for (Node n : rootNodes) {
            if (deps.getOrDefault(n, 0) == 0 && !ready.contains(n) && (needed == null || needed.containsKey(n))) ready.add(n);
        }
        List<Node> executed = new ArrayList<>();
        try (Grad.Mode mode = createGraph ? Grad.enableGrad() : Grad.noGrad()) {
            while (!ready.isEmpty()) {
                Node node = ready.poll();
                Tensor[] grads = buffers.remove(node);
                if (grads == null) grads = new Tensor[node.numOutputs];
                try {
                    runPreHooks(node, grads);
                    int[] outs = captureOutputs.get(node);
                    if (outs != null) {
                        for (int k = 0; k < outs.length; k += 2) {
                            Tensor g = grads[outs[k]];
                            captured[outs[k + 1]] = g == null ? null : g.alias();
                        }
                    }
                    if (node instanceof AccumulateGrad acc) {
                        if (!capture) accumulateLeaf(acc, grads, createGraph);
                        continue;
                    }
                    if (capture && outs != null && !hasNeededSuccessor(node, needed)) continue;
                    fillMissing(node, grads);
                    Tensor[] results;
                    // Temporaries of the formula die with this scope; only its results survive.
                    try (MemoryScope scope = new MemoryScope()) {
                        results = node.apply(grads);
                        for (Tensor r : results) scope.keep(r);
                    }
                    executed.add(node);
                    if (Autograd.isAnomalyEnabled()) checkNan(node, results);
                    try {
                        for (int i = 0; i < node.next.length; i++) {
                            Edge e = node.next[i];
                            Tensor r = i < results.length ? results[i] : null;
                            if (e == null || r == null) continue;
                            if (needed != null && !needed.containsKey(e.node())) continue;
                            checkShape(node, i, e, r);
                            accumulateInto(buffers, e, r.alias(), createGraph);
                        }
                    } finally {
                        closeAll(results);
                    }
                    for (Edge e : node.next) {
                        if (e == null || (needed != null && !needed.containsKey(e.node()))) continue;
                        int left = deps.merge(e.node(), -1, Integer::sum);
                        if (left == 0) ready.add(e.node());
                    }
                } finally {
                    closeAll(grads);
                    if (!retainGraph && !(node instanceof AccumulateGrad)) node.releaseSaved();
                }
            }
        } finally {
            for (Tensor[] left : buffers.values()) closeAll(left);
        }
        if (!capture) return null;
        for (int i = 0; i < captured.length; i++) {
            if (captured[i] == null && !allowUnused) {
                throw new IllegalArgumentException("grad: one of the differentiated tensors (input " + i
                        + ") appears to not have been used in the graph; set allowUnused=true if this is the desired behavior");
            }
        }
        return captured;
    }

    private static Edge edgeOf(Tensor t) {
        return t.gradFn() != null ? new Edge(t.gradFn(), t.outputNr()) : new Edge(t.gradAccumulator(), 0);
    }

    private static void accumulateInto(Map<Node, Tensor[]> buffers, Edge e, Tensor g, boolean createGraph) {
        Tensor[] slot = buffers.computeIfAbsent(e.node(), n -> new Tensor[n.numOutputs]);
        Tensor prev = slot[e.inputNr()];
        if (prev == null) {
            slot[e.inputNr()] = g;
        } else {
            slot[e.inputNr()] = prev.add(g);
            prev.close();
            g.close();
        }
    }

    /** Dependency counts: how many edges from nodes in the pass point at each node. */
    private static void countDependencies(List<Node> roots, Map<Node, Integer> deps, Map<Node, Boolean> needed) {
        IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        for (Node r : roots) {
            if (seen.put(r, true) == null) stack.push(r);
        }
        while (!stack.isEmpty()) {
            Node n = stack.pop();
            for (Edge e : n.next) {
                if (e == null || (needed != null && !needed.containsKey(e.node()))) continue;
                deps.merge(e.node(), 1, Integer::sum);
                if (seen.put(e.node(), true) == null) stack.push(e.node());
            }
        }
    }

    /** For {@code grad()}: nodes from which some captured edge can be reached (only those run). */
    private static Map<Node, Boolean> neededNodes(List<Node> roots, Map<Node, int[]> targets) {
        Map<Node, Boolean> memo = new IdentityHashMap<>();
        Map<Node, Boolean> needed = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>(roots);
        ArrayDeque<Node> order = new ArrayDeque<>();
        IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
        for (Node r : roots) seen.put(r, true);
        while (!stack.isEmpty()) {
            Node n = stack.pop();
            order.push(n);
            for (Edge e : n.next) {
                if (e != null && seen.put(e.node(), true) == null) stack.push(e.node());
            }
        }
        // Reverse discovery order approximates a post-order; iterate to a fixed point to be exact.
        boolean changed = true;
        while (changed) {
            changed = false;
            for (Node n : order) {
                if (memo.containsKey(n)) continue;
                boolean need = targets.containsKey(n);
                for (Edge e : n.next) if (e != null && memo.containsKey(e.node())) need = true;
                if (need) {
                    memo.put(n, true);
                    changed = true;
                }
            }
        }
        needed.putAll(memo);
        return needed;
    }

    private static boolean hasNeededSuccessor(Node n, Map<Node, Boolean> needed) {
        for (Edge e : n.next) if (e != null && needed.containsKey(e.node())) return true;
        return false;
    }

    private static void runPreHooks(Node node, Tensor[] grads) {
        if (node.preHooks == null) return;
        for (int i = 0; i < grads.length; i++) {
            List<UnaryOperator<Tensor>> hooks = node.preHooks[i];
            if (hooks == null || grads[i] == null) continue;
            for (UnaryOperator<Tensor> h : hooks) {
                Tensor owned = applyHook(h, grads[i]);
                if (owned != null) {
                    grads[i].close();
                    grads[i] = owned;
                }
            }
        }
    }

    private static void accumulateLeaf(AccumulateGrad acc, Tensor[] grads, boolean createGraph) {
        Tensor v = acc.variable;
        Tensor g = grads[0];
        if (g == null) return;
        for (UnaryOperator<Tensor> h : v.gradHooks()) {
            Tensor owned = applyHook(h, g);
            if (owned != null) {
                g.close();
                g = owned;
                grads[0] = g;
            }
        }
        Tensor old = v.grad();
        if (old == null) {
            boolean stealable = !createGraph && g.storage().refCount() == 1 && g.isContiguous() && g.dtype() == v.dtype();
            if (stealable) {
                grads[0] = null; // ownership moves to .grad
                v.setGrad(g);
            } else {
                v.setGrad(g.dtype() != v.dtype() ? g.to(v.dtype()) : createGraph ? g.alias() : g.clone());
            }
        } else if (createGraph) {
            // a leaf's grad keeps its dtype, as PyTorch's engine casts incoming gradients to the input's
            v.setGrad(old.add(g.dtype() == old.dtype() ? g : g.to(old.dtype())));
            old.close();
        } else {
            old.add_(g);
        }
        for (Consumer<Tensor> h : v.postAccumulateGradHooks()) h.accept(v);
    }

    private static void fillMissing(Node node, Tensor[] grads) {
        for (int i = 0; i < grads.length; i++) {
            if (grads[i] == null) grads[i] = Torch.zeros(node.outputShape(i), node.outputType(i), node.outputDevice(i));
        }
    }

    private static void checkShape(Node node, int i, Edge e, Tensor r) {
        long[] expected = e.node().outputShape(e.inputNr());
        if (!Arrays.equals(expected, r.shape())) {
            throw new IllegalStateException("Function " + node.name() + " returned an invalid gradient at index " + i
                    + " - got " + Shapes.format(r.shape()) + " but expected shape compatible with " + Shapes.format(expected));
        }
    }

    private static void checkNan(Node node, Tensor[] results) {
        for (int i = 0; i < results.length; i++) {
            Tensor r = results[i];
            if (r == null || !r.dtype().isFloatingPoint()) continue;
            for (double x : r.toDoubleArray()) {
                if (Double.isNaN(x)) {
                    IllegalStateException ex = new IllegalStateException("Function '" + node.name() + "' returned nan values in its "
                            + i + "th output. The forward call that created it is shown in the cause.");
                    if (node.creationTrace != null) {
                        Throwable where = new Throwable("forward of " + node.name());
                        where.setStackTrace(node.creationTrace);
                        ex.initCause(where);
                    }
                    throw ex;
                }
            }
        }
    }

    private static void closeAll(Tensor[] ts) {
        if (ts == null) return;
        for (Tensor t : ts) if (t != null) t.close();
    }
}
