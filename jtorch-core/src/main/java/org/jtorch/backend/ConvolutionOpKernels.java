package org.jtorch.backend;

import java.util.ArrayList;
import java.util.List;
import org.jtorch.backend.ConvolutionKernels.Geometry;
import org.jtorch.memory.Storage;
import org.jtorch.op.Callback;
import org.jtorch.op.ConvolutionOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels of the convolution primitives ({@link ConvolutionOps}) for one backend, from its
 * {@link ConvolutionKernels}, which take contiguous NCHW operands of float32 or float64: other dtypes and layouts
 * are copied into scratch first (float16/bfloat16 to float32, integers to float64) and the result rounded once; a
 * contiguous bfloat16 input that the backend's kernel reads itself ({@link ConvolutionKernels#convReadsBf16Input}) is
 * passed as it is.
 */
public final class ConvolutionOpKernels {
    private ConvolutionOpKernels() {}

    private enum Primitive { CONV, CONV_T, WEIGHT_GRAD, IM2COL, COL2IM }

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        KernelRegistry.register(type, ConvolutionOps.CONVOLUTION.kernel(), (out, in, s) -> run(backend, Primitive.CONV, out, in, s));
        KernelRegistry.registerWithCallback(type, ConvolutionOps.CONVOLUTION_EPILOGUE.kernel(), (out, in, s, callback) -> {
            ConvolutionKernels.Epilogue epilogue = Callback.work(ConvolutionOps.CONVOLUTION_EPILOGUE.pyName(), callback, out,
                    ConvolutionKernels.Epilogue.class);
            // float32 and dense (the op's meta function and declaration): the backend's kernels take the views as they are.
            if (epilogue == null) backend.convolution().conv2d(in[0], in[1], in[2], out, geometry(s));
            else backend.convolution().conv2dWithEpilogue(in[0], in[1], in[2], out, geometry(s), epilogue);
        });
        KernelRegistry.register(type, ConvolutionOps.CONVOLUTION_TRANSPOSE.kernel(), (out, in, s) -> run(backend, Primitive.CONV_T, out, in, s));
        KernelRegistry.register(type, ConvolutionOps.CONVOLUTION_WEIGHT_GRAD.kernel(),
                (out, in, s) -> run(backend, Primitive.WEIGHT_GRAD, out, in, s));
        KernelRegistry.register(type, ConvolutionOps.IM2COL.kernel(), (out, in, s) -> run(backend, Primitive.IM2COL, out, in, s));
        KernelRegistry.register(type, ConvolutionOps.COL2IM.kernel(), (out, in, s) -> run(backend, Primitive.COL2IM, out, in, s));
        KernelRegistry.register(type, ConvolutionOps.CONVOLUTION_BIAS_GRAD.kernel(), (out, in, s) -> {
            try (Scratch scratch = new Scratch(backend)) {
                DType compute = computeType(in[0].dtype());
                StridedView g = scratch.operand(in[0], compute, in[0].shape());
                StridedView r = scratch.result(out, compute);
                backend.convolution().conv2dBackwardBias(g, r);
                scratch.finish(r, out);
            }
        });
    }

    /** The dtype a convolution kernel computes in: float32 and float64 natively, half precision in float32, integers in float64. */
    private static DType computeType(DType t) {
        return switch (t) {
            case FLOAT32, FLOAT64 -> t;
            case FLOAT16, BFLOAT16 -> DType.FLOAT32;
            default -> DType.FLOAT64;
        };
    }

    private static void run(Backend backend, Primitive kind, StridedView out, StridedView[] in, double[] s) {
        Geometry g = geometry(s);
        long[] input = {g.n(), g.cin(), g.h(), g.w()};
        long[] output = {g.n(), g.cout(), g.oh(), g.ow()};
        long[] weight = {g.cout(), g.cinG(), g.kh(), g.kw()};
        long[] columns = {g.n(), (long) g.cin() * g.kh() * g.kw(), (long) g.oh() * g.ow()};
        // im2col only moves elements: it runs in the input's own dtype.
        DType compute = kind == Primitive.IM2COL ? in[0].dtype() : computeType(in[0].dtype());
        ConvolutionKernels k = backend.convolution();
        try (Scratch scratch = new Scratch(backend)) {
            StridedView r = scratch.result(out, compute);
            switch (kind) {
                case CONV -> k.conv2d(readsBf16(in[0], k.convReadsBf16Input(g)) ? in[0].view(input) : scratch.operand(in[0], compute, input),
                        scratch.operand(in[1], compute, weight),
                        in[2] == null ? null : scratch.operand(in[2], compute, in[2].shape()), r.view(output), g);
                case CONV_T -> {
                    StridedView r4 = r.view(input);
                    StridedView gradOut = readsBf16(in[0], k.inputGradReadsBf16GradOut(g)) ? in[0].view(output)
                            : scratch.operand(in[0], compute, output);
                    k.conv2dBackwardInput(gradOut, scratch.operand(in[1], compute, weight), r4, g);
                    if (in[2] != null) {
                        // plus the bias of each channel, broadcast over the batch and the positions
                        StridedView b = scratch.operand(in[2], compute, in[2].shape());
                        StridedView spread = b.restrided(input, new long[] {0, b.stride(0), 0, 0}, b.offset());
                        KernelRegistry.pointwise(PointwiseOps.ADD, out.device().type()).run(out.device().index(), compute, r4, r4,
                                spread, 1, 0);
                    }
                }
                case WEIGHT_GRAD -> {
                    if (readsBf16(in[0], k.weightGradReadsBf16(g)) && readsBf16(in[1], true)) {
                        k.conv2dBackwardWeight(in[0].view(output), in[1].view(input), r.view(weight), g);
                    } else {
                        k.conv2dBackwardWeight(scratch.operand(in[0], compute, output), scratch.operand(in[1], compute, input),
                                r.view(weight), g);
                    }
                }
                case IM2COL -> k.im2col(scratch.operand(in[0], compute, input), r.view(columns), g);
                case COL2IM -> k.col2im(scratch.operand(in[0], compute, columns), r.view(input), g);
            }
            scratch.finish(r, out);
        }
    }

    /** Whether {@code v} goes to the kernel as it is: contiguous bfloat16 that the kernel {@code reads} itself. */
    private static boolean readsBf16(StridedView v, boolean reads) {
        return reads && v.dtype() == DType.BFLOAT16 && v.isContiguous();
    }

    private static Geometry geometry(double[] s) {
        int[] v = new int[s.length];
        for (int i = 0; i < v.length; i++) v[i] = Math.toIntExact((long) s[i]);
        return new Geometry(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]);
    }

    /** The kernel's scratch memory: operands and results converted to the compute dtype, released when the call ends. */
    static final class Scratch implements AutoCloseable {
        private final Backend backend;
        private final List<Storage> held = new ArrayList<>();

        Scratch(Backend backend) {
            this.backend = backend;
        }

        StridedView allocate(Device device, long[] shape, DType dtype) {
            long numel = org.jtorch.op.Shapes.numel(shape);
            Storage s = backend.allocate(device, Math.max(1, numel) * dtype.byteSize());
            held.add(s);
            return StridedView.contiguous(s, shape, dtype);
        }

        /** {@code v} as a contiguous {@code compute} view of {@code shape} (the same elements): itself where it is one. */
        StridedView operand(StridedView v, DType compute, long[] shape) {
            if (v.dtype() == compute && v.isContiguous()) return v.view(shape);
            StridedView c = allocate(v.device(), v.shape(), compute);
            backend.copy(v, c);
            return c.view(shape);
        }

        /** Where the kernel writes {@code out}'s values in {@code compute}: {@code out} itself when it is of that dtype. */
        StridedView result(StridedView out, DType compute) {
            return out.dtype() == compute ? out : allocate(out.device(), out.shape(), compute);
        }

        /** Rounds a scratch result into {@code out} (once). */
        void finish(StridedView r, StridedView out) {
            if (r != out) backend.copy(r, out);
        }

        @Override
        public void close() {
            for (Storage s : held) s.release();
        }
    }
}
