package org.jtorch.backend.cpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;
import org.jtorch.backend.ConvolutionKernels;
import org.jtorch.memory.Storage;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;

/**
 * The CPU's {@link ConvolutionKernels}: per image, im2col into a reused per-thread buffer and one
 * {@link Gemm} per group, with images spread over {@link Parallel}'s threads (each GEMM then runs on
 * its thread alone). 1x1 convolutions skip im2col ({@link ConvPointwiseF32}, after {@link ConvGemmF32}'s small strided
 * images, whose strips would cross 8 images each; the stride-1 weight gradient here: the image already is the column
 * matrix).
 * The weight gradient is accumulated per thread and the partial sums are
 * added in a fixed order, so results do not depend on scheduling.
 */
final class CpuConvolutionKernels implements ConvolutionKernels {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    private static final ByteOrder NO = ByteOrder.nativeOrder();

    /**
     * A per-thread buffer, grown on demand and then reused: fresh memory costs a page fault per 4 KiB here. Native, as
     * every segment a kernel reads or writes with vector loads, stores or element accessors should be: those go through
     * the JDK's shared memory access code, whose type profiles C2 uses when it inlines that code into each kernel. One
     * kernel's loads from a heap segment ({@code MemorySegment.ofArray}), even 0.5% of all loads, make the profiles
     * bimorphic, and C2 then compiles every kernel's loads for both kinds: batch norm's backward sums compiled to
     * 71-104 kB instead of 10-32 kB in DCGAN (BENCHMARKS.md, issue 20, fourteenth session).
     */
    static final class Scratch {
        private MemorySegment segment = MemorySegment.NULL;

        MemorySegment get(long bytes) {
            if (segment.byteSize() < bytes) segment = Arena.ofAuto().allocate(Math.max(bytes, segment.byteSize() * 5 / 4), 64);
            return segment;
        }
    }

    /** {@link ConvGemmF32} for small images; {@code -Djtorch.conv.smallImagesAsGemm=false} compares with the paths before it. */
    private static final boolean SMALL_IMAGES_AS_GEMM = !"false".equals(System.getProperty("jtorch.conv.smallImagesAsGemm"));
    /** {@link ConvRasterTileF32} for small images of whole 8-pixel tiles; {@code -Djtorch.conv.rasterTiles=false} compares without. */
    private static final boolean RASTER_TILES = !"false".equals(System.getProperty("jtorch.conv.rasterTiles"));
    /** {@link ConvSmallMapF32} for tiny output maps; {@code -Djtorch.conv.smallMaps=false} compares with the paths before it. */
    private static final boolean SMALL_MAPS = !"false".equals(System.getProperty("jtorch.conv.smallMaps"));
    private static final ThreadLocal<Scratch> COL = ThreadLocal.withInitial(Scratch::new);
    private static final ThreadLocal<Scratch> FLIPPED = ThreadLocal.withInitial(Scratch::new);

    @Override
    public void conv2d(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g) {
        conv2dWithEpilogue(input, weight, bias, out, g, null);
    }

    /** The float32 forward kernels, in the order {@link #forwardKernel} tries them; {@code COLUMNS} is im2col and GEMM. */
    private enum ForwardKernel { WHOLE_IMAGE, ONE_CHANNEL, STEM, SMALL_MAP, RASTER_TILE, SMALL_IMAGE_GEMM, POINTWISE, WINOGRAD, CHANNEL_BLOCKS, IMPLICIT_GEMM, COLUMNS }

    private static ForwardKernel forwardKernel(Geometry g) {
        if (ConvWholeImageF32.handles(g)) return ForwardKernel.WHOLE_IMAGE;
        if (ConvOneChannelF32.handles(g)) return ForwardKernel.ONE_CHANNEL;
        if (ConvStemF32.handles(g)) return ForwardKernel.STEM;
        if (SMALL_MAPS && ConvSmallMapF32.handles(g)) return ForwardKernel.SMALL_MAP;
        if (ConvRasterTileF32.handles(g) && RASTER_TILES) return ForwardKernel.RASTER_TILE;
        if (ConvGemmF32.prefers(g) && SMALL_IMAGES_AS_GEMM) return ForwardKernel.SMALL_IMAGE_GEMM;
        if (ConvPointwiseF32.handles(g)) return ForwardKernel.POINTWISE;
        if (WinogradF32.handles(g)) return ForwardKernel.WINOGRAD;
        if (ConvChannelBlocksF32.handles(g)) return ForwardKernel.CHANNEL_BLOCKS;
        if (ConvF32.handles(g)) return ForwardKernel.IMPLICIT_GEMM;
        return ForwardKernel.COLUMNS;
    }

    /** Winograd pads each image channels-last itself, widening a bfloat16 input as it goes. */
    @Override
    public boolean convReadsBf16Input(Geometry g) {
        return BF16_OPERANDS && forwardKernel(g) == ForwardKernel.WINOGRAD;
    }

    /**
     * Every path runs the epilogue (where given) on each block of the output as the thread that computed it finishes
     * it: an image's rows (direct kernels), a block of Winograd tiles, a block of columns (1x1), an image (the rest).
     * The input may be bfloat16 (with a float32 output) where {@link #convReadsBf16Input} says so.
     */
    @Override
    public void conv2dWithEpilogue(StridedView input, StridedView weight, StridedView bias, StridedView out, Geometry g,
                                   Epilogue epilogue) {
        boolean f32 = out.dtype() == DType.FLOAT32;
        ForwardKernel kernel = f32 ? forwardKernel(g) : ForwardKernel.COLUMNS;
        boolean xBf16 = input.dtype() == DType.BFLOAT16 && f32;
        if (input.dtype() != out.dtype() && !(xBf16 && kernel == ForwardKernel.WINOGRAD)) {
            throw new IllegalArgumentException("conv2d: the CPU kernel for " + g + " takes a " + out.dtype() + " input, got "
                    + input.dtype());
        }
        switch (kernel) {
            case WHOLE_IMAGE -> {
                ConvWholeImageF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g);
                // These two paths have no per-block hook yet: the epilogue runs once over the whole output.
                if (epilogue != null) epilogue.block(0, g.n(), 0, g.cout(), 0, (long) g.oh() * g.ow());
                return;
            }
            case ONE_CHANNEL -> {
                ConvOneChannelF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case STEM -> {
                ConvStemF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case SMALL_MAP -> {
                ConvSmallMapF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case RASTER_TILE -> {
                ConvRasterTileF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g);
                if (epilogue != null) epilogue.block(0, g.n(), 0, g.cout(), 0, (long) g.oh() * g.ow());
                return;
            }
            case SMALL_IMAGE_GEMM -> {
                ConvGemmF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case POINTWISE -> {
                ConvPointwiseF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case WINOGRAD -> {
                WinogradF32.forward(seg(input), input.offset(), xBf16, seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, false, epilogue);
                return;
            }
            case CHANNEL_BLOCKS -> {
                ConvChannelBlocksF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case IMPLICIT_GEMM -> {
                ConvF32.forward(seg(input), input.offset(), seg(weight), weight.offset(),
                        bias == null ? null : seg(bias), bias == null ? 0 : bias.offset(), seg(out), out.offset(), g, epilogue);
                return;
            }
            case COLUMNS -> { }
        }
        int esz = f32 ? 4 : 8;
        MemorySegment x = seg(input), wt = seg(weight), o = seg(out);
        long xOff = input.offset(), wOff = weight.offset(), oOff = out.offset();
        long l = (long) g.oh() * g.ow();
        int kg = g.kg();
        long inImage = (long) g.cin() * g.h() * g.w();
        long outImage = g.cout() * l;
        boolean pointwise = g.isPointwise();
        forImages(g.n(), (n0, n1) -> {
            MemorySegment col = pointwise ? null : COL.get().get(kg * l * esz);
            for (long n = n0; n < n1; n++) {
                for (int gi = 0; gi < g.groups(); gi++) {
                    long xImage = xOff + n * inImage + (long) gi * g.cinG() * g.h() * g.w();
                    MemorySegment b = x;
                    long bOff = xImage;
                    if (!pointwise) {
                        im2colImage(x, xImage, g.cinG(), g, col, 0, esz);
                        b = col;
                        bOff = 0;
                    }
                    gemm(f32, g.coutG(), (int) l, kg, wt, wOff + (long) gi * g.coutG() * kg, kg, 1, b, bOff, l, 1, 0,
                            o, oOff + n * outImage + gi * g.coutG() * l, l);
                }
                if (bias != null) addBias(f32, seg(bias), bias.offset(), o, oOff + n * outImage, g.cout(), l);
                if (epilogue != null) epilogue.block(n, n + 1, 0, g.cout(), 0, l);
            }
        });
    }

    /**
     * {@code epilogue} over columns {@code [col0, col1)} of the images' outputs side by side ({@code pixels} columns an
     * image, every channel finished): one block per image they touch.
     */
    static void epilogueOverColumns(Epilogue epilogue, long col0, long col1, long pixels, int channels) {
        for (long c = col0; c < col1; ) {
            long n = c / pixels, p0 = c % pixels, p1 = Math.min(pixels, p0 + col1 - c);
            epilogue.block(n, n + 1, 0, channels, p0, p1);
            c += p1 - p0;
        }
    }

    /**
     * Whether {@link #conv2dBackwardInput} of {@code g} runs on Winograd (the stride-1 input gradient as a convolution of
     * gradOut), in the order that method tries its kernels.
     */
    private static boolean inputGradOnWinograd(Geometry g) {
        return !ConvWholeImageF32.handles(g) && !(SMALL_MAPS && ConvSmallMapF32.handlesInputGrad(g))
                && !(ConvRasterTileF32.handlesStride2InputGrad(g) && RASTER_TILES) && !(ConvGemmF32.prefers(g) && SMALL_IMAGES_AS_GEMM)
                && !ConvPointwiseF32.handles(g) && flipsToConvolution(g) && WinogradF32.handlesInputGrad(flippedGeometry(g));
    }

    /** Winograd pads each gradOut image channels-last itself, widening a bfloat16 one as it goes. */
    @Override
    public boolean inputGradReadsBf16GradOut(Geometry g) {
        return BF16_OPERANDS && inputGradOnWinograd(g);
    }

    /** {@code -Djtorch.conv.bf16Operands=false}: bfloat16 operands widened into float32 copies first, as before, to compare. */
    private static final boolean BF16_OPERANDS = !"false".equals(System.getProperty("jtorch.conv.bf16Operands"));

    /** gradOut may be bfloat16 (with a float32 gradInput) where {@link #inputGradReadsBf16GradOut} says so. */
    @Override
    public void conv2dBackwardInput(StridedView gradOut, StridedView weight, StridedView gradInput, Geometry g) {
        boolean f32 = gradInput.dtype() == DType.FLOAT32;
        if (gradOut.dtype() != gradInput.dtype()) {
            if (!(f32 && gradOut.dtype() == DType.BFLOAT16 && inputGradOnWinograd(g))) {
                throw new IllegalArgumentException("conv2d input gradient: the CPU kernel for " + g + " takes a " + gradInput.dtype()
                        + " gradOut, got " + gradOut.dtype());
            }
            WinogradF32.inputGrad(seg(gradOut), gradOut.offset(), true, seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), flippedGeometry(g));
            return;
        }
        if (f32 && ConvWholeImageF32.handles(g)) {
            ConvWholeImageF32.backwardInput(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), g);
            return;
        }
        if (f32 && SMALL_MAPS && ConvSmallMapF32.handlesInputGrad(g)) {
            ConvSmallMapF32.backwardInput(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), g);
            return;
        }
        if (f32 && ConvRasterTileF32.handlesStride2InputGrad(g) && RASTER_TILES) {
            ConvRasterTileF32.stride2InputGrad(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), g);
            return;
        }
        if (f32 && ConvGemmF32.prefers(g) && SMALL_IMAGES_AS_GEMM) {
            ConvGemmF32.backwardInput(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), g);
            return;
        }
        if (f32 && ConvPointwiseF32.handles(g)) {
            ConvPointwiseF32.backwardInput(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                    gradInput.offset(), g);
            return;
        }
        if (f32 && flipsToConvolution(g)) {
            // Stride 1: the input gradient is a convolution of gradOut with the flipped, channel-transposed
            // weight and padding d * (k - 1) - p. The direct tiles gather that weight from the forward one
            // themselves; the implicit-GEMM forward path takes it flipped, in native memory as tensors are:
            // a vector access site (Gemm's packing) that sees heap segments too is compiled without the intrinsics.
            Geometry fg = flippedGeometry(g);
            if (WinogradF32.handlesInputGrad(fg)) {
                WinogradF32.inputGrad(seg(gradOut), gradOut.offset(), false, seg(weight), weight.offset(), seg(gradInput),
                        gradInput.offset(), fg);
                return;
            }
            if (ConvDirectF32.handles(fg)) {
                ConvDirectF32.backwardInputFlipped(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(),
                        seg(gradInput), gradInput.offset(), fg);
                return;
            }
            if (ConvNarrowRowsF32.handles(fg)) {
                ConvNarrowRowsF32.forward(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(), seg(gradInput),
                        gradInput.offset(), fg, true);
                return;
            }
            float[] flipped = flippedWeight(weight, g);
            MemorySegment fw = FLIPPED.get().get((long) flipped.length * 4);
            MemorySegment.copy(flipped, 0, fw, F32, 0, flipped.length);
            ConvF32.forward(seg(gradOut), gradOut.offset(), fw, 0, null, 0,
                    seg(gradInput), gradInput.offset(), fg, null);
            return;
        }
        if (f32 && ConvDirectF32.handlesStride2InputGrad(g)) {
            ConvDirectF32.stride2InputGrad(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(),
                    seg(gradInput), gradInput.offset(), g);
            return;
        }
        if (f32 && StridedInputGradF32.applies(g)) {
            StridedInputGradF32.backwardInput(seg(gradOut), gradOut.offset(), seg(weight), weight.offset(),
                    seg(gradInput), gradInput.offset(), g);
            return;
        }
        int esz = f32 ? 4 : 8;
        MemorySegment go = seg(gradOut), wt = seg(weight), gi = seg(gradInput);
        long goOff = gradOut.offset(), wOff = weight.offset(), giOff = gradInput.offset();
        long l = (long) g.oh() * g.ow();
        int kg = g.kg();
        long hw = (long) g.h() * g.w();
        long inImage = g.cin() * hw;
        long outImage = g.cout() * l;
        boolean pointwise = g.isPointwise();
        forImages(g.n(), (n0, n1) -> {
            MemorySegment col = pointwise ? null : COL.get().get(kg * l * esz);
            for (long n = n0; n < n1; n++) {
                long giImage = giOff + n * inImage;
                if (!pointwise) gi.asSlice(giImage * esz, inImage * esz).fill((byte) 0);
                for (int grp = 0; grp < g.groups(); grp++) {
                    long wG = wOff + (long) grp * g.coutG() * kg;
                    long goG = goOff + n * outImage + grp * g.coutG() * l;
                    long giG = giImage + grp * g.cinG() * hw;
                    // col = W_g^T @ gradOut_g: [kg, coutG] x [coutG, l].
                    if (pointwise) {
                        gemm(f32, kg, (int) l, g.coutG(), wt, wG, 1, kg, go, goG, l, 1, 0, gi, giG, l);
                    } else {
                        gemm(f32, kg, (int) l, g.coutG(), wt, wG, 1, kg, go, goG, l, 1, 0, col, 0, l);
                        col2imImage(f32, col, 0, g.cinG(), g, gi, giG);
                    }
                }
            }
        });
    }

    private static boolean flipsToConvolution(Geometry g) {
        return ConvF32.handles(g) && g.sh() == 1 && g.sw() == 1 && g.ph() <= g.dh() * (g.kh() - 1) && g.pw() <= g.dw() * (g.kw() - 1);
    }

    /** The stride-1 convolution that maps gradOut to gradInput: roles of input and output swapped. */
    static Geometry flippedGeometry(Geometry g) {
        return new Geometry(g.n(), g.cout(), g.oh(), g.ow(), g.cin(), g.kh(), g.kw(), 1, 1, g.dh() * (g.kh() - 1) - g.ph(),
                g.dw() * (g.kw() - 1) - g.pw(), g.dh(), g.dw(), g.groups(), g.h(), g.w());
    }

    /** {@code w'[g*cinG + ci][co][kh-1-i][kw-1-j] = w[g*coutG + co][ci][i][j]}: the weight of {@link #flippedGeometry}. */
    private static float[] flippedWeight(StridedView weight, Geometry g) {
        int kh = g.kh(), kw = g.kw(), kk = kh * kw, cinG = g.cinG(), coutG = g.coutG();
        float[] w = new float[g.cin() * coutG * kk];
        MemorySegment.copy(seg(weight), F32, weight.offset() * 4, w, 0, w.length);
        float[] r = new float[w.length];
        for (int grp = 0; grp < g.groups(); grp++) {
            for (int co = 0; co < coutG; co++) {
                for (int ci = 0; ci < cinG; ci++) {
                    int src = ((grp * coutG + co) * cinG + ci) * kk;
                    int dst = (((grp * cinG + ci) * coutG) + co) * kk;
                    for (int t = 0; t < kk; t++) r[dst + kk - 1 - t] = w[src + t];
                }
            }
        }
        return r;
    }

    /** The float32 weight-gradient kernels, in the order {@link #weightGradKernel} tries them; {@code COLUMNS} is im2col and GEMM. */
    private enum WeightGradKernel { WHOLE_IMAGE, SMALL_MAP, WIDE, SMALL_IMAGE_GEMM, POINTWISE, IMPLICIT_GEMM, COLUMNS }

    private static WeightGradKernel weightGradKernel(Geometry g) {
        if (ConvWholeImageF32.handles(g)) return WeightGradKernel.WHOLE_IMAGE;
        if (SMALL_MAPS && ConvSmallMapF32.handles(g)) return WeightGradKernel.SMALL_MAP;
        if (ConvWideWeightGradF32.handles(g)) return WeightGradKernel.WIDE;
        // Where the forward runs on the raster tiles, the direct weight gradient beat the batch GEMM on DCGAN's 128 -> 256
        // layer (median 14.5 against 15.6 ms, one thread, batch 64) and was level on ResNet-18's 4x4 layers.
        if (ConvRasterTileF32.handles(g) && RASTER_TILES && ConvF32.handlesWeightGrad(g)) return WeightGradKernel.IMPLICIT_GEMM;
        if (ConvGemmF32.prefers(g) && SMALL_IMAGES_AS_GEMM) return WeightGradKernel.SMALL_IMAGE_GEMM;
        if (ConvPointwiseF32.handlesWeightGrad(g)) return WeightGradKernel.POINTWISE;
        if (ConvF32.handlesWeightGrad(g)) return WeightGradKernel.IMPLICIT_GEMM;
        return WeightGradKernel.COLUMNS;
    }

    /** The direct weight gradient transposes gy and pads x channels-last itself, widening bfloat16 ones as it goes. */
    @Override
    public boolean weightGradReadsBf16(Geometry g) {
        if (!BF16_OPERANDS || g.n() == 0) return false;
        return weightGradKernel(g) == WeightGradKernel.IMPLICIT_GEMM && ConvF32.weightGradReadsBf16(g);
    }

    /** gradOut and input may both be bfloat16 (with a float32 gradWeight) where {@link #weightGradReadsBf16} says so. */
    @Override
    public void conv2dBackwardWeight(StridedView gradOut, StridedView input, StridedView gradWeight, Geometry g) {
        boolean f32 = gradWeight.dtype() == DType.FLOAT32;
        if (g.n() == 0) {
            // No images: a zero gradient. The fast paths below only accumulate over images, leaving the pool's old bytes.
            seg(gradWeight).asSlice(gradWeight.offset() * (f32 ? 4 : 8), (long) g.cout() * g.kg() * (f32 ? 4 : 8)).fill((byte) 0);
            return;
        }
        WeightGradKernel kernel = f32 ? weightGradKernel(g) : WeightGradKernel.COLUMNS;
        if (gradOut.dtype() != gradWeight.dtype() || input.dtype() != gradWeight.dtype()) {
            if (!(f32 && gradOut.dtype() == DType.BFLOAT16 && input.dtype() == DType.BFLOAT16 && weightGradReadsBf16(g))) {
                throw new IllegalArgumentException("conv2d weight gradient: the CPU kernel for " + g + " takes " + gradWeight.dtype()
                        + " operands, got gradOut " + gradOut.dtype() + " and input " + input.dtype());
            }
            ConvF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), true, seg(gradWeight), gradWeight.offset(), g);
            return;
        }
        switch (kernel) {
            case WHOLE_IMAGE -> {
                ConvWholeImageF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case SMALL_MAP -> {
                ConvSmallMapF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case WIDE -> {
                ConvWideWeightGradF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case SMALL_IMAGE_GEMM -> {
                ConvGemmF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case POINTWISE -> {
                ConvPointwiseF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case IMPLICIT_GEMM -> {
                ConvF32.weightGrad(seg(gradOut), gradOut.offset(), seg(input), input.offset(), false, seg(gradWeight),
                        gradWeight.offset(), g);
                return;
            }
            case COLUMNS -> { }
        }
        int esz = f32 ? 4 : 8;
        MemorySegment go = seg(gradOut), x = seg(input), gw = seg(gradWeight);
        long goOff = gradOut.offset(), xOff = input.offset(), gwOff = gradWeight.offset();
        long l = (long) g.oh() * g.ow();
        int kg = g.kg();
        long inImage = (long) g.cin() * g.h() * g.w();
        long outImage = g.cout() * l;
        long wSize = (long) g.cout() * kg;
        boolean pointwise = g.isPointwise();
        int chunks = (int) Math.min(g.n(), Parallel.inParallelRegion() ? 1 : Parallel.numThreads());
        if (g.n() == 0 || chunks <= 1) {
            gw.asSlice(gwOff * esz, wSize * esz).fill((byte) 0);
            weightGradImages(f32, go, goOff, x, xOff, 0, g.n(), gw, gwOff, g, pointwise, esz, inImage, outImage);
            return;
        }
        // Chunk 0 accumulates into gradWeight itself, chunk c > 0 into row c - 1 of a partial buffer.
        // CPU scratch from the allocator, as halfGemm's.
        Storage partial = Storage.allocateCpu((long) (chunks - 1) * wSize * esz);
        try {
            MemorySegment p = partial.segment();
            long pOff = 0;
            Parallel.forRange(chunks, 1, (c0, c1) -> {
                for (long c = c0; c < c1; c++) {
                    long n0 = c * g.n() / chunks, n1 = (c + 1) * g.n() / chunks;
                    MemorySegment dst = c == 0 ? gw : p;
                    long dstOff = c == 0 ? gwOff : pOff + (c - 1) * wSize;
                    dst.asSlice(dstOff * esz, wSize * esz).fill((byte) 0);
                    weightGradImages(f32, go, goOff, x, xOff, n0, n1, dst, dstOff, g, pointwise, esz, inImage, outImage);
                }
            });
            for (int c = 1; c < chunks; c++) addInto(f32, p, pOff + (c - 1) * wSize, gw, gwOff, wSize);
        } finally {
            partial.release();
        }
    }

    @Override
    public void conv2dBackwardBias(StridedView gradOut, StridedView gradBias) {
        boolean f32 = gradBias.dtype() == DType.FLOAT32;
        int n = (int) gradOut.size(0), channels = (int) gradOut.size(1);
        long l = gradOut.size(2) * gradOut.size(3);
        MemorySegment g = seg(gradOut), b = seg(gradBias);
        long gOff = gradOut.offset(), bOff = gradBias.offset();
        // Channels in parallel; each channel's rows summed in image order (vector lanes within a row).
        Parallel.forRange(channels, Math.max(1, 32768 / Math.max(1, n * l)), (c0, c1) -> {
            for (long c = c0; c < c1; c++) {
                double total = 0;
                for (int i = 0; i < n; i++) {
                    long row = gOff + ((long) i * channels + c) * l;
                    total += f32 ? sumRowF32(g, row * 4, l) : sumRowF64(g, row * 8, l);
                }
                if (f32) b.set(F32, (bOff + c) * 4, (float) total);
                else b.set(F64, (bOff + c) * 8, total);
            }
        });
    }

    private static double sumRowF32(MemorySegment s, long byteOff, long n) {
        FloatVector acc = FloatVector.zero(FS);
        long i = 0;
        for (; i + FS.length() <= n; i += FS.length()) acc = acc.add(FloatVector.fromMemorySegment(FS, s, byteOff + 4 * i, NO));
        double r = VectorF32.sumLanes(acc);
        for (; i < n; i++) r += s.get(F32, byteOff + 4 * i);
        return r;
    }

    private static double sumRowF64(MemorySegment s, long byteOff, long n) {
        double r = 0;
        for (long i = 0; i < n; i++) r += s.get(F64, byteOff + 8 * i);
        return r;
    }

    /** Adds the weight gradient of images {@code [n0, n1)} into {@code dst} (already initialised). */
    private static void weightGradImages(boolean f32, MemorySegment go, long goOff, MemorySegment x, long xOff, long n0, long n1,
                                         MemorySegment dst, long dstOff, Geometry g, boolean pointwise, int esz,
                                         long inImage, long outImage) {
        long l = (long) g.oh() * g.ow();
        int kg = g.kg();
        MemorySegment col = pointwise ? null : COL.get().get(kg * l * esz);
        for (long n = n0; n < n1; n++) {
            for (int grp = 0; grp < g.groups(); grp++) {
                long xG = xOff + n * inImage + (long) grp * g.cinG() * g.h() * g.w();
                long goG = goOff + n * outImage + grp * g.coutG() * l;
                MemorySegment b = x;
                long bOff = xG;
                if (!pointwise) {
                    im2colImage(x, xG, g.cinG(), g, col, 0, esz);
                    b = col;
                    bOff = 0;
                }
                // gW_g += gradOut_g @ col^T: [coutG, l] x [l, kg].
                gemm(f32, g.coutG(), kg, (int) l, go, goG, l, 1, b, bOff, 1, l, 1, dst, dstOff + (long) grp * g.coutG() * kg, kg);
            }
        }
    }

    @Override
    public void im2col(StridedView input, StridedView col, Geometry g) {
        int esz = (int) input.dtype().byteSize();
        MemorySegment x = seg(input), c = seg(col);
        long xOff = input.offset(), cOff = col.offset();
        long inImage = (long) g.cin() * g.h() * g.w();
        long colImage = (long) g.cin() * g.kh() * g.kw() * g.oh() * g.ow();
        forImages(g.n(), (n0, n1) -> {
            for (long n = n0; n < n1; n++) im2colImage(x, xOff + n * inImage, g.cin(), g, c, cOff + n * colImage, esz);
        });
    }

    @Override
    public void col2im(StridedView col, StridedView out, Geometry g) {
        boolean f32 = out.dtype() == DType.FLOAT32;
        int esz = f32 ? 4 : 8;
        MemorySegment c = seg(col), o = seg(out);
        long cOff = col.offset(), oOff = out.offset();
        long outImage = (long) g.cin() * g.h() * g.w();
        long colImage = (long) g.cin() * g.kh() * g.kw() * g.oh() * g.ow();
        forImages(g.n(), (n0, n1) -> {
            for (long n = n0; n < n1; n++) {
                o.asSlice((oOff + n * outImage) * esz, outImage * esz).fill((byte) 0);
                col2imImage(f32, c, cOff + n * colImage, g.cin(), g, o, oOff + n * outImage);
            }
        });
    }

    // ------------------------------------------------------------------ building blocks

    private static MemorySegment seg(StridedView t) {
        return t.memory();
    }

    /** Images in parallel when there are several; a single image runs on the caller and its GEMMs use every thread. */
    private static void forImages(long n, Parallel.RangeBody body) {
        if (n > 1) Parallel.forRange(n, 1, body);
        else body.run(0, n);
    }

    private static void gemm(boolean f32, int m, int n, int k, MemorySegment a, long aOff, long ars, long acs,
                             MemorySegment b, long bOff, long brs, long bcs, double beta, MemorySegment c, long cOff, long ldc) {
        if (f32) Gemm.sgemm(m, n, k, 1f, a, aOff, ars, acs, b, bOff, brs, bcs, (float) beta, c, cOff, ldc);
        else Gemm.dgemm(m, n, k, 1d, a, aOff, ars, acs, b, bOff, brs, bcs, beta, c, cOff, ldc);
    }

    /**
     * Writes the {@code [channels*kh*kw, oh*ow]} column matrix of {@code channels} channels of one image
     * (elements from {@code xOff}) at element {@code dOff} of {@code dst}. Any dtype of {@code esz} bytes:
     * it only moves bytes.
     */
    static void im2colImage(MemorySegment x, long xOff, int channels, Geometry g, MemorySegment dst, long dOff, int esz) {
        im2colImage(x, xOff, channels, g, dst, dOff, (long) g.oh() * g.ow(), esz);
    }

    /** As above, with the matrix's rows {@code ld} elements apart (several images' columns side by side: {@link ConvGemmF32}). */
    static void im2colImage(MemorySegment x, long xOff, int channels, Geometry g, MemorySegment dst, long dOff, long ld, int esz) {
        int oh = g.oh(), ow = g.ow(), h = g.h(), w = g.w();
        for (int c = 0; c < channels; c++) {
            for (int ki = 0; ki < g.kh(); ki++) {
                for (int kj = 0; kj < g.kw(); kj++) {
                    long row = dOff + (((long) c * g.kh() + ki) * g.kw() + kj) * ld;
                    int ix0 = kj * g.dw() - g.pw();
                    // Output columns whose input column lies inside the image: ox in [lo, hi).
                    int lo = Math.min(ow, ceilDiv(Math.max(0, -ix0), g.sw()));
                    int hi = Math.max(lo, Math.min(ow, ceilDiv(w - ix0, g.sw())));
                    for (int oy = 0; oy < oh; oy++) {
                        int iy = oy * g.sh() - g.ph() + ki * g.dh();
                        long d = (row + (long) oy * ow) * esz;
                        if (iy < 0 || iy >= h) {
                            dst.asSlice(d, (long) ow * esz).fill((byte) 0);
                            continue;
                        }
                        long src = xOff + ((long) c * h + iy) * w + ix0;
                        if (lo > 0) dst.asSlice(d, (long) lo * esz).fill((byte) 0);
                        if (g.sw() == 1) {
                            MemorySegment.copy(x, (src + lo) * esz, dst, d + (long) lo * esz, (long) (hi - lo) * esz);
                        } else if (esz == 4) {
                            for (int ox = lo; ox < hi; ox++) dst.set(F32, d + ox * 4L, x.get(F32, (src + (long) ox * g.sw()) * 4));
                        } else if (esz == 8) {
                            for (int ox = lo; ox < hi; ox++) dst.set(F64, d + ox * 8L, x.get(F64, (src + (long) ox * g.sw()) * 8));
                        } else {
                            for (int ox = lo; ox < hi; ox++) MemorySegment.copy(x, (src + (long) ox * g.sw()) * esz, dst, d + (long) ox * esz, esz);
                        }
                        if (hi < ow) dst.asSlice(d + (long) hi * esz, (long) (ow - hi) * esz).fill((byte) 0);
                    }
                }
            }
        }
    }

    /** Adds the column matrix of {@code channels} channels at {@code cOff} into the image at {@code oOff} (the transpose of im2col). */
    static void col2imImage(boolean f32, MemorySegment col, long cOff, int channels, Geometry g, MemorySegment out, long oOff) {
        col2imImage(f32, col, cOff, (long) g.oh() * g.ow(), channels, g, out, oOff);
    }

    /** As above, with the matrix's rows {@code ld} elements apart. */
    static void col2imImage(boolean f32, MemorySegment col, long cOff, long ld, int channels, Geometry g, MemorySegment out, long oOff) {
        int oh = g.oh(), ow = g.ow(), h = g.h(), w = g.w();
        for (int c = 0; c < channels; c++) {
            for (int ki = 0; ki < g.kh(); ki++) {
                for (int kj = 0; kj < g.kw(); kj++) {
                    long row = cOff + (((long) c * g.kh() + ki) * g.kw() + kj) * ld;
                    int ix0 = kj * g.dw() - g.pw();
                    int lo = Math.min(ow, ceilDiv(Math.max(0, -ix0), g.sw()));
                    int hi = Math.max(lo, Math.min(ow, ceilDiv(w - ix0, g.sw())));
                    for (int oy = 0; oy < oh; oy++) {
                        int iy = oy * g.sh() - g.ph() + ki * g.dh();
                        if (iy < 0 || iy >= h) continue;
                        long src = row + (long) oy * ow;
                        long dst = oOff + ((long) c * h + iy) * w + ix0;
                        if (f32 && g.sw() == 1) {
                            addRowF32(col, (src + lo) * 4, out, (dst + lo) * 4, hi - lo);
                        } else if (f32 && g.sw() == 2) {
                            addRowStride2F32(col, (src + lo) * 4, out, (dst + 2L * lo) * 4, hi - lo);
                        } else if (f32) {
                            for (int ox = lo; ox < hi; ox++) {
                                long at = (dst + (long) ox * g.sw()) * 4;
                                out.set(F32, at, out.get(F32, at) + col.get(F32, (src + ox) * 4));
                            }
                        } else {
                            for (int ox = lo; ox < hi; ox++) {
                                long at = (dst + (long) ox * g.sw()) * 8;
                                out.set(F64, at, out.get(F64, at) + col.get(F64, (src + ox) * 8));
                            }
                        }
                    }
                }
            }
        }
    }

    /** {@code out[0, n) += src[0, n)} over float32 bytes. */
    /** Lane l of the first (second) half of 32 interleaved floats: element l / 2 (8 + l / 2) of the row, or the filler. */
    private static final FloatVector ZIP_LO = zipIndex(0), ZIP_HI = zipIndex(8);
    /** Lanes 0-14: the second half's last lane is the element after the run, which this call must not write. */
    private static final VectorMask<Float> FIRST_15 = FS.indexInRange(0, 15);

    private static FloatVector zipIndex(int from) {
        float[] idx = new float[FS.length()];
        for (int l = 0; l < idx.length; l++) idx[l] = l % 2 == 0 ? from + l / 2 : FS.length();
        return FloatVector.fromArray(FS, idx, 0);
    }

    /**
     * {@code out[2i] += src[i]} for {@code i < n} (floats, byte offsets): 16 at a time, spread over two
     * vectors with -0.0 in the odd lanes (x + -0.0 is x for every x, -0.0 included). The element after
     * the run is never written: it may belong to another image, which another thread is writing.
     */
    static void addRowStride2F32(MemorySegment src, long sByte, MemorySegment out, long oByte, int n) {
        int i = 0;
        if (FS.length() == 16) {
            FloatVector filler = FloatVector.broadcast(FS, -0.0f);
            for (; i + 16 <= n && oByte + 8L * i + 128 <= out.byteSize(); i += 16) {
                FloatVector v = FloatVector.fromMemorySegment(FS, src, sByte + 4L * i, NO);
                long o = oByte + 8L * i;
                FloatVector.fromMemorySegment(FS, out, o, NO).add(ZIP_LO.selectFrom(v, filler)).intoMemorySegment(out, o, NO);
                FloatVector.fromMemorySegment(FS, out, o + 64, NO).add(ZIP_HI.selectFrom(v, filler))
                        .intoMemorySegment(out, o + 64, NO, FIRST_15);
            }
        }
        for (; i < n; i++) out.set(F32, oByte + 8L * i, out.get(F32, oByte + 8L * i) + src.get(F32, sByte + 4L * i));
    }

    static void addRowF32(MemorySegment src, long sByte, MemorySegment out, long oByte, int n) {
        int i = 0;
        for (; i + FS.length() <= n; i += FS.length()) {
            long o = oByte + 4L * i;
            FloatVector.fromMemorySegment(FS, out, o, NO).add(FloatVector.fromMemorySegment(FS, src, sByte + 4L * i, NO))
                    .intoMemorySegment(out, o, NO);
        }
        for (; i < n; i++) out.set(F32, oByte + 4L * i, out.get(F32, oByte + 4L * i) + src.get(F32, sByte + 4L * i));
    }

    private static void addInto(boolean f32, MemorySegment src, long sOff, MemorySegment dst, long dOff, long n) {
        if (f32) {
            addRowF32(src, sOff * 4, dst, dOff * 4, Math.toIntExact(n));
            return;
        }
        int i = 0;
        for (; i + DS.length() <= n; i += DS.length()) {
            long o = (dOff + i) * 8;
            DoubleVector.fromMemorySegment(DS, dst, o, NO).add(DoubleVector.fromMemorySegment(DS, src, (sOff + i) * 8, NO))
                    .intoMemorySegment(dst, o, NO);
        }
        for (; i < n; i++) dst.set(F64, (dOff + i) * 8, dst.get(F64, (dOff + i) * 8) + src.get(F64, (sOff + i) * 8));
    }

    /** Adds {@code bias[c]} to row c of a {@code [channels, l]} block. */
    static void addBias(boolean f32, MemorySegment bias, long bOff, MemorySegment out, long oOff, int channels, long l) {
        for (int c = 0; c < channels; c++) {
            long row = oOff + c * l;
            if (f32) {
                float b = bias.get(F32, (bOff + c) * 4);
                FloatVector bv = FloatVector.broadcast(FS, b);
                long i = 0;
                for (; i + FS.length() <= l; i += FS.length()) {
                    long o = (row + i) * 4;
                    FloatVector.fromMemorySegment(FS, out, o, NO).add(bv).intoMemorySegment(out, o, NO);
                }
                for (; i < l; i++) out.set(F32, (row + i) * 4, out.get(F32, (row + i) * 4) + b);
            } else {
                double b = bias.get(F64, (bOff + c) * 8);
                for (long i = 0; i < l; i++) out.set(F64, (row + i) * 8, out.get(F64, (row + i) * 8) + b);
            }
        }
    }

    private static int ceilDiv(int a, int b) {
        return Math.floorDiv(a + b - 1, b);
    }
}
