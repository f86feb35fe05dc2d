package org.jtorch.backend;

import static org.jtorch.op.RandomOps.exact;
import static org.jtorch.op.RandomOps.firstBlock;
import static org.jtorch.op.RandomOps.seed;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.memory.ElementCodec;
import org.jtorch.memory.Storage;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.RandomOps;
import org.jtorch.op.StridedView;

/**
 * The kernels of {@link RandomOps} for one backend, from its {@link RandomKernels} (Philox fills of contiguous memory)
 * and its pointwise kernels: bernoulli and dropout draw their uniforms into scratch memory and compare and scale them with
 * the backend's {@code lt}, {@code mul}, {@code where} and strided copy, in the dtypes and with the numbers the
 * composition of tensor ops they replace used, so that results stay bit for bit. The generator's state comes after the call's scalars
 * ({@link RandomOps#seed}, {@link RandomOps#firstBlock}).
 */
public final class RandomOpKernels {
    private RandomOpKernels() {}

    static void register(Backend backend) {
        Device.Type type = backend.deviceType();
        RandomKernels random = backend.random();
        KernelRegistry.register(type, RandomOps.UNIFORM.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.uniform(c, g[0], g[1], seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.NORMAL.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.normal(c, g[0], g[1], seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.RANDOM.kernel(), (out, in, g) ->
                contiguous(backend, out, c -> random.randint(c, exact(g, 3), exact(g, 5), seed(g), firstBlock(g))));
        KernelRegistry.register(type, RandomOps.BERNOULLI.kernel(), (out, in, g) -> bernoulli(backend, out, in[0], 0, g));
        KernelRegistry.register(type, RandomOps.BERNOULLI_P.kernel(), (out, in, g) -> bernoulli(backend, out, null, g[0], g));
        KernelRegistry.registerMulti(type, RandomOps.NATIVE_DROPOUT.kernel(), (outs, in, g) -> dropout(backend, outs[0], outs[1], in[0], g));
        KernelRegistry.register(type, RandomOps.NATIVE_DROPOUT_BACKWARD.kernel(), (out, in, g) -> dropoutBackward(backend, out, in[0], in[1], g[0]));
    }

    /** Runs a fill on {@code out}, or on a contiguous scratch copied into it (element i of the fill lands at logical index i). */
    private static void contiguous(Backend backend, StridedView out, Consumer<StridedView> fill) {
        if (out.isContiguous()) {
            fill.accept(out);
            return;
        }
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView c = scratch.allocate(out.device(), out.shape(), out.dtype());
            fill.accept(c);
            backend.copy(c, out);
        }
    }

    /** {@code (u < p).to(out.dtype)} for float64 uniforms u: against the tensor {@code probs}, or the number {@code p}. */
    private static void bernoulli(Backend backend, StridedView out, StridedView probs, double p, double[] g) {
        Device device = out.device();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView u = scratch.allocate(device, out.shape(), DType.FLOAT64);
            backend.random().uniform(u, 0, 1, seed(g), firstBlock(g));
            StridedView hit = scratch.allocate(device, out.shape(), DType.BOOL);
            StridedView bound = probs != null ? probs : number(backend, scratch, device, DType.FLOAT64, p, out.shape());
            pointwise(PointwiseOps.LT, DType.FLOAT64, hit, u, bound);
            backend.copy(hit, out);
        }
    }

    /**
     * Dropout as {@code x * ((u < 1 - p).to(dtype) * scale)} for uniforms u of x's dtype, the mask written into
     * {@code mask} (or scratch when the caller reads none); out of training, a copy of x and an all-true mask.
     */
    private static void dropout(Backend backend, StridedView out, StridedView mask, StridedView x, double[] g) {
        double p = g[0];
        if (g[1] == 0) {
            backend.copy(x, out);
            if (mask != null) backend.fill(mask, 1, 1);
            return;
        }
        Device device = out.device();
        DType t = out.dtype();
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView u = scratch.allocate(device, out.shape(), t);
            backend.random().uniform(u, 0, 1, seed(g), firstBlock(g));
            StridedView keep = mask != null ? mask : scratch.allocate(device, out.shape(), DType.BOOL);
            pointwise(PointwiseOps.LT, t, keep, u, number(backend, scratch, device, scalarType(t), 1 - p, out.shape()));
            StridedView scale = scaled(backend, scratch, keep, t, p == 1 ? 0 : 1.0 / (1 - p));
            pointwise(PointwiseOps.MUL, t, out, x, scale);
        }
    }

    /** {@code grad * (mask.to(dtype) * scale)}; an infinite scale counts as zero. */
    private static void dropoutBackward(Backend backend, StridedView out, StridedView grad, StridedView mask, double scale) {
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView s = scaled(backend, scratch, mask, out.dtype(), Double.isInfinite(scale) ? 0 : scale);
            pointwise(PointwiseOps.MUL, out.dtype(), out, grad, s);
        }
    }

    /**
     * {@code mask.to(t) * scale} in scratch, in one pass: {@code mask ? scale : 0} with the kept value rounded as that
     * product rounds it ({@code t}'s multiplication computes in float32 for float16/bfloat16, with the number unrounded).
     */
    private static StridedView scaled(Backend backend, ConvolutionOpKernels.Scratch scratch, StridedView mask, DType t, double scale) {
        Device device = mask.device();
        StridedView s = scratch.allocate(device, mask.shape(), t);
        double kept = t == DType.FLOAT64 ? scale : (float) scale;
        backend.where(mask, number(backend, scratch, device, t, kept, mask.shape()), number(backend, scratch, device, t, 0, mask.shape()), s);
        return s;
    }

    /**
     * A Java number as a binary op's operand next to a tensor of dtype {@code t}: float32 for float16/bfloat16 (their ops
     * compute in float32 with the number unrounded), else {@code t}, as the front end's wrapped numbers.
     */
    private static DType scalarType(DType t) {
        return t == DType.FLOAT16 || t == DType.BFLOAT16 ? DType.FLOAT32 : t;
    }

    /** {@code value} in {@code dtype} broadcast to {@code shape}: on the heap for the CPU (as its wrapped numbers), else scratch. */
    private static StridedView number(Backend backend, ConvolutionOpKernels.Scratch scratch, Device device, DType dtype, double value,
                                      long[] shape) {
        if (device.isCpu()) {
            MemorySegment seg = MemorySegment.ofArray(new long[1]);
            ElementCodec.setDouble(dtype, seg, 0, value);
            return new StridedView(seg, 0, shape, new long[shape.length], dtype, Storage.wrapHeap(seg));
        }
        StridedView v = scratch.allocate(device, new long[0], dtype);
        backend.fill(v, value, (long) value);
        return v.restrided(shape, new long[shape.length], 0);
    }

    /** {@code out = op(a, b)} by the backend's pointwise kernel computing in {@code compute} (a binary op's alpha is 1). */
    private static void pointwise(OpDef op, DType compute, StridedView out, StridedView a, StridedView b) {
        Device device = out.device();
        Backends.hold(op.pyName(), out, a, b);
        try {
            KernelRegistry.pointwise(op, device.type()).run(device.index(), op.computeType(compute, DType.FLOAT32), out, a, b, 1, 0);
        } finally {
            Backends.drop(out, a, b);
        }
    }
}
