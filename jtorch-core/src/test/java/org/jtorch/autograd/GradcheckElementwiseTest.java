package org.jtorch.autograd;

import static org.jtorch.autograd.GradcheckSupport.on;
import static org.jtorch.autograd.GradcheckSupport.assertNode;
import static org.jtorch.autograd.GradcheckSupport.gradcheck;
import static org.jtorch.autograd.GradcheckSupport.input;
import static org.jtorch.autograd.GradcheckSupport.positive;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.UnaryOp;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Backward formulas of every differentiable elementwise op checked against central finite
 * differences in float64 ({@link Gradcheck}, PyTorch's tolerances): same shapes, broadcasting,
 * 0-d and Java-scalar operands, and the in-place forms on non-leaf tensors. Inputs avoid the points
 * where an op is not differentiable ({@code relu}/{@code abs} at 0, {@code log}/{@code sqrt} at
 * non-positive values).
 */
class GradcheckElementwiseTest {

    /** A unary op with its parameters and whether it needs positive inputs. */
    private record UnaryCase(UnaryOp op, double p0, double p1, boolean positiveOnly) {
        String name() {
            return op.name().toLowerCase() + (p0 != 0 || p1 != 0 ? "(" + p0 + ", " + p1 + ")" : "");
        }
    }

    private static final Set<UnaryOp> NOT_DIFFERENTIABLE =
            EnumSet.of(UnaryOp.LOGICAL_NOT, UnaryOp.BITWISE_NOT, UnaryOp.ISNAN, UnaryOp.ISINF, UnaryOp.ISFINITE);

    private static List<UnaryCase> unaryCases() {
        List<UnaryCase> cases = new ArrayList<>();
        for (UnaryOp op : UnaryOp.values()) {
            if (NOT_DIFFERENTIABLE.contains(op)) continue;
            switch (op) {
                case LEAKY_RELU -> cases.add(new UnaryCase(op, 0.1, 0, false));
                case CLAMP -> {
                    cases.add(new UnaryCase(op, -0.5, 0.5, false));
                    cases.add(new UnaryCase(op, Double.NEGATIVE_INFINITY, 0.3, false));
                }
                // beta 2, threshold 1: inputs on both sides of the linear region
                case SOFTPLUS -> cases.add(new UnaryCase(op, 2, 1, false));
                case POW_SCALAR -> {
                    cases.add(new UnaryCase(op, 3, 0, false));
                    cases.add(new UnaryCase(op, 2.5, 0, true));
                    cases.add(new UnaryCase(op, -1.5, 0, true));
                    cases.add(new UnaryCase(op, 0, 0, false));
                }
                case LOG, LOG1P, SQRT, RSQRT -> cases.add(new UnaryCase(op, 0, 0, true));
                default -> cases.add(new UnaryCase(op, 0, 0, false));
            }
        }
        return cases;
    }

    @TestFactory
    List<DynamicTest> everyDifferentiableUnaryOp() {
        List<DynamicTest> tests = new ArrayList<>();
        for (UnaryCase c : unaryCases()) {
            tests.add(DynamicTest.dynamicTest(c.name(), () -> {
                try (Tensor x = c.positiveOnly() ? positive(3, 4) : input(3, 4); Tensor s = c.positiveOnly() ? positive() : input()) {
                    gradcheck(a -> Elementwise.unary(c.op(), a[0], c.p0(), c.p1()), x);
                    gradcheck(a -> Elementwise.unary(c.op(), a[0], c.p0(), c.p1()), s);
                    // non-contiguous input
                    gradcheck(a -> {
                        try (Tensor t = a[0].t()) {
                            return Elementwise.unary(c.op(), t, c.p0(), c.p1());
                        }
                    }, x);
                }
            }));
            tests.add(DynamicTest.dynamicTest(c.name() + "_ in place on a non-leaf", () -> {
                try (Tensor x = c.positiveOnly() ? positive(2, 3) : input(2, 3)) {
                    gradcheck(a -> Elementwise.unaryInPlace(c.op(), a[0].mul(1.0), c.p0(), c.p1()), x);
                }
            }));
        }
        return tests;
    }

    @Test
    void everyUnaryOpIsCoveredOrDeclaredNonDifferentiable() {
        Set<UnaryOp> covered = EnumSet.copyOf(NOT_DIFFERENTIABLE);
        for (UnaryCase c : unaryCases()) covered.add(c.op());
        assertEquals(EnumSet.allOf(UnaryOp.class), covered);
    }

    @Test
    void predicatesRecordNothing() {
        try (Tensor x = input(3); Tensor n = x.isnan(); Tensor f = x.isfinite(); Tensor l = x.logicalNot()) {
            for (Tensor t : new Tensor[] {n, f, l}) {
                assertFalse(t.requiresGrad());
                assertNull(t.gradFn());
            }
        }
    }

    @Test
    void unaryNodeNamesArePyTorchs() {
        try (Tensor x = input(2)) {
            assertNode("ExpBackward0", a -> a[0].exp(), x);
            assertNode("ReluBackward0", a -> a[0].relu(), x);
            assertNode("LeakyReluBackward0", a -> a[0].leakyRelu(0.2), x);
            assertNode("SigmoidBackward0", a -> a[0].sigmoid(), x);
        }
    }

    // ---------------------------------------------------------------- binary

    private static final Set<BinaryOp> DIFFERENTIABLE = EnumSet.of(BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV,
            BinaryOp.DIV_TRUNC, BinaryOp.DIV_FLOOR, BinaryOp.REMAINDER, BinaryOp.POW, BinaryOp.MAXIMUM, BinaryOp.MINIMUM);

    /** Operand shape pairs: same, broadcast both ways, 0-d, size-1 dims. */
    private static final long[][][] SHAPES = {
            {{3, 4}, {3, 4}},
            {{3, 1}, {4}},
            {{2, 3}, {}},
            {{}, {2, 3}},
            {{1, 3}, {2, 1}},
    };

    private static Tensor operandFor(BinaryOp op, boolean first, long[] shape) {
        // pow needs a positive base; remainder's discontinuities and div's pole are avoided by the value ranges.
        return op == BinaryOp.POW && first ? positive(shape) : first ? input(shape) : GradcheckSupport.other(shape);
    }

    @TestFactory
    List<DynamicTest> everyDifferentiableBinaryOp() {
        List<DynamicTest> tests = new ArrayList<>();
        for (BinaryOp op : DIFFERENTIABLE) {
            double alpha = op == BinaryOp.ADD || op == BinaryOp.SUB ? 1.5 : 1;
            for (long[][] shapes : SHAPES) {
                String name = op.pyName() + " " + org.jtorch.op.Shapes.format(shapes[0]) + " " + org.jtorch.op.Shapes.format(shapes[1]);
                tests.add(DynamicTest.dynamicTest(name, () -> {
                    try (Tensor a = operandFor(op, true, shapes[0]); Tensor b = operandFor(op, false, shapes[1])) {
                        gradcheck(t -> Elementwise.binary(op, t[0], t[1], alpha), a, b);
                    }
                }));
            }
            tests.add(DynamicTest.dynamicTest(op.pyName() + " with a Java scalar, both sides", () -> {
                try (Tensor a = operandFor(op, true, new long[] {2, 3}); Tensor b = operandFor(op, false, new long[] {2, 3})) {
                    double s = op == BinaryOp.POW ? 1.7 : -0.7;
                    gradcheck(t -> Elementwise.binaryScalar(op, t[0], s, 0, DType.FLOAT64, false, alpha), a);
                    gradcheck(t -> Elementwise.binaryScalar(op, t[0], Math.abs(s), 0, DType.FLOAT64, true, alpha), b);
                }
            }));
            tests.add(DynamicTest.dynamicTest(op.pyName() + "_ in place on a non-leaf, broadcasting the other operand", () -> {
                try (Tensor a = operandFor(op, true, new long[] {2, 3}); Tensor b = operandFor(op, false, new long[] {3})) {
                    gradcheck(t -> Elementwise.binaryInPlace(op, t[0].mul(1.0), t[1], alpha), a, b);
                }
            }));
        }
        return tests;
    }

    @Test
    void maximumAndMinimumSplitTheGradientOnTies() {
        // PyTorch 1.13 derivatives.yaml: where(self == other, grad / 2, grad).masked_fill(self < other, 0)
        try (Tensor a = on(Torch.tensor(1.0, 2.0, 3.0)).requiresGrad_(); Tensor b = on(Torch.tensor(1.0, 5.0, 0.0)).requiresGrad_();
             Tensor y = a.maximum(b); Tensor ones = Torch.onesLike(y)) {
            y.backward(ones);
            assertArrayEquals(new double[] {0.5, 0, 1}, a.grad().toDoubleArray());
            assertArrayEquals(new double[] {0.5, 1, 0}, b.grad().toDoubleArray());
        }
    }

    @Test
    void gradientsOfMixedDtypeOperandsHaveEachOperandsDtype() {
        try (Tensor f = Torch.ones(new long[] {2, 3}, DType.FLOAT32, Fixtures.device()).requiresGrad_();
             Tensor d = Torch.full(new long[] {3}, 2.0, DType.FLOAT64, Fixtures.device()).requiresGrad_();
             Tensor y = f.mul(d); Tensor ones = Torch.onesLike(y)) {
            assertEquals(DType.FLOAT64, y.dtype());
            y.backward(ones);
            assertEquals(DType.FLOAT32, f.grad().dtype());
            assertArrayEquals(new float[] {2, 2, 2, 2, 2, 2}, f.grad().toFloatArray());
            assertEquals(DType.FLOAT64, d.grad().dtype());
            assertArrayEquals(new long[] {3}, d.grad().shape());
            assertArrayEquals(new double[] {2, 2, 2}, d.grad().toDoubleArray());
        }
    }

    @Test
    void integerOperandsGetNoGradient() {
        try (Tensor x = input(3); Tensor i = on(Torch.tensor(1L, 2L, 3L)); Tensor y = x.mul(i); Tensor ones = Torch.onesLike(y)) {
            y.backward(ones);
            assertArrayEquals(new double[] {1, 2, 3}, x.grad().toDoubleArray());
            assertNull(i.grad());
        }
    }

    @Test
    void comparisonsRecordNothing() {
        try (Tensor a = input(3); Tensor b = input(3); Tensor lt = a.lt(b); Tensor eq = a.eq(b)) {
            assertFalse(lt.requiresGrad());
            assertFalse(eq.requiresGrad());
        }
    }

    @Test
    void whereBroadcastsBothBranches() {
        try (Tensor a = input(3, 1); Tensor b = input(4); Tensor c = on(Torch.tensor(new boolean[] {true, false, true, true}, 4))) {
            gradcheck(t -> Torch.where(c, t[0], t[1]), a, b);
            assertNode("WhereBackward0", t -> Torch.where(c, t[0], t[1]), a, b);
        }
    }

    @Test
    void binaryNodeNamesArePyTorchs() {
        try (Tensor a = input(2); Tensor b = input(2)) {
            Function<Tensor[], Tensor> mul = t -> t[0].mul(t[1]);
            assertNode("MulBackward0", mul, a, b);
            assertNode("DivBackward0", t -> t[0].div(t[1]), a, b);
            assertNode("AddBackward0", t -> t[0].add(t[1]), a, b);
        }
    }
}
