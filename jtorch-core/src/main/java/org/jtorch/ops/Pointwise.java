package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.op.PointwiseOps;

/**
 * Composite pointwise ops built from the elementwise primitives, so that every backend (and autograd)
 * gets them for free: {@code addcmul}, {@code addcdiv} and {@code lerp}. The intermediate product
 * is formed as {@code (value * tensor1)} first, in the op's computation type, as ATen's CPU kernels
 * evaluate {@code self + value * tensor1 * tensor2}; results therefore round like PyTorch's.
 */
public final class Pointwise {
    private Pointwise() {}

    /** {@code self + value * tensor1 * tensor2} ({@link PointwiseOps#ADDCMUL}). */
    public static Tensor addcmul(Tensor self, Tensor tensor1, Tensor tensor2, double value) {
        return Dispatcher.call(PointwiseOps.ADDCMUL, new Tensor[] {self, tensor1, tensor2}, value);
    }

    public static Tensor addcmul_(Tensor self, Tensor tensor1, Tensor tensor2, double value) {
        checkDestination("addcmul_", self, tensor1, tensor2);
        try (Tensor product = scaledProduct("addcmul_", tensor1, tensor2, value, false)) {
            return self.add_(product);
        }
    }

    /** {@code self + value * tensor1 / tensor2}; integer division is rejected, as in PyTorch ({@link PointwiseOps#ADDCDIV}). */
    public static Tensor addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, double value) {
        checkOpen("addcdiv", tensor1, tensor2);
        checkDivision("addcdiv", tensor1, tensor2);
        return Dispatcher.call(PointwiseOps.ADDCDIV, new Tensor[] {self, tensor1, tensor2}, value);
    }

    public static Tensor addcdiv_(Tensor self, Tensor tensor1, Tensor tensor2, double value) {
        checkDestination("addcdiv_", self, tensor1, tensor2);
        try (Tensor quotient = scaledProduct("addcdiv_", tensor1, tensor2, value, true)) {
            return self.add_(quotient);
        }
    }

    /** {@code self + weight * (end - self)}, in place. */
    public static Tensor lerp_(Tensor self, Tensor end, double weight) {
        if (!self.dtype().isFloatingPoint() || !end.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("lerp_: expected floating tensors, got " + self.dtype() + " and " + end.dtype());
        }
        checkDestination("lerp_", self, end, end);
        try (Tensor diff = end.sub(self)) {
            return self.add_(diff, weight);
        }
    }

    private static Tensor scaledProduct(String op, Tensor t1, Tensor t2, double value, boolean divide) {
        checkOpen(op, t1, t2);
        if (divide) checkDivision(op, t1, t2);
        Tensor scaled = value == 1 ? t1.alias() : t1.mul(value);
        try (scaled) {
            return divide ? scaled.div(t2) : scaled.mul(t2);
        }
    }

    /**
     * Composites write through {@code add_} from a temporary, so the destination's overlap with itself and
     * with the inputs is checked here, before computing, under this op's name.
     */
    private static void checkDestination(String op, Tensor self, Tensor input1, Tensor input2) {
        self.checkWritable(op);
        self.checkNoInternalOverlap(op);
        self.checkNoPartialOverlap(op, input1);
        self.checkNoPartialOverlap(op, input2);
    }

    private static void checkDivision(String op, Tensor t1, Tensor t2) {
        if (!t1.dtype().isFloatingPoint() && !t2.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": integer division with addcdiv is no longer supported (dtypes "
                    + t1.dtype() + " and " + t2.dtype() + "); use true division of floating tensors instead");
        }
    }

    private static void checkOpen(String op, Tensor t1, Tensor t2) {
        t1.checkOpen(op);
        t2.checkOpen(op);
    }
}
