package org.jtorch.ops;

import java.lang.foreign.MemorySegment;
import org.jtorch.amp.Autocast;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.backend.cpu.ElementIO;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.memory.Storage;

/**
 * Front end of the elementwise ops: checks devices, broadcasts shapes, promotes dtypes, allocates the
 * output and calls the device's backend. In-place forms check that the result fits the destination
 * (shape and castable dtype) and bump the version counter.
 */
public final class Elementwise {
    private Elementwise() {}

    public static Tensor unary(UnaryOp op, Tensor x, double p0, double p1) {
        if (Autocast.isActive()) {
            UnaryOp u = op;
            Tensor r = Autocast.run(u.pyName(), t -> unary(u, t[0], p0, p1), x);
            if (r != null) return r;
        }
        x.checkOpen(op.pyName());
        op = boolForm(op, x.dtype());
        DType out = op.resultType(x.dtype(), Torch.defaultDtype());
        Tensor r = Tensor.empty(x.shape(), out, x.device());
        Backends.of(x.device()).unary(op, x, r, op.computeType(x.dtype(), out), p0, p1);
        if (Autograd.needsGrad(x) && out.isFloatingPoint()) recordUnary(op, x, r, x, p0, p1);
        return r;
    }

    /** Records the backward of {@code y = op(x)}; {@code savedInput} is x's value before the op. */
    private static void recordUnary(UnaryOp op, Tensor x, Tensor y, Tensor savedInput, double p0, double p1) {
        UnaryOp.Saves saves = op.saves();
        SavedTensor sx = saves == UnaryOp.Saves.INPUT ? Autograd.save(savedInput) : null;
        SavedTensor sy = saves == UnaryOp.Saves.RESULT ? Autograd.save(y) : null;
        DType inType = x.dtype();
        Autograd.record(backwardName(op.pyName()), y, g -> new Tensor[] {
                castTo(op.gradient(g[0], sx == null ? null : sx.get(), sy == null ? null : sy.get(), p0, p1), inType)},
                new Tensor[] {x}, nonNull(sx, sy));
    }

    public static Tensor unaryInPlace(UnaryOp op, Tensor x, double p0, double p1) {
        x.checkWritable(op.pyName() + "_");
        op = boolForm(op, x.dtype());
        DType out = op.resultType(x.dtype(), Torch.defaultDtype());
        checkCast(op.pyName() + "_", out, x.dtype());
        x.checkNoInternalOverlap(op.pyName() + "_");
        boolean record = Autograd.needsGrad(x);
        if (record) checkInPlaceAllowed(op.pyName() + "_", x);
        Tensor before = record && op.saves() == UnaryOp.Saves.INPUT ? x.clone() : null;
        Backends.of(x.device()).unary(op, x, x, op.computeType(x.dtype(), out), p0, p1);
        x.bumpVersion();
        if (record) {
            try (before) {
                recordUnary(op, x, x, before, p0, p1);
            }
        }
        return x;
    }

    /** On bool tensors {@code bitwise_not} is logical not ({@code ~True == False}); the long form would give {@code ~1 != 0}. */
    private static UnaryOp boolForm(UnaryOp op, DType dtype) {
        return op == UnaryOp.BITWISE_NOT && dtype == DType.BOOL ? UnaryOp.LOGICAL_NOT : op;
    }

    public static Tensor binary(BinaryOp op, Tensor a, Tensor b, double alpha) {
        if (Autocast.isActive()) {
            Tensor r = Autocast.run(op.pyName(), t -> binary(op, t[0], t[1], alpha), a, b);
            if (r != null) return r;
        }
        String name = op.pyName();
        a.checkOpen(name);
        b.checkOpen(name);
        Device device = commonDevice(name, a, b);
        long[] shape = Shapes.broadcast(name, a.shape(), b.shape());
        DType compute = op.computeType(TypePromotion.resultType(a, b), Torch.defaultDtype());
        checkOperands(op, a, b, compute, alpha);
        Tensor r = Tensor.empty(shape, op.resultType(compute), device);
        Backends.of(device).binary(op, a.broadcastTo(shape), b.broadcastTo(shape), r, compute, alpha);
        if (op.isDifferentiable() && Autograd.needsGrad(a, b)) recordBinary(op, a, b, r, a, b, alpha);
        return r;
    }

    /** Records {@code y = op(a, b)}; {@code va}, {@code vb} are the operands' values before the op. */
    private static void recordBinary(BinaryOp op, Tensor a, Tensor b, Tensor y, Tensor va, Tensor vb, double alpha) {
        SavedTensor sa = op.savesInputs() ? Autograd.save(va) : null;
        SavedTensor sb = op.savesInputs() ? Autograd.save(vb) : null;
        SavedTensor sy = op.savesResult() ? Autograd.save(y) : null;
        long[] aShape = a.shape();
        long[] bShape = b.shape();
        DType aType = a.dtype();
        DType bType = b.dtype();
        boolean aGrad = a.requiresGrad();
        boolean bGrad = b.requiresGrad();
        Autograd.record(backwardName(op.pyName()), y, g -> {
            Tensor[] grads = op.gradient(g[0], sa == null ? null : sa.get(), sb == null ? null : sb.get(),
                    sy == null ? null : sy.get(), alpha);
            return new Tensor[] {
                    aGrad ? Gradients.sumTo(grads[0], aShape, aType) : null,
                    bGrad ? Gradients.sumTo(grads[1], bShape, bType) : null};
        }, new Tensor[] {a, b}, nonNull(sa, sb, sy));
    }

    public static Tensor binaryInPlace(BinaryOp op, Tensor self, Tensor b, double alpha) {
        String name = op.pyName() + "_";
        self.checkWritable(name);
        b.checkOpen(name);
        Device device = commonDevice(name, self, b);
        long[] shape = Shapes.broadcast(name, self.shape(), b.shape());
        if (!java.util.Arrays.equals(shape, self.shape())) {
            throw new IllegalArgumentException(name + ": output with shape " + Shapes.format(self.shape())
                    + " doesn't match the broadcast shape " + Shapes.format(shape));
        }
        DType compute = op.computeType(TypePromotion.resultType(self, b), Torch.defaultDtype());
        checkOperands(op, self, b, compute, alpha);
        checkCast(name, op.resultType(compute), self.dtype());
        self.checkNoInternalOverlap(name);
        self.checkNoPartialOverlap(name, b);
        boolean record = op.isDifferentiable() && Autograd.needsGrad(self, b);
        if (record) checkInPlaceAllowed(name, self);
        Tensor before = record && op.savesInputs() ? self.clone() : null;
        Backends.of(device).binary(op, self, b.broadcastTo(shape), self, compute, alpha);
        self.bumpVersion();
        if (record) {
            try (before) {
                recordBinary(op, self, b, self, before, b, alpha);
            }
        }
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

    /** {@code torch.where(cond, a, b)} */
    public static Tensor where(Tensor cond, Tensor a, Tensor b) {
        cond.checkOpen("where");
        a.checkOpen("where");
        b.checkOpen("where");
        if (cond.dtype() != DType.BOOL) {
            throw new IllegalArgumentException("where: expected a bool condition, got " + cond.dtype());
        }
        commonDevice("where", cond, a);
        Device device = commonDevice("where", a, b);
        long[] shape = Shapes.broadcast("where", Shapes.broadcast("where", cond.shape(), a.shape()), b.shape());
        DType out = TypePromotion.resultType(a, b);
        Tensor r = Tensor.empty(shape, out, device);
        Backends.of(device).where(cond.broadcastTo(shape), a.broadcastTo(shape), b.broadcastTo(shape), r);
        if (Autograd.needsGrad(a, b)) {
            SavedTensor sc = Autograd.save(cond);
            long[] aShape = a.shape();
            long[] bShape = b.shape();
            DType aType = a.dtype();
            DType bType = b.dtype();
            boolean aGrad = a.requiresGrad();
            boolean bGrad = b.requiresGrad();
            Autograd.record("WhereBackward0", r, g -> {
                Tensor c = sc.get();
                return new Tensor[] {
                        aGrad ? Gradients.sumTo(g[0].maskedFill(c.logicalNot(), 0.0), aShape, aType) : null,
                        bGrad ? Gradients.sumTo(g[0].maskedFill(c, 0.0), bShape, bType) : null};
            }, new Tensor[] {a, b}, sc);
        }
        return r;
    }

    /**
     * In-place ops may not overwrite a leaf that requires grad (its value is the parameter itself),
     * and jtorch does not yet rebase the graph of a view's base, so in-place ops on views of tensors
     * that require grad are refused rather than giving wrong gradients.
     */
    public static void checkInPlaceAllowed(String op, Tensor self) {
        if (self.requiresGrad() && self.isLeaf()) {
            throw new IllegalStateException(op + ": a leaf tensor that requires grad is being used in an in-place operation;"
                    + " wrap it in Grad.noGrad() (e.g. for initialisation or optimizer updates)");
        }
        if (self.isViewOfGraphTensor()) {
            throw new IllegalStateException(op + ": in-place operation on a view of a tensor that requires grad is not supported;"
                    + " use the out-of-place form");
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
        for (char c : pyName.toCharArray()) {
            if (c == '_') {
                upper = true;
                continue;
            }
            sb.append(upper ? Character.toUpperCase(c) : c);
            upper = false;
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
     * so that the kernel's fast paths apply. On the CPU it lives on the heap: no allocator round trip.
     */
    static Tensor wrappedScalar(Tensor like, double value, long longValue, DType scalarType) {
        DType t = new TypePromotion.State().add(like).addScalar(scalarType).result();
        if (!like.device().isCpu()) {
            Tensor s = Torch.full(new long[0], t.isFloatingPoint() ? value : longValue, t, like.device());
            s.markWrappedNumber();
            return s;
        }
        MemorySegment seg = MemorySegment.ofArray(new long[1]);
        if (t.isFloatingPoint()) ElementIO.setDouble(t, seg, 0, value);
        else ElementIO.setLong(t, seg, 0, longValue);
        Tensor s = Tensor.fromStorage(Storage.wrapHeap(seg), t, new long[0], new long[0], 0);
        s.markWrappedNumber();
        return s;
    }

    static Device commonDevice(String op, Tensor a, Tensor b) {
        Device da = a.device();
        Device db = b.device();
        if (da.equals(db)) return da;
        // A CPU zero-dim tensor may combine with a tensor on any device, as in PyTorch.
        if (da.isCpu() && a.dim() == 0) return db;
        if (db.isCpu() && b.dim() == 0) return da;
        throw new IllegalArgumentException(op + ": expected all tensors to be on the same device, but found " + da
                + " and " + db);
    }

    /** PyTorch's operand rules beyond promotion: no bool operand in {@code sub}, no fractional {@code alpha} for integers. */
    static void checkOperands(BinaryOp op, Tensor a, Tensor b, DType compute, double alpha) {
        if (op == BinaryOp.SUB && (a.dtype() == DType.BOOL || b.dtype() == DType.BOOL)) {
            throw new IllegalArgumentException("sub: subtraction with a bool tensor (dtypes " + a.dtype() + " and "
                    + b.dtype() + ") is not supported; use logical_xor() or bitwise_not() instead");
        }
        if (!compute.isFloatingPoint() && alpha != Math.rint(alpha)) {
            throw new IllegalArgumentException(op.pyName() + ": for integral input tensors (" + compute
                    + "), alpha must not be a floating point number, got " + alpha);
        }
    }

    static void checkCast(String op, DType result, DType dest) {
        if (!TypePromotion.canCast(result, dest)) {
            throw new IllegalArgumentException(op + ": result type " + result + " can't be cast to the desired output type "
                    + dest);
        }
    }
}
