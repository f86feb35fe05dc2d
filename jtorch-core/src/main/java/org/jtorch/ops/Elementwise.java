package org.jtorch.ops;

import java.lang.foreign.MemorySegment;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.backend.Backends;
import org.jtorch.backend.cpu.ElementIO;
import org.jtorch.memory.Storage;

/**
 * Front end of the elementwise ops: checks devices, broadcasts shapes, promotes dtypes, allocates the
 * output and calls the device's backend. In-place forms check that the result fits the destination
 * (shape and castable dtype) and bump the version counter.
 */
public final class Elementwise {
    private Elementwise() {}

    public static Tensor unary(UnaryOp op, Tensor x, double p0, double p1) {
        x.checkOpen(op.pyName());
        op = boolForm(op, x.dtype());
        DType out = op.resultType(x.dtype(), Torch.defaultDtype());
        Tensor r = Tensor.empty(x.shape(), out, x.device());
        Backends.of(x.device()).unary(op, x, r, op.computeType(x.dtype(), out), p0, p1);
        return r;
    }

    public static Tensor unaryInPlace(UnaryOp op, Tensor x, double p0, double p1) {
        x.checkOpen(op.pyName() + "_");
        op = boolForm(op, x.dtype());
        DType out = op.resultType(x.dtype(), Torch.defaultDtype());
        checkCast(op.pyName() + "_", out, x.dtype());
        Backends.of(x.device()).unary(op, x, x, op.computeType(x.dtype(), out), p0, p1);
        x.bumpVersion();
        return x;
    }

    /** On bool tensors {@code bitwise_not} is logical not ({@code ~True == False}); the long form would give {@code ~1 != 0}. */
    private static UnaryOp boolForm(UnaryOp op, DType dtype) {
        return op == UnaryOp.BITWISE_NOT && dtype == DType.BOOL ? UnaryOp.LOGICAL_NOT : op;
    }

    public static Tensor binary(BinaryOp op, Tensor a, Tensor b, double alpha) {
        String name = op.pyName();
        a.checkOpen(name);
        b.checkOpen(name);
        Device device = commonDevice(name, a, b);
        long[] shape = Shapes.broadcast(name, a.shape(), b.shape());
        DType compute = op.computeType(TypePromotion.resultType(a, b), Torch.defaultDtype());
        checkOperands(op, a, b, compute, alpha);
        Tensor r = Tensor.empty(shape, op.resultType(compute), device);
        Backends.of(device).binary(op, a.broadcastTo(shape), b.broadcastTo(shape), r, compute, alpha);
        return r;
    }

    public static Tensor binaryInPlace(BinaryOp op, Tensor self, Tensor b, double alpha) {
        String name = op.pyName() + "_";
        self.checkOpen(name);
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
        Backends.of(device).binary(op, self, b.broadcastTo(shape), self, compute, alpha);
        self.bumpVersion();
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
