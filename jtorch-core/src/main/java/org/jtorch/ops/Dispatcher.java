package org.jtorch.ops;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.memory.MemoryScope;
import org.jtorch.memory.OutOfMemoryException;
import org.jtorch.memory.Storage;
import org.jtorch.op.Callback;
import org.jtorch.op.CopyOps;
import org.jtorch.op.Expr;
import org.jtorch.op.IndexingOps;
import org.jtorch.op.ReduceArgs;
import org.jtorch.ops.ExprCompiler.ReduceCall;
import org.jtorch.ops.ExprCompiler.TensorFn;
import org.jtorch.ops.ExprCompiler.Values;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.Meta;
import org.jtorch.op.OpKernel;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseKernel;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.RandomOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.op.TraceHook;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The one entry point of a declared op: {@link #call}. Around the backend's kernel it runs four
 * independent layers, each skipped at the cost of one test when its mode is off:
 * <ol>
 *   <li>autocast ({@link AutocastLayer}, which {@code amp.Autocast} installs): casts the inputs per the op's declared policy and calls again;</li>
 *   <li>profiling ({@link KernelProfiler}): times the kernel under the op's kernel name;</li>
 *   <li>trace ({@link #trace}): reports the op, its inputs and output to the thread's {@link TraceHook};</li>
 *   <li>autograd: records a node whose backward evaluates the op's declared derivative with ops.</li>
 * </ol>
 * The meta step between them (devices, broadcast shape, promoted dtypes, from the declaration's rule)
 * allocates the output; the kernel, looked up in {@link KernelRegistry}, sees only {@link StridedView}s.
 *
 * <p>Thread-safe: all modes are thread-scoped.
 */
public final class Dispatcher {
    private Dispatcher() {}

    private static final AtomicInteger TRACING = new AtomicInteger();
    private static final ThreadLocal<TraceHook<Tensor>> TRACE = new ThreadLocal<>();
    /** Set once, by {@code amp.Autocast}'s class initialiser: the thread that enables autocast has loaded it. */
    private static volatile AutocastLayer autocast = AutocastLayer.NONE;

    /** Installs the autocast layer; {@code amp.Autocast} calls it when it is loaded. */
    public static void installAutocast(AutocastLayer layer) {
        autocast = Arguments.nonNull("Dispatcher.installAutocast", "layer", layer);
    }

    /** An installed trace hook; closing it restores the previous one. */
    public static final class TraceScope implements AutoCloseable {
        private final TraceHook<Tensor> previous;
        private boolean closed;

        private TraceScope(TraceHook<Tensor> previous) {
            this.previous = previous;
        }

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            TRACE.set(previous);
            TRACING.decrementAndGet();
        }
    }

    /** Reports every op this thread dispatches to {@code hook} until the returned scope is closed. */
    public static TraceScope trace(TraceHook<Tensor> hook) {
        Arguments.nonNull("Dispatcher.trace", "hook", hook);
        TraceScope s = new TraceScope(TRACE.get());
        TRACE.set(hook);
        TRACING.incrementAndGet();
        return s;
    }

    /**
     * Whether this thread traces: one read of a shared counter on the hot paths (the thread's hook is looked up only
     * while some thread traces). False inside a traced front end ({@link #traceFrontEnd}).
     */
    public static boolean tracing() {
        return TRACING.get() != 0 && TRACE.get() != null;
    }

    /**
     * Runs {@code body}, the hand-written front end of {@code op} ({@link OpDef.Kind#FRONT_END}), and reports it to
     * this thread's trace as one op: the ops inside it are not traced (their intermediates are the front end's).
     * {@code args} are its integer and scalar arguments in signature order. Called by front ends when {@link #tracing}.
     */
    public static Tensor traceFrontEnd(OpDef op, Tensor[] inputs, double[] args, java.util.function.Supplier<Tensor> body) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook == null) return body.get();
        Tensor r = withoutTrace(body);
        hook.record(op, Arrays.asList(inputs), args.clone(), null, r);
        return r;
    }

    /**
     * {@link #traceFrontEnd} of a front end returning several tensors ({@code split}, {@code unbind}): reported as one op
     * with all its outputs ({@link TraceHook#recordAll}).
     */
    public static List<Tensor> traceFrontEndAll(OpDef op, Tensor[] inputs, double[] args, java.util.function.Supplier<List<Tensor>> body) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook == null) return body.get();
        List<Tensor> r = withoutTrace(body);
        hook.recordAll(op, Arrays.asList(inputs), args.clone(), r);
        return r;
    }

    /**
     * Whether a layer wraps the hand-written front ends now (autocast or a trace on this thread): the one test such a
     * front end makes before calling {@link #frontEnd}.
     */
    public static boolean wrapsFrontEnds() {
        return autocast.isActive() || tracing();
    }

    /**
     * Runs {@code body}, the hand-written front end of {@code op} ({@link OpDef.Kind#FRONT_END}), inside the layers
     * the dispatcher puts around every op: autocast casts {@code inputs} by the op's declared policy and runs the body
     * with autocast suspended (its parts are not cast again); the trace records the call as one op when {@code args}
     * (its integer and scalar arguments in signature order) are given, or sees the ops inside when they are null.
     * Front ends call it when {@link #wrapsFrontEnds}.
     */
    public static Tensor frontEnd(OpDef op, Tensor[] inputs, double[] args, java.util.function.Function<Tensor[], Tensor> body) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), t -> frontEnd(op, t, args, body), inputs);
            if (r != null) return r;
        }
        if (args != null && tracing()) return traceFrontEnd(op, inputs, args, () -> body.apply(inputs));
        return body.apply(inputs);
    }

    /**
     * {@link #frontEnd} of a front end returning several tensors (a max pool's values and indices): autocast casts the
     * inputs once by the op's policy, the trace records one op with all its outputs ({@link #traceFrontEndAll}).
     */
    public static List<Tensor> frontEndAll(OpDef op, Tensor[] inputs, double[] args, java.util.function.Function<Tensor[], List<Tensor>> body) {
        if (autocast.isActive()) {
            // the layer returns one tensor: the others are kept from the same call
            List<List<Tensor>> outputs = new java.util.ArrayList<>(1);
            Tensor first = autocast.run(op.pyName(), t -> {
                List<Tensor> all = frontEndAll(op, t, args, body);
                outputs.add(all);
                return all.get(0);
            }, inputs);
            if (first != null) return outputs.get(0);
        }
        if (tracing()) return traceFrontEndAll(op, inputs, args, () -> body.apply(inputs));
        return body.apply(inputs);
    }

    /** Runs {@code body} with this thread's trace hook suspended (the tracer's own work: nothing in it is traced). */
    public static <T> T withoutTrace(java.util.function.Supplier<T> body) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook == null) return body.get();
        TRACE.set(null);
        try {
            return body.get();
        } finally {
            TRACE.set(hook);
        }
    }

    /** Reports a tensor created on this thread to its trace hook, if one is installed ({@link TraceHook#created}). */
    public static void traceCreated(Tensor t) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.created(t);
    }

    /** Reports an in-place write into {@code t} to this thread's trace hook, if one is installed ({@link TraceHook#mutated}). */
    public static void traceMutation(Tensor t) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.mutated(t);
    }

    /** Reports a pointwise or structured op that wrote into {@code inputs[0]} ({@link TraceHook#recordInPlace}). */
    static void tracedInPlace(OpDef op, double[] scalars, Tensor... inputs) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.recordInPlace(op, Arrays.asList(inputs), scalars.clone());
    }

    /** Reports a host read of {@code t} to this thread's trace hook, if one is installed ({@link TraceHook#hostRead}). */
    public static void traceHostRead(Tensor t, String what) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.hostRead(t, what);
    }

    // ------------------------------------------------------------------ entry points

    /**
     * Runs {@code op} on {@code inputs} (its tensor parameters, in signature order; optional ones may be null)
     * and {@code scalars} (its scalar parameters; NaN for None). A reduction reduces every dimension here
     * ({@link #reduce} takes dimensions); an op along a dimension takes it as its first scalar.
     */
    public static Tensor call(OpDef op, Tensor[] inputs, double... scalars) {
        double p0 = scalars.length > 0 ? scalars[0] : 0;
        double p1 = scalars.length > 1 ? scalars[1] : 0;
        return switch (op.kind()) {
            case UNARY -> unary(op, inputs[0], p0, p1);
            case BINARY -> binary(op, inputs[0], inputs[1], scalars.length > 0 ? p0 : 1);
            case COMPOSITE -> composite(op, inputs, scalars);
            case REDUCTION -> reduce(op, inputs[0], ALL_DIMS, null, p0);
            case ALONG_DIM -> alongDim(op, inputs[0], (int) p0, null);
            case FRONT_END -> FrontEnds.call(op, inputs, scalars);
            case STRUCTURED -> op.outputCount() == 1 ? structured(op, inputs, scalars) : firstOf(structuredAll(op, inputs, scalars, true));
            case MUTATING -> throw new IllegalArgumentException(op.pyName() + " updates its arguments in place and returns nothing:"
                    + " call it with Dispatcher.callMutating");
        };
    }

    /**
     * Runs a multi-output structured op ({@link OpDef#outputCount} above 1) and returns all its outputs, in declared order:
     * its meta function gives every output's shape and dtype, all are allocated on the inputs' device, and the kernel
     * registered for that device writes them in one call. Autograd differentiates the first output, or the first
     * {@link OpDef#gradOutputs} (an LSTM cell's {@code hy} and {@code cy}; the others, indices, saved statistics or
     * workspaces, are what its derivatives read); the trace records the op with all its outputs ({@link
     * TraceHook#recordAll}).
     */
    public static Tensor[] callAll(OpDef op, Tensor[] inputs, double... scalars) {
        if (op.kind() == OpDef.Kind.FRONT_END && FrontEnds.returnsSeveral(op)) return FrontEnds.callAll(op, inputs, scalars);
        if (op.kind() != OpDef.Kind.STRUCTURED || op.outputCount() == 1) {
            return new Tensor[] {call(op, inputs, scalars)};
        }
        return structuredAll(op, inputs, scalars, false);
    }

    /**
     * Runs {@code op}, a JIT-internal op taking a callback ({@link OpDef#takesCallback}: the GEMM and convolution with an
     * epilogue), on {@code inputs} and {@code scalars} as {@link #call(OpDef, Tensor[], double...)} runs a structured op,
     * handing {@code callback} (null for none) to the kernel, which runs its work on the output's blocks as it writes
     * them. Autocast leaves the op alone and the trace never sees it ({@link Callback}); autograd records the op's
     * declared derivatives.
     */
    public static Tensor call(OpDef op, Tensor[] inputs, Callback<?> callback, double... scalars) {
        if (!op.takesCallback()) throw new IllegalArgumentException(op.pyName() + ": takes no callback argument");
        return structured(op, inputs, scalars, callback);
    }

    /**
     * Whether the kernel registered for {@code op} on the inputs' device takes these arguments ({@link
     * KernelRegistry#applies}: its test, answered from the views without running or allocating): for a caller choosing
     * between a backend's fused kernel and another way of its own (the JIT's GEMM epilogue or {@code _linear_activation}).
     */
    public static boolean kernelTakes(OpDef op, Tensor[] inputs, double... scalars) {
        StridedView[] views = new StridedView[Math.max(inputs.length, op.tensorInputs())];
        Device device = structuredViews(op, op.pyName(), inputs, views);
        return device != null && KernelRegistry.applies(op, device.type(), views, scalars);
    }

    /** The first output; the others (null where skipped) are released (a caller of {@link #call} asked for one tensor). */
    private static Tensor firstOf(Tensor[] outputs) {
        for (int i = 1; i < outputs.length; i++) if (outputs[i] != null) outputs[i].close();
        return outputs[0];
    }

    /** {@code firstOnly}: the caller wants the first output (the others are skipped where the op allows and autograd needs none). */
    private static Tensor[] structuredAll(OpDef op, Tensor[] inputs, double[] scalars, boolean firstOnly) {
        if (autocast.isActive()) {
            Tensor[][] all = new Tensor[1][];
            Tensor r = autocast.run(op.pyName(), t -> (all[0] = structuredAll(op, t, scalars, firstOnly))[0], inputs);
            if (r != null) return all[0];
        }
        String name = op.pyName();
        int declared = op.tensorInputs();
        if (inputs.length < declared) inputs = Arrays.copyOf(inputs, declared);
        StridedView[] views = new StridedView[inputs.length];
        Device device = structuredViews(op, name, inputs, views);
        if (op.hasDecomposition() && !kernelApplies(op, inputs, views, device, scalars)) {
            if (!firstOnly) {
                throw new UnsupportedOperationException(name + ": no " + device.type().name().toLowerCase() + " kernel takes these "
                        + "arguments, and its decomposition gives the first output only");
            }
            Tensor[] outs = new Tensor[op.outputCount()];
            outs[0] = decomposed(op, inputs, scalars);
            return outs;
        }
        Tensor[] values = denseValues(op, inputs, views);
        Meta.Output[] metas = op.metaAll().infer(views, scalars);
        // Read once: another thread may set an input's requiresGrad meanwhile, and the backward reads what is written here.
        boolean record = op.isDifferentiable() && Autograd.needsGrad(inputs);
        int written = firstOnly && !record && op.skipsUnreadOutputs() ? 1 : metas.length;
        Tensor[] outs = new Tensor[metas.length];
        StridedView[] outViews = new StridedView[metas.length];
        for (int i = 0; i < written; i++) {
            outs[i] = allocate(name, metas[i], device);
            outViews[i] = view(outs[i]);
        }
        Backends.of(name, device);
        OpKernel.Multi k = KernelRegistry.kernels(op, device.type());
        double[] ks = op.isRandom() ? drawn(op, metas[0], views, scalars) : scalars;
        if (KernelProfiler.isActive()) {
            long t0 = KernelProfiler.begin();
            k.run(outViews, views, ks);
            KernelProfiler.end(op.kernel(), outViews[0], t0);
        } else {
            k.run(outViews, views, ks);
        }
        if (TRACING.get() != 0) tracedAll(op, outs, scalars, inputs);
        if (record) record(op, inputs, values, outs[0], outs, scalars, null);
        closeCopies(inputs, values);
        return outs;
    }

    /**
     * The views of a structured op's inputs (null where an optional one is left out); returns the first input's device.
     * The device layer: every input must be on that device (unless the op copies across devices), or the call fails here,
     * before anything is allocated, naming each argument ({@link #devicesDisagree}). No CPU zero-dim tensor joins another
     * device's here: a structured op's one kernel reads every input on its device (the meta functions refused them before
     * too; where PyTorch takes one, as {@code where}, the front end moves it first).
     */
    private static Device structuredViews(OpDef op, String name, Tensor[] inputs, StridedView[] views) {
        Device device = null;
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t == null) continue;
            t.checkOpen(name);
            views[i] = view(t);
            Device d = t.device();
            if (device == null) {
                device = d;
            } else if (d != device && !d.equals(device) && !op.acrossDevices()) {
                throw devicesDisagree(op, name, inputs, false);
            }
        }
        return device;
    }

    /**
     * The device of a pointwise op's result: {@code a}'s and {@code b}'s, or the other's where one is a CPU zero-dim tensor
     * (allowed beside any device, as by PyTorch's TensorIterator); otherwise {@link #devicesDisagree}.
     */
    static Device pointwiseDevice(OpDef op, String name, Tensor a, Tensor b) {
        Device da = a.device();
        Device db = b.device();
        if (da == db || da.equals(db)) return da;
        if (da.isCpu() && a.dim() == 0) return db;
        if (db.isCpu() && b.dim() == 0) return da;
        throw devicesDisagree(op, name, new Tensor[] {a, b}, true);
    }

    /**
     * {@link #pointwiseDevice(OpDef, String, Tensor, Tensor)} for any number of operands (null where left out): the one
     * device of those that are not CPU zero-dim tensors, or the CPU when all are.
     */
    static Device pointwiseDevice(OpDef op, String name, Tensor... inputs) {
        Device device = null;
        for (Tensor t : inputs) {
            if (t == null || t.device().isCpu() && t.dim() == 0) continue;
            if (device == null) device = t.device();
            else if (!t.device().equals(device)) throw devicesDisagree(op, name, inputs, true);
        }
        return device == null ? Device.cpu() : device;
    }

    /**
     * The error of a call whose tensor arguments are on different devices: names the op, and each argument given (its
     * signature's name, device, shape and dtype), in PyTorch's words, e.g. {@code add: expected all tensors to be on the
     * same device, but found self on cuda:0 (shape [2, 3], float32) and other on cpu (shape [3], float32)}.
     */
    static IllegalArgumentException devicesDisagree(OpDef op, String name, Tensor[] inputs, boolean cpuScalarsJoin) {
        StringBuilder m = new StringBuilder(name).append(": expected all tensors to be on the same device, but found ");
        int given = 0;
        for (Tensor t : inputs) if (t != null) given++;
        int written = 0;
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t == null) continue;
            if (written > 0) m.append(written == given - 1 ? " and " : ", ");
            m.append(op.tensorParamName(i)).append(" on ").append(t.device()).append(" (shape ").append(Shapes.format(t.shape()))
                    .append(", ").append(t.dtype()).append(')');
            written++;
        }
        if (cpuScalarsJoin) m.append(" (only a CPU tensor of zero dimensions may join another device's)");
        return new IllegalArgumentException(m.toString());
    }

    /**
     * The device layer for a hand-written front end ({@link OpDef.Kind#FRONT_END}) that reaches its kernels without {@link
     * #call}: every tensor argument given (null where an optional one is left out) on one device, or {@link #devicesDisagree}.
     * Returns that device (null when none is given).
     */
    public static Device sameDevice(OpDef op, Tensor... inputs) {
        return sameDevice(op, op.pyName(), inputs);
    }

    /** {@link #sameDevice(OpDef, Tensor...)} naming the call {@code name} (an in-place form: {@code index_put_}). */
    static Device sameDevice(OpDef op, String name, Tensor... inputs) {
        Device device = null;
        for (Tensor t : inputs) {
            if (t == null) continue;
            Device d = t.device();
            if (device == null) device = d;
            else if (d != device && !d.equals(device)) throw devicesDisagree(op, name, inputs, false);
        }
        return device;
    }

    /**
     * A structured op ({@link OpDef.Kind#STRUCTURED}): its meta function checks the inputs (null where an optional one
     * is left out) and gives the result's shape and dtype, the result is allocated on the inputs' device, and the
     * kernel registered for that device writes it from the views.
     */
    static Tensor structured(OpDef op, Tensor[] inputs, double[] scalars) {
        return structured(op, inputs, scalars, null);
    }

    /** {@link #structured(OpDef, Tensor[], double[])} handing {@code callback} to the kernel of an op that takes one. */
    private static Tensor structured(OpDef op, Tensor[] inputs, double[] scalars, Callback<?> callback) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), t -> structured(op, t, scalars, callback), inputs);
            if (r != null) return r;
        }
        String name = op.pyName();
        int declared = op.tensorInputs();
        if (inputs.length < declared) inputs = Arrays.copyOf(inputs, declared);
        StridedView[] views = new StridedView[inputs.length];
        Device device = structuredViews(op, name, inputs, views);
        if (op.hasDecomposition() && !kernelApplies(op, inputs, views, device, scalars)) return decomposed(op, inputs, scalars);
        Tensor[] values = denseValues(op, inputs, views);
        Meta.Output meta = op.meta().infer(views, scalars);
        Device target = meta.device() == null ? device : meta.device();
        if (target != device) Backends.of(name, target); // an unavailable device's error names the op before allocating there
        Tensor r = allocate(name, meta.shape(), meta.dtype(), target);
        try {
            if (op.takesCallback()) {
                runWithCallback(op, device, view(r), views, scalars, callback);
            } else {
                runStructured(op, target == device ? device : across(device, target), view(r), views,
                        op.isRandom() ? drawn(op, meta, views, scalars) : scalars);
            }
        } catch (RuntimeException e) {
            r.close(); // a kernel's check of the values (multinomial's distributions) refused the call
            throw e;
        }
        // An op taking a callback is never traced: the trace could not replay the closure (Callback).
        if (TRACING.get() != 0 && !op.takesCallback()) traced(op, r, scalars, null, inputs);
        if (op.isDifferentiable() && Autograd.needsGrad(inputs)) record(op, inputs, values, r, scalars, null);
        closeCopies(inputs, values);
        return r;
    }

    /** How the inputs of an in-place structured op may share self's memory: PyTorch's overlap checks, which differ by op. */
    private enum Aliasing {
        /** {@code masked_fill_}: a value where a mask broadcast to self is true; self may repeat elements, the mask may be self. */
        MASKED_FILL,
        /**
         * {@code index_fill_}, {@code index_put_}: values at indexed places; self may repeat elements (PyTorch's index_put_
         * warns there), no input may share its memory.
         */
        INDEXED_FILL,
        /** {@code scatter_}, {@code index_add_}, ...: values read from elsewhere; self may not repeat elements, no input may share its memory. */
        INDEXED,
        /** {@code fill_}, {@code zero_}: one value everywhere; self may repeat elements. */
        FILL,
        /** {@code copy_}: self may not repeat elements; src may be self, but may not overlap it partly. */
        COPY;

        static Aliasing of(OpDef op) {
            if (op == IndexingOps.MASKED_FILL) return MASKED_FILL;
            if (op == CopyOps.FILL || op == CopyOps.ZERO) return FILL;
            if (op == CopyOps.COPY) return COPY;
            return op == IndexingOps.INDEX_FILL || op == IndexingOps.INDEX_PUT ? INDEXED_FILL : INDEXED;
        }
    }

    /**
     * The in-place form of a structured op ({@code masked_fill_}, {@code index_add_}, {@code scatter_add_}, ...): {@code op}
     * run with {@code inputs[0]} as its result, so that its meta function checks the operands and its kernel, seeing the
     * same view as {@code self} and as the output, writes in place. As the in-place pointwise ops: the result must have
     * self's shape and dtype; the overlap checks are PyTorch's for the op ({@code Aliasing}); the version counter is bumped; autograd refuses
     * leaves and views made without grad ({@link Elementwise#checkInPlaceAllowed}), keeps a copy of self's old value only
     * when a derivative reads it, and records the op's node on self (a view's base is rebased onto it, {@code CopySlices});
     * the trace reports an in-place op. Returns {@code self}.
     */
    public static Tensor callInPlace(OpDef op, Tensor[] inputs, double... scalars) {
        Aliasing aliasing = Aliasing.of(op);
        Tensor self = inputs[0];
        String name = op.pyName() + "_";
        self.checkWritable(name);
        int declared = op.tensorInputs();
        if (inputs.length < declared) inputs = Arrays.copyOf(inputs, declared);
        StridedView[] views = new StridedView[inputs.length];
        Device device = structuredViews(op, name, inputs, views);
        Meta.Output meta = op.meta().infer(views, scalars);
        if (!Arrays.equals(meta.shape(), self.shapeArray())) {
            throw new IllegalArgumentException(name + ": output with shape " + Shapes.format(self.shape())
                    + " doesn't match the broadcast shape " + Shapes.format(meta.shape()));
        }
        if (meta.dtype() != self.dtype()) {
            throw new IllegalArgumentException(name + ": result type " + meta.dtype() + " can't be cast to the desired output type "
                    + self.dtype());
        }
        if (aliasing == Aliasing.INDEXED || aliasing == Aliasing.COPY) self.checkNoInternalOverlap(name);
        for (int i = 1; i < inputs.length; i++) {
            if (inputs[i] == null) continue;
            if (aliasing == Aliasing.MASKED_FILL || aliasing == Aliasing.COPY) {
                self.checkNoPartialOverlap(name, inputs[i]);
            } else {
                self.checkNoOverlap(name, inputs[i]);
            }
        }
        // Read once: another thread may set an input's requiresGrad meanwhile, and the backward reads what is written here.
        boolean record = op.isDifferentiable() && Autograd.needsGrad(inputs);
        if (record) Elementwise.checkInPlaceAllowed(name, self);
        Tensor before = record && plan(op).saves(0, null, true) ? self.clone() : null;
        if (op.acrossDevices()) device = across(inputs[1].device(), device);
        Backends.of(name, device); // an unavailable device's error names the in-place op
        runStructured(op, device, views[0], views, op.isRandom() ? drawn(op, meta, views, scalars) : scalars);
        self.bumpVersion();
        if (record) {
            try (before) {
                Tensor[] values = inputs.clone();
                values[0] = before;
                record(op, inputs, values, self, scalars, null);
            }
        }
        if (TRACING.get() != 0) tracedInPlace(op, scalars, inputs);
        return self;
    }

    /**
     * Runs a mutating op ({@link OpDef.Kind#MUTATING}: the fused optimizer steps, GradScaler's ops): {@code lists} holds
     * one list of tensors per list parameter of its signature (an empty one where the op allows a list left out, as
     * PyTorch's {@code max_exp_avg_sqs} without AMSGrad), {@code tensors} one tensor per tensor parameter (null where an
     * optional one is left out), both in signature order. The dispatcher checks that the lists have one length, that
     * every tensor is open, that the lists and the mutable tensors share one device, that what is written is writable
     * and (with grad mode on) no leaf that requires grad; the op's {@link OpDef#check} checks the rest. The kernel of
     * that device then updates the mutable arguments in place, their storages held for the call, and their versions are
     * bumped (which a trace sees as writes by an op it cannot replay: a traced function stepping an optimizer runs eagerly).
     */
    public static void callMutating(OpDef op, List<? extends List<Tensor>> lists, Tensor[] tensors, double... scalars) {
        String name = op.pyName();
        if (op.kind() != OpDef.Kind.MUTATING) throw new IllegalArgumentException(name + ": not an op that updates lists in place");
        List<org.jtorch.op.Param> params = op.signature().params();
        List<org.jtorch.op.Param> listParams = params.stream().filter(p -> p.type().startsWith("Tensor") && p.type().endsWith("[]")).toList();
        List<org.jtorch.op.Param> tensorParams = params.stream().filter(p -> p.type().startsWith("Tensor") && !p.type().endsWith("[]")).toList();
        if (lists.size() != listParams.size() || tensors.length != tensorParams.size()) {
            throw new IllegalArgumentException(name + ": expected " + listParams.size() + " tensor lists and " + tensorParams.size()
                    + " tensors, got " + lists.size() + " and " + tensors.length);
        }
        int n = -1;
        Device device = null;
        for (int l = 0; l < lists.size(); l++) {
            List<Tensor> list = lists.get(l);
            if (list == null) throw new IllegalArgumentException(name + ": " + listParams.get(l).name() + " is null (pass an empty list)");
            if (list.isEmpty() && l > 0) continue;
            if (n < 0) {
                n = list.size();
            } else if (list.size() != n) {
                throw new IllegalArgumentException(name + ": Tensor lists must have the same number of tensors, got " + n + " and "
                        + list.size() + " (" + listParams.get(0).name() + ", " + listParams.get(l).name() + ")");
            }
            for (Tensor t : list) {
                if (t == null) throw new IllegalArgumentException(name + ": " + listParams.get(l).name() + " holds null");
                t.checkOpen(name);
                if (device == null) device = t.device();
                checkSameDevice(name, listParams.get(l).name(), t, device);
            }
        }
        for (int i = 0; i < tensors.length; i++) {
            Tensor t = tensors[i];
            if (t == null) {
                if (!tensorParams.get(i).type().contains("?")) throw new IllegalArgumentException(name + ": " + tensorParams.get(i).name() + " is null");
                continue;
            }
            t.checkOpen(name);
            if (device == null) device = t.device();
            if (OpDef.isMutable(tensorParams.get(i))) checkSameDevice(name, tensorParams.get(i).name(), t, device);
        }
        boolean grad = Grad.isEnabled();
        for (int l = 0; l < lists.size(); l++) {
            if (!OpDef.isMutable(listParams.get(l))) continue;
            for (Tensor t : lists.get(l)) checkMutable(name, t, grad);
        }
        for (int i = 0; i < tensors.length; i++) {
            if (tensors[i] != null && OpDef.isMutable(tensorParams.get(i))) checkMutable(name, tensors[i], grad);
        }
        StridedView[][] listViews = new StridedView[lists.size()][];
        int operands = 0;
        for (int l = 0; l < lists.size(); l++) {
            List<Tensor> list = lists.get(l);
            listViews[l] = new StridedView[list.size()];
            for (int i = 0; i < list.size(); i++) listViews[l][i] = view(list.get(i));
            operands += list.size();
        }
        StridedView[] tensorViews = new StridedView[tensors.length];
        for (int i = 0; i < tensors.length; i++) tensorViews[i] = view(tensors[i]);
        if (device == null) return; // nothing to update
        op.check().check(listViews, tensorViews, scalars);
        Backends.of(name, device);
        OpKernel.Mutating k = KernelRegistry.mutating(op, device.type());
        StridedView[] held = new StridedView[operands + tensors.length];
        int h = 0;
        for (StridedView[] vs : listViews) for (StridedView v : vs) held[h++] = v;
        for (StridedView v : tensorViews) held[h++] = v;
        Backends.hold(name, held);
        try {
            if (KernelProfiler.isActive()) {
                long t0 = KernelProfiler.begin();
                k.run(listViews, tensorViews, scalars);
                KernelProfiler.end(op.kernel(), held.length > 0 ? held[0] : null, t0);
            } else {
                k.run(listViews, tensorViews, scalars);
            }
        } finally {
            Backends.drop(held);
        }
        for (int l = 0; l < lists.size(); l++) {
            if (OpDef.isMutable(listParams.get(l))) for (Tensor t : lists.get(l)) t.bumpVersion();
        }
        for (int i = 0; i < tensors.length; i++) {
            if (tensors[i] != null && OpDef.isMutable(tensorParams.get(i))) tensors[i].bumpVersion();
        }
    }

    private static void checkSameDevice(String name, String param, Tensor t, Device device) {
        if (!t.device().equals(device)) {
            throw new IllegalArgumentException(name + ": expected every tensor on " + device + ", but " + param + " holds one on "
                    + t.device() + " (shape " + Shapes.format(t.shape()) + ", " + t.dtype() + ")");
        }
    }

    /**
     * A tensor a mutating op writes: writable, and with grad mode on not a leaf that requires grad (as any in-place op).
     * A mutating op records no history, so a tensor outside autograd needs no further check.
     */
    private static void checkMutable(String name, Tensor t, boolean grad) {
        t.checkWritable(name);
        if (grad && t.requiresGrad()) Elementwise.checkInPlaceAllowed(name, t);
    }

    /**
     * {@code op} run in place on {@code fresh}, a tensor a factory just made ({@code Torch.rand}): the op's meta function
     * and kernel without the checks of {@link #callInPlace} that a new tensor passes by construction (writable, no
     * overlap, no autograd history, nothing traced: the factory is traced as one op). Returns {@code fresh}.
     */
    public static Tensor fillNew(OpDef op, Tensor fresh, double... scalars) {
        StridedView[] views = {view(fresh)};
        Meta.Output meta = op.meta().infer(views, scalars);
        runStructured(op, fresh.device(), views[0], views, op.isRandom() ? drawn(op, meta, views, scalars) : scalars);
        return fresh;
    }

    /**
     * The random layer: reserves the Philox blocks the call of random op {@code op} draws from the generator its scalars
     * name, and returns the kernel's scalars, the call's followed by the generator's state ({@link RandomOps#withState}).
     * Run when the op runs (eagerly or replayed by the JIT), after its checks: a refused call draws nothing.
     */
    private static double[] drawn(OpDef op, Meta.Output result, StridedView[] inputs, double[] scalars) {
        Generator gen = Generator.byId(op.pyName(), (long) scalars[op.generatorScalar()]);
        long[] st = gen.reserve(op.draws().blocks(Shapes.numel(result.shape()), result.dtype(), inputs, scalars));
        return RandomOps.withState(scalars, st[0], st[1]);
    }

    /**
     * The device whose backend runs a copy from {@code from} to {@code to} ({@link OpDef#acrossDevices}): the destination's
     * unless it is the CPU, as an accelerator's copy goes either way and the CPU's sees host memory only.
     */
    private static Device across(Device from, Device to) {
        return to.isCpu() ? from : to;
    }

    /** Runs a single-output structured op's kernel for {@code device} into {@code out} (profiled when the profiler is on). */
    private static void runStructured(OpDef op, Device device, StridedView out, StridedView[] views, double[] scalars) {
        Backends.of(op.pyName(), device);
        OpKernel k = KernelRegistry.kernel(op, device.type());
        if (KernelProfiler.isActive()) {
            long t0 = KernelProfiler.begin();
            k.run(out, views, scalars);
            KernelProfiler.end(op.kernel(), out, t0);
        } else {
            k.run(out, views, scalars);
        }
    }

    /** Runs the kernel for {@code device} of an op taking a callback into {@code out} (profiled when the profiler is on). */
    private static void runWithCallback(OpDef op, Device device, StridedView out, StridedView[] views, double[] scalars,
                                        Callback<?> callback) {
        Backends.of(op.pyName(), device);
        OpKernel.WithCallback k = KernelRegistry.withCallback(op, device.type());
        if (KernelProfiler.isActive()) {
            long t0 = KernelProfiler.begin();
            k.run(out, views, scalars, callback);
            KernelProfiler.end(op.kernel(), out, t0);
        } else {
            k.run(out, views, scalars, callback);
        }
    }

    /**
     * Whether an op with a decomposition runs its kernel: one is registered on the device and takes the argument form
     * ({@link KernelRegistry#applies}), and no input that needs a gradient lacks a derivative (the kernel path gives none
     * there: a class weight that requires grad takes the decomposition, which differentiates through its parts).
     */
    private static boolean kernelApplies(OpDef op, Tensor[] inputs, StridedView[] views, Device device, double[] scalars) {
        if (device == null || !KernelRegistry.applies(op, device.type(), views, scalars)) return false;
        List<Expr> d = op.derivatives();
        for (int i = 0; i < inputs.length; i++) {
            if (inputs[i] != null && (i >= d.size() || d.get(i) == null) && Autograd.needsGrad(inputs[i])) return false;
        }
        return true;
    }

    /**
     * An op's decomposition (where no kernel takes the call): its parts run through the dispatcher, each traced and
     * recorded for autograd, so the JIT and gradients of any order see through it. Autocast applied at the op's entry.
     */
    private static Tensor decomposed(OpDef op, Tensor[] inputs, double[] scalars) {
        Values values = new Values(inputs, presence(inputs), null, null, scalars);
        try (MemoryScope scope = new MemoryScope()) {
            return scope.keep(plan(op).composition().eval(values));
        }
    }

    /** The inputs the kernels read, with a contiguous copy of each strided one the op reads dense ({@link OpDef#readsDense}). */
    private static Tensor[] denseValues(OpDef op, Tensor[] inputs, StridedView[] views) {
        Tensor[] values = inputs;
        if (!op.readsAnyDense()) return values;
        for (int i = 0; i < inputs.length; i++) {
            if (inputs[i] == null || !op.readsDense(i) || inputs[i].isContiguous()) continue;
            if (values == inputs) values = inputs.clone();
            values[i] = inputs[i].contiguous();
            views[i] = view(values[i]);
        }
        return values;
    }

    /** Releases the copies {@link #denseValues} made (autograd keeps what its backward reads). */
    private static void closeCopies(Tensor[] inputs, Tensor[] values) {
        if (values == inputs) return;
        for (int i = 0; i < inputs.length; i++) if (values[i] != inputs[i]) values[i].close();
    }

    /** {@code op(x; p0, p1)} for a unary pointwise op. */
    public static Tensor unary(OpDef op, Tensor x, double p0, double p1) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), t -> unary(op, t[0], p0, p1), x);
            if (r != null) return r;
        }
        x.checkOpen(op.pyName());
        DType compute = op.computeType(x.dtype(), Torch.defaultDtype());
        DType outType = op.resultType(compute);
        Tensor r = allocate(op.pyName(), x.shape(), outType, x.device());
        runKernel(op, r, x, null, compute, p0, p1);
        if (TRACING.get() != 0) traced(op, r, new double[] {p0, p1}, null, x);
        if (op.isDifferentiable() && Autograd.needsGrad(x) && outType.isFloatingPoint()) {
            record(op, new Tensor[] {x}, new Tensor[] {x}, r, new double[] {p0, p1}, null);
        }
        return r;
    }

    /** {@code op(a, b; alpha)} for a binary pointwise op, broadcasting and promoting as PyTorch. */
    public static Tensor binary(OpDef op, Tensor a, Tensor b, double alpha) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), t -> binary(op, t[0], t[1], alpha), a, b);
            if (r != null) return r;
        }
        String name = op.pyName();
        a.checkOpen(name);
        b.checkOpen(name);
        Device device = pointwiseDevice(op, name, a, b);
        long[] shape = Shapes.broadcast(name, a.shape(), b.shape());
        DType compute = op.computeType(TypePromotion.resultType(a, b), Torch.defaultDtype());
        checkOperands(op, a, b, compute, alpha);
        Tensor r = allocate(name, shape, op.resultType(compute), device);
        checkDivisor(op, b, compute, device);
        runKernel(op, r, a.broadcastTo(shape), b.broadcastTo(shape), compute, alpha, 0);
        if (TRACING.get() != 0) traced(op, r, new double[] {alpha}, null, a, b);
        if (op.isDifferentiable() && Autograd.needsGrad(a, b)) {
            record(op, new Tensor[] {a, b}, new Tensor[] {a, b}, r, new double[] {alpha}, null);
        }
        return r;
    }

    /**
     * A composite op: its declared composition run op by op without recording (the trace sees those ops), then
     * its own derivative recorded.
     */
    static Tensor composite(OpDef op, Tensor[] inputs, double[] scalars) {
        for (Tensor t : inputs) if (t != null) t.checkOpen(op.pyName());
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), t -> composite(op, t, scalars), inputs);
            if (r != null) return r;
        }
        Values values = new Values(inputs, presence(inputs), null, null, scalars);
        if (op.differentiatesThroughComposition()) {
            // Autograd records the parts (it saves what their backwards read, so the scope may close the rest).
            try (MemoryScope scope = new MemoryScope()) {
                return scope.keep(plan(op).composition().eval(values));
            }
        }
        Tensor r;
        // The composition's intermediates are closed with the scope; only the result leaves it.
        try (var g = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
            r = scope.keep(plan(op).composition().eval(values));
        }
        // The trace saw the composition's ops: the JIT sees through composites, so the whole is not reported again.
        if (op.isDifferentiable() && Autograd.needsGrad(inputs)) record(op, inputs, inputs, r, scalars, null);
        return r;
    }

    /**
     * A reduction of {@code x} over {@code args}' dimensions. {@code dtype} (may be null) is the result's
     * dtype; the input is converted to it first, as PyTorch. {@code p} is the op's scalar (norm's order).
     */
    public static Tensor reduce(OpDef op, Tensor x, ReduceArgs args, DType dtype, double p) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), dtype != null, t -> reduce(op, t[0], args, dtype, p), x);
            if (r != null) return r;
        }
        String name = op.pyName();
        x.checkOpen(name);
        if (dtype == null && op.halfAccumulation() != null && (x.dtype() == DType.FLOAT16 || x.dtype() == DType.BFLOAT16)) {
            try (Tensor wide = reduce(op, x, args, op.halfAccumulation(), p)) {
                return wide.to(x.dtype());
            }
        }
        DType out = dtype != null && op.accumulation() != null ? dtype
                : op.resultType(op.computeType(dtype != null ? dtype : x.dtype(), Torch.defaultDtype()));
        if (dtype != null && dtype != x.dtype()) {
            try (Tensor converted = x.to(dtype)) {
                return reduceAs(op, converted, args, out, p);
            }
        }
        return reduceAs(op, x, args, out, p);
    }

    private static Tensor reduceAs(OpDef op, Tensor x, ReduceArgs args, DType out, double p) {
        String name = op.pyName();
        ReduceCall call = ReduceCall.of(name, x.shape(), args);
        if (op.accumulation() != null && op.accumulation().emptyIsError()) {
            Reductions.checkNonEmpty(name, x, call.reduced(), args.dims().length == 0);
        }
        double[] scalars = {p};
        Tensor r;
        if (op.composition() != null) {
            try (var g = Grad.noGrad(); MemoryScope scope = new MemoryScope()) {
                r = scope.keep(plan(op).composition().eval(new Values(new Tensor[] {x}, ONE_PRESENT, null, null, scalars, call)));
            }
        } else {
            r = allocate(op.pyName(), call.resultShape(), out, x.device());
            runReduction(op, x, r, call, p);
        }
        if (TRACING.get() != 0 && op.composition() == null) traced(op, r, scalars, args, x);
        if (op.isDifferentiable() && r.dtype().isFloatingPoint() && Autograd.needsGrad(x)) {
            record(op, new Tensor[] {x}, new Tensor[] {x}, r, scalars, call);
        }
        return r;
    }

    /**
     * An op along dimension {@code dim} of {@code x} ({@link OpDef.Kind#ALONG_DIM}). {@code dtype} (may be null)
     * is the result's dtype; the input is converted to it first, as PyTorch.
     */
    public static Tensor alongDim(OpDef op, Tensor x, int dim, DType dtype) {
        if (autocast.isActive()) {
            Tensor r = autocast.run(op.pyName(), dtype != null, t -> alongDim(op, t[0], dim, dtype), x);
            if (r != null) return r;
        }
        String name = op.pyName();
        x.checkOpen(name);
        int wrapped = Shapes.wrapDim(name, dim, x.dim());
        int d = x.dim() == 0 ? 0 : wrapped;
        DType out = alongDimType(op, x.dtype(), dtype);
        if (x.dtype() != out) {
            try (Tensor converted = x.to(out)) {
                return alongDimAs(op, converted, d);
            }
        }
        return alongDimAs(op, x, d);
    }

    /**
     * The result dtype of an op along a dimension: a given {@code dtype}, as PyTorch (the input is converted to it), which a
     * floating-only op refuses when it is not floating; else the op's rule applied to the input's dtype.
     */
    private static DType alongDimType(OpDef op, DType input, DType dtype) {
        if (dtype == null) return op.resultType(op.computeType(input, Torch.defaultDtype()));
        if (op.rule() == org.jtorch.op.DTypeRule.FLOAT && !dtype.isFloatingPoint()) {
            throw new IllegalArgumentException(op.pyName() + ": expected a floating-point dtype, got " + dtype);
        }
        return dtype;
    }

    private static Tensor alongDimAs(OpDef op, Tensor x, int d) {
        ReduceArgs args = new ReduceArgs(new int[] {d}, true);
        Tensor r = allocate(op.pyName(), x.shape(), x.dtype(), x.device());
        ReductionKernels kernels = Backends.of(x.device()).reductions();
        long t0 = KernelProfiler.isActive() ? KernelProfiler.begin() : 0;
        switch (op.kernel()) {
            case "softmax" -> kernels.softmax(view(x), view(r), d, false);
            case "log_softmax" -> kernels.softmax(view(x), view(r), d, true);
            case "cumsum" -> kernels.scan(false, view(x), view(r), d);
            case "cumprod" -> kernels.scan(true, view(x), view(r), d);
            default -> throw new IllegalStateException(op.name() + ": no backend kernel along a dimension named " + op.kernel());
        }
        if (KernelProfiler.isActive()) KernelProfiler.end(op.kernel(), view(r), t0);
        double[] scalars = {d};
        if (TRACING.get() != 0) traced(op, r, scalars, args, x);
        if (op.isDifferentiable() && Autograd.needsGrad(x)) {
            record(op, new Tensor[] {x}, new Tensor[] {x}, r, scalars, ReduceCall.of(op.pyName(), x.shape(), args));
        }
        return r;
    }

    private static final boolean[] ONE_PRESENT = {true};
    private static final ReduceArgs ALL_DIMS = new ReduceArgs(null, false);

    /** Runs a primitive reduction's kernel into {@code r}, seen with the reduced dims broadcast back. */
    private static void runReduction(OpDef op, Tensor x, Tensor r, ReduceCall call, double p) {
        long[] keep = Reductions.resultShape(call.inputShape(), call.reduced(), true);
        ReductionKernels kernels = Backends.of(x.device()).reductions();
        try (Tensor k = r.asStrided(keep, Shapes.contiguousStrides(keep), r.storageOffset());
             Tensor out = k.broadcastTo(call.inputShape())) {
            if (KernelProfiler.isActive()) {
                long t0 = KernelProfiler.begin();
                reductionKernel(op, kernels, view(x), view(out), p);
                KernelProfiler.end(op.kernel(), view(r), t0);
            } else {
                reductionKernel(op, kernels, view(x), view(out), p);
            }
        }
    }

    /**
     * The backend kernel of a declared primitive reduction: the accumulating kernel of its {@code ReduceOp}, or
     * the kernel its declaration names. (Until backends register reduction kernels per op, as they do pointwise
     * kernels, this is where a reduction's kernel name meets the backend interface.)
     */
    private static void reductionKernel(OpDef op, ReductionKernels kernels, StridedView in, StridedView out, double p) {
        if (op.accumulation() != null) {
            kernels.reduce(op.accumulation(), in, out, p);
            return;
        }
        switch (op.kernel()) {
            case "var" -> kernels.variance(in, out, p, false);
            case "std" -> kernels.variance(in, out, p, true);
            case "logsumexp" -> kernels.logsumexp(in, out);
            default -> throw new IllegalStateException(op.name() + ": no backend reduction kernel named " + op.kernel());
        }
    }

    // ------------------------------------------------------------------ kernel layer (with profiling)

    /** {@code bytes} of memory on {@code device} from its backend's caching allocator; errors name {@code op}. */
    public static org.jtorch.memory.Storage allocateStorage(String op, Device device, long bytes) {
        return Backends.of(op, device).allocate(device, bytes);
    }

    /** {@code bytes} of page-locked host memory from an accelerator backend, for asynchronous copies; errors name {@code op}. */
    public static org.jtorch.memory.Storage allocatePinnedHost(String op, long bytes) {
        return Backends.allocatePinnedHost(op, bytes);
    }

    /**
     * Copies {@code src} into {@code dst} (same shape; dtypes converted), within a device or across two: across, the
     * accelerator's backend copies either way ({@code nonBlocking} from or to pinned host memory).
     */
    public static void copyBetween(Tensor src, Tensor dst, boolean nonBlocking) {
        Backends.of(across(src.device(), dst.device())).copy(view(src), view(dst), nonBlocking);
    }

    /** The op's result, allocated; running out of memory names the op. */
    private static Tensor allocate(String op, long[] shape, DType dtype, Device device) {
        try {
            return Tensor.empty(shape, dtype, device);
        } catch (OutOfMemoryException e) {
            throw e.whileRunning(op);
        }
    }

    /** An output as its meta function says: contiguous, or with its dimensions in memory in {@link Meta.Output#memoryOrder}. */
    private static Tensor allocate(String op, Meta.Output meta, Device device) {
        int[] order = meta.memoryOrder();
        if (order == null) return allocate(op, meta.shape(), meta.dtype(), device);
        long[] shape = meta.shape();
        long[] permuted = new long[order.length];
        int[] back = new int[order.length];
        for (int i = 0; i < order.length; i++) {
            permuted[i] = shape[order[i]];
            back[order[i]] = i;
        }
        // The permuted view is part of the allocation, not an op of the traced program.
        return withoutTrace(() -> {
            try (Tensor dense = allocate(op, permuted, meta.dtype(), device)) {
                return dense.permute(back);
            }
        });
    }

    /**
     * Runs {@code op}'s kernel for the output's device into {@code out} (already allocated, of the broadcast
     * shape), holding the operands' storages for the call. Used by the in-place forms as well.
     */
    static void runKernel(OpDef op, Tensor out, Tensor a, Tensor b, DType compute, double p0, double p1) {
        Device device = out.device();
        if (!device.isCpu()) Backends.of(device);
        PointwiseKernel k = KernelRegistry.pointwise(op, device.type());
        Tensor ca = onDevice(a, device);
        Tensor cb = b == null ? null : onDevice(b, device);
        try {
            StridedView vo = view(out), va = view(ca), vb = view(cb);
            Backends.hold(op.pyName(), vo, va, vb);
            try {
                if (KernelProfiler.isActive()) {
                    long t0 = KernelProfiler.begin();
                    k.run(device.index(), compute, vo, va, vb, p0, p1);
                    KernelProfiler.end(op.kernel(), vo, t0);
                } else {
                    k.run(device.index(), compute, vo, va, vb, p0, p1);
                }
            } finally {
                Backends.drop(vo, va, vb);
            }
        } finally {
            if (ca != a) ca.close();
            if (cb != b) cb.close();
        }
    }

    /** A CPU zero-dim operand (allowed next to device tensors, as in PyTorch) copied to the kernel's device. */
    private static Tensor onDevice(Tensor t, Device device) {
        if (t.device().equals(device)) return t;
        try (Tensor scalar = t.asStrided(new long[0], new long[0], t.storageOffset())) {
            return scalar.to(device).broadcastTo(t.shape());
        }
    }

    /**
     * The view a kernel gets of a tensor; null for null (an optional operand left out). A closed tensor's view has
     * no memory: the backend refuses it with the closed-tensor error naming the op.
     */
    public static StridedView view(Tensor t) {
        if (t == null) return null;
        Storage s = t.storage();
        return new StridedView(s.segmentIfLive(), t.storageOffset(), t.shapeArray(), t.stridesArray(), t.dtype(), s);
    }

    /** The views of a list of tensors (a multi-tensor kernel's operands); null for a null list, null elements stay null. */
    public static List<StridedView> views(List<Tensor> ts) {
        if (ts == null) return null;
        List<StridedView> v = new java.util.ArrayList<>(ts.size());
        for (Tensor t : ts) v.add(view(t));
        return v;
    }

    /** PyTorch's operand rules beyond promotion: no bool operand in {@code sub}, no fractional {@code alpha} for integers. */
    static void checkOperands(OpDef op, Tensor a, Tensor b, DType compute, double alpha) {
        if (op == PointwiseOps.SUB && (a.dtype() == DType.BOOL || b.dtype() == DType.BOOL)) {
            throw new IllegalArgumentException("sub: subtraction with a bool tensor (dtypes " + a.dtype() + " and "
                    + b.dtype() + ") is not supported; use logical_xor() or bitwise_not() instead");
        }
        if (!compute.isFloatingPoint() && alpha != Math.rint(alpha)) {
            throw new IllegalArgumentException(op.pyName() + ": for integral input tensors (" + compute
                    + "), alpha must not be a floating point number, got " + alpha);
        }
    }

    /**
     * Integer division by zero is an {@link ArithmeticException} naming the op on every device (PyTorch's
     * {@code ZeroDivisionError}), raised before any element is written. The CPU kernels check inside instead (no
     * extra pass: {@code Fn}'s integer divisions throw); device kernels cannot throw, so they are checked here.
     */
    static void checkDivisor(OpDef op, Tensor divisor, DType compute, Device device) {
        if (!op.integerDivision() || compute.isFloatingPoint() || device.isCpu()) return;
        try (var g = Grad.noGrad();
             Tensor zero = divisor.eq(0L);
             Tensor any = zero.any()) {
            if (any.itemLong() != 0) throw new ArithmeticException(op.name() + ": integer division by zero");
        }
    }

    // ------------------------------------------------------------------ trace layer

    private static void traced(OpDef op, Tensor out, double[] scalars, ReduceArgs reduce, Tensor... inputs) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.record(op, Arrays.asList(inputs), scalars.clone(), reduce, out);
    }

    private static void tracedAll(OpDef op, Tensor[] outs, double[] scalars, Tensor... inputs) {
        TraceHook<Tensor> hook = TRACE.get();
        if (hook != null) hook.recordAll(op, Arrays.asList(inputs), scalars.clone(), Arrays.asList(outs));
    }

    // ------------------------------------------------------------------ autograd layer

    /**
     * What the dispatcher runs of one op, compiled once from its declaration: the derivatives and the
     * composition as closures ({@link ExprCompiler}), which inputs each derivative reads (only those of the
     * derivatives needed are saved) and which derivatives read the result.
     */
    private record Plan(TensorFn[] derivatives, int sharedSlots, TensorFn composition, boolean[][] readsInput, boolean[] readsResult,
                        boolean[] anyReadsInput, boolean anyReadsResult, boolean[] anyReadsOutput, String nodeName, int listFrom) {
        static Plan of(OpDef op) {
            List<Expr> d = op.derivatives();
            ExprCompiler.Derivatives compiledAll = ExprCompiler.compileDerivatives(d);
            TensorFn[] compiled = compiledAll.fns();
            int inputs = op.tensorInputs();
            boolean[][] readsInput = new boolean[d.size()][Math.max(inputs, d.size())];
            boolean[] readsResult = new boolean[d.size()];
            for (int i = 0; i < d.size(); i++) {
                Expr e = d.get(i);
                if (e == null) continue;
                readsResult[i] = e.reads(Expr.RESULT);
                for (int j = 0; j < readsInput[i].length; j++) readsInput[i][j] = e.readsInput(j);
            }
            TensorFn composition = op.composition() == null ? null : ExprCompiler.compileComposition(op.composition());
            boolean[] anyReadsInput = new boolean[Math.max(inputs, d.size())];
            boolean anyReadsResult = false;
            for (int i = 0; i < d.size(); i++) {
                anyReadsResult |= readsResult[i];
                for (int j = 0; j < anyReadsInput.length; j++) anyReadsInput[j] |= readsInput[i][j];
            }
            // A multi-output op's other outputs are saved when a derivative reads them (max pooling's indices).
            boolean[] anyReadsOutput = new boolean[op.outputCount()];
            for (int k = 1; k < anyReadsOutput.length; k++) {
                for (Expr e : d) anyReadsOutput[k] |= e != null && e.reads(new Expr.Output(k, op.outputNames().get(k)));
            }
            return new Plan(compiled, compiledAll.slots(), composition, readsInput, readsResult, anyReadsInput, anyReadsResult, anyReadsOutput,
                    op.node() != null ? op.node() : Elementwise.backwardName(op.pyName()), op.listFrom());
        }

        /**
         * Whether a derivative of an input that needs a gradient reads input {@code i} (or the result, for -1); when every
         * input needs one ({@code all}, the common case in training), whether any derivative does.
         */
        boolean saves(int i, boolean[] needs, boolean all) {
            // the entries of a trailing list are read together (Expr.Rest): its first position answers for all
            if (listFrom >= 0 && i > listFrom) i = listFrom;
            if (all) return i < 0 ? anyReadsResult : i < anyReadsInput.length && anyReadsInput[i];
            for (int j = 0; j < derivatives.length; j++) {
                if (j >= needs.length || !needs[j] || derivatives[j] == null) continue;
                if (i < 0 ? readsResult[j] : i < readsInput[j].length && readsInput[j][i]) return true;
            }
            return false;
        }
    }

    private static volatile Plan[] plans = new Plan[64];

    private static Plan plan(OpDef op) {
        Plan[] table = plans;
        int id = op.id();
        Plan p = id < table.length ? table[id] : null;
        return p != null ? p : buildPlan(op);
    }

    private static synchronized Plan buildPlan(OpDef op) {
        Plan[] table = plans;
        int id = op.id();
        if (id < table.length && table[id] != null) return table[id];
        Plan p = Plan.of(op);
        Plan[] grown = Arrays.copyOf(table, Math.max(table.length, Integer.highestOneBit(id) * 2 + 2));
        grown[id] = p;
        plans = grown;
        return p;
    }

    /**
     * Records the backward of {@code result = op(inputs)}: a node that evaluates the op's declared derivative
     * with ops. {@code values} are the inputs' values before the op (an in-place op's clone of its input);
     * only those the derivative reads are saved, and the result only when it reads {@link Expr#RESULT}.
     * {@code call} is a reduction's call (null for other ops).
     */
    static void record(OpDef op, Tensor[] inputs, Tensor[] values, Tensor result, double[] scalars, ReduceCall call) {
        record(op, inputs, values, result, null, scalars, call);
    }

    /**
     * {@link #record} of a multi-output op: the node is {@code result}'s ({@code outputs[0]}); of the other {@code outputs}
     * (null for a single-output op), those the derivatives read are saved.
     */
    private static void record(OpDef op, Tensor[] inputs, Tensor[] values, Tensor result, Tensor[] outputs, double[] scalars,
                               ReduceCall call) {
        Plan plan = plan(op);
        TensorFn[] derivatives = plan.derivatives();
        int n = inputs.length;
        SavedTensor[] saved = new SavedTensor[n];
        SavedTensor[] all = new SavedTensor[n + 1];
        int savedCount = 0;
        boolean variadic = op.isVariadic();
        // An input without a derivative (an index, or a backward's self read for its shape only) is no edge of the graph:
        // its own graph is neither needed nor visited (it may have been freed already).
        int graphCount = 0;
        for (int i = 0; i < n; i++) if (inputs[i] != null && (variadic || i < derivatives.length && derivatives[i] != null)) graphCount++;
        Tensor[] graphInputs = new Tensor[graphCount];
        int[] slot = new int[n];
        long[][] shapes = new long[n][];
        DType[] types = new DType[n];
        Device[] devices = op.acrossDevices() ? new Device[n] : null;
        boolean[] needs = new boolean[n];
        boolean[] present = new boolean[n];
        boolean everyNeeds = true;
        for (int i = 0; i < n; i++) {
            needs[i] = inputs[i] != null && inputs[i].requiresGrad();
            everyNeeds &= needs[i] || inputs[i] == null;
        }
        graphCount = 0;
        for (int i = 0; i < n; i++) {
            slot[i] = -1;
            Tensor t = inputs[i];
            if (t == null) continue;
            if (variadic || i < derivatives.length && derivatives[i] != null) {
                slot[i] = graphCount;
                graphInputs[graphCount++] = t;
            }
            if (plan.saves(i, needs, everyNeeds)) all[savedCount++] = saved[i] = Autograd.save(values[i]);
            present[i] = true;
            shapes[i] = t.shape();
            types[i] = t.dtype();
            if (devices != null) devices[i] = t.device();
        }
        SavedTensor savedResult = plan.saves(-1, needs, everyNeeds) ? Autograd.save(result) : null;
        if (savedResult != null) all[savedCount++] = savedResult;
        SavedTensor[] savedOutputs = null;
        if (outputs != null) {
            savedOutputs = new SavedTensor[outputs.length];
            all = Arrays.copyOf(all, all.length + outputs.length);
            for (int k = 1; k < outputs.length; k++) {
                if (plan.anyReadsOutput()[k]) all[savedCount++] = savedOutputs[k] = Autograd.save(outputs[k]);
            }
        }
        SavedTensor[] outs = savedOutputs;
        boolean sameShape = op.kind() != OpDef.Kind.BINARY && op.kind() != OpDef.Kind.COMPOSITE && op.kind() != OpDef.Kind.STRUCTURED;
        int gradOutputs = outputs == null ? 1 : op.gradOutputs();
        long needMask = 0;
        for (int i = 0; i < n && i < 63; i++) if (needs[i]) needMask |= 1L << i;
        long mask = needMask;
        Tensor[] recorded = gradOutputs == 1 ? new Tensor[] {result} : Arrays.copyOf(outputs, gradOutputs);
        Autograd.record(plan.nodeName(), graphInputs, recorded, g -> {
            Tensor[] in = new Tensor[n];
            for (int i = 0; i < n; i++) if (saved[i] != null) in[i] = saved[i].get();
            Tensor[] o = null;
            if (outs != null) {
                o = new Tensor[outs.length];
                for (int k = 1; k < o.length; k++) if (outs[k] != null) o[k] = outs[k].get();
            }
            Values v = new Values(in, present, savedResult == null ? null : savedResult.get(), g[0], scalars, call,
                    plan.sharedSlots() == 0 ? null : new Object[plan.sharedSlots()], o, null, gradOutputs == 1 ? null : g, mask, shapes);
            Tensor[] grads = new Tensor[graphInputs.length];
            for (int i = 0; i < n; i++) {
                if (variadic && needs[i]) {
                    // one derivative for every input of the list, told which input it is
                    Tensor gi = derivatives[0].eval(new Values(in, present, v.result(), g[0], scalars, call, null, o,
                            new ExprCompiler.Part(i, shapes), g, mask, shapes));
                    grads[slot[i]] = Gradients.sumTo(gi, shapes[i], types[i]);
                    continue;
                }
                if (!needs[i] || i >= derivatives.length || derivatives[i] == null) continue;
                Tensor gi = derivatives[i].eval(v);
                gi = sameShape ? Elementwise.castTo(gi, types[i]) : Gradients.sumTo(gi, shapes[i], types[i]);
                // A copy across devices sends each input's gradient back to that input's device.
                if (devices != null && !gi.device().equals(devices[i])) gi = gi.to(devices[i]);
                grads[slot[i]] = gi;
            }
            return grads;
        }, savedCount == all.length ? all : Arrays.copyOf(all, savedCount));
    }

    /**
     * Records the backward of a view op's call ({@code outputs}: views of {@code self}; several for {@code split} and
     * {@code unbind}, whose node is one for all of them): a node that evaluates the op's declared derivative with ops. Those
     * read the gradients, the op's {@code scalars} and {@code self}'s sizes ({@link Expr#GRAD}, {@link Expr.OutputGrads},
     * {@link Expr.InputSizes}), never {@code self}'s values: the node keeps its shape and nothing else of it. Called by the
     * view front ends when {@code self} requires grad and grad mode is on.
     */
    public static void recordView(OpDef op, Tensor self, Tensor[] outputs, double... scalars) {
        Plan plan = plan(op);
        TensorFn derivative = plan.derivatives()[0];
        long[][] shapes = {self.shapeArray()}; // a tensor's shape never changes: shared, not copied
        DType type = self.dtype();
        Autograd.record(plan.nodeName(), new Tensor[] {self}, outputs, g -> {
            Values v = new Values(NO_VALUES, ONE_PRESENT, null, g[0], scalars, null, null, null, null, g, 1L, shapes);
            return new Tensor[] {Elementwise.castTo(derivative.eval(v), type)};
        });
    }

    /** {@link #recordView} of a view op with one output. */
    public static void recordView(OpDef op, Tensor self, Tensor output, double... scalars) {
        recordView(op, self, new Tensor[] {output}, scalars);
    }

    private static final Tensor[] NO_VALUES = new Tensor[1];

    private static boolean[] presence(Tensor[] inputs) {
        boolean[] p = new boolean[inputs.length];
        for (int i = 0; i < p.length; i++) p[i] = inputs[i] != null;
        return p;
    }
}
