package org.jtorch.data;

import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * PyTorch's {@code default_collate}, for Java types. For a batch of samples that are
 * <ul>
 *   <li>{@link Tensor}s: one tensor stacked along a new first dimension (shapes must match);</li>
 *   <li>records, {@link Sample} included: a record of the same type, each component collated
 *       (the component's type must accept the collated value: a {@code Tensor} or {@code Object});</li>
 *   <li>{@code Map}s: a map with the same keys, each value collated;</li>
 *   <li>{@code List}s and arrays: transposed, each position collated (lengths must match); arrays
 *       keep their component type ({@code Tensor[]} gives {@code Tensor[]});</li>
 *   <li>integral {@code Number}s: an int64 tensor; {@code Float}/{@code Double}: float64; {@code Boolean}: bool;</li>
 *   <li>{@code String}s: a {@code List<String>}.</li>
 * </ul>
 */
public final class Collate {
    private Collate() {}

    /** The default collation of {@code samples} (see the class comment). */
    public static Object defaultCollate(List<?> samples) {
        Arguments.nonNull("Collate.defaultCollate", "samples", samples);
        if (samples.isEmpty()) throw new IllegalArgumentException("defaultCollate: empty batch");
        Object first = samples.get(0);
        if (first == null) throw new IllegalArgumentException("defaultCollate: null sample at position 0");
        for (int i = 1; i < samples.size(); i++) {
            Object s = samples.get(i);
            if (s == null || !sameKind(first, s)) {
                throw new IllegalArgumentException("defaultCollate: samples of different types in one batch: "
                        + first.getClass().getName() + " at position 0 and " + (s == null ? "null" : s.getClass().getName())
                        + " at position " + i);
            }
        }
        if (first instanceof Tensor) return stack(samples);
        if (first instanceof Boolean) {
            boolean[] v = new boolean[samples.size()];
            for (int i = 0; i < v.length; i++) v[i] = (Boolean) samples.get(i);
            return Torch.tensor(v);
        }
        if (first instanceof Float || first instanceof Double) {
            double[] v = new double[samples.size()];
            for (int i = 0; i < v.length; i++) v[i] = ((Number) samples.get(i)).doubleValue();
            return Torch.tensor(v, DType.FLOAT64, samples.size());
        }
        if (first instanceof Byte || first instanceof Short || first instanceof Integer || first instanceof Long) {
            long[] v = new long[samples.size()];
            for (int i = 0; i < v.length; i++) v[i] = ((Number) samples.get(i)).longValue();
            return Torch.tensor(v);
        }
        if (first instanceof CharSequence) {
            List<String> out = new ArrayList<>(samples.size());
            for (Object s : samples) out.add(s.toString());
            return out;
        }
        if (first instanceof Record r) return collateRecords(r.getClass(), samples);
        if (first instanceof Map<?, ?> m) return collateMaps(m, samples);
        if (first instanceof List<?> l) {
            List<Object> out = new ArrayList<>(l.size());
            for (int pos = 0; pos < l.size(); pos++) {
                List<Object> column = new ArrayList<>(samples.size());
                for (int i = 0; i < samples.size(); i++) {
                    List<?> s = (List<?>) samples.get(i);
                    checkLength(l.size(), s.size(), i);
                    column.add(s.get(pos));
                }
                out.add(defaultCollate(column));
            }
            return out;
        }
        if (first.getClass().isArray() && !first.getClass().getComponentType().isPrimitive()) {
            Object[] a = (Object[]) first;
            Object[] out = (Object[]) java.lang.reflect.Array.newInstance(first.getClass().getComponentType(), a.length);
            for (int pos = 0; pos < a.length; pos++) {
                List<Object> column = new ArrayList<>(samples.size());
                for (int i = 0; i < samples.size(); i++) {
                    Object[] s = (Object[]) samples.get(i);
                    checkLength(a.length, s.length, i);
                    column.add(s[pos]);
                }
                Object c = defaultCollate(column);
                if (!first.getClass().getComponentType().isInstance(c)) {
                    throw new IllegalArgumentException("defaultCollate: an array of " + first.getClass().getComponentType().getSimpleName()
                            + " cannot hold the collated " + c.getClass().getSimpleName() + "; use a Tensor[] / Object[] or a custom collate");
                }
                out[pos] = c;
            }
            return out;
        }
        throw new IllegalArgumentException("defaultCollate: batch must contain tensors, numbers, strings, records, maps, lists or arrays; found "
                + first.getClass().getName());
    }

    /**
     * The default collate typed for samples whose batch is one tensor: numbers (int64 / float64 / bool)
     * or tensors. Use it for a {@code Dataset<Integer>} and the like:
     * {@code DataLoader.builder(labels).collate(Collate.toTensor())}.
     */
    public static <T> CollateFn<T, Tensor> toTensor() {
        return samples -> {
            Object b = defaultCollate(samples);
            if (!(b instanceof Tensor t)) {
                throw new IllegalArgumentException("Collate.toTensor: samples of type " + samples.get(0).getClass().getSimpleName()
                        + " do not collate to one tensor");
            }
            return t;
        };
    }

    private static boolean sameKind(Object a, Object b) {
        if (a instanceof Tensor) return b instanceof Tensor;
        if (a instanceof Map) return b instanceof Map;
        if (a instanceof List) return b instanceof List;
        if (a instanceof CharSequence) return b instanceof CharSequence;
        if (a instanceof Float || a instanceof Double) return b instanceof Float || b instanceof Double;
        if (a instanceof Byte || a instanceof Short || a instanceof Integer || a instanceof Long) {
            return b instanceof Byte || b instanceof Short || b instanceof Integer || b instanceof Long;
        }
        return a.getClass() == b.getClass();
    }

    private static void checkLength(int expected, int actual, int sample) {
        if (expected != actual) {
            throw new IllegalArgumentException("defaultCollate: each element in the batch should be of equal size: sample 0 has "
                    + expected + " elements, sample " + sample + " has " + actual);
        }
    }

    private static Tensor stack(List<?> samples) {
        Tensor first = (Tensor) samples.get(0);
        long[] shape = first.shape();
        Tensor[] ts = new Tensor[samples.size()];
        for (int i = 0; i < ts.length; i++) {
            Tensor t = (Tensor) samples.get(i);
            if (!Arrays.equals(shape, t.shape())) {
                throw new IllegalArgumentException("defaultCollate: stack expects each tensor to be equal size, but got "
                        + Arrays.toString(shape) + " at entry 0 and " + Arrays.toString(t.shape()) + " at entry " + i);
            }
            if (t.dtype() != first.dtype()) {
                throw new IllegalArgumentException("defaultCollate: tensors of dtypes " + first.dtype() + " (entry 0) and "
                        + t.dtype() + " (entry " + i + ") in one batch");
            }
            ts[i] = t;
        }
        return Torch.stack(ts, 0);
    }

    private static Object collateRecords(Class<?> type, List<?> samples) {
        RecordComponent[] comps = type.getRecordComponents();
        Object[] values = new Object[comps.length];
        Class<?>[] types = new Class<?>[comps.length];
        try {
            for (int c = 0; c < comps.length; c++) {
                var accessor = comps[c].getAccessor();
                accessor.setAccessible(true);
                List<Object> column = new ArrayList<>(samples.size());
                for (Object s : samples) column.add(accessor.invoke(s));
                Object v = defaultCollate(column);
                types[c] = comps[c].getType();
                if (!box(types[c]).isInstance(v)) {
                    throw new IllegalArgumentException("defaultCollate: record " + type.getSimpleName() + "'s component '"
                            + comps[c].getName() + "' of type " + types[c].getSimpleName() + " cannot hold the collated "
                            + v.getClass().getSimpleName() + "; declare it as Tensor or Object, or use a custom collate");
                }
                values[c] = v;
            }
            Constructor<?> ctor = type.getDeclaredConstructor(types);
            ctor.setAccessible(true);
            return ctor.newInstance(values);
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("defaultCollate: cannot build record " + type.getName() + ": " + e, e);
        }
    }

    private static Class<?> box(Class<?> c) {
        return c.isPrimitive() ? java.lang.invoke.MethodType.methodType(c).wrap().returnType() : c;
    }

    private static Map<Object, Object> collateMaps(Map<?, ?> first, List<?> samples) {
        Map<Object, Object> out = new LinkedHashMap<>();
        for (Object key : first.keySet()) {
            List<Object> column = new ArrayList<>(samples.size());
            for (int i = 0; i < samples.size(); i++) {
                Map<?, ?> s = (Map<?, ?>) samples.get(i);
                if (!s.containsKey(key)) {
                    throw new IllegalArgumentException("defaultCollate: key '" + key + "' of sample 0 is missing in sample " + i);
                }
                column.add(s.get(key));
            }
            out.put(key, defaultCollate(column));
        }
        return out;
    }

    /**
     * Calls {@code action} once for every distinct tensor reachable from {@code batch} through tensors,
     * records, maps (values), collections and object arrays.
     */
    public static void forEachTensor(Object batch, Consumer<Tensor> action) {
        Arguments.nonNull("Collate.forEachTensor", "action", action);
        walk(batch, action, java.util.Collections.newSetFromMap(new IdentityHashMap<>()));
    }

    private static void walk(Object o, Consumer<Tensor> action, Set<Object> seen) {
        if (o == null || !seen.add(o)) return;
        switch (o) {
            case Tensor t -> action.accept(t);
            case Map<?, ?> m -> m.values().forEach(v -> walk(v, action, seen));
            case Collection<?> c -> c.forEach(v -> walk(v, action, seen));
            case Object[] a -> {
                for (Object v : a) walk(v, action, seen);
            }
            case Record r -> {
                try {
                    for (RecordComponent rc : r.getClass().getRecordComponents()) {
                        if (rc.getType().isPrimitive()) continue;
                        var acc = rc.getAccessor();
                        acc.setAccessible(true);
                        walk(acc.invoke(r), action, seen);
                    }
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("cannot read the components of record " + r.getClass().getName(), e);
                }
            }
            default -> { }
        }
    }

    /**
     * {@code batch} with every tensor reachable through records, maps (values), lists, sets and object arrays
     * replaced by {@code f}'s result (each distinct tensor mapped once), the containers rebuilt (maps as
     * {@code LinkedHashMap}, lists as {@code ArrayList}, sets as {@code LinkedHashSet}, records through
     * their canonical constructor); other objects are kept as they are.
     */
    public static Object mapTensors(Object batch, java.util.function.UnaryOperator<Tensor> f) {
        Arguments.nonNull("Collate.mapTensors", "f", f);
        return map(batch, f, new IdentityHashMap<>());
    }

    private static Object map(Object o, java.util.function.UnaryOperator<Tensor> f, Map<Tensor, Tensor> done) {
        switch (o) {
            case null -> {
                return null;
            }
            case Tensor t -> {
                return done.computeIfAbsent(t, f);
            }
            case Map<?, ?> m -> {
                Map<Object, Object> out = new LinkedHashMap<>();
                m.forEach((k, v) -> out.put(k, map(v, f, done)));
                return out;
            }
            case List<?> l -> {
                List<Object> out = new ArrayList<>(l.size());
                for (Object v : l) out.add(map(v, f, done));
                return out;
            }
            case Set<?> c -> {
                Set<Object> out = new java.util.LinkedHashSet<>();
                for (Object v : c) out.add(map(v, f, done));
                return out;
            }
            case Object[] a -> {
                Object[] out = java.util.Arrays.copyOf(a, a.length);
                for (int i = 0; i < a.length; i++) out[i] = map(a[i], f, done);
                return out;
            }
            case Record r -> {
                RecordComponent[] comps = r.getClass().getRecordComponents();
                Object[] values = new Object[comps.length];
                Class<?>[] types = new Class<?>[comps.length];
                try {
                    for (int c = 0; c < comps.length; c++) {
                        var acc = comps[c].getAccessor();
                        acc.setAccessible(true);
                        Object v = acc.invoke(r);
                        types[c] = comps[c].getType();
                        values[c] = types[c].isPrimitive() ? v : map(v, f, done);
                    }
                    Constructor<?> ctor = r.getClass().getDeclaredConstructor(types);
                    ctor.setAccessible(true);
                    return ctor.newInstance(values);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("cannot rebuild record " + r.getClass().getName() + ": " + e, e);
                }
            }
            default -> {
                return o;
            }
        }
    }

    /** Closes every tensor reachable from {@code batch} (see {@link #forEachTensor}). */
    public static void closeTensors(Object batch) {
        forEachTensor(batch, Tensor::close);
    }
}
