package org.jtorch.jit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.Shapes;

/**
 * A traced function as typed nodes of the registry's ops: each node is one dispatched op, its inputs the function's
 * inputs, captured tensors (parameters, constants) or earlier nodes, in the order they ran.
 */
final class Graph {
    /** A value a node reads. */
    sealed interface Value permits Input, Constant, Node {
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

        @Override
        public String toString() {
            return "%" + id;
        }
    }

    final List<Input> inputs = new ArrayList<>();
    final List<Node> nodes = new ArrayList<>();
    /** The values some in-place node writes into: their reads must stay in trace order, so nothing reading them fuses. */
    final java.util.Set<Value> mutated = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    Value output;

    static String name(Value v) {
        return switch (v) {
            case Input i -> "input" + i.index();
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
            s.append(") : ").append(n.dtype).append(Shapes.format(n.shape)).append('\n');
        }
        s.append("return ").append(output == null ? "?" : name(output)).append('\n');
        return s.toString();
    }
}
