package org.jtorch.amp;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.op.CastPolicy;
import org.jtorch.ops.AutocastLayer;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Automatic mixed precision, as {@code torch.autocast}: inside a scope, the ops of
 * {@link AutocastPolicy}'s tables cast their floating-point inputs (bfloat16/float16 for matmul,
 * linear and convolutions; float32 for losses, softmax on CUDA, reductions ...):
 *
 * <pre>{@code
 * try (var ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
 *     loss = lossFn.apply(model.forward(x), y);   // linear in bf16, the loss in f32
 * }
 * loss.backward();                                 // outside the scope, as PyTorch recommends
 * }</pre>
 *
 * <p>Scopes are thread-scoped, per device type ({@code cpu} with bfloat16; {@code cuda} with float16
 * or bfloat16), and nest: each restores the previous state on close, and must be closed on the thread
 * that opened it, innermost first. A scope opened with {@code enabled = false} turns autocast off for
 * its device type inside an enabled one. The casts are differentiable ({@code to(dtype)}'s backward
 * casts the gradient back), so gradients reach each parameter in the parameter's dtype.
 *
 * <p>Weight-cast cache: with {@code cacheEnabled} (the default), the lower-precision copy of a float32
 * leaf that requires grad (a parameter) is made once and reused by every op in the scope until the
 * outermost scope closes, as PyTorch. Unlike PyTorch, a cached copy is remade when the parameter was
 * modified in place since (its version changed), and casts made with grad mode off are not cached.
 *
 * <p>Cost when off: ops test one static counter of open scopes ({@link #isActive()}).
 */
public final class Autocast implements AutoCloseable {
    /** Open scopes on all threads: while zero, {@link #isActive()} reads no thread-local state. */
    private static final AtomicInteger OPEN = new AtomicInteger();
    private static final ThreadLocal<State> STATE = ThreadLocal.withInitial(State::new);
    private static final int TYPES = Device.Type.values().length;

    static {
        // the dispatcher asks autocast through this layer: ops names nothing in amp
        Dispatcher.installAutocast(new AutocastLayer() {
            @Override
            public boolean isActive() {
                return Autocast.isActive();
            }

            @Override
            public Tensor run(String op, boolean dtypeGiven, Function<Tensor[], Tensor> fn, Tensor... args) {
                return Autocast.run(op, dtypeGiven, fn, args);
            }
        });
    }

    /** One thread's autocast state. */
    private static final class State {
        final boolean[] enabled = new boolean[TYPES];
        final DType[] dtype = {DType.BFLOAT16, DType.FLOAT16}; // indexed by Device.Type: cpu, cuda (PyTorch's defaults)
        boolean cacheEnabled = true;
        int nesting;
        int suspended;
        final Map<Tensor, Cached> cache = new IdentityHashMap<>();

        boolean anyEnabled() {
            for (boolean e : enabled) if (e) return true;
            return false;
        }
    }

    private record Cached(Tensor cast, int version) {}

    private final Thread owner;
    private final int typeIndex;
    private final boolean previousEnabled;
    private final DType previousDtype;
    private final boolean previousCache;
    private boolean closed;

    private Autocast(Device.Type type, DType dtype, boolean enabled, boolean cacheEnabled) {
        State s = STATE.get();
        owner = Thread.currentThread();
        typeIndex = type.ordinal();
        previousEnabled = s.enabled[typeIndex];
        previousDtype = s.dtype[typeIndex];
        previousCache = s.cacheEnabled;
        s.enabled[typeIndex] = enabled;
        if (dtype != null) s.dtype[typeIndex] = dtype;
        s.cacheEnabled = cacheEnabled;
        s.nesting++;
        OPEN.incrementAndGet();
    }

    /** Autocast on {@code device}'s type with its default dtype (cpu: bfloat16, cuda: float16). */
    public static Autocast enable(Device device) {
        Arguments.nonNull("Autocast.enable", "device", device);
        return scope(device, null, true, true);
    }

    /** Autocast on {@code device}'s type in {@code dtype}, with the weight-cast cache. */
    public static Autocast enable(Device device, DType dtype) {
        Arguments.nonNull("Autocast.enable", "device", device);
        Arguments.nonNull("Autocast.enable", "dtype", dtype);
        return scope(device, dtype, true, true);
    }

    /** Turns autocast off for {@code device}'s type until closed (inside an enabled scope: a region in full precision). */
    public static Autocast disable(Device device) {
        Arguments.nonNull("Autocast.disable", "device", device);
        return scope(device, null, false, true);
    }

    /**
     * The general form of {@code torch.autocast(device_type, dtype, enabled, cache_enabled)}; a null
     * {@code dtype} keeps the current one for the device type (its default outside any scope).
     *
     * @throws IllegalArgumentException for a dtype the device type does not autocast to (cpu: bfloat16
     *     only, as PyTorch 1.13, which warns and disables instead; cuda: float16 or bfloat16)
     */
    public static Autocast scope(Device device, DType dtype, boolean enabled, boolean cacheEnabled) {
        Arguments.nonNull("Autocast.scope", "device", device);
        Device.Type type = device.type();
        if (dtype != null) {
            boolean ok = type == Device.Type.CPU ? dtype == DType.BFLOAT16 : dtype == DType.FLOAT16 || dtype == DType.BFLOAT16;
            if (!ok) {
                throw new IllegalArgumentException("Autocast: " + (type == Device.Type.CPU
                        ? "CPU autocast only supports dtype torch.bfloat16" : "CUDA autocast supports torch.float16 and torch.bfloat16")
                        + ", got " + dtype);
            }
        }
        return new Autocast(type, dtype, enabled, cacheEnabled);
    }

    /** Restores the state before this scope; the outermost scope's close clears the weight-cast cache. */
    @Override
    public void close() {
        if (closed) return;
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("Autocast: a scope must be closed on the thread that opened it (" + owner.getName() + ")");
        }
        closed = true;
        State s = STATE.get();
        s.enabled[typeIndex] = previousEnabled;
        s.dtype[typeIndex] = previousDtype;
        s.cacheEnabled = previousCache;
        if (--s.nesting == 0) clearCache(s);
        OPEN.decrementAndGet();
    }

    /** Whether autocast is on for {@code type} on this thread. */
    public static boolean isEnabled(Device.Type type) {
        Arguments.nonNull("Autocast.isEnabled", "type", type);
        return OPEN.get() != 0 && STATE.get().enabled[type.ordinal()];
    }

    public static boolean isEnabled(Device device) {
        Arguments.nonNull("Autocast.isEnabled", "device", device);
        return isEnabled(device.type());
    }

    /** The dtype autocast casts to on {@code type} (the default when no scope set one). */
    public static DType dtype(Device.Type type) {
        Arguments.nonNull("Autocast.dtype", "type", type);
        return STATE.get().dtype[type.ordinal()];
    }

    public static boolean isCacheEnabled() {
        return STATE.get().cacheEnabled;
    }

    /** Drops this thread's cached weight casts (the outermost scope's close does it too). */
    public static void clearCache() {
        clearCache(STATE.get());
    }

    private static void clearCache(State s) {
        for (Cached c : s.cache.values()) c.cast().close();
        s.cache.clear();
    }

    /**
     * The hook's cheap test, called first by every covered op: whether autocast is on for some device on
     * this thread and no covered op is running below on the stack.
     */
    public static boolean isActive() {
        if (OPEN.get() == 0) return false;
        State s = STATE.get();
        return s.suspended == 0 && s.anyEnabled();
    }

    /**
     * Runs covered op {@code op} under autocast: casts the eligible ones of {@code args} (null entries
     * pass through) per the op's policy on the first tensor's device type, then calls {@code fn} with
     * the cast arguments while autocast is suspended on this thread, and closes the casts it made.
     * Returns null when autocast does not apply to this call (off for that device type, or the op is
     * untouched there): the op then runs its own body, and its parts are autocast one by one.
     *
     * <p>Ops call it as {@code if (Autocast.isActive()) { Tensor r = Autocast.run("mm", t -> mm(t[0], t[1]), a, b); if (r != null) return r; }}.
     */
    public static Tensor run(String op, Function<Tensor[], Tensor> fn, Tensor... args) {
        return run(op, false, fn, args);
    }

    /**
     * {@link #run(String, Function, Tensor...)} for reductions with an optional {@code dtype} argument:
     * when {@code dtypeGiven}, a {@link CastPolicy#FP32_SET_OPT_DTYPE} op runs untouched.
     */
    public static Tensor run(String op, boolean dtypeGiven, Function<Tensor[], Tensor> fn, Tensor... args) {
        Device device = null;
        for (Tensor t : args) {
            if (t != null) {
                device = t.device();
                break;
            }
        }
        if (device == null) return null;
        State s = STATE.get();
        int type = device.type().ordinal();
        if (!s.enabled[type]) return null;
        CastPolicy policy = AutocastPolicy.of(op, device.type());
        if (policy == null || (dtypeGiven && policy == CastPolicy.FP32_SET_OPT_DTYPE)) return null;
        DType lower = s.dtype[type];
        DType target = switch (policy) {
            case LOWER_PRECISION -> lower;
            case FP32, FP32_SET_OPT_DTYPE -> DType.FLOAT32;
            case PROMOTE -> promoteType(op, lower, device.type(), args);
            case AS_IS -> null;
            case BANNED -> throw new IllegalArgumentException(op + ": torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss"
                    + " are unsafe to autocast. Many models use a sigmoid layer right before the binary cross entropy layer. In"
                    + " this case, combine the two layers using binaryCrossEntropyWithLogits or BCEWithLogitsLoss."
                    + " binary_cross_entropy_with_logits and BCEWithLogits are safe to autocast.");
        };
        Tensor[] cast = new Tensor[args.length];
        boolean[] owned = new boolean[args.length];
        Tensor result = null;
        s.suspended++;
        try {
            for (int i = 0; i < args.length; i++) {
                Tensor t = args[i];
                if (target == null || !eligible(t, device.type()) || t.dtype() == target) {
                    cast[i] = t;
                } else {
                    Tensor cached = cachedCast(s, t, target, lower);
                    cast[i] = cached != null ? cached : t.to(target);
                    owned[i] = cached == null;
                }
            }
            result = fn.apply(cast);
            return result;
        } finally {
            s.suspended--;
            for (int i = 0; i < args.length; i++) if (owned[i] && cast[i] != result) cast[i].close();
        }
    }

    /** The cache's copy of {@code t} in {@code target}, made now if needed; null when {@code t} is not cacheable. */
    private static Tensor cachedCast(State s, Tensor t, DType target, DType lower) {
        boolean cacheable = s.cacheEnabled && target == lower && t.dtype() == DType.FLOAT32 && t.requiresGrad() && t.isLeaf()
                && Grad.isEnabled();
        if (!cacheable) return null;
        Cached c = s.cache.get(t);
        if (c != null && c.version() == t.version() && !c.cast().isClosed()) return c.cast();
        if (c != null) c.cast().close();
        // The cache owns the copy: it outlives any MemoryScope the op runs in, until the outermost scope closes.
        Tensor copy = t.to(target).untrack();
        s.cache.put(t, new Cached(copy, t.version()));
        return copy;
    }

    /** Floating point, on the autocast device type, and not float64 (ATen's {@code is_eligible}). */
    private static boolean eligible(Tensor t, Device.Type type) {
        return t != null && t.dtype().isFloatingPoint() && t.dtype() != DType.FLOAT64 && t.device().type() == type;
    }

    /** float32 if any eligible input is float32, else the autocast dtype (ATen's {@code promote_type}). */
    private static DType promoteType(String op, DType lower, Device.Type type, Tensor[] args) {
        DType current = lower;
        for (Tensor t : args) {
            if (!eligible(t, type)) continue;
            DType next = t.dtype();
            if (current == DType.FLOAT32 || next == DType.FLOAT32) {
                current = DType.FLOAT32;
            } else if (next != lower) {
                throw new IllegalArgumentException(op + ": unexpected floating dtype " + next + " under " + lower + " autocast"
                        + " (promote expects float32 or " + lower + " inputs)");
            }
        }
        return current;
    }

    /** Number of cached weight casts on this thread (for tests and diagnostics). */
    public static int cacheSize() {
        return STATE.get().cache.size();
    }
}
