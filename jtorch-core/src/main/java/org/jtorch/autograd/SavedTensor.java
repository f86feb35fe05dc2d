package org.jtorch.autograd;

import org.jtorch.Tensor;
import org.jtorch.op.Shapes;
import org.jtorch.ops.Dispatcher;

/**
 * A tensor saved for backward: holds its own reference to the storage (so the user may close the
 * original) and the version it had when saved. {@link #get()} fails, naming the node, if the tensor
 * was modified in place since, as PyTorch does.
 */
public final class SavedTensor {
    private Tensor tensor;
    private final int version;
    private Node owner;
    /** The tensor passed to save, until the node is recorded (to recognise saved outputs). */
    private Tensor source;

    SavedTensor(Tensor t) {
        this.source = t;
        // Owned by the graph, not by the caller's MemoryScope; autograd's own handle, not an op of a traced function.
        this.tensor = (Dispatcher.tracing() ? Dispatcher.withoutTrace(t::alias) : t.alias()).untrack();
        this.version = t.version();
    }

    void setOwner(Node owner) {
        this.owner = owner;
    }

    /**
     * A saved output of the node being recorded got its grad_fn after it was saved: the saved copy
     * takes it too, so that a higher-order graph differentiates through it (as PyTorch's saved outputs).
     */
    void recorded(Node node, Tensor[] outputs) {
        for (int i = 0; i < outputs.length; i++) {
            if (outputs[i] == source && outputs[i].gradFn() == node && tensor.gradFn() != node) tensor.setGradFnOfSavedOutput(node, i);
        }
        source = null;
    }

    /** The saved value; throws if it was modified in place or the graph was already freed. */
    public Tensor get() {
        if (tensor == null) {
            throw new IllegalStateException("Trying to backward through the graph a second time (or directly access saved tensors"
                    + " after they have already been freed) in " + (owner == null ? "a node" : owner.name())
                    + ". Specify retainGraph=true if you need to backward through the graph a second time.");
        }
        if (tensor.version() != version) {
            throw new IllegalStateException("one of the variables needed for gradient computation has been modified by an"
                    + " inplace operation: [" + tensor.dtype() + " " + Shapes.format(tensor.shape()) + "], needed by "
                    + (owner == null ? "a node" : owner.name()) + ", is at version " + tensor.version() + "; expected version "
                    + version + " instead.");
        }
        return tensor;
    }

    void release() {
        if (tensor != null) {
            tensor.close();
            tensor = null;
        }
    }
}
