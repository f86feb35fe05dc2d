package org.jtorch.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.jtorch.cuda.cublaslt.CublasLtConstants.CUBLAS_OP_N;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_BFLOAT16;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_DOUBLE;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_FLOAT;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_HALF;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DEFAULT_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_FMA_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_TENSOR_OP_MATH;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.cuda.cudnn.Cudnn.Direction;
import org.jtorch.cuda.kernels.ConvPlan;
import org.jtorch.cuda.kernels.ConvPlan.Buffer;
import org.jtorch.cuda.kernels.ConvPlan.Chunk;
import org.jtorch.cuda.kernels.ConvPlan.CudnnPlan;
import org.jtorch.cuda.kernels.ConvPlan.Fallback;
import org.jtorch.cuda.kernels.ConvPlan.Gemm;
import org.jtorch.cuda.kernels.ConvPlan.Matrix;
import org.jtorch.cuda.kernels.MatmulPlan;
import org.jtorch.cuda.kernels.MatmulPlan.Operand;
import org.jtorch.cuda.kernels.MatmulPlan.Plan;
import org.jtorch.types.DType;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * {@link ConvPlan} without a GPU: the cuDNN descriptor values and image chunks, {@code conv.cu}'s entry
 * names and argument bytes, and the fallback. The fallback is checked by running its steps on the host:
 * im2col and col2im as their definitions, every GEMM planned by {@link MatmulPlan} exactly as
 * {@code CudaLinalgKernels} plans it (no copies, no temporaries expected) and evaluated by a reference
 * column-major strided-batched GEMM with cuBLASLt's documented semantics (beta = 0 does not read C). The
 * results are compared, exactly (small integers), with the convolution's definition:
 * {@code y[n, co, oy, ox] = sum over ci in co's group, i, j of x[n, ci, oy*sh - ph + i*dh, ox*sw - pw + j*dw] w[co, ci', i, j]}
 * and its two adjoints.
 */
class ConvPlanTest {
    private static Geometry geo(int n, int cin, int h, int w, int cout, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                                int groups) {
        int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
        return new Geometry(n, cin, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, oh, ow);
    }

    // ------------------------------------------------------------------ cuDNN settings

    @Test
    void float32UsesFmaMathUnlessTf32IsAllowed() {
        Geometry g = geo(2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1);
        CudnnPlan strict = ConvPlan.cudnn(g, DType.FLOAT32, false);
        assertEquals(new CudnnPlan(CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, false, 2), strict);
        assertEquals(CUDNN_DEFAULT_MATH, ConvPlan.cudnn(g, DType.FLOAT32, true).mathType());
    }

    @Test
    void otherDtypesMapToCudnnTypes() {
        Geometry g = geo(1, 2, 5, 5, 2, 3, 3, 1, 1, 0, 0, 1, 1, 2);
        assertEquals(new CudnnPlan(CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, true, 1), ConvPlan.cudnn(g, DType.FLOAT64, false));
        assertEquals(new CudnnPlan(CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false, 1), ConvPlan.cudnn(g, DType.FLOAT16, false));
        assertEquals(new CudnnPlan(CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, false, 1), ConvPlan.cudnn(g, DType.BFLOAT16, true));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> ConvPlan.cudnn(g, DType.INT32, false));
        assertTrue(e.getMessage().contains("conv2d") && e.getMessage().contains("int32"), e.getMessage());
    }

    @Test
    void imagesPerCallKeepEveryTensorBelowTwoToThe31() {
        // One image: 64 x 1024 x 1024 = 2^26 input elements, 2^27 output elements: 15 images a call.
        Geometry g = geo(40, 64, 1024, 1024, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1);
        CudnnPlan p = ConvPlan.cudnn(g, DType.FLOAT32, false);
        assertEquals(15, p.imagesPerCall());
        assertTrue((long) p.imagesPerCall() * 128 * 1024 * 1024 <= Integer.MAX_VALUE);
        assertEquals(List.of(new Chunk(0, 15), new Chunk(15, 15), new Chunk(30, 10)), ConvPlan.chunks(40, 15));
        assertEquals(new Geometry(10, 64, 1024, 1024, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1024, 1024),
                ConvPlan.chunkGeometry(g, new Chunk(30, 10)));
        assertNull(ConvPlan.cudnnRefusal(g));
    }

    @Test
    void tooLargeImagesOrWeightsAreRefusedByCudnnAndNamed() {
        Geometry bigImage = geo(1, 4, 32768, 32768, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1);
        assertNotNull(ConvPlan.cudnnRefusal(bigImage));
        assertTrue(ConvPlan.cudnnRefusal(bigImage).contains("image"));
        Geometry bigWeight = geo(1, 65536, 3, 3, 65536, 1, 1, 1, 1, 0, 0, 1, 1, 1);
        assertTrue(ConvPlan.cudnnRefusal(bigWeight).contains("weight"));
        assertThrows(IllegalArgumentException.class, () -> ConvPlan.cudnn(bigWeight, DType.FLOAT32, false));
    }

    @Test
    void outputsThatSymmetricPaddingCannotGiveGoToTheFallback() {
        // Found on the first GPU run: cuDNN's legacy API pads both sides equally, so "same" padding of an even
        // kernel (one more row at the bottom) and a transposed convolution's cropped output are not its sizes.
        Geometry same = new Geometry(2, 2, 5, 6, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 5, 6);
        assertTrue(ConvPlan.cudnnRefusal(same).contains("5x6 where padding 1,1 on both sides gives 4x5"), ConvPlan.cudnnRefusal(same));
        Geometry cropped = new Geometry(1, 2, 12, 12, 2, 3, 3, 1, 1, 0, 0, 3, 3, 1, 4, 4);
        assertNotNull(ConvPlan.cudnnRefusal(cropped));
        Geometry strided = new Geometry(1, 3, 7, 8, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 4, 4);
        assertNull(ConvPlan.cudnnRefusal(strided));
    }

    // ------------------------------------------------------------------ conv.cu entries and arguments

    @Test
    void entryNamesAndRefusedDtypes() {
        assertEquals("jt_conv_im2col_f32", ConvPlan.entry("im2col", DType.FLOAT32));
        assertEquals("jt_conv_col2im_bf16", ConvPlan.entry("col2im", DType.BFLOAT16));
        assertEquals("jt_conv_bias_grad_f64", ConvPlan.entry("bias_grad", DType.FLOAT64));
        assertEquals("jt_conv_bias_add_f16", ConvPlan.entry("bias_add", DType.FLOAT16));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> ConvPlan.entry("im2col", DType.INT64));
        assertTrue(e.getMessage().startsWith("im2col") && e.getMessage().contains("int64"), e.getMessage());
    }

    @Test
    void shapeIsPackedAsThirteenIntsInDeclarationOrder() {
        Geometry g = geo(2, 3, 10, 11, 6, 3, 2, 2, 1, 1, 0, 2, 1, 3);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = ConvPlan.packShape(arena, 3, g);
            assertEquals(52, s.byteSize());
            assertArrayEquals(new int[] {3, 10, 11, 3, 2, 2, 1, 1, 0, 2, 1, g.oh(), g.ow()}, s.toArray(JAVA_INT));
            assertArrayEquals(new long[] {8, 8, 8, 52}, ConvPlan.columns(arena, 1, 2, 3, s).sizes());
            assertArrayEquals(new long[] {8, 8, 8, 8, 8}, ConvPlan.bias(arena, 1, 2, 3, 4, 5).sizes());
        }
    }

    @Test
    void workItemsAndBiasGradBlocks() {
        Geometry g = geo(2, 3, 10, 11, 6, 3, 2, 2, 1, 1, 0, 2, 1, 3);
        assertEquals(5L * 3 * 3 * 2 * g.oh() * g.ow(), ConvPlan.im2colItems(g, 5));
        assertEquals(5L * 3 * 10 * 11, ConvPlan.col2imItems(g, 5));
        assertEquals(6, ConvPlan.biasGradBlocks(6, 132));
        assertEquals(132 * 8, ConvPlan.biasGradBlocks(1 << 20, 132));
    }

    // ------------------------------------------------------------------ fallback plan

    @Test
    void chunksFitTheColumnBudgetWithAtLeastOneImage() {
        Geometry g = geo(10, 4, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1);
        long perImage = 4L * 9 * 36;
        assertEquals(perImage, ConvPlan.fallback(Direction.FORWARD, g, DType.FLOAT32).colElementsPerImage());
        assertEquals(10, ConvPlan.fallback(Direction.FORWARD, g, DType.FLOAT32).imagesPerChunk());
        assertEquals(3, ConvPlan.fallback(Direction.FORWARD, g, 3 * perImage + 5).imagesPerChunk());
        assertEquals(1, ConvPlan.fallback(Direction.FORWARD, g, 7).imagesPerChunk());
        Fallback pointwise = ConvPlan.fallback(Direction.BACKWARD_FILTER, geo(10, 4, 6, 6, 8, 1, 1, 1, 1, 0, 0, 1, 1, 1), 7);
        assertFalse(pointwise.usesCol());
        assertEquals(10, pointwise.imagesPerChunk());
    }

    @Test
    void gemmCallsBatchOverImagesOrGroupsWhicheverIsFewer() {
        Geometry grouped = geo(6, 8, 5, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 4);
        Fallback f = ConvPlan.fallback(Direction.FORWARD, grouped, Long.MAX_VALUE);
        List<Gemm> all = f.gemms(new Chunk(0, 6));
        assertEquals(4, all.size(), "4 groups <= 6 images: one GEMM a group");
        assertEquals(6, all.get(0).batch());
        assertEquals(0, all.get(0).a().batchStride(), "the group's weight is shared by the images");
        List<Gemm> two = f.gemms(new Chunk(4, 2));
        assertEquals(2, two.size(), "4 groups > 2 images: one GEMM an image");
        assertEquals(4, two.get(0).batch());
        Fallback wgrad = ConvPlan.fallback(Direction.BACKWARD_FILTER, grouped, Long.MAX_VALUE);
        List<Gemm> w = wgrad.gemms(new Chunk(0, 6));
        assertEquals(6, w.size(), "the weight gradient sums images: one GEMM an image");
        assertEquals(0.0, w.get(0).beta());
        assertEquals(1.0, w.get(1).beta());
        assertEquals(1.0, wgrad.gemms(new Chunk(3, 3)).get(0).beta(), "a later chunk accumulates");
    }

    /** Geometries of the emulation: strides, padding (also asymmetric, "same"), dilation, groups, depthwise, pointwise, 1-D. */
    private static List<Geometry> geometries() {
        List<Geometry> r = new ArrayList<>();
        r.add(geo(2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1));
        r.add(geo(3, 3, 9, 8, 5, 3, 2, 2, 3, 1, 2, 1, 1, 1));
        r.add(geo(2, 2, 9, 9, 3, 3, 3, 1, 2, 2, 1, 2, 3, 1));
        r.add(geo(3, 4, 6, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2));
        r.add(geo(2, 6, 6, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 6));  // depthwise
        r.add(geo(3, 3, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3));  // depthwise, multiplier 2
        r.add(geo(3, 4, 5, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1));  // pointwise
        r.add(geo(2, 4, 5, 6, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2));  // pointwise, grouped
        r.add(geo(2, 4, 7, 7, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1));  // 1x1, stride 2: not pointwise
        r.add(geo(2, 3, 1, 12, 4, 1, 5, 1, 2, 0, 2, 1, 2, 1)); // conv1d as height 1
        r.add(geo(4, 6, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 2));
        // padding='same' with an even kernel: top/left 1, bottom/right 2 (oh = h).
        r.add(new Geometry(2, 2, 5, 6, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 5, 6));
        return r;
    }

    @TestFactory
    List<DynamicTest> fallbackEqualsTheDefinition() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Geometry g : geometries()) {
            long colPerImage = (long) g.cin() * g.kh() * g.kw() * g.oh() * g.ow();
            for (long budget : new long[] {Long.MAX_VALUE, 2 * colPerImage, 1}) {
                for (Direction d : Direction.values()) {
                    tests.add(DynamicTest.dynamicTest(d + " " + g + " budget " + (budget == Long.MAX_VALUE ? "all" : budget),
                            () -> emulate(d, g, budget)));
                }
            }
        }
        return tests;
    }

    private static double[] randomInts(int n, SplittableRandom rnd) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = rnd.nextInt(-3, 4);
        return v;
    }

    private static void emulate(Direction d, Geometry g, long budget) {
        SplittableRandom rnd = new SplittableRandom(31L * g.hashCode() + d.ordinal());
        int inSize = g.n() * g.cin() * g.h() * g.w(), outSize = g.n() * g.cout() * g.oh() * g.ow();
        int wSize = g.cout() * g.cinG() * g.kh() * g.kw();
        Fallback plan = ConvPlan.fallback(d, g, budget);
        Map<Buffer, double[]> buf = new EnumMap<>(Buffer.class);
        buf.put(Buffer.INPUT, d == Direction.BACKWARD_DATA ? nan(inSize) : randomInts(inSize, rnd));
        buf.put(Buffer.WEIGHT, d == Direction.BACKWARD_FILTER ? nan(wSize) : randomInts(wSize, rnd));
        buf.put(Buffer.OUTPUT, d == Direction.FORWARD ? nan(outSize) : randomInts(outSize, rnd));
        buf.put(Buffer.COL, nan((int) (plan.imagesPerChunk() * plan.colElementsPerImage())));
        double[] x = buf.get(Buffer.INPUT), w = buf.get(Buffer.WEIGHT), y = buf.get(Buffer.OUTPUT);
        // The expected result from the inputs, before the plan overwrites its output buffer.
        double[] want = switch (d) {
            case FORWARD -> ConvDefinitions.forward(g, x, w);
            case BACKWARD_DATA -> ConvDefinitions.backwardData(g, y, w);
            case BACKWARD_FILTER -> ConvDefinitions.backwardFilter(g, y, x);
        };
        int[] gemmCount = {0};
        plan.run(new ConvPlan.Steps() {
            @Override
            public void im2col(int first, int count) {
                ConvDefinitions.im2col(g, x, first, count, buf.get(Buffer.COL));
            }

            @Override
            public void col2im(int first, int count) {
                ConvDefinitions.col2im(g, buf.get(Buffer.COL), first, count, x);
            }

            @Override
            public void gemm(Gemm gemm) {
                gemmCount[0]++;
                gemmThroughMatmulPlan(gemm, buf);
            }
        });
        assertTrue(gemmCount[0] > 0);
        double[] got = switch (d) {
            case FORWARD -> y;
            case BACKWARD_DATA -> x;
            case BACKWARD_FILTER -> w;
        };
        for (int i = 0; i < want.length; i++) {
            if (want[i] != got[i]) throw new AssertionError(d + " element " + i + ": expected " + want[i] + " but was " + got[i]);
        }
    }

    private static double[] nan(int n) {
        double[] v = new double[n];
        Arrays.fill(v, Double.NaN);
        return v;
    }

    /** The GEMM as CudaLinalgKernels runs it: MatmulPlan's column-major C^T = B^T A^T, then cuBLASLt's semantics on raw storage. */
    private static void gemmThroughMatmulPlan(Gemm gm, Map<Buffer, double[]> buf) {
        Matrix a = gm.a(), b = gm.b(), c = gm.c();
        long[] aShape = {gm.batch(), gm.m(), gm.k()}, bShape = {gm.batch(), gm.k(), gm.n()}, cShape = {gm.batch(), gm.m(), gm.n()};
        Plan p = MatmulPlan.plan(DType.FLOAT64, aShape, strides(a), bShape, strides(b), cShape, strides(c), false);
        assertFalse(p.needsCopy(), "a convolution GEMM operand needs a copy: " + gm);
        assertFalse(p.outputNeedsTemp(), "a convolution GEMM output needs a temporary: " + gm);
        double[] ltA = buf.get(b.buffer()), ltB = buf.get(a.buffer()), d = buf.get(c.buffer());
        Operand opA = p.a(), opB = p.b();
        for (int t = 0; t < p.batch(); t++) {
            for (long i = 0; i < p.rows(); i++) {
                for (long j = 0; j < p.cols(); j++) {
                    double acc = 0;
                    for (long q = 0; q < p.inner(); q++) {
                        long ai = b.offset() + t * opA.batchStride() + (opA.op() == CUBLAS_OP_N ? i + q * opA.ld() : q + i * opA.ld());
                        long bi = a.offset() + t * opB.batchStride() + (opB.op() == CUBLAS_OP_N ? q + j * opB.ld() : j + q * opB.ld());
                        acc += ltA[(int) ai] * ltB[(int) bi];
                    }
                    int di = (int) (c.offset() + t * p.batchStrideD() + i + j * p.ldd());
                    d[di] = gm.beta() == 0 ? acc : acc + gm.beta() * d[di];
                }
            }
        }
    }

    private static long[] strides(Matrix m) {
        return new long[] {m.batchStride(), m.rowStride(), m.colStride()};
    }
}
