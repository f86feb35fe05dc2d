package org.jtorch.ops;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;

/**
 * PyTorch's {@code result_type}: operands with dimensions take precedence over zero-dimensional
 * tensors, which take precedence over wrapped Java scalars, except that a lower-priority operand of
 * a higher category (bool &lt; integral &lt; floating) lifts the result to that category. A floating Java
 * scalar counts as the default dtype.
 */
public final class TypePromotion {
    private TypePromotion() {}

    /** Accumulates operands, as ATen's ResultTypeState. */
    public static final class State {
        private DType dimResult;
        private DType zeroDimResult;
        private DType wrappedResult;

        public State add(Tensor t) {
            if (t.isWrappedNumber()) {
                DType d = t.dtype().isFloatingPoint() ? Torch.defaultDtype() : t.dtype();
                wrappedResult = promote(wrappedResult, d);
            } else if (t.dim() == 0) {
                zeroDimResult = promote(zeroDimResult, t.dtype());
            } else {
                dimResult = promote(dimResult, t.dtype());
            }
            return this;
        }

        /** Adds a Java scalar: {@code floating} for double values, else integral ({@code bool} for booleans). */
        public State addScalar(DType scalarType) {
            DType d = scalarType.isFloatingPoint() ? Torch.defaultDtype() : scalarType;
            wrappedResult = promote(wrappedResult, d);
            return this;
        }

        public DType result() {
            return combine(dimResult, combine(zeroDimResult, wrappedResult));
        }
    }

    public static DType resultType(Tensor a, Tensor b) {
        return new State().add(a).add(b).result();
    }

    private static DType promote(DType a, DType b) {
        if (a == null) return b;
        if (b == null) return a;
        return DType.promote(a, b);
    }

    private static DType combine(DType higher, DType lower) {
        if (higher == null) return lower;
        if (lower == null) return higher;
        if (higher.isFloatingPoint()) return higher;
        if (higher == DType.BOOL || lower.isFloatingPoint()) return DType.promote(higher, lower);
        return higher;
    }

    /** {@code torch.can_cast}: no floating to integral, no non-bool to bool. */
    public static boolean canCast(DType from, DType to) {
        if (from.isFloatingPoint() && !to.isFloatingPoint()) return false;
        if (from != DType.BOOL && to == DType.BOOL) return false;
        return true;
    }
}
