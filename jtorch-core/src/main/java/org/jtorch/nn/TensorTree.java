package org.jtorch.nn;

import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jtorch.Tensor;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.utils.PackedSequence;

/**
 * The tensors inside a structured value, as PyTorch's pytree: a {@link Tensor} is itself; a record contributes its
 * components in declaration order, a list or array its elements, a map its values (in its iteration order), an
 * {@link Optional} its value, a {@link PackedSequence} its data; anything else (flags, strings, numbers, null) holds no
 * tensor. The values of {@link TupleModule}s are made of these, so generic code (typed {@link Sequential} chains,
 * {@link org.jtorch.nn.parallel.DistributedDataParallel}, a JIT) reads their tensors without knowing the types.
 */
public final class TensorTree {
    private TensorTree() {}

    /** Every tensor in {@code value}, depth first, in the order described above (a tensor reached twice appears twice). */
    public static List<Tensor> flatten(Object value) {
        List<Tensor> out = new ArrayList<>();
        collect(value, out);
        return out;
    }

    /** Keeps every tensor of {@code value} past {@code scope} (see {@link MemoryScope#keep}) and returns {@code value}. */
    public static <T> T keep(MemoryScope scope, T value) {
        if (scope == null) throw new NullPointerException("TensorTree.keep: scope must not be null");
        for (Tensor t : flatten(value)) scope.keep(t);
        return value;
    }

    private static void collect(Object value, List<Tensor> out) {
        switch (value) {
            case null -> { }
            case Tensor t -> out.add(t);
            case PackedSequence p -> out.add(p.data());
            case Record r -> {
                for (RecordComponent c : r.getClass().getRecordComponents()) collect(component(r, c), out);
            }
            case Iterable<?> items -> {
                for (Object item : items) collect(item, out);
            }
            case Object[] items -> {
                for (Object item : items) collect(item, out);
            }
            case Map<?, ?> map -> {
                for (Object item : map.values()) collect(item, out);
            }
            case Optional<?> o -> collect(o.orElse(null), out);
            default -> { }
        }
    }

    private static Object component(Record r, RecordComponent c) {
        try {
            var accessor = c.getAccessor();
            accessor.setAccessible(true); // records nested in non-public classes
            return accessor.invoke(r);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TensorTree: cannot read " + r.getClass().getName() + "." + c.getName(), e);
        }
    }
}
