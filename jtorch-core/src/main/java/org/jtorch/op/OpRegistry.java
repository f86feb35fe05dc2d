package org.jtorch.op;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.types.Device;

/** Every declared op, by name: what jtorch can do, in one list (docs/OPS.md is printed from it). */
public final class OpRegistry {
    private static final Map<String, OpDef> BY_NAME;
    private static final Map<String, OpDef> BY_PY_NAME;

    static {
        Map<String, OpDef> byName = new LinkedHashMap<>();
        Map<String, OpDef> byPy = new LinkedHashMap<>();
        List<OpDef> declared = new ArrayList<>(declaredIn(PointwiseOps.class));
        declared.addAll(declaredIn(ReductionOps.class));
        declared.addAll(declaredIn(SelectingReductionOps.class));
        declared.addAll(declaredIn(SortingOps.class));
        declared.addAll(declaredIn(LinalgOps.class));
        declared.addAll(declaredIn(ConvolutionOps.class));
        declared.addAll(declaredIn(NormalizationOps.class));
        declared.addAll(declaredIn(PoolingOps.class));
        declared.addAll(declaredIn(JoiningOps.class));
        declared.addAll(declaredIn(IndexingOps.class));
        declared.addAll(declaredIn(LossOps.class));
        declared.addAll(declaredIn(CopyOps.class));
        declared.addAll(declaredIn(RecurrentOps.class));
        declared.addAll(declaredIn(ViewOps.class));
        declared.addAll(declaredIn(RandomOps.class));
        declared.addAll(declaredIn(AttentionOps.class));
        declared.addAll(declaredIn(FrontEndOps.class));
        declared.addAll(declaredIn(OptimizerOps.class));
        for (OpDef op : declared) {
            if (byName.put(op.name(), op) != null) throw new IllegalStateException("op " + op.name() + " is declared twice");
            byPy.putIfAbsent(op.pyName(), op);
        }
        BY_NAME = Collections.unmodifiableMap(byName);
        BY_PY_NAME = Collections.unmodifiableMap(byPy);
    }

    private OpRegistry() {}

    /** Every declared op, in declaration order. */
    public static List<OpDef> all() {
        return List.copyOf(BY_NAME.values());
    }

    /** The op named {@code name} ({@link OpDef#name()}), or an exception naming it. */
    public static OpDef get(String name) {
        OpDef op = BY_NAME.get(name);
        if (op == null) throw new IllegalArgumentException("no op named " + name + " is declared");
        return op;
    }

    /** The declared autocast policy of the op PyTorch calls {@code pyName} on {@code type}; null when none is declared. */
    public static CastPolicy autocast(String pyName, Device.Type type) {
        OpDef op = BY_PY_NAME.get(pyName);
        return op == null ? null : op.autocast(type);
    }

    /** Whether an op with PyTorch name {@code pyName} is declared (its autocast policy then comes from the declaration). */
    public static boolean declaresPyName(String pyName) {
        return BY_PY_NAME.containsKey(pyName);
    }

    private static List<OpDef> declaredIn(Class<?> holder) {
        List<OpDef> ops = new ArrayList<>();
        for (Field f : holder.getDeclaredFields()) {
            if (f.getType() == OpDef.class && Modifier.isStatic(f.getModifiers()) && Modifier.isPublic(f.getModifiers())) {
                try {
                    ops.add((OpDef) f.get(null));
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return ops;
    }
}
