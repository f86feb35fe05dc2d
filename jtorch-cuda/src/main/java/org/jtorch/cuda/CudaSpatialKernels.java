package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jtorch.backend.SpatialKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.PoolPlan;
import org.jtorch.cuda.kernels.PoolPlan.Op;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/**
 * {@link SpatialKernels} on a CUDA device: the pooling kernels of {@code pool.cu} (compiled whole, as PTX
 * through the disk cache), one thread per output element, or per input element for the gathering
 * average-pooling gradients, on the device's current stream. Max pooling's gradient zeroes {@code gradIn}
 * ({@code cuMemsetD8Async}) and scatters with {@code atomicAdd}, so where windows overlap the order of the
 * float additions, and so the last bits of the sum, may vary between runs (as PyTorch's). Operands must be
 * contiguous float32 or float64 tensors on one device, as the interface promises; anything else throws
 * naming the method.
 */
final class CudaSpatialKernels implements SpatialKernels {
    private static final String FILE = "pool.cu";

    private final Supplier<CudaKernels> kernels;

    CudaSpatialKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    private static void check(Op op, StridedView reference, StridedView... operands) {
        for (StridedView t : operands) {
            if (t == null) continue;
            if (!t.isContiguous()) {
                throw new IllegalArgumentException(op.method() + ": the CUDA kernels take contiguous operands, got strides "
                        + java.util.Arrays.toString(t.strides()) + " for shape " + java.util.Arrays.toString(t.shape()));
            }
            if (!t.device().equals(reference.device())) {
                throw new IllegalArgumentException(op.method() + ": operands on " + reference.device() + " and " + t.device());
            }
        }
    }

    /** Launches {@code op} for {@code dtypeOf}'s dtype over {@code items} threads' work with {@code args}. */
    private void launch(Op op, StridedView dtypeOf, long items, Function<Arena, KernelArgs> args) {
        String entry = PoolPlan.entry(op, dtypeOf.dtype());
        if (items == 0) return;
        CudaKernels k = kernels.get();
        Device device = dtypeOf.device();
        long stream = k.currentStream(device);
        int blocks = PoolPlan.blocks(items, k.multiprocessors(device));
        try (Arena arena = Arena.ofConfined()) {
            k.launchRows(k.wholeFileFunction(device, FILE, entry), blocks, LaunchGeometry.THREADS, stream,
                    args.apply(arena));
        }
    }

    private static long addr(StridedView t) {
        return t == null ? 0 : t.address();
    }

    @Override
    public void maxPool2d(StridedView in, StridedView out, StridedView indices, Pool2d g) {
        check(Op.MAX, in, in, out, indices);
        launch(Op.MAX, in, g.planes() * g.outH() * g.outW(), a -> PoolPlan.maxArgs(a, addr(in), addr(out), addr(indices), g));
    }

    @Override
    public void maxPoolBackward(StridedView gradOut, StridedView indices, StridedView gradIn) {
        check(Op.MAX_BACKWARD, gradOut, gradOut, indices, gradIn);
        PoolPlan.entry(Op.MAX_BACKWARD, gradOut.dtype()); // refuses other dtypes before gradIn is touched
        long planes = gradOut.size(0);
        long n = gradOut.numel() / Math.max(1, planes);
        long m = gradIn.numel() / Math.max(1, planes);
        // The scatter adds into gradIn, which the interface says the kernel zeroes first.
        kernels.get().fill(gradIn, 0, 0);
        launch(Op.MAX_BACKWARD, gradOut, planes * n,
                a -> PoolPlan.maxBackwardArgs(a, addr(gradOut), addr(indices), addr(gradIn), planes, n, m));
    }

    @Override
    public void avgPool2d(StridedView in, StridedView out, Pool2d g, boolean countIncludePad, long divisorOverride) {
        check(Op.AVG, in, in, out);
        launch(Op.AVG, in, g.planes() * g.outH() * g.outW(),
                a -> PoolPlan.avgArgs(a, addr(in), addr(out), g, countIncludePad, divisorOverride));
    }

    @Override
    public void avgPool2dBackward(StridedView gradOut, StridedView gradIn, Pool2d g, boolean countIncludePad,
                                  long divisorOverride) {
        check(Op.AVG_BACKWARD, gradOut, gradOut, gradIn);
        launch(Op.AVG_BACKWARD, gradOut, g.planes() * g.inH() * g.inW(),
                a -> PoolPlan.avgArgs(a, addr(gradOut), addr(gradIn), g, countIncludePad, divisorOverride));
    }

    @Override
    public void adaptiveAvgPool2d(StridedView in, StridedView out) {
        check(Op.ADAPTIVE_AVG, in, in, out);
        launch(Op.ADAPTIVE_AVG, in, out.numel(), a -> PoolPlan.adaptiveArgs(a, addr(in), addr(out), in.size(0), in.size(1), in.size(2),
                out.size(1), out.size(2)));
    }

    @Override
    public void adaptiveAvgPool2dBackward(StridedView gradOut, StridedView gradIn) {
        check(Op.ADAPTIVE_AVG_BACKWARD, gradOut, gradOut, gradIn);
        launch(Op.ADAPTIVE_AVG_BACKWARD, gradOut, gradIn.numel(), a -> PoolPlan.adaptiveArgs(a, addr(gradOut), addr(gradIn),
                gradIn.size(0), gradIn.size(1), gradIn.size(2), gradOut.size(1), gradOut.size(2)));
    }

    @Override
    public void adaptiveMaxPool2d(StridedView in, StridedView out, StridedView indices) {
        check(Op.ADAPTIVE_MAX, in, in, out, indices);
        launch(Op.ADAPTIVE_MAX, in, out.numel(), a -> PoolPlan.adaptiveMaxArgs(a, addr(in), addr(out), addr(indices), in.size(0),
                in.size(1), in.size(2), out.size(1), out.size(2)));
    }

    @Override
    public String toString() {
        return "CUDA SpatialKernels (pool.cu: max, average and adaptive pooling with gradients)";
    }
}
