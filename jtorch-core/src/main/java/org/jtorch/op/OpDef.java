package org.jtorch.op;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * One op, declared once as a value: its name and signature (PyTorch's parameter names and defaults), its
 * meta function (result shape and dtypes from the inputs', without data: {@link #rule}), its autocast
 * policy per device type, its derivative written with ops, and for pointwise ops the formula as an
 * expression tree. The dispatcher, the backends' kernel tables, the test table and docs/OPS.md all read
 * this one value.
 *
 * <p>Instances are immutable and shared; {@link OpRegistry} lists them.
 */
public final class OpDef {
    private static final AtomicInteger NEXT_ID = new AtomicInteger();

    /** The shape of the op's call, which fixes how the dispatcher runs it. */
    public enum Kind {
        /** One tensor input and up to two scalar parameters, elementwise. */
        UNARY,
        /** Two broadcast tensor inputs and one scalar ({@code alpha}), elementwise. */
        BINARY,
        /**
         * A composition of declared ops ({@link #composition}), run through the dispatcher op by op; differentiated by
         * its declared derivatives, or without them through its parts ({@link #differentiatesThroughComposition}).
         */
        COMPOSITE,
        /**
         * One tensor input reduced over a list of dimensions ({@code dim}, empty for all) with {@code keepdim}
         * and an optional result {@code dtype}: by the backends' accumulating kernel ({@link #accumulation}) or,
         * for a composite reduction, by its {@link #composition}.
         */
        REDUCTION,
        /**
         * One tensor input and a result of its shape, computed along one dimension ({@code dim}) by the
         * backends' kernel named {@link #kernel()}, with an optional result {@code dtype} (softmax, log_softmax).
         * A reduction called in its derivative reduces over that dimension, keeping it.
         */
        ALONG_DIM,
        /**
         * An op whose front end (argument checks, shape rules, kernel call, autograd) is still written by hand in
         * {@code ops} or {@code Tensor}: declared for its signature, its autocast policy and the trace, which records
         * it as one node ({@code Dispatcher.traceFrontEnd}); {@code Dispatcher.call} runs it through that front end,
         * its integer arguments passed as the call's scalars.
         */
        FRONT_END,
        /**
         * Tensor inputs and scalar parameters in signature order, a {@link Meta} function that checks them and gives the
         * result's shape and dtype, and a kernel per device type ({@link KernelRegistry#kernel}) that writes the result
         * from the inputs' views (matmul's family, ...). Its derivative is written with ops. An op declared with a
         * {@link #composition} (its decomposition into other ops: the fused losses, layer norm) runs the kernel where one is
         * registered for the device and takes the call's argument form ({@link KernelRegistry#applies}), the composition,
         * differentiated through its parts, otherwise.
         */
        STRUCTURED,
        /**
         * An op that updates its mutable arguments in place ({@code Tensor(a!)[]} lists and {@code Tensor(b!)} tensors in
         * the schema: the fused optimizer steps, GradScaler's unscale and scale update) and returns nothing; never
         * differentiated. A call passes one list of tensors per list parameter and one tensor per tensor parameter
         * ({@code Dispatcher.callMutating}); its {@link #check} validates them, the kernel registered per device type
         * ({@link KernelRegistry#mutating}) writes. A backend without a kernel for it lacks only this op: callers such
         * as the optimizers take their composed path there ({@link KernelRegistry#hasMutating}).
         */
        MUTATING;

        /** Whether backends register an elementwise kernel for ops of this kind. */
        public boolean isPointwise() {
            return this == UNARY || this == BINARY;
        }
    }

    private final String name;
    private final String pyName;
    private final String kernel;
    private final Kind kind;
    private final Signature signature;
    /** {@code signature.tensorCount()}, read on every dispatch (the signature counts by a stream). */
    private final int tensorInputs;
    private final DTypeRule rule;
    private final Expr formula;
    private final boolean frontEndDifferentiable;
    private final Expr composition;
    private final Supplier<List<Expr>> derivatives;
    private volatile List<Expr> derivativesResolved;
    private final Map<Device.Type, CastPolicy> autocast;
    private final boolean integerDivision;
    private final ReduceOp accumulation;
    private final Meta meta;
    private final Meta.Multi metaAll;
    private final List<String> outputs;
    private final boolean skipsUnread;
    private final boolean acrossDevices;
    private final int gradOutputs;
    private final int denseInputs;
    private final boolean variadic;
    private final int listFrom;
    private final DType halfAccumulation;
    private final String doc;
    private final String node;
    private final Draws draws;
    private final int generatorScalar;
    private final boolean checksValues;
    private final Check check;
    private final boolean takesCallback;
    private final int id = NEXT_ID.getAndIncrement();
    /** The kernel per device type once looked up ({@link KernelRegistry#pointwise}): the dispatcher's hot path reads it. */
    final PointwiseKernel[] kernels = new PointwiseKernel[Device.Type.values().length];
    /** A structured op's kernel per device type once looked up ({@link KernelRegistry#kernel}). */
    final OpKernel[] opKernels = new OpKernel[Device.Type.values().length];
    /** A structured op's kernel taking a callback, per device type once looked up ({@link KernelRegistry#withCallback}). */
    final OpKernel.WithCallback[] callbackKernels = new OpKernel.WithCallback[Device.Type.values().length];
    /** A multi-output structured op's kernel per device type once looked up ({@link KernelRegistry#kernels}). */
    final OpKernel.Multi[] multiKernels = new OpKernel.Multi[Device.Type.values().length];

    private OpDef(Builder b) {
        name = Objects.requireNonNull(b.name);
        pyName = b.pyName == null ? b.name : b.pyName;
        kernel = b.kernel == null ? b.name : b.kernel;
        kind = Objects.requireNonNull(b.kind);
        signature = Objects.requireNonNull(b.signature, name + ": signature");
        tensorInputs = (int) signature.tensorCount();
        rule = Objects.requireNonNull(b.rule, name + ": dtype rule");
        formula = b.formula;
        frontEndDifferentiable = b.frontEndDifferentiable;
        composition = b.composition;
        derivatives = b.derivatives;
        autocast = b.autocast.isEmpty() ? Map.of() : Map.copyOf(b.autocast);
        integerDivision = b.integerDivision;
        accumulation = b.accumulation;
        meta = b.meta;
        metaAll = b.metaAll;
        outputs = b.outputs == null ? List.of() : b.outputs;
        skipsUnread = b.skipsUnread;
        acrossDevices = b.acrossDevices;
        gradOutputs = b.gradOutputs;
        denseInputs = b.denseInputs;
        variadic = !signature.params().isEmpty() && signature.params().get(0).type().equals("Tensor[]");
        listFrom = listFrom(signature);
        halfAccumulation = b.halfAccumulation;
        doc = b.doc == null ? "" : b.doc;
        node = b.node;
        draws = b.draws;
        generatorScalar = b.generatorScalar;
        checksValues = b.checksValues;
        check = b.check;
        takesCallback = signature.params().stream().anyMatch(Param::isCallback);
        if (takesCallback && (kind != Kind.STRUCTURED || metaAll != null || !autocast.isEmpty() || composition != null)) {
            throw new IllegalArgumentException(name + ": an op taking a callback is structured, with one output, no autocast policy"
                    + " and no decomposition");
        }
        if (kind == Kind.MUTATING && check == null) throw new IllegalArgumentException(name + ": a mutating op checks its arguments");
        if (kind == Kind.STRUCTURED && (meta == null) == (metaAll == null)) {
            throw new IllegalArgumentException(name + ": a structured op has one meta function, for one output or for all of them");
        }
        if (metaAll != null && outputs.size() < 2) throw new IllegalArgumentException(name + ": a multi-output op names its outputs");
        if (kind == Kind.COMPOSITE && composition == null) throw new IllegalArgumentException(name + ": composite without composition");
        if (kind == Kind.REDUCTION && accumulation != null && composition != null) {
            throw new IllegalArgumentException(name + ": a reduction has an accumulation or a composition, not both");
        }
    }

    public static Builder unary(String name) {
        return new Builder(name, Kind.UNARY);
    }

    public static Builder binary(String name) {
        return new Builder(name, Kind.BINARY);
    }

    /** An op with a hand-written front end ({@link Kind#FRONT_END}); {@code differentiable} when that front end records autograd. */
    public static Builder frontEnd(String name, boolean differentiable) {
        Builder b = new Builder(name, Kind.FRONT_END);
        b.frontEndDifferentiable = differentiable;
        return b;
    }

    /** An op with a meta function and a kernel per device ({@link Kind#STRUCTURED}). */
    public static Builder structured(String name) {
        return new Builder(name, Kind.STRUCTURED);
    }

    /** An op that updates its arguments in place ({@link Kind#MUTATING}). */
    public static Builder mutating(String name) {
        return new Builder(name, Kind.MUTATING);
    }

    public static Builder composite(String name) {
        return new Builder(name, Kind.COMPOSITE);
    }

    /** A reduction computed by the backends' accumulating kernel for {@code accumulation}. */
    public static Builder reduction(String name, ReduceOp accumulation) {
        Builder b = new Builder(name, Kind.REDUCTION);
        b.accumulation = accumulation;
        return b;
    }

    /** An op along one dimension ({@link Kind#ALONG_DIM}), by the backends' kernel named {@link #kernel()}. */
    public static Builder alongDim(String name) {
        return new Builder(name, Kind.ALONG_DIM);
    }

    /** A reduction computed by the backends' own kernel named {@link #kernel()} (variance, logsumexp). */
    public static Builder reduction(String name) {
        return new Builder(name, Kind.REDUCTION);
    }

    /** A reduction written as a composition of ops (reductions in it reduce over the call's dimensions). */
    public static Builder compositeReduction(String name) {
        return new Builder(name, Kind.REDUCTION);
    }

    /** The registry's key: unique, as the sources' kernels are named ({@code pow_scalar}, {@code div_floor}). */
    public String name() { return name; }

    /** PyTorch's name, used in error messages and autograd node names ({@code pow}, {@code div}). */
    public String pyName() { return pyName; }

    /** The kernel the backends register for this op (an alias shares another op's kernel). */
    public String kernel() { return kernel; }

    public Kind kind() { return kind; }

    /** A small dense number, unique per op: an index into the per-op tables of the layers above (the dispatcher's plans). */
    public int id() { return id; }

    public Signature signature() { return signature; }

    /** The number of tensor parameters of the signature: the op's inputs (optional ones included). */
    public int tensorInputs() { return tensorInputs; }

    public DTypeRule rule() { return rule; }

    /**
     * The pointwise formula: the math of the op, from which every backend generates its kernel, which the JIT fuses
     * and the reference evaluates. Null for ops that are not pointwise.
     */
    public Expr formula() { return formula; }

    /** Whether the backends run kernels generated from the {@link #formula}: every pointwise op. */
    public boolean hasGeneratedKernels() { return formula != null; }

    /**
     * A composite op's forward, written with ops; for a structured op, its decomposition into other ops, run where no
     * kernel applies ({@link #hasDecomposition}); null for primitives.
     */
    public Expr composition() { return composition; }

    /**
     * Whether this structured op has a decomposition: the dispatcher calls the backend's kernel where one is registered
     * for the device and takes the call's argument form, the {@link #composition} otherwise.
     */
    public boolean hasDecomposition() { return kind == Kind.STRUCTURED && composition != null; }

    /**
     * Whether the kernels read tensor input {@code i} as a dense row-major block: the dispatcher passes them a contiguous
     * copy of a strided one (as the autograd values too, so the backward reads the same block).
     */
    public boolean readsDense(int i) { return i < 32 && (denseInputs & (1 << i)) != 0; }

    /** Whether the kernels read any input dense ({@link #readsDense}). */
    public boolean readsAnyDense() { return denseInputs != 0; }

    /** Whether integer compute divides by the second input (a zero divisor is an error, as PyTorch's). */
    public boolean integerDivision() { return integerDivision; }

    public String doc() { return doc; }

    /** PyTorch's name of the op's autograd node where it is not made from {@link #pyName} (an overload's: {@code ScatterBackward1}); else null. */
    public String node() { return node; }

    /** The accumulating kernel a reduction runs; null for other ops, composite reductions and reductions with their own kernel. */
    public ReduceOp accumulation() { return accumulation; }

    /**
     * The dtype a reduction of float16 or bfloat16 input computes in when no {@code dtype} is given, its result rounded
     * once to the input's dtype ({@code mean}: float32); null where the op computes in the input's dtype.
     */
    public DType halfAccumulation() { return halfAccumulation; }

    /** A structured op's meta function (result shape and dtype from the inputs'); null for other kinds and multi-output ops. */
    public Meta meta() { return meta; }

    /** A multi-output structured op's meta function (every output's shape and dtype); null for single-output ops. */
    public Meta.Multi metaAll() { return metaAll; }

    /**
     * How many tensors the op returns: more than one for a multi-output structured op (output and saved statistics or
     * indices), whose first output is the one autograd differentiates; its derivatives read the others as
     * {@link Expr.Output}.
     */
    public int outputCount() { return metaAll == null ? 1 : outputs.size(); }

    /**
     * Whether the op's tensor parameter is a list ({@code Tensor[]}: {@code cat}, {@code stack}): a call passes as many
     * inputs as the list holds, and its one derivative is evaluated for each ({@link Expr.Part}).
     */
    public boolean isVariadic() {
        return variadic;
    }

    /**
     * The position among the tensor inputs of a trailing optional-tensor list ({@code Tensor?[] indices}: advanced indexing),
     * whose entries are the call's inputs from there on (null for None), or -1. Its entries get no gradient; a derivative
     * reads them all ({@link Expr.Rest}).
     */
    public int listFrom() {
        return listFrom;
    }

    private static int listFrom(Signature signature) {
        int tensors = 0;
        int list = -1;
        for (Param p : signature.params()) {
            if (!p.type().startsWith("Tensor")) continue;
            if (list >= 0) throw new IllegalArgumentException(signature.name() + ": a tensor list is the last tensor parameter");
            if (p.type().equals("Tensor?[]")) list = tensors;
            tensors++;
        }
        return list;
    }

    /**
     * The name of the op's tensor input at {@code index} (its position in a call's inputs), as its signature writes it;
     * an entry of a tensor list is the list's name and the entry's place ({@code tensors[2]}, {@code indices[0]}).
     * For error messages.
     */
    public String tensorParamName(int index) {
        int position = 0;
        for (Param p : signature.params()) {
            if (!p.type().startsWith("Tensor")) continue;
            if (p.type().endsWith("[]")) return p.name() + "[" + (index - position) + "]";
            if (position == index) return p.name();
            position++;
        }
        return "tensor " + index;
    }

    /** A multi-output op's output names, in order (PyTorch's schema names); empty for single-output ops. */
    public List<String> outputNames() { return outputs; }

    /**
     * Whether the kernel of this multi-output op takes a null view for an output after the first that nobody reads: a
     * call that wants the first output only and records no autograd then skips the others (max pooling's indices in
     * inference).
     */
    public boolean skipsUnreadOutputs() { return skipsUnread; }

    /**
     * Whether this op's tensors may live on different devices (the copies {@code _to_copy} and {@code copy_}): its
     * meta function may place the result on another device ({@link Meta.Output#device}), its kernel is the backend's of
     * the accelerator among the devices involved (which copies either way), and autograd brings each input's gradient
     * to that input's device as well as to its dtype.
     */
    public boolean acrossDevices() { return acrossDevices; }

    /**
     * How many of the outputs, from the first, autograd differentiates: 1, or more for an op whose later outputs carry
     * gradients too (an LSTM cell's {@code cy}); its derivatives read them as {@link Expr.OutputGrad}.
     */
    public int gradOutputs() { return gradOutputs; }

    /** The autocast policy on {@code type}, or null when autocast leaves the op untouched there. */
    public CastPolicy autocast(Device.Type type) {
        return autocast.get(type);
    }

    /**
     * The derivative with respect to each tensor input (null where the input gets none), written with ops
     * over the inputs ({@link Expr.In}), the result ({@link Expr#RESULT}) and the output gradient
     * ({@link Expr#GRAD}); empty when the op is not differentiable.
     */
    public List<Expr> derivatives() {
        List<Expr> d = derivativesResolved;
        if (d == null) {
            d = derivatives == null ? List.of() : java.util.Collections.unmodifiableList(new java.util.ArrayList<>(derivatives.get()));
            derivativesResolved = d;
        }
        return d;
    }

    /**
     * How many 128-bit Philox blocks one call of a random op draws from its generator: a pure function of the result's
     * element count and dtype, the inputs' shapes ({@code multinomial} draws per category) and the call's scalars, so
     * that the dispatcher reserves them before the kernel runs.
     */
    @FunctionalInterface
    public interface Draws {
        long blocks(long numel, DType dtype, StridedView[] inputs, double[] scalars);
    }

    /**
     * Whether the op draws random numbers ({@link Draws}): its scalars name a generator by id ({@link #generatorScalar});
     * the dispatcher reserves the blocks the call draws from it and appends the generator's state ({@code RandomOps.state})
     * to the scalars the kernel gets. The trace records the call without that state, so a replay draws anew.
     */
    public boolean isRandom() { return generatorScalar >= 0; }

    /**
     * Whether the op's kernels refuse some values of its inputs (binary_cross_entropy's probabilities outside [0, 1]): a
     * device reports them at its next synchronisation, the CPU at the call. A traced program keeps such an op even where
     * its value goes unread, so that the error is raised as the eager call would.
     */
    public boolean checksValues() { return checksValues; }

    /** The Philox blocks a call draws ({@link #isRandom}); null for deterministic ops and for front ends, which draw their own. */
    public Draws draws() { return draws; }

    /** The index among the call's scalars of the generator's id (PyTorch's {@code Generator? generator}); -1 when not random. */
    public int generatorScalar() { return generatorScalar; }

    /**
     * A mutating op's argument check ({@link Kind#MUTATING}): throws an exception naming the op, and the shapes, dtypes
     * and devices at fault, for arguments its kernels do not take. {@code lists} holds one array of views per list
     * parameter (in signature order; an empty one where an optional list is left out), {@code tensors} one view per
     * tensor parameter (null where an optional one is left out).
     */
    @FunctionalInterface
    public interface Check {
        void check(StridedView[][] lists, StridedView[] tensors, double[] scalars);
    }

    /** A mutating op's argument check; null for other kinds. */
    public Check check() { return check; }

    /**
     * Whether the op takes a callback argument ({@link Param#callback}, {@link Callback}): a JIT-internal structured op
     * whose kernel ({@link KernelRegistry#withCallback}) runs the callback's work on its output's blocks; never traced,
     * never autocast.
     */
    public boolean takesCallback() { return takesCallback; }

    /** Whether parameter {@code p} is written by the op (an alias annotation with {@code !}: {@code Tensor(a!)[]}). */
    public static boolean isMutable(Param p) {
        return p.type().contains("!");
    }

    public boolean isDifferentiable() {
        if (kind == Kind.FRONT_END) return frontEndDifferentiable;
        if (differentiatesThroughComposition()) return rule.isDifferentiable();
        return derivatives != null && rule.isDifferentiable();
    }

    /**
     * Whether autograd records the composition's ops rather than a derivative of the whole: a composite declared without
     * derivatives (layer norm), whose gradients of any order are then those of its parts.
     */
    public boolean differentiatesThroughComposition() {
        return kind == Kind.COMPOSITE && derivatives == null;
    }

    /** The dtype the op computes in, given the inputs' promoted dtype. */
    public DType computeType(DType promoted, DType defaultFloat) {
        return rule.computeType(pyName, promoted, defaultFloat);
    }

    /** The result dtype for compute dtype {@code compute}. */
    public DType resultType(DType compute) {
        return rule.resultType(compute);
    }

    @Override
    public String toString() {
        return signature.toString();
    }

    /** Declares an op; every field but the formula, composition and derivative is required. */
    public static final class Builder {
        private final String name;
        private final Kind kind;
        private String pyName;
        private String kernel;
        private Signature signature;
        private DTypeRule rule;
        private Expr formula;
        private boolean frontEndDifferentiable;
        private Expr composition;
        private Supplier<List<Expr>> derivatives;
        private final Map<Device.Type, CastPolicy> autocast = new EnumMap<>(Device.Type.class);
        private boolean integerDivision;
        private ReduceOp accumulation;
        private Meta meta;
        private Meta.Multi metaAll;
        private List<String> outputs;
        private boolean skipsUnread;
        private boolean acrossDevices;
        private int gradOutputs = 1;
        private int denseInputs;
        private DType halfAccumulation;
        private String doc;
        private String node;
        private Draws draws;
        private int generatorScalar = -1;
        private boolean checksValues;
        private Check check;

        private Builder(String name, Kind kind) {
            this.name = name;
            this.kind = kind;
        }

        public Builder py(String pyName) { this.pyName = pyName; return this; }
        public Builder kernel(String kernel) { this.kernel = kernel; return this; }
        public Builder signature(Param... params) {
            String n = pyName == null ? name : pyName;
            this.signature = outputs == null ? Signature.of(n, params)
                    : new Signature(n, List.of(params), "(" + String.join(", ", outputs.stream().map(o -> "Tensor " + o).toList()) + ")");
            return this;
        }
        /** The schema's return type, for a front end that returns other than one tensor ({@code Tensor[]}); call after {@link #signature}. */
        public Builder returns(String returns) {
            this.signature = new Signature(signature.name(), signature.params(), returns);
            return this;
        }
        public Builder rule(DTypeRule rule) { this.rule = rule; return this; }
        public Builder formula(Expr formula) { this.formula = formula; return this; }
        public Builder composition(Expr composition) { this.composition = composition; return this; }
        /**
         * A structured op's decomposition into other ops, run where no backend kernel takes the call
         * ({@link #hasDecomposition}); its scalars and tensor inputs are the op's.
         */
        public Builder decomposition(Expr decomposition) { this.composition = decomposition; return this; }
        /** The tensor inputs the kernels read as dense blocks ({@link #readsDense}). */
        public Builder denseInputs(int... inputs) {
            for (int i : inputs) denseInputs |= 1 << i;
            return this;
        }
        /** The derivatives, one per tensor input; a supplier because they name ops declared later (or this one). */
        public Builder derivatives(Supplier<List<Expr>> derivatives) { this.derivatives = derivatives; return this; }
        public Builder autocast(Device.Type type, CastPolicy policy) { autocast.put(type, policy); return this; }
        public Builder integerDivision() { this.integerDivision = true; return this; }
        public Builder doc(String doc) { this.doc = doc; return this; }
        public Builder node(String node) { this.node = node; return this; }
        /** A random op ({@link #isRandom}): its scalar {@code generatorScalar} names the generator, {@code draws} counts its blocks. */
        public Builder random(int generatorScalar, Draws draws) {
            this.generatorScalar = generatorScalar;
            this.draws = draws;
            return this;
        }
        /** A random front end ({@link Kind#FRONT_END}): its scalar {@code generatorScalar} names the generator it draws from. */
        public Builder random(int generatorScalar) {
            this.generatorScalar = generatorScalar;
            return this;
        }
        public Builder meta(Meta meta) { this.meta = meta; return this; }
        /** The kernels refuse some input values ({@link #checksValues}). */
        public Builder checksValues() { this.checksValues = true; return this; }
        /** A mutating op's argument check ({@link Kind#MUTATING}). */
        public Builder check(Check check) { this.check = check; return this; }
        /** The kernel skips the outputs after the first when given null views for them ({@link #skipsUnreadOutputs}). */
        public Builder skipsUnreadOutputs() { this.skipsUnread = true; return this; }
        /** The op's tensors may live on different devices ({@link #acrossDevices}). */
        public Builder acrossDevices() { this.acrossDevices = true; return this; }
        /** The first {@code n} outputs are differentiable ({@link #gradOutputs}). */
        public Builder gradOutputs(int n) { this.gradOutputs = n; return this; }
        /** A multi-output op: its outputs' names (call before {@link #signature}) and one meta function for all of them. */
        public Builder outputs(Meta.Multi meta, String... names) {
            this.metaAll = meta;
            this.outputs = List.of(names);
            return this;
        }
        /** A reduction whose float16/bfloat16 input computes in {@code dtype} when no dtype is given ({@link #halfAccumulation}). */
        public Builder halfAccumulatesIn(DType dtype) { this.halfAccumulation = dtype; return this; }

        public OpDef build() {
            return new OpDef(this);
        }
    }
}
