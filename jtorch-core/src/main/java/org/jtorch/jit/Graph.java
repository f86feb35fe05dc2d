package org.jtorch.jit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.Tensor;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.Shapes;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * A traced function as typed nodes of the registry's ops: each node is one dispatched op, its inputs the function's
 * inputs, captured tensors (parameters, constants) or earlier nodes, in the order they ran.
 */
final class Graph {
    /** A value a node reads. */
    sealed interface Value permits Input, Constant, Node, Output {
        long[] shape();
        DType dtype();
    }

    /** The function's {@code index}-th input. */
    record Input(int index, long[] shape, DType dtype) implements Value {}

    /**
     * A tensor the function read but did not make from its inputs: a parameter, a buffer, or a Java number wrapped as
     * a tensor ({@link Tensor#isWrappedNumber}). The graph holds it by reference: a parameter the optimizer updates
     * in place is read anew at each call.
     */
    static final class Constant implements Value {
        final Tensor tensor;

        Constant(Tensor tensor) {
            this.tensor = tensor;
        }

        public long[] shape() { return tensor.shape(); }
        public DType dtype() { return tensor.dtype(); }

        /**
         * A wrapped Java number (on the CPU, or made on the operand's device), held as the graph's own copy: a fused
         * formula bakes its value in as a constant, read once at compile time.
         */
        boolean isNumber() {
            return tensor.isWrappedNumber() && tensor.dim() == 0;
        }
    }

    /**
     * Output {@code index} (1 or more) of a node with several outputs (an LSTM cell's {@code cy}, max pooling's indices,
     * batch norm's saved statistics, a split's later parts); the node itself stands for its output 0. Its value is held
     * at {@code slot} while the program runs (after the nodes' own slots, {@link Graph#seal}).
     */
    static final class Output implements Value {
        final Node node;
        final int index;
        final long[] shape;
        final DType dtype;
        int slot = -1;

        Output(Node node, int index, Tensor tensor) {
            this.node = node;
            this.index = index;
            this.shape = tensor.shape();
            this.dtype = tensor.dtype();
        }

        public long[] shape() { return shape; }
        public DType dtype() { return dtype; }

        @Override
        public String toString() {
            return node + "." + index;
        }
    }

    /** One op as it ran: its inputs, scalar parameters, a reduction's dimensions, and its output's type. */
    static final class Node implements Value {
        final int id;
        final OpDef op;
        final List<Value> inputs;
        final double[] scalars;
        final ReduceArgs reduce;
        final long[] shape;
        final DType dtype;
        final Device device;
        /** A pointwise op that wrote its result into its first input, whose value it then stands for no more than before. */
        final boolean inPlace;
        /**
         * The node's outputs after the first, for an op with several ({@code outputs[k]} is output {@code k + 1}, null
         * where the op skipped it); empty for one output. Set once, when the tracer records the op.
         */
        Output[] outputs = NO_OUTPUTS;

        Node(int id, OpDef op, List<Value> inputs, double[] scalars, ReduceArgs reduce, Tensor output) {
            this(id, op, inputs, scalars, reduce, output, false);
        }

        Node(int id, OpDef op, List<Value> inputs, double[] scalars, ReduceArgs reduce, Tensor output, boolean inPlace) {
            this.inPlace = inPlace;
            this.id = id;
            this.op = op;
            this.inputs = inputs;
            this.scalars = scalars;
            this.reduce = reduce;
            this.shape = output.shape();
            this.dtype = output.dtype();
            this.device = output.device();
        }

        public long[] shape() { return shape; }
        public DType dtype() { return dtype; }

        /** Whether the op made several outputs (however many the program reads). */
        boolean multiOutput() {
            return outputs.length > 0;
        }

        @Override
        public String toString() {
            return "%" + id;
        }
    }

    private static final Output[] NO_OUTPUTS = new Output[0];

    final List<Input> inputs = new ArrayList<>();
    final List<Node> nodes = new ArrayList<>();
    /** The values some in-place node writes into: their reads must stay in trace order, so nothing reading them fuses. */
    final java.util.Set<Value> mutated = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    Value output;

    /** Gives each node's later outputs a slot after the nodes' own (node {@code n}'s value is held at slot {@code n.id}). */
    void seal() {
        int slot = nodes.size();
        for (Node n : nodes) for (Output o : n.outputs) if (o != null) o.slot = slot++;
        slots = slot;
    }

    /** How many values a run of the program holds at most: one per node and one per later output ({@link #seal}). */
    int slots() {
        return slots;
    }

    private int slots;

    /** Where a run holds {@code v}'s value, or -1 for an input or a constant (held by the caller or the graph). */
    static int slot(Value v) {
        return switch (v) {
            case Node n -> n.id;
            case Output o -> o.slot;
            case null, default -> -1;
        };
    }

    static String name(Value v) {
        return switch (v) {
            case Input i -> "input" + i.index();
            case Output o -> o.toString();
            case Constant c -> c.isNumber() ? Double.toString(c.tensor.item()) : "const" + Shapes.format(c.shape());
            case Node n -> n.toString();
        };
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        for (Input i : inputs) s.append(name(i)).append(": ").append(i.dtype()).append(Shapes.format(i.shape())).append('\n');
        for (Node n : nodes) {
            s.append(n).append(" = ").append(n.op.name()).append(n.inPlace ? "_" : "").append('(');
            for (int k = 0; k < n.inputs.size(); k++) {
                if (k > 0) s.append(", ");
                Value v = n.inputs.get(k);
                s.append(v == null ? "None" : name(v));
            }
            if (n.scalars.length > 0) s.append("; ").append(Arrays.toString(n.scalars));
            if (n.reduce != null) s.append("; dims ").append(Arrays.toString(n.reduce.dims())).append(n.reduce.keepdim() ? " keepdim" : "");
            s.append(") : ").append(n.dtype).append(Shapes.format(n.shape));
            for (Output o : n.outputs) if (o != null) s.append(", ").append(o).append(" : ").append(o.dtype).append(Shapes.format(o.shape));
            s.append('\n');
        }
        s.append("return ").append(output == null ? "?" : name(output)).append('\n');
        return s.toString();
    }
}
