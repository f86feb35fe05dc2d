package org.jtorch.op;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.types.Device;

/**
 * The kernels each backend registers, per op kernel name ({@link OpDef#kernel()}) and device type. A
 * backend registers when it is created; a missing kernel is an error naming the op and device.
 */
public final class KernelRegistry {
    private static final Map<Device.Type, Map<String, PointwiseKernel>> POINTWISE = new EnumMap<>(Device.Type.class);
    private static final Map<Device.Type, Map<String, OpKernel>> STRUCTURED = new EnumMap<>(Device.Type.class);
    private static final Map<Device.Type, Map<String, OpKernel.WithCallback>> WITH_CALLBACK = new EnumMap<>(Device.Type.class);
    private static final Map<Device.Type, Map<String, OpKernel.Multi>> MULTI = new EnumMap<>(Device.Type.class);
    private static final Map<Device.Type, FormulaKernel.Compiler> FORMULA_COMPILERS = new ConcurrentHashMap<>();
    private static final Map<Device.Type, Map<String, OpKernel.Mutating>> MUTATING = new EnumMap<>(Device.Type.class);
    private static final Map<Device.Type, Map<String, OpKernel.Applies>> APPLIES = new EnumMap<>(Device.Type.class);

    static {
        for (Device.Type t : Device.Type.values()) {
            POINTWISE.put(t, new ConcurrentHashMap<>());
            STRUCTURED.put(t, new ConcurrentHashMap<>());
            MULTI.put(t, new ConcurrentHashMap<>());
            WITH_CALLBACK.put(t, new ConcurrentHashMap<>());
            APPLIES.put(t, new ConcurrentHashMap<>());
            MUTATING.put(t, new ConcurrentHashMap<>());
        }
    }

    private KernelRegistry() {}

    /** Registers (or replaces) the kernel named {@code kernel} on {@code type}; ops that cached the old one look it up again. */
    public static void register(Device.Type type, String kernel, PointwiseKernel k) {
        POINTWISE.get(type).put(kernel, k);
        for (OpDef op : OpRegistry.all()) if (op.kernel().equals(kernel)) op.kernels[type.ordinal()] = null;
    }

    /** The kernel of {@code op} on {@code type}, or an exception naming both; cached in the op after the first call. */
    public static PointwiseKernel pointwise(OpDef op, Device.Type type) {
        PointwiseKernel k = op.kernels[type.ordinal()];
        if (k != null) return k;
        k = POINTWISE.get(type).get(op.kernel());
        if (k == null) {
            throw new UnsupportedOperationException(op.pyName() + ": no " + type.name().toLowerCase() + " kernel is registered for "
                    + op.name());
        }
        op.kernels[type.ordinal()] = k;
        return k;
    }

    public static boolean has(OpDef op, Device.Type type) {
        return POINTWISE.get(type).containsKey(op.kernel());
    }

    /** Registers (or replaces) the structured kernel named {@code kernel} on {@code type} ({@link OpDef.Kind#STRUCTURED}). */
    public static void register(Device.Type type, String kernel, OpKernel k) {
        put(STRUCTURED, type, kernel, k, op -> op.opKernels);
    }

    /** Puts {@code k} into {@code table} as {@code kernel} on {@code type}; ops with that kernel look it up again ({@code cache}). */
    private static <K> void put(Map<Device.Type, Map<String, K>> table, Device.Type type, String kernel, K k,
                                java.util.function.Function<OpDef, K[]> cache) {
        table.get(type).put(kernel, k);
        for (OpDef op : OpRegistry.all()) if (op.kernel().equals(kernel)) cache.apply(op)[type.ordinal()] = null;
    }

    /**
     * Registers the structured kernel named {@code kernel} on {@code type} for the argument forms {@code applies} accepts:
     * an op with a decomposition ({@link OpDef#hasDecomposition}) runs it for the others.
     */
    public static void register(Device.Type type, String kernel, OpKernel k, OpKernel.Applies applies) {
        APPLIES.get(type).put(kernel, applies);
        register(type, kernel, k);
    }

    /** {@link #registerMulti} for the argument forms {@code applies} accepts (as {@link #register(Device.Type, String, OpKernel, OpKernel.Applies)}). */
    public static void registerMulti(Device.Type type, String kernel, OpKernel.Multi k, OpKernel.Applies applies) {
        APPLIES.get(type).put(kernel, applies);
        registerMulti(type, kernel, k);
    }

    /**
     * Whether a kernel of {@code op} is registered on {@code type} and takes these inputs and scalars: where not, an op
     * with a decomposition runs that instead.
     */
    public static boolean applies(OpDef op, Device.Type type, StridedView[] inputs, double[] scalars) {
        if (!hasStructured(op, type)) return false;
        OpKernel.Applies a = APPLIES.get(type).get(op.kernel());
        return a == null || a.test(inputs, scalars);
    }

    /** The structured kernel of {@code op} on {@code type}, or an exception naming both; cached in the op after the first call. */
    public static OpKernel kernel(OpDef op, Device.Type type) {
        OpKernel k = op.opKernels[type.ordinal()];
        return k != null ? k : lookUp(op, type, STRUCTURED, op.opKernels);
    }

    /** The kernel of {@code op} on {@code type} in {@code table}, cached in the op's {@code cache}, or an exception naming both. */
    private static <K> K lookUp(OpDef op, Device.Type type, Map<Device.Type, Map<String, K>> table, K[] cache) {
        K k = table.get(type).get(op.kernel());
        if (k == null) {
            throw new UnsupportedOperationException(op.pyName() + ": no " + type.name().toLowerCase() + " kernel is registered for "
                    + op.name());
        }
        cache[type.ordinal()] = k;
        return k;
    }

    /** Whether a structured kernel (of one output or several, or taking a callback) for {@code op} is registered on {@code type}. */
    public static boolean hasStructured(OpDef op, Device.Type type) {
        return STRUCTURED.get(type).containsKey(op.kernel()) || MULTI.get(type).containsKey(op.kernel())
                || WITH_CALLBACK.get(type).containsKey(op.kernel());
    }

    /** Registers (or replaces) the kernel named {@code kernel} of an op taking a callback on {@code type} ({@link OpDef#takesCallback}). */
    public static void registerWithCallback(Device.Type type, String kernel, OpKernel.WithCallback k) {
        put(WITH_CALLBACK, type, kernel, k, op -> op.callbackKernels);
    }

    /** The kernel of {@code op}, which takes a callback, on {@code type}, or an exception naming both; cached in the op after the first call. */
    public static OpKernel.WithCallback withCallback(OpDef op, Device.Type type) {
        OpKernel.WithCallback k = op.callbackKernels[type.ordinal()];
        return k != null ? k : lookUp(op, type, WITH_CALLBACK, op.callbackKernels);
    }

    /** Registers (or replaces) the multi-output kernel named {@code kernel} on {@code type} ({@link OpDef#outputCount} above 1). */
    public static void registerMulti(Device.Type type, String kernel, OpKernel.Multi k) {
        put(MULTI, type, kernel, k, op -> op.multiKernels);
    }

    /** The multi-output kernel of {@code op} on {@code type}, or an exception naming both; cached in the op after the first call. */
    public static OpKernel.Multi kernels(OpDef op, Device.Type type) {
        OpKernel.Multi k = op.multiKernels[type.ordinal()];
        return k != null ? k : lookUp(op, type, MULTI, op.multiKernels);
    }

    /** Registers (or replaces) the kernel of the mutating op named {@code kernel} on {@code type} ({@link OpDef.Kind#MUTATING}). */
    public static void registerMutating(Device.Type type, String kernel, OpKernel.Mutating k) {
        MUTATING.get(type).put(kernel, k);
    }

    /** The kernel of mutating op {@code op} on {@code type}, or an exception naming both. */
    public static OpKernel.Mutating mutating(OpDef op, Device.Type type) {
        OpKernel.Mutating k = MUTATING.get(type).get(op.kernel());
        if (k == null) {
            throw new UnsupportedOperationException(op.pyName() + ": no " + type.name().toLowerCase() + " kernel is registered for "
                    + op.name());
        }
        return k;
    }

    /** Whether a kernel of mutating op {@code op} is registered on {@code type}. */
    public static boolean hasMutating(OpDef op, Device.Type type) {
        return MUTATING.get(type).containsKey(op.kernel());
    }

    /** Registers the backend's compiler of pointwise formulas (fused kernels) on {@code type}. */
    public static void registerFormulaCompiler(Device.Type type, FormulaKernel.Compiler compiler) {
        FORMULA_COMPILERS.put(type, compiler);
    }

    /** The formula compiler of {@code type}, or null when its backend has none (then nothing is fused there). */
    public static FormulaKernel.Compiler formulaCompiler(Device.Type type) {
        return FORMULA_COMPILERS.get(type);
    }
}
