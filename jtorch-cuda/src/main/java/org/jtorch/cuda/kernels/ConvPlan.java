package org.jtorch.cuda.kernels;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_BFLOAT16;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_DOUBLE;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_FLOAT;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DATA_HALF;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_DEFAULT_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_FMA_MATH;
import static org.jtorch.cuda.cudnn.CudnnConstants.CUDNN_TENSOR_OP_MATH;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.cuda.cudnn.Cudnn.Direction;
import org.jtorch.types.DType;

/**
 * Host-side planning of the CUDA convolution family ({@code CudaConvolutionKernels}): the cuDNN
 * descriptor values and per-call image chunks, and the fallback without cuDNN (im2col / col2im kernels
 * of {@code conv.cu} around cuBLASLt GEMMs, one per group or one per image), with the entry names and
 * argument bytes of {@code conv.cu}. Every tensor is contiguous NCHW (the {@code ConvolutionKernels}
 * contract), so strides follow from the geometry.
 *
 * <p>Compute settings follow PyTorch's {@code ConvolutionDescriptor} (aten/src/ATen/cudnn/Descriptors.h):
 * cross-correlation; float64 with {@code CUDNN_DEFAULT_MATH}; float32 with {@code CUDNN_FMA_MATH} (no
 * tensor cores, so no TF32 rounding) unless TF32 is allowed ({@link org.jtorch.backend.MatmulSettings},
 * default off), then {@code CUDNN_DEFAULT_MATH}, which lets cuDNN 8+ use TF32; float16/bfloat16 with
 * {@code CUDNN_TENSOR_OP_MATH} and float accumulation.
 */
public final class ConvPlan {
    private ConvPlan() {}

    /** Largest element count of one cuDNN legacy tensor: its dimensions and strides are C {@code int}s. */
    public static final long CUDNN_MAX_ELEMENTS = Integer.MAX_VALUE;
    /** The fallback's im2col matrix budget: images are processed in chunks whose column matrices fit (at least one image). */
    public static final long COL_BUDGET_BYTES = 256L << 20;
    /** Threads of a bias-gradient block (one block a channel). */
    public static final int BIAS_GRAD_THREADS = 256;

    // ------------------------------------------------------------------ cuDNN

    /**
     * One cuDNN convolution: data and compute types ({@code cudnnDataType_t}), math type, whether alpha/beta
     * are doubles, and the images per call ({@code imagesPerCall <= n}: every tensor of a call stays below
     * {@link #CUDNN_MAX_ELEMENTS}).
     */
    public record CudnnPlan(int dataType, int computeType, int mathType, boolean doubleScalars, int imagesPerCall) {}

    /** {@code cudnnDataType_t} of a floating dtype. */
    public static int cudnnDataType(DType dtype) {
        return switch (dtype) {
            case FLOAT32 -> CUDNN_DATA_FLOAT;
            case FLOAT64 -> CUDNN_DATA_DOUBLE;
            case FLOAT16 -> CUDNN_DATA_HALF;
            case BFLOAT16 -> CUDNN_DATA_BFLOAT16;
            default -> throw unsupported("conv2d", dtype);
        };
    }

    /**
     * The reason cuDNN cannot take this convolution, or null when it can: a tensor too large for its int32 sizes, or
     * an output size that equal padding on both sides does not give (the legacy API has one padding per dimension;
     * asymmetric "same" padding of an even kernel and a transposed convolution's cropped output have other sizes).
     */
    public static String cudnnRefusal(Geometry g) {
        long naturalH = (g.h() + 2L * g.ph() - (long) g.dh() * (g.kh() - 1) - 1) / g.sh() + 1;
        long naturalW = (g.w() + 2L * g.pw() - (long) g.dw() * (g.kw() - 1) - 1) / g.sw() + 1;
        if (naturalH != g.oh() || naturalW != g.ow()) {
            return "the output is " + g.oh() + "x" + g.ow() + " where padding " + g.ph() + "," + g.pw() + " on both sides gives "
                    + naturalH + "x" + naturalW + " (cuDNN pads symmetrically)";
        }
        long weight = (long) g.cout() * g.cinG() * g.kh() * g.kw();
        if (weight > CUDNN_MAX_ELEMENTS) return "the weight has " + weight + " elements (cuDNN's limit: 2^31 - 1)";
        if (perImage(g) > CUDNN_MAX_ELEMENTS) return "one image has " + perImage(g) + " elements (cuDNN's limit: 2^31 - 1)";
        return null;
    }

    /** The larger of one image's input and output element counts. */
    private static long perImage(Geometry g) {
        return Math.max((long) g.cin() * g.h() * g.w(), (long) g.cout() * g.oh() * g.ow());
    }

    /** The cuDNN settings of a convolution of {@code dtype}; {@link #cudnnRefusal} must be null. */
    public static CudnnPlan cudnn(Geometry g, DType dtype, boolean allowTf32) {
        String refusal = cudnnRefusal(g);
        if (refusal != null) throw new IllegalArgumentException("conv2d: cuDNN cannot run " + g + ": " + refusal);
        int data = cudnnDataType(dtype);
        int math = switch (dtype) {
            case FLOAT64 -> CUDNN_DEFAULT_MATH;
            case FLOAT32 -> allowTf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
            default -> CUDNN_TENSOR_OP_MATH;
        };
        int compute = dtype == DType.FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
        int images = (int) Math.max(1, Math.min(g.n(), CUDNN_MAX_ELEMENTS / perImage(g)));
        return new CudnnPlan(data, compute, math, dtype == DType.FLOAT64, images);
    }

    /** Images {@code [first, first + count)} of one call. */
    public record Chunk(int first, int count) {}

    /** {@code n} images cut into calls of at most {@code per} images, in order. */
    public static List<Chunk> chunks(int n, int per) {
        if (per < 1) throw new IllegalArgumentException("chunks: " + per + " images per chunk");
        List<Chunk> r = new ArrayList<>();
        for (int first = 0; first < n; first += per) r.add(new Chunk(first, Math.min(per, n - first)));
        return r;
    }

    /** The geometry of images {@code c} of {@code g} (the batch size replaced): what one call describes to cuDNN. */
    public static Geometry chunkGeometry(Geometry g, Chunk c) {
        return new Geometry(c.count(), g.cin(), g.h(), g.w(), g.cout(), g.kh(), g.kw(), g.sh(), g.sw(), g.ph(), g.pw(), g.dh(),
                g.dw(), g.groups(), g.oh(), g.ow());
    }

    /**
     * The algorithm cache key: one heuristic query per (device, direction, chunk geometry, dtype, math
     * type). The layout is always contiguous NCHW (the family's contract), so it needs no field.
     */
    public record AlgoKey(int device, Direction direction, Geometry geometry, DType dtype, int mathType) {}

    // ------------------------------------------------------------------ fallback: im2col + GEMM

    /** The tensors a fallback GEMM reads or writes: the convolution's input (or its gradient), weight (or its gradient), output (or its gradient), and the chunk's column matrix. */
    public enum Buffer { INPUT, WEIGHT, OUTPUT, COL }

    /**
     * A batch of row-major matrices in {@code buffer}: matrix {@code b}, element {@code (r, c)} at
     * {@code offset + b * batchStride + r * rowStride + c * colStride} (elements). COL offsets count from
     * the chunk's column matrix (image 0 of the chunk); the others from the tensor's first element.
     */
    public record Matrix(Buffer buffer, long offset, long batchStride, long rowStride, long colStride) {}

    /** {@code c[b] = a[b] @ b[b] + beta * c[b]} for {@code b < batch}: {@code a} is {@code m x k}, {@code b} {@code k x n}. */
    public record Gemm(int batch, long m, long n, long k, Matrix a, Matrix b, Matrix c, double beta) {}

    /** What a fallback does, in order: the device launcher runs it on the GPU, tests on the host. */
    public interface Steps {
        /** COL = im2col of INPUT images {@code [first, first + count)} (all channels). */
        void im2col(int first, int count);

        /** INPUT images {@code [first, first + count)} = col2im of COL. */
        void col2im(int first, int count);

        void gemm(Gemm gemm);
    }

    /**
     * The fallback of one direction: images in chunks of {@code imagesPerChunk}, each with a column
     * matrix of {@code colElementsPerImage} elements an image (0 for pointwise convolutions, whose image
     * already is its column matrix).
     */
    public record Fallback(Direction direction, Geometry g, int imagesPerChunk, long colElementsPerImage) {
        public boolean usesCol() {
            return colElementsPerImage > 0;
        }

        /** Runs the plan's steps for every chunk. */
        public void run(Steps steps) {
            for (Chunk c : chunks(g.n(), imagesPerChunk)) {
                if (usesCol() && direction != Direction.BACKWARD_DATA) steps.im2col(c.first(), c.count());
                for (Gemm gemm : gemms(c)) steps.gemm(gemm);
                if (usesCol() && direction == Direction.BACKWARD_DATA) steps.col2im(c.first(), c.count());
            }
        }

        /**
         * The GEMMs of one chunk. Forward, per group {@code y_g = W_g col_g}; backward data
         * {@code col_g = W_g^T dy_g} (then col2im); backward filter {@code dW_g += dy_g col_g^T}, image by
         * image (the sum over images is the GEMMs' beta = 1). Forward and backward data batch over images
         * (one GEMM a group) or over groups (one GEMM an image), whichever makes fewer calls.
         */
        public List<Gemm> gemms(Chunk chunk) {
            long l = (long) g.oh() * g.ow();
            long kg = g.kg(), coutG = g.coutG();
            long inImage = (long) g.cin() * g.h() * g.w(), outImage = (long) g.cout() * l;
            // The column matrix of group grp of image i: COL, or the input image itself when pointwise.
            Buffer colBuffer = usesCol() ? Buffer.COL : Buffer.INPUT;
            long colImage = usesCol() ? colElementsPerImage : inImage;
            long colFirst = usesCol() ? 0 : chunk.first() * inImage;
            long colGroup = kg * l;
            long outFirst = chunk.first() * outImage;
            long outGroup = coutG * l, weightGroup = coutG * kg;
            List<Gemm> r = new ArrayList<>();
            if (direction == Direction.BACKWARD_FILTER) {
                for (int i = 0; i < chunk.count(); i++) {
                    double beta = chunk.first() + i == 0 ? 0 : 1;
                    r.add(new Gemm(g.groups(), coutG, kg, l,
                            new Matrix(Buffer.OUTPUT, outFirst + i * outImage, outGroup, l, 1),
                            new Matrix(colBuffer, colFirst + i * colImage, colGroup, 1, l),
                            new Matrix(Buffer.WEIGHT, 0, weightGroup, kg, 1), beta));
                }
                return r;
            }
            boolean batchImages = g.groups() <= chunk.count();
            int calls = batchImages ? g.groups() : chunk.count();
            int batch = batchImages ? chunk.count() : g.groups();
            for (int call = 0; call < calls; call++) {
                int grp = batchImages ? call : 0, image = batchImages ? 0 : call;
                long wOff = grp * weightGroup, wBatch = batchImages ? 0 : weightGroup;
                long cOff = colFirst + image * colImage + grp * colGroup, cBatch = batchImages ? colImage : colGroup;
                long oOff = outFirst + image * outImage + grp * outGroup, oBatch = batchImages ? outImage : outGroup;
                Matrix col = new Matrix(colBuffer, cOff, cBatch, l, 1);
                Matrix out = new Matrix(Buffer.OUTPUT, oOff, oBatch, l, 1);
                if (direction == Direction.FORWARD) {
                    r.add(new Gemm(batch, coutG, l, kg, new Matrix(Buffer.WEIGHT, wOff, wBatch, kg, 1), col, out, 0));
                } else {
                    // W_g^T: the weight block read with swapped strides (a transposed view, no copy).
                    r.add(new Gemm(batch, kg, l, coutG, new Matrix(Buffer.WEIGHT, wOff, wBatch, 1, kg), out, col, 0));
                }
            }
            return r;
        }
    }

    /** The fallback of {@code direction} over {@code g} for {@code dtype}, chunked to {@link #COL_BUDGET_BYTES}. */
    public static Fallback fallback(Direction direction, Geometry g, DType dtype) {
        return fallback(direction, g, COL_BUDGET_BYTES / dtype.byteSize());
    }

    /** As above with a column budget of {@code colBudgetElements} elements (at least one image a chunk). */
    public static Fallback fallback(Direction direction, Geometry g, long colBudgetElements) {
        long colPerImage = g.isPointwise() ? 0 : (long) g.cin() * g.kh() * g.kw() * g.oh() * g.ow();
        int per = colPerImage == 0 ? Math.max(1, g.n()) : (int) Math.max(1, Math.min(g.n(), colBudgetElements / colPerImage));
        return new Fallback(direction, g, per, colPerImage);
    }

    // ------------------------------------------------------------------ conv.cu entries and arguments

    public static boolean supports(DType dtype) {
        return switch (dtype) {
            case FLOAT32, FLOAT64, FLOAT16, BFLOAT16 -> true;
            default -> false;
        };
    }

    /** {@code jt_conv_<op>_<dtype>} for op {@code im2col}, {@code col2im}, {@code bias_add}, {@code bias_grad}. */
    public static String entry(String op, DType dtype) {
        if (!supports(dtype)) throw unsupported(op, dtype);
        return "jt_conv_" + op + "_" + ElementwisePlan.suffix(dtype);
    }

    private static UnsupportedOperationException unsupported(String op, DType dtype) {
        return new UnsupportedOperationException(op + ": no CUDA convolution kernel for " + dtype.pyName()
                + " (float32, float64, float16, bfloat16 only)");
    }

    /** Bytes of {@code jt::ConvShape}: 13 ints. */
    public static final long SHAPE_BYTES = 13 * 4;

    /** {@code jt::ConvShape} of {@code channels} channels of {@code g}'s input images. */
    public static MemorySegment packShape(Arena arena, int channels, Geometry g) {
        int[] v = {channels, g.h(), g.w(), g.kh(), g.kw(), g.sh(), g.sw(), g.ph(), g.pw(), g.dh(), g.dw(), g.oh(), g.ow()};
        MemorySegment s = arena.allocate(SHAPE_BYTES, 4);
        for (int i = 0; i < v.length; i++) s.set(JAVA_INT, 4L * i, v[i]);
        return s;
    }

    /** {@code jt_conv_im2col_<T>(const T* x, T* col, jt_i64 images, ConvShape s)} and col2im's {@code (col, x, images, s)}. */
    public static KernelArgs columns(Arena arena, long from, long to, long images, MemorySegment shape) {
        return new KernelArgs(arena).pointer(from).pointer(to).i64(images).struct(shape);
    }

    /** {@code jt_conv_bias_add_<T>(T* out, const T* bias, ...)} and {@code jt_conv_bias_grad_<T>(const T* grad, T* grad_bias, ...)}: {@code (p0, p1, images, channels, plane)}. */
    public static KernelArgs bias(Arena arena, long p0, long p1, long images, long channels, long plane) {
        return new KernelArgs(arena).pointer(p0).pointer(p1).i64(images).i64(channels).i64(plane);
    }

    /** Work items of im2col (column elements) for {@code images} images. */
    public static long im2colItems(Geometry g, long images) {
        return images * g.cin() * g.kh() * g.kw() * g.oh() * g.ow();
    }

    /** Work items of col2im (image elements) for {@code images} images. */
    public static long col2imItems(Geometry g, long images) {
        return images * g.cin() * (long) g.h() * g.w();
    }

    /** Blocks of a bias-gradient launch: one a channel, capped as {@link LaunchGeometry} caps grids (the kernel loops). */
    public static int biasGradBlocks(long channels, int multiprocessors) {
        return (int) Math.min(channels, (long) multiprocessors * LaunchGeometry.BLOCKS_PER_SM);
    }
}
