package org.jtorch.autograd;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.op.Shapes;
import org.jtorch.op.ViewOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Arguments;

/**
 * A tensor's autograd state, as PyTorch's {@code AutogradMeta}: whether it requires grad, the node that produced it, its
 * gradient and hooks, and, for a view, the base whose history it follows. A {@link Tensor} holds none until it first needs
 * one (it is asked to require grad, an op records it, it is a view, a hook or gradient is set on it), so a tensor that never
 * meets autograd costs one null reference. The static methods here are {@link Tensor}'s autograd methods, and read a
 * missing state as a leaf that does not require grad and is no view.
 *
 * <p>Layout: a view and an op's output use this object alone; the state only leaves use (their gradient, the node that
 * accumulates it, the hooks on it; also a non-leaf's retained gradient) sits in a {@link LeafState} made on demand, so
 * that a tensor with this state weighs no more than a tensor did when it carried all of these fields itself.
 *
 * <p>Threading: as the tensor's. Regenerating a view's history (see {@link #refreshViewHistory}) is synchronised, since
 * it happens on reads.
 */
public final class AutogradMeta {
    private Node gradFn;
    /** Which output of {@link #gradFn} the tensor is. */
    private int outputNr;
    private boolean requiresGrad;
    /** Whether the tensor counts as an owner of {@link #gradFn} (see {@link Node}): until closed. */
    private boolean ownsGradFn;
    /** A view of a tensor that requires grad made with grad mode off: it has no history, so in-place ops on it are refused. */
    private boolean noGradViewOfGraph;
    /**
     * For a differentiable view, the tensor whose memory it views (never itself a view), as PyTorch's {@code _base}: an
     * in-place op on the view rebases that tensor's history ({@code CopySlices}), and the view's is derived from it.
     */
    private Tensor viewBase;
    /** The base's {@code gradFn} this view's history was derived from; when the base's changes, the view's is regenerated. */
    private Node viewBaseNode;
    /** For one of several views one call returned (split, chunk, unbind), or a view of one: which ("Output 0 of SplitBackward0"). */
    private String multiOutputView;
    private LeafState leaf;

    /** The state of a leaf's gradient: null fields until used. */
    private static final class LeafState {
        /** The accumulated gradient (of a leaf, or a non-leaf's retained one), owned by the tensor. */
        Tensor grad;
        Node gradAccumulator;
        List<UnaryOperator<Tensor>> gradHooks;
        List<Consumer<Tensor>> postAccumulateHooks;
    }

    /** An empty state, for {@link Tensor} to hold once it needs one. */
    public AutogradMeta() {}

    private LeafState leaf() {
        if (leaf == null) leaf = new LeafState();
        return leaf;
    }

    /** {@link Tensor#requiresGrad()}. */
    public static boolean requiresGrad(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return false;
        if (m.viewBase != null) m.refreshViewHistory(t);
        return m.requiresGrad;
    }

    /** {@link Tensor#requiresGrad_(boolean)}. */
    public static void setRequiresGrad(Tensor t, boolean value) {
        if (value && t.isInference()) {
            throw new IllegalStateException("requiresGrad_: an inference tensor (created in Grad.inferenceMode()) cannot require"
                    + " gradients; clone() it outside inference mode first");
        }
        AutogradMeta m = t.autogradMeta();
        if (m != null && m.gradFn != null && !value) {
            throw new IllegalStateException("requiresGrad_: you can only change requires_grad flags of leaf variables;"
                    + " use detach() to get a tensor that does not require grad");
        }
        if (value && !t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("requiresGrad_: only tensors of floating point dtype can require gradients, got "
                    + t.dtype());
        }
        if (m == null && !value) return;
        t.autogradMetaForWrite().requiresGrad = value;
    }

    /** {@link Tensor#grad()}. */
    public static Tensor grad(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m == null || m.leaf == null ? null : m.leaf.grad;
    }

    /** {@link Tensor#setGrad(Tensor)}. */
    public static void setGrad(Tensor t, Tensor g) {
        if (g != null && !java.util.Arrays.equals(g.shapeArray(), t.shapeArray())) {
            throw new IllegalArgumentException("setGrad: assigned grad has shape " + Shapes.format(g.shapeArray())
                    + " but the tensor has shape " + Shapes.format(t.shapeArray()));
        }
        if (g != null && (g.dtype() != t.dtype() || !g.device().equals(t.device()))) {
            throw new IllegalArgumentException("setGrad: assigned grad has dtype " + g.dtype() + " on " + g.device()
                    + " but the tensor has dtype " + t.dtype() + " on " + t.device());
        }
        if (g != null) g.untrack();
        AutogradMeta m = t.autogradMeta();
        if (g == null && (m == null || m.leaf == null)) return;
        t.autogradMetaForWrite().leaf().grad = g;
    }

    /** {@link Tensor#gradFn()}. */
    public static Node gradFn(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return null;
        if (m.viewBase != null) m.refreshViewHistory(t);
        return m.gradFn;
    }

    /** {@link Tensor#outputNr()}. */
    public static int outputNr(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return 0;
        if (m.viewBase != null) m.refreshViewHistory(t);
        return m.outputNr;
    }

    /**
     * {@link Tensor#setGradFn}: {@code node} produced output {@code outputNr} of {@code t}, which owns the node while
     * {@code owns} (an open tensor that holds its storage).
     */
    public static void setGradFn(Tensor t, Node node, int outputNr, boolean owns) {
        AutogradMeta m = t.autogradMeta();
        if (m == null && node == null && outputNr == 0) return;
        m = t.autogradMetaForWrite();
        m.replaceGradFn(node, owns);
        m.outputNr = outputNr;
        m.requiresGrad = node != null;
    }

    /** {@link Tensor#setGradFnOfSavedOutput}. */
    public static void setGradFnOfSavedOutput(Tensor t, Node node, int outputNr) {
        Arguments.nonNull("setGradFnOfSavedOutput", "node", node);
        AutogradMeta m = t.autogradMetaForWrite();
        m.replaceGradFn(node, false);
        m.outputNr = outputNr;
        m.requiresGrad = true;
    }

    private void replaceGradFn(Node node, boolean owns) {
        Node old = gradFn;
        boolean ownedOld = ownsGradFn;
        if (owns && node != null) Autograd.addGraphOwner(node); // before the drop: node may be reachable only via old
        gradFn = node;
        ownsGradFn = owns && node != null;
        if (ownedOld) Autograd.dropGraphOwner(old);
    }

    /** {@link Tensor#gradAccumulator()}. */
    public static Node gradAccumulator(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m != null && m.gradFn != null) throw new IllegalStateException("gradAccumulator: only leaves have one");
        LeafState leaf = t.autogradMetaForWrite().leaf();
        if (leaf.gradAccumulator == null) leaf.gradAccumulator = Autograd.accumulatorFor(t);
        return leaf.gradAccumulator;
    }

    /** {@link Tensor#registerHook}. */
    public static void registerHook(Tensor t, UnaryOperator<Tensor> hook) {
        Arguments.nonNull("registerHook", "hook", hook);
        AutogradMeta m = t.autogradMeta();
        if (m != null) m.refreshViewHistory(t);
        if (m == null || !m.requiresGrad) {
            throw new IllegalStateException("registerHook: cannot register a hook on a tensor that doesn't require gradient");
        }
        if (m.gradFn != null) {
            Autograd.addPreHook(m.gradFn, m.outputNr, hook);
        } else {
            LeafState leaf = m.leaf();
            if (leaf.gradHooks == null) leaf.gradHooks = new ArrayList<>();
            leaf.gradHooks.add(hook);
        }
    }

    /** {@link Tensor#registerPostAccumulateGradHook}. */
    public static void registerPostAccumulateGradHook(Tensor t, Consumer<Tensor> hook) {
        Arguments.nonNull("registerPostAccumulateGradHook", "hook", hook);
        AutogradMeta m = t.autogradMeta();
        if (m != null && m.gradFn != null) {
            throw new IllegalStateException("registerPostAccumulateGradHook: post accumulate grad hooks cannot be registered on non-leaf tensors");
        }
        LeafState leaf = t.autogradMetaForWrite().leaf();
        if (leaf.postAccumulateHooks == null) leaf.postAccumulateHooks = new ArrayList<>();
        leaf.postAccumulateHooks.add(hook);
    }

    /** {@link Tensor#retainGrad()}. */
    public static void retainGrad(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return;
        m.refreshViewHistory(t);
        if (m.gradFn == null) return;
        Autograd.addPreHook(m.gradFn, m.outputNr, g -> {
            LeafState leaf = t.autogradMetaForWrite().leaf();
            Tensor old = leaf.grad;
            leaf.grad = (old == null ? g.clone() : old.add(g)).untrack();
            if (old != null) old.close();
            return null;
        });
    }

    /** {@link Tensor#gradHooks()}. */
    public static List<UnaryOperator<Tensor>> gradHooks(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m == null || m.leaf == null || m.leaf.gradHooks == null ? List.of() : m.leaf.gradHooks;
    }

    /** {@link Tensor#postAccumulateGradHooks()}. */
    public static List<Consumer<Tensor>> postAccumulateGradHooks(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m == null || m.leaf == null || m.leaf.postAccumulateHooks == null ? List.of() : m.leaf.postAccumulateHooks;
    }

    /** {@link Tensor#detach_()}. */
    public static void detachInPlace(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return;
        m.replaceGradFn(null, false);
        m.requiresGrad = false;
    }

    /** For {@link Tensor#close()}: closes the gradient and stops owning the graph behind the tensor (it may now be unreachable). */
    public static void release(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m == null) return;
        if (m.leaf != null && m.leaf.grad != null) {
            m.leaf.grad.close();
            m.leaf.grad = null;
        }
        if (m.ownsGradFn) {
            m.ownsGradFn = false;
            Autograd.dropGraphOwner(m.gradFn);
        }
    }

    // ------------------------------------------------------------------ view autograd

    /**
     * For {@link Tensor#trackedView}: remembers the base of {@code view}, a new view of {@code self}, for in-place ops on the
     * view, or marks it a no-grad view of a graph tensor.
     */
    public static void trackView(Tensor self, Tensor view) {
        AutogradMeta m = self.autogradMeta();
        if (m != null) {
            m.refreshViewHistory(self);
            if (m.noGradViewOfGraph || (m.requiresGrad && !Grad.isEnabled())) {
                view.autogradMetaForWrite().noGradViewOfGraph = true;
                return;
            }
        }
        AutogradMeta v = view.autogradMetaForWrite();
        v.viewBase = m != null && m.viewBase != null ? m.viewBase : self;
        AutogradMeta base = v.viewBase.autogradMeta();
        v.viewBaseNode = base == null ? null : base.gradFn;
        v.multiOutputView = m == null ? null : m.multiOutputView;
    }

    /** For {@link Tensor#sameTensorView}: gives {@code alias}, a new handle to {@code self}, its place in the graph and view state. */
    public static Tensor copyToAlias(Tensor self, Tensor alias) {
        AutogradMeta m = self.autogradMeta();
        if (m == null) return alias;
        AutogradMeta a = alias.autogradMetaForWrite();
        if (m.requiresGrad) {
            a.requiresGrad = true;
            a.replaceGradFn(m.gradFn, true);
            a.outputNr = m.outputNr;
            if (m.gradFn == null) a.leaf().gradAccumulator = gradAccumulator(self);
        }
        a.noGradViewOfGraph = m.noGradViewOfGraph;
        a.viewBase = m.viewBase;
        a.viewBaseNode = m.viewBaseNode;
        a.multiOutputView = m.multiOutputView;
        return alias;
    }

    /** {@link Tensor#viewBase()}. */
    public static Tensor viewBase(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m == null ? null : m.viewBase;
    }

    /** {@link Tensor#markMultiOutputView}. */
    public static void markMultiOutputView(Tensor t, String node, int index) {
        Arguments.nonNull("markMultiOutputView", "node", node);
        t.autogradMetaForWrite().multiOutputView = "Output " + index + " of " + node;
    }

    /** {@link Tensor#multiOutputView()}. */
    public static String multiOutputView(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m == null ? null : m.multiOutputView;
    }

    /** {@link Tensor#isNoGradViewOfGraphTensor()}. */
    public static boolean isNoGradViewOfGraph(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        return m != null && m.noGradViewOfGraph;
    }

    /** Brings {@code t}'s view history up to date (see {@link #refreshViewHistory}); for {@link Tensor#sameTensorView}. */
    public static void refreshViewHistoryOf(Tensor t) {
        AutogradMeta m = t.autogradMeta();
        if (m != null) m.refreshViewHistory(t);
    }

    /**
     * After an in-place op changed the base's history (directly, or through another view: {@code CopySlices}), the view
     * {@code self}'s history becomes the base's, read through the view's geometry ({@code AsStridedBackward0}), as PyTorch
     * regenerates a view's {@code grad_fn}. Cheap when nothing changed: one comparison.
     */
    private void refreshViewHistory(Tensor self) {
        Tensor base = viewBase;
        if (base == null || baseGradFn(base) == viewBaseNode) return;
        synchronized (this) {
            Node baseNode = baseGradFn(base);
            if (baseNode == viewBaseNode) return;
            viewBaseNode = baseNode;
            if (base.isClosed()) return; // its graph may be freed: the view keeps the history it had
            AutogradMeta baseMeta = base.autogradMeta();
            if (baseMeta == null || !baseMeta.requiresGrad) {
                replaceGradFn(null, false);
                requiresGrad = false;
                return;
            }
            Dispatcher.recordView(ViewOps.AS_STRIDED, base, self, ViewOps.asStridedScalars(base.shapeArray(), base.stridesArray(),
                    base.storageOffset(), new ViewOps.Geometry(self.shapeArray(), self.stridesArray(), self.storageOffset())));
        }
    }

    /** The base's own {@code gradFn} (a base is never a view, so it has no history to refresh). */
    private static Node baseGradFn(Tensor base) {
        AutogradMeta m = base.autogradMeta();
        return m == null ? null : m.gradFn;
    }
}
