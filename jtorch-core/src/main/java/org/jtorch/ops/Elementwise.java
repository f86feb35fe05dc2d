package org.jtorch.ops;

import static org.jtorch.ops.Dispatcher.view;

import org.jtorch.memory.ElementCodec;
import org.jtorch.memory.ScalarCells;
import org.jtorch.op.Shapes;
import java.lang.foreign.MemorySegment;
import org.jtorch.op.IndexingOps;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.memory.Storage;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Front end of the elementwise ops: checks devices, broadcasts shapes, promotes dtypes, allocates the
 * output and calls the device's backend. In-place forms check that the result fits the destination
 * (shape and castable dtype) and bump the version counter.
 */
public final class Elementwise {
    private Elementwise() {}

    /** The declaration of each hand-written unary and binary op (the enums name their kernels). */
    private static final OpDef[] UNARY = new OpDef[UnaryOp.values().length];
    private static final OpDef[] BINARY = new OpDef[BinaryOp.values().length];

    static {
        for (UnaryOp op : UnaryOp.values()) UNARY[op.ordinal()] = OpRegistry.get(op.name().toLowerCase(java.util.Locale.ROOT));
        for (BinaryOp op : BinaryOp.values()) BINARY[op.ordinal()] = OpRegistry.get(op.name().toLowerCase(java.util.Locale.ROOT));
    }

    public static OpDef declaration(UnaryOp op) {
        return UNARY[op.ordinal()];
    }

    public static OpDef declaration(BinaryOp op) {
        return BINARY[op.ordinal()];
    }

    public static Tensor unary(UnaryOp op, Tensor x, double p0, double p1) {
        return Dispatcher.unary(UNARY[boolForm(op, x.dtype()).ordinal()], x, p0, p1);
    }

    public static Tensor unaryInPlace(UnaryOp op, Tensor x, double p0, double p1) {
        return unaryInPlace(UNARY[boolForm(op, x.dtype()).ordinal()], x, p0, p1);
    }

    /** {@code op(x)} written into {@code x}, for any declared unary op. */
    public static Tensor unaryInPlace(OpDef op, Tensor x, double p0, double p1) {
        String name = op.pyName() + "_";
        x.checkWritable(name);
        DType compute = op.computeType(x.dtype(), Torch.defaultDtype());
        checkCast(name, op.resultType(compute), x.dtype());
        x.checkNoInternalOverlap(name);
        boolean record = op.isDifferentiable() && Autograd.needsGrad(x);
        if (record) checkInPlaceAllowed(name, x);
        Tensor before = record && readsInput(op, 0) ? x.clone() : null;
        Dispatcher.runKernel(op, x, x, null, compute, p0, p1);
        x.bumpVersion();
        if (record) {
            try (before) {
                Dispatcher.record(op, new Tensor[] {x}, new Tensor[] {before}, x, new double[] {p0, p1}, null);
            }
        }
        if (Dispatcher.tracing()) Dispatcher.tracedInPlace(op, new double[] {p0, p1}, x);
        return x;
    }

    private static boolean readsInput(OpDef op, int index) {
        for (org.jtorch.op.Expr d : op.derivatives()) if (d != null && d.readsInput(index)) return true;
        return false;
    }

    /** On bool tensors {@code bitwise_not} is logical not ({@code ~True == False}); the long form would give {@code ~1 != 0}. */
    private static UnaryOp boolForm(UnaryOp op, DType dtype) {
        return op == UnaryOp.BITWISE_NOT && dtype == DType.BOOL ? UnaryOp.LOGICAL_NOT : op;
    }

    public static Tensor binary(BinaryOp op, Tensor a, Tensor b, double alpha) {
        return Dispatcher.binary(BINARY[op.ordinal()], a, b, alpha);
    }

    public static Tensor binaryInPlace(BinaryOp op, Tensor self, Tensor b, double alpha) {
        return binaryInPlace(BINARY[op.ordinal()], self, b, alpha);
    }

    /** {@code self = op(self, b)}, for any declared binary op. */
    public static Tensor binaryInPlace(OpDef op, Tensor self, Tensor b, double alpha) {
        String name = op.pyName() + "_";
        self.checkWritable(name);
        b.checkOpen(name);
        Device device = Dispatcher.pointwiseDevice(op, name, self, b);
        if (!device.equals(self.device())) {
            // PyTorch's TensorIterator takes a 0-dim CPU tensor beside other devices as an input only, never as the output
            throw new IllegalArgumentException(name + ": expected all tensors to be on the same device, but found " + self.device()
                    + " (the tensor written to) and " + b.device());
        }
        long[] shape = Shapes.broadcast(name, self.shape(), b.shape());
        if (!java.util.Arrays.equals(shape, self.shape())) {
            throw new IllegalArgumentException(name + ": output with shape " + Shapes.format(self.shape())
                    + " doesn't match the broadcast shape " + Shapes.format(shape));
        }
        DType compute = op.computeType(TypePromotion.resultType(self, b), Torch.defaultDtype());
        Dispatcher.checkOperands(op, self, b, compute, alpha);
        checkCast(name, op.resultType(compute), self.dtype());
        self.checkNoInternalOverlap(name);
        self.checkNoPartialOverlap(name, b);
        boolean record = op.isDifferentiable() && Autograd.needsGrad(self, b);
        if (record) checkInPlaceAllowed(name, self);
        Tensor before = record && readsInput(op, 0) ? self.clone() : null;
        Dispatcher.checkDivisor(op, b, compute, device);
        Dispatcher.runKernel(op, self, self, b.broadcastTo(shape), compute, alpha, 0);
        self.bumpVersion();
        if (record) {
            try (before) {
                Dispatcher.record(op, new Tensor[] {self, b}, new Tensor[] {before, b}, self, new double[] {alpha}, null);
            }
        }
        if (Dispatcher.tracing()) Dispatcher.tracedInPlace(op, new double[] {alpha}, self, b);
        return self;
    }

    /** {@code op(a, value)} with a Java scalar; {@code reversed} computes {@code op(value, a)}. */
    public static Tensor binaryScalar(BinaryOp op, Tensor a, double value, long longValue, DType scalarType,
                                      boolean reversed, double alpha) {
        Tensor s = wrappedScalar(a, value, longValue, scalarType);
        return reversed ? binary(op, s, a, alpha) : binary(op, a, s, alpha);
    }

    public static Tensor binaryScalarInPlace(BinaryOp op, Tensor a, double value, long longValue, DType scalarType,
                                             double alpha) {
        return binaryInPlace(op, a, wrappedScalar(a, value, longValue, scalarType), alpha);
    }

    /** A Java scalar as the wrapped-number operand of a binary op on {@code like} (for ops called through the dispatcher). */
    public static Tensor scalarOperand(Tensor like, double value, long longValue, DType scalarType) {
        return wrappedScalar(like, value, longValue, scalarType);
    }

    /**
     * {@code torch.where(cond, a, b)} ({@link IndexingOps#WHERE}): {@code a} and {@code b} promoted to their result type
     * first, and a CPU zero-dim operand beside device tensors moved to their device, as PyTorch's TensorIterator does.
     */
    public static Tensor where(Tensor cond, Tensor a, Tensor b) {
        cond.checkOpen("where");
        a.checkOpen("where");
        b.checkOpen("where");
        if (cond.dtype() != DType.BOOL) {
            throw new IllegalArgumentException("where: expected a bool condition, got " + cond.dtype());
        }
        // every CPU zero-dim operand goes where the others are (the condition may be the only one on a device)
        Device device = Dispatcher.pointwiseDevice(IndexingOps.WHERE, "where", cond, a, b);
        DType out = TypePromotion.resultType(a, b);
        Tensor c = operand(cond, cond.dtype(), device), ca = operand(a, out, device), cb = operand(b, out, device);
        try {
            return Dispatcher.call(IndexingOps.WHERE, new Tensor[] {c, ca, cb});
        } finally {
            // a converted operand in the graph stays referenced by its node
            if (c != cond) c.close();
            if (ca != a && !ca.requiresGrad()) ca.close();
            if (cb != b && !cb.requiresGrad()) cb.close();
        }
    }

    /** {@code t} in {@code dtype} on {@code device} (a converted copy, differentiable), or {@code t} itself. */
    private static Tensor operand(Tensor t, DType dtype, Device device) {
        return t.dtype() == dtype && t.device().equals(device) ? t : t.to(device, dtype);
    }

    /**
     * In-place ops may not overwrite a leaf that requires grad (its value is the parameter itself), nor a view of one;
     * an in-place op on a view of another tensor rewrites that tensor's history ({@code CopySlices}), which needs the
     * history the view was made with: views made with grad mode off are refused, as in PyTorch. Called before the op
     * writes anything.
     */
    public static void checkInPlaceAllowed(String op, Tensor self) {
        if (self.requiresGrad() && self.isLeaf()) {
            throw new IllegalStateException(op + ": a leaf tensor that requires grad is being used in an in-place operation;"
                    + " wrap it in Grad.noGrad() (e.g. for initialisation or optimizer updates)");
        }
        if (self.isNoGradViewOfGraphTensor()) {
            throw new IllegalStateException(op + ": a view was created in no_grad mode and is being modified in place with grad mode"
                    + " enabled; clone() it or create it with grad mode on");
        }
        if (self.multiOutputView() != null) {
            throw new IllegalStateException(op + ": " + self.multiOutputView() + " is a view and is being modified in place. This view"
                    + " is the output of a function that returns multiple views. Such functions do not allow the output views to be"
                    + " modified in place. You should replace the in-place operation by an out-of-place one.");
        }
        Tensor base = self.viewBase();
        if (base == null) return;
        if (base.requiresGrad() && base.isLeaf()) {
            throw new IllegalStateException(op + ": a view of a leaf tensor that requires grad is being used in an in-place"
                    + " operation; wrap it in Grad.noGrad() or clone() the leaf");
        }
        if (base.isClosed()) {
            throw new IllegalStateException(op + ": in-place operation on a view whose base tensor (shape "
                    + org.jtorch.op.Shapes.format(base.shape()) + ") was closed: its history is gone");
        }
        if (!base.isContiguous()) {
            throw new IllegalStateException(op + ": in-place operation on a view of a non-contiguous tensor that takes part in"
                    + " autograd is not supported; clone() the tensor first");
        }
    }

    private static final java.util.Map<String, String> BACKWARD_NAMES = new java.util.concurrent.ConcurrentHashMap<>();

    /** {@code threshold_backward} -> {@code ThresholdBackwardBackward0}; cached, names are built once per op. */
    static String backwardName(String pyName) {
        return BACKWARD_NAMES.computeIfAbsent(pyName, Elementwise::buildBackwardName);
    }

    private static String buildBackwardName(String pyName) {
        StringBuilder sb = new StringBuilder();
        boolean upper = true;
        char previous = 0;
        for (char c : pyName.toCharArray()) {
            if (c == '_') {
                upper = true;
                previous = c;
                continue;
            }
            // PyTorch's node names write a spatial rank as 2D (MaxPool2DWithIndicesBackward0)
            boolean rank = c == 'd' && Character.isDigit(previous);
            sb.append(upper || rank ? Character.toUpperCase(c) : c);
            upper = false;
            previous = c;
        }
        return sb.append("Backward0").toString();
    }

    static Tensor castTo(Tensor g, DType t) {
        if (g == null || g.dtype() == t) return g;
        return g.to(t);
    }

    static SavedTensor[] nonNull(SavedTensor... s) {
        int n = 0;
        for (SavedTensor x : s) if (x != null) n++;
        SavedTensor[] r = new SavedTensor[n];
        n = 0;
        for (SavedTensor x : s) if (x != null) r[n++] = x;
        return r;
    }

    /**
     * A zero-dimensional "wrapped number" holding a Java scalar, in the dtype the op will compute in,
     * so that the kernel's fast paths apply. On the CPU it is a {@link ScalarCells} cell: no allocator round trip.
     */
    static Tensor wrappedScalar(Tensor like, double value, long longValue, DType scalarType) {
        DType promoted = new TypePromotion.State().add(like).addScalar(scalarType).result();
        // A half-precision op computes in float32 with the scalar unrounded, as PyTorch's opmath does (70001 would be
        // inf in float16, 0.1 off by 0.2% in bfloat16); a float32 wrapped number never changes the result's dtype.
        DType t = promoted == DType.BFLOAT16 || promoted == DType.FLOAT16 ? DType.FLOAT32 : promoted;
        if (!like.device().isCpu()) {
            // Made inside the op, as the CPU's heap scalar below: not an op of the trace.
            Tensor s = Dispatcher.withoutTrace(() -> t.isFloatingPoint() ? Torch.full(new long[0], value, t, like.device())
                    : Torch.full(new long[0], longValue, t, like.device()));
            s.markWrappedNumber();
            return s;
        }
        MemorySegment seg = ScalarCells.allocate();
        if (t.isFloatingPoint()) ElementCodec.setDouble(t, seg, 0, value);
        else ElementCodec.setLong(t, seg, 0, longValue);
        Tensor s = Tensor.fromStorage(Storage.wrapConstant(seg), t, new long[0], new long[0], 0);
        s.markWrappedNumber();
        return s;
    }

    static void checkCast(String op, DType result, DType dest) {
        if (!TypePromotion.canCast(result, dest)) {
            throw new IllegalArgumentException(op + ": result type " + result + " can't be cast to the desired output type "
                    + dest);
        }
    }
}
