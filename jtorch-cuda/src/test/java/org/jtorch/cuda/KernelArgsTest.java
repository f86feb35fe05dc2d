package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.ElementwisePlan.Launch;
import org.jtorch.cuda.kernels.ElementwisePlan.Operand;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.op.PointwiseOps;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;

/**
 * The {@code kernelParams} array handed to {@code cuLaunchKernel}: each entry points at its value's
 * bytes, and {@code jt::Strided} is laid out as the C struct (ndim at 0, dtype[3] at 4, size[8] at 16,
 * stride[3][8] at 80; 272 bytes, as nvcc's PTX parameter says: {@code KernelStructsTest}).
 */
class KernelArgsTest {
    private static Operand of(Tensor t) {
        return new Operand(t.dtype(), t.strides(), t.isContiguous());
    }

    @Test
    void stridedBytesOfATransposedInt64InputAndFloatOutput() {
        try (Tensor base = Torch.arange(12).reshape(3, 4); Tensor x = base.t();
             Tensor out = Tensor.empty(new long[] {4, 3}, DType.FLOAT32, Device.cpu()); Arena arena = Arena.ofConfined()) {
            Launch l = ElementwisePlan.unary(PointwiseOps.EXP, DType.FLOAT32, out.shape(), of(out), of(x));
            assertEquals("jt_unary_exp_strided_f32", l.entry());
            KernelArgs args = KernelArgs.unary(arena, l, 0x1000, 0x2000, 0.25, -3.5);
            assertArrayEquals(new long[] {8, 8, 8, 8, 8, 272}, args.sizes(), "x, y, n, p0, p1, Strided");
            assertEquals(0x1000, args.value(0).get(JAVA_LONG, 0));
            assertEquals(0x2000, args.value(1).get(JAVA_LONG, 0));
            assertEquals(12, args.value(2).get(JAVA_LONG, 0));
            assertEquals(0.25, args.value(3).get(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0), "p0");
            assertEquals(-3.5, args.value(4).get(java.lang.foreign.ValueLayout.JAVA_DOUBLE, 0), "p1");
            MemorySegment s = args.value(5);
            assertEquals(2, s.get(JAVA_INT, 0), "ndim");
            assertEquals(DType.FLOAT32.ordinal(), s.get(JAVA_INT, 4), "dtype[0] (out)");
            assertEquals(DType.INT64.ordinal(), s.get(JAVA_INT, 8), "dtype[1] (x)");
            assertEquals(0, s.get(JAVA_INT, 12), "dtype[2] unused");
            assertEquals(4, s.get(JAVA_LONG, 16), "size[0]");
            assertEquals(3, s.get(JAVA_LONG, 24), "size[1]");
            for (int d = 2; d < 8; d++) assertEquals(0, s.get(JAVA_LONG, 16 + 8 * d), "size[" + d + "] unused");
            assertEquals(3, s.get(JAVA_LONG, 80), "stride[0][0] (out rows)");
            assertEquals(1, s.get(JAVA_LONG, 88), "stride[0][1]");
            assertEquals(1, s.get(JAVA_LONG, 80 + 64), "stride[1][0] (x = base.t(): strides [1, 4])");
            assertEquals(4, s.get(JAVA_LONG, 88 + 64), "stride[1][1]");
            assertEquals(0, s.get(JAVA_LONG, 80 + 128), "stride[2] unused");
        }
    }

    @Test
    void theParamsArrayPointsAtEachValueInOrder() {
        try (Arena arena = Arena.ofConfined()) {
            long[] shape = {1000};
            Operand c = new Operand(DType.FLOAT32, new long[] {1}, true);
            Launch l = ElementwisePlan.binary(PointwiseOps.ADD, DType.FLOAT32, shape, c, c, c);
            KernelArgs args = KernelArgs.binary(arena, l, 0xA0, 0xB0, 0xC0, 2.5);
            assertArrayEquals(new long[] {8, 8, 8, 8, 8}, args.sizes(), "a, b, out, n, alpha");
            MemorySegment params = args.build();
            assertEquals(5 * ADDRESS.byteSize(), params.byteSize());
            for (int i = 0; i < 5; i++) assertEquals(args.value(i).address(), params.getAtIndex(ADDRESS, i).address(), "param " + i);
            assertEquals(0xC0, params.getAtIndex(ADDRESS, 2).reinterpret(8).get(JAVA_LONG, 0));
            assertEquals(1000, params.getAtIndex(ADDRESS, 3).reinterpret(8).get(JAVA_LONG, 0));
            assertEquals(2.5, params.getAtIndex(ADDRESS, 4).reinterpret(8).get(JAVA_DOUBLE, 0));
        }
    }

    @Test
    void whereAndFillArguments() {
        try (Arena arena = Arena.ofConfined()) {
            long[] shape = {2, 3};
            Launch w = ElementwisePlan.where(shape, new Operand(DType.BOOL, new long[] {0, 1}, false),
                    new Operand(DType.FLOAT32, new long[] {3, 1}, true), new Operand(DType.FLOAT64, new long[] {0, 0}, false));
            KernelArgs wa = KernelArgs.where(arena, w, 1, 2, 3, 4, DType.FLOAT64.ordinal());
            assertArrayEquals(new long[] {8, 8, 8, 8, 8, 4, 272}, wa.sizes());
            assertEquals(9, wa.value(5).get(JAVA_INT, 0), "out dtype code");
            KernelArgs fa = KernelArgs.fill(arena, 0x10, 7, 1.5, -3);
            assertArrayEquals(new long[] {8, 8, 8, 8}, fa.sizes());
            assertEquals(-3, fa.value(3).get(JAVA_LONG, 0));
        }
    }
}
