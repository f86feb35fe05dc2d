package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.ElementwisePlan.Launch;
import org.jtorch.cuda.kernels.ElementwisePlan.Operand;
import org.jtorch.cuda.kernels.ElementwisePlan.Strided;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.ops.BinaryOp;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.UnaryOp;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The host-side choices of an elementwise launch (no GPU): entry-point names as {@code elementwise.cu}
 * and {@code copy.cu} spell them, the contiguous path only when every operand is contiguous and of the
 * compute dtype, and the strided path's coalesced sizes, strides and dtype codes.
 */
class ElementwisePlanTest {
    private static Operand contiguous(DType t, long... shape) {
        return new Operand(t, org.jtorch.op.Shapes.contiguousStrides(shape), true);
    }

    private static Operand strided(DType t, long... strides) {
        return new Operand(t, strides, false);
    }

    @Test
    void dtypeSuffixesAreTheSourcesOnes() {
        String[] expected = {"bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
        for (DType t : DType.values()) assertEquals(expected[t.ordinal()], ElementwisePlan.suffix(t), t.toString());
        assertEquals("f32", ElementwisePlan.stridedSuffix(DType.FLOAT16));
        assertEquals("f32", ElementwisePlan.stridedSuffix(DType.BFLOAT16));
        assertEquals("f32", ElementwisePlan.stridedSuffix(DType.FLOAT32));
        assertEquals("f64", ElementwisePlan.stridedSuffix(DType.FLOAT64));
        assertEquals("i64", ElementwisePlan.stridedSuffix(DType.INT32));
        assertEquals("i64", ElementwisePlan.stridedSuffix(DType.BOOL));
    }

    @Test
    void sameDtypeContiguousOperandsTakeTheVectorKernelOfThatDtype() {
        long[] shape = {2, 3, 4};
        Launch l = ElementwisePlan.unary(PointwiseOps.EXP, DType.FLOAT32, shape, contiguous(DType.FLOAT32, shape), contiguous(DType.FLOAT32, shape));
        assertEquals("jt_unary_exp_f32", l.entry());
        assertTrue(l.contiguous());
        assertEquals(24, l.n());
        assertNull(l.strided());
        assertEquals("jt_unary_neg_bf16", ElementwisePlan.unary(PointwiseOps.NEG, DType.BFLOAT16, shape,
                contiguous(DType.BFLOAT16, shape), contiguous(DType.BFLOAT16, shape)).entry());
        assertEquals("jt_binary_add_i32", ElementwisePlan.binary(PointwiseOps.ADD, DType.INT32, shape, contiguous(DType.INT32, shape),
                contiguous(DType.INT32, shape), contiguous(DType.INT32, shape)).entry());
        assertEquals("jt_binary_div_f16", ElementwisePlan.binary(PointwiseOps.DIV, DType.FLOAT16, shape, contiguous(DType.FLOAT16, shape),
                contiguous(DType.FLOAT16, shape), contiguous(DType.FLOAT16, shape)).entry());
    }

    @Test
    void aConvertingOperandTakesTheStridedKernelOfTheComputeType() {
        long[] shape = {5};
        // exp of int32 computes in float32: the input converts on load.
        Launch l = ElementwisePlan.unary(PointwiseOps.EXP, DType.FLOAT32, shape, contiguous(DType.FLOAT32, shape), contiguous(DType.INT32, shape));
        assertEquals("jt_unary_exp_strided_f32", l.entry());
        assertFalse(l.contiguous());
        assertArrayEquals(new int[] {DType.FLOAT32.ordinal(), DType.INT32.ordinal()}, l.strided().dtypes());
        // add(int8, float64) -> float64
        Launch b = ElementwisePlan.binary(PointwiseOps.ADD, DType.FLOAT64, shape, contiguous(DType.FLOAT64, shape),
                contiguous(DType.INT8, shape), contiguous(DType.FLOAT64, shape));
        assertEquals("jt_binary_add_strided_f64", b.entry());
        assertArrayEquals(new int[] {9, 2, 9}, b.strided().dtypes());
        // float16 computes in float32 on the strided path (load, compute, round once on store)
        assertEquals("jt_unary_sqrt_strided_f32", ElementwisePlan.unary(PointwiseOps.SQRT, DType.FLOAT16, new long[] {3, 2},
                contiguous(DType.FLOAT16, 3, 2), strided(DType.FLOAT16, 1, 3)).entry());
    }

    @Test
    void boolHasNoVectorKernelAndComputesInInt64() {
        long[] shape = {8};
        Launch l = ElementwisePlan.binary(PointwiseOps.MUL, DType.BOOL, shape, contiguous(DType.BOOL, shape),
                contiguous(DType.BOOL, shape), contiguous(DType.BOOL, shape));
        assertEquals("jt_binary_mul_strided_i64", l.entry());
        assertEquals(1, l.strided().ndim());
    }

    @Test
    void broadcastOperandsKeepTheirZeroStrides() {
        // out [2, 3] = a [2, 3] + b [3] (broadcast: strides [0, 1])
        long[] shape = {2, 3};
        Launch l = ElementwisePlan.binary(PointwiseOps.ADD, DType.FLOAT32, shape, contiguous(DType.FLOAT32, shape),
                contiguous(DType.FLOAT32, shape), strided(DType.FLOAT32, 0, 1));
        assertEquals("jt_binary_add_strided_f32", l.entry());
        Strided s = l.strided();
        assertEquals(2, s.ndim());
        assertArrayEquals(new long[] {2, 3}, s.sizes());
        assertArrayEquals(new long[] {3, 1}, s.strides()[0]);
        assertArrayEquals(new long[] {3, 1}, s.strides()[1]);
        assertArrayEquals(new long[] {0, 1}, s.strides()[2]);
    }

    @Test
    void coalescingMergesContiguousRunsAndDropsSizeOneDimensions() {
        Strided c = ElementwisePlan.coalesce(new long[] {2, 1, 3, 4}, contiguous(DType.FLOAT32, 2, 1, 3, 4), contiguous(DType.INT64, 2, 1, 3, 4));
        assertEquals(1, c.ndim());
        assertArrayEquals(new long[] {24}, c.sizes());
        assertArrayEquals(new long[] {1}, c.strides()[0]);
        assertArrayEquals(new long[] {1}, c.strides()[1]);
        // A transpose of [4, 3] (shape [3, 4], strides [1, 3]) does not merge.
        Strided t = ElementwisePlan.coalesce(new long[] {3, 4}, contiguous(DType.FLOAT32, 3, 4), strided(DType.FLOAT32, 1, 3));
        assertArrayEquals(new long[] {3, 4}, t.sizes());
        assertArrayEquals(new long[] {1, 3}, t.strides()[1]);
        // x[:, ::2] of [5, 4, 6] (strides [24, 6, 2]) is one run of stride 2: 6 == 3 * 2 and 24 == 4 * 6.
        Strided everyOther = ElementwisePlan.coalesce(new long[] {5, 4, 3}, contiguous(DType.FLOAT32, 5, 4, 3), strided(DType.FLOAT32, 24, 6, 2));
        assertArrayEquals(new long[] {60}, everyOther.sizes());
        assertArrayEquals(new long[] {2}, everyOther.strides()[1]);
        // x[:, :, :3] of [5, 4, 6] (strides [24, 6, 1]): batch and rows merge (24 == 4 * 6), columns do not (6 != 3 * 1).
        Strided sl = ElementwisePlan.coalesce(new long[] {5, 4, 3}, contiguous(DType.FLOAT32, 5, 4, 3), strided(DType.FLOAT32, 24, 6, 1));
        assertArrayEquals(new long[] {20, 3}, sl.sizes());
        assertArrayEquals(new long[] {3, 1}, sl.strides()[0]);
        assertArrayEquals(new long[] {6, 1}, sl.strides()[1]);
        // Zero-dim: no dimensions, offset 0 for the single element.
        Strided z = ElementwisePlan.coalesce(new long[0], contiguous(DType.FLOAT32), contiguous(DType.FLOAT32));
        assertEquals(0, z.ndim());
    }

    @Test
    void moreThanEightDimensionsAfterCoalescingAreRefusedByName() {
        long[] shape = new long[9];
        long[] transposedStrides = new long[9];
        long stride = 1;
        for (int d = 0; d < 9; d++) {
            shape[d] = 2;
            transposedStrides[d] = stride; // reversed order: nothing merges
            stride *= 2;
        }
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> ElementwisePlan.coalesce(shape, contiguous(DType.FLOAT32, shape), strided(DType.FLOAT32, transposedStrides)));
        assertTrue(e.getMessage().contains("at most 8 dimensions"), e.getMessage());
    }

    @Test
    void computeDtypesWithoutADefinitionAreRefusedNamingTheOpDtypeAndShape() {
        long[] shape = {2};
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> ElementwisePlan.unary(
                PointwiseOps.BITWISE_NOT, DType.FLOAT32, shape, contiguous(DType.FLOAT32, shape), contiguous(DType.FLOAT32, shape)));
        assertEquals("bitwise_not: no CUDA kernel computes this op in torch.float32 (shape [2], device cuda)", e.getMessage());
        assertThrows(UnsupportedOperationException.class, () -> ElementwisePlan.binary(PointwiseOps.DIV, DType.INT64, shape,
                contiguous(DType.INT64, shape), contiguous(DType.INT64, shape), contiguous(DType.INT64, shape)));
        assertFalse(ElementwisePlan.supports(PointwiseOps.DIV, DType.INT64), "integer div has no kernel (the front end promotes)");
        assertFalse(ElementwisePlan.supports(PointwiseOps.EXP, DType.INT32));
        assertFalse(ElementwisePlan.supports(PointwiseOps.LEAKY_RELU, DType.INT32));
        assertFalse(ElementwisePlan.supports(PointwiseOps.BITWISE_AND, DType.FLOAT16));
        assertTrue(ElementwisePlan.supports(PointwiseOps.ABS, DType.INT8));
        assertTrue(ElementwisePlan.supports(PointwiseOps.ISNAN, DType.BOOL));
        assertTrue(ElementwisePlan.supports(PointwiseOps.BITWISE_LEFT_SHIFT, DType.UINT8));
        assertTrue(ElementwisePlan.supports(PointwiseOps.REMAINDER, DType.FLOAT16));
    }

    /** Every (op, input dtype) the front end accepts computes in a dtype the sources instantiate. */
    @Test
    void everyComputeDtypeTheFrontEndChoosesHasAKernel() {
        int pairs = 0;
        for (UnaryOp op : UnaryOp.values()) {
            for (DType in : DType.values()) {
                OpDef declared = Elementwise.declaration(op);
                DType compute;
                try {
                    compute = declared.computeType(in, DType.FLOAT32);
                } catch (IllegalArgumentException refusedByTheFrontEnd) {
                    continue;
                }
                DType out = declared.resultType(compute);
                assertTrue(ElementwisePlan.supports(Elementwise.declaration(op), compute), op + " computing in " + compute);
                assertEquals(out, ElementwisePlan.resultType(Elementwise.declaration(op), compute), op + " of " + in + ": result dtype");
                pairs++;
            }
        }
        for (BinaryOp op : BinaryOp.values()) {
            for (DType promoted : DType.values()) {
                DType compute;
                try {
                    compute = Elementwise.declaration(op).computeType(promoted, DType.FLOAT32);
                    if (op == BinaryOp.SUB && promoted == DType.BOOL) continue;  // refused by the dispatcher's operand check
                } catch (IllegalArgumentException refusedByTheFrontEnd) {
                    continue;
                }
                assertTrue(ElementwisePlan.supports(Elementwise.declaration(op), compute), op + " computing in " + compute);
                pairs++;
            }
        }
        // 32 unary and 25 binary ops x 10 dtypes, less the front end's refusals: bool for the 9 SAME_NO_BOOL unary ops,
        // the 4 floating dtypes for bitwise_not and for each of the 5 integral binary ops, and bool sub.
        assertEquals(32 * 10 + 25 * 10 - (9 + 4 + 5 * 4 + 1), pairs);
    }

    @Test
    void kernelNamesAreTheLowerCaseConstantsAndUniqueAcrossUnaryAndBinary() {
        java.util.Set<String> names = new java.util.HashSet<>();
        for (UnaryOp op : UnaryOp.values()) assertTrue(names.add(ElementwisePlan.kernelName(Elementwise.declaration(op))), "duplicate " + op);
        for (BinaryOp op : BinaryOp.values()) assertTrue(names.add(ElementwisePlan.kernelName(Elementwise.declaration(op))), "duplicate " + op);
        assertEquals("pow_scalar", ElementwisePlan.kernelName(PointwiseOps.POW_SCALAR), "distinct from binary pow");
        assertEquals("pow", ElementwisePlan.kernelName(PointwiseOps.POW));
        assertEquals("gelu_tanh", ElementwisePlan.kernelName(PointwiseOps.GELU_TANH));
        assertEquals("bitwise_right_shift", ElementwisePlan.kernelName(PointwiseOps.BITWISE_RIGHT_SHIFT));
        for (UnaryOp op : UnaryOp.values()) {
            if (op != UnaryOp.POW_SCALAR) assertEquals(op.pyName(), ElementwisePlan.kernelName(Elementwise.declaration(op)));
        }
        for (BinaryOp op : BinaryOp.values()) assertEquals(op.pyName(), ElementwisePlan.kernelName(Elementwise.declaration(op)));
    }

    @Test
    void predicatesAndComparisonsWriteBoolFromTheVectorKernelOfTheInputDtype() {
        long[] shape = {4, 4};
        Launch isnan = ElementwisePlan.unary(PointwiseOps.ISNAN, DType.FLOAT16, shape, contiguous(DType.BOOL, shape), contiguous(DType.FLOAT16, shape));
        assertEquals("jt_unary_isnan_f16", isnan.entry());
        assertTrue(isnan.contiguous());
        Launch lt = ElementwisePlan.binary(PointwiseOps.LT, DType.INT32, shape, contiguous(DType.BOOL, shape), contiguous(DType.INT32, shape),
                contiguous(DType.INT32, shape));
        assertEquals("jt_binary_lt_i32", lt.entry());
        assertTrue(lt.contiguous());
        // An output that is not the op's result dtype (an in-place or out= cast) converts on the strided path.
        Launch cast = ElementwisePlan.binary(PointwiseOps.LT, DType.INT32, shape, contiguous(DType.INT32, shape), contiguous(DType.INT32, shape),
                contiguous(DType.INT32, shape));
        assertEquals("jt_binary_lt_strided_i64", cast.entry());
        // Bool compute (logical_and of bool tensors) has no vector kernel.
        Launch and = ElementwisePlan.binary(PointwiseOps.LOGICAL_AND, DType.BOOL, shape, contiguous(DType.BOOL, shape), contiguous(DType.BOOL, shape),
                contiguous(DType.BOOL, shape));
        assertEquals("jt_binary_logical_and_strided_i64", and.entry());
        assertArrayEquals(new int[] {0, 0, 0}, and.strided().dtypes());
        // clamp of float32 keeps float32; pow with a scalar exponent is its own kernel.
        assertEquals("jt_unary_clamp_f32", ElementwisePlan.unary(PointwiseOps.CLAMP, DType.FLOAT32, shape, contiguous(DType.FLOAT32, shape),
                contiguous(DType.FLOAT32, shape)).entry());
        assertEquals("jt_unary_pow_scalar_strided_i64", ElementwisePlan.unary(PointwiseOps.POW_SCALAR, DType.INT8, shape,
                contiguous(DType.INT8, shape), strided(DType.INT8, 1, 4)).entry());
        assertEquals("jt_binary_bitwise_left_shift_u8", ElementwisePlan.binary(PointwiseOps.BITWISE_LEFT_SHIFT, DType.UINT8, shape,
                contiguous(DType.UINT8, shape), contiguous(DType.UINT8, shape), contiguous(DType.UINT8, shape)).entry());
    }

    @Test
    void integerDivisionsAndOnlyThoseCheckTheirDivisorFirst() {
        for (BinaryOp op : BinaryOp.values()) {
            boolean divides = op == BinaryOp.DIV_TRUNC || op == BinaryOp.DIV_FLOOR || op == BinaryOp.REMAINDER;
            assertEquals(divides, Elementwise.declaration(op).integerDivision(), op.toString());
        }
    }

    @Test
    void fillCopyAndWhereEntries() {
        assertEquals("jt_fill_bf16", ElementwisePlan.fillEntry(DType.BFLOAT16));
        long[] shape = {2, 2};
        Launch c = ElementwisePlan.copy(shape, contiguous(DType.FLOAT16, shape), strided(DType.FLOAT64, 1, 2));
        assertEquals("jt_copy_strided", c.entry());
        assertArrayEquals(new int[] {6, 9}, c.strided().dtypes());
        Launch w = ElementwisePlan.where(shape, strided(DType.BOOL, 0, 1), contiguous(DType.FLOAT32, shape), strided(DType.INT64, 0, 0));
        assertEquals("jt_where_strided", w.entry());
        assertArrayEquals(new int[] {0, 8, 5}, w.strided().dtypes());
        assertArrayEquals(new long[] {0, 1}, w.strided().strides()[0]);
        assertArrayEquals(new long[] {0, 0}, w.strided().strides()[2]);
    }
}
