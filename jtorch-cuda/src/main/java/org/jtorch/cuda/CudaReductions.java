package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.Supplier;
import org.jtorch.backend.ReductionKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.cuda.kernels.ReductionPlan;
import org.jtorch.cuda.kernels.ReductionPlan.Rows;
import org.jtorch.op.ReduceOp;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The reduction family on CUDA: the row kernels of {@code reduce.cu} (sum, prod, amax/amin, p-norms,
 * argmax/argmin with values, any/all, logsumexp, var/std, softmax/log-softmax, cumsum/cumprod). The layout
 * ({@link ReductionPlan}: which dimensions reduce, rows x row length, staging) is decided on the host;
 * an input that is not already {@code rows x rowLength} row-major in the kernel's dtype is first laid
 * out on the device by the strided copy kernel (bool is read as uint8, integer inputs of logsumexp in the
 * output's floating dtype), and a result whose layout or dtype differs from the kernel's is written to a
 * contiguous temporary and copied (converting) into place.
 */
final class CudaReductions implements ReductionKernels {
    private final Supplier<CudaKernels> kernels;

    CudaReductions(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    private static UnsupportedOperationException missing(String op, Device device) {
        return new UnsupportedOperationException(op + ": no CUDA kernel is wired to this op yet (device " + device + ")");
    }

    /** The input as the kernel reads it: itself, or a row-major device copy in {@code type} (freed by the caller). */
    private static StridedView rowsInput(CudaKernels k, StridedView in, Rows r, DType type) {
        if (in.numel() == 0 || (r.inputRows() && in.dtype() == type)) return null;
        StridedView staged = CudaKernels.scratch(in.device(), r.permutedShape(), type);
        k.copyOnDevice(in.permute(r.permutation()), staged);
        return staged;
    }

    /** A contiguous temporary of the kernel's output dtype when {@code out} cannot be written directly; else null. */
    private static StridedView rowsOutput(StridedView out, boolean direct, long[] shape, DType type) {
        return direct && ReductionPlan.writesAs(type, out.dtype()) ? null : CudaKernels.scratch(out.device(), shape, type);
    }

    /** Copies a reduction's temporary result into {@code out}'s kept dimensions. */
    private static void storeReduced(CudaKernels k, StridedView temp, StridedView out, Rows r) {
        if (temp == null) return;
        k.copyOnDevice(temp, out.restrided(r.keptShape(), r.keptOutStrides(), out.offset()));
    }

    private static long addr(StridedView primary, StridedView fallback) {
        return (primary != null ? primary : fallback).address();
    }

    /** One block a row over the {@code rows x rowLength} layout. */
    private static void launchRows(CudaKernels k, Device device, String entry, Rows r, KernelArgs args) {
        long stream = k.currentStream(device);
        int threads = ReductionPlan.threads(r.rowLength());
        int blocks = ReductionPlan.blocks(r.rows(), threads, k.multiprocessors(device));
        if (blocks == 0) return;
        k.launchRows(k.reduceFunction(device, entry), blocks, threads, stream, args);
    }

    // ------------------------------------------------------------------ accumulating reductions

    @Override
    public void reduce(ReduceOp op, StridedView in, StridedView out, double p) {
        Device device = in.device();
        DType kin = ReductionPlan.kernelInput(in.dtype());
        if (!ReductionPlan.supports(op, kin)) throw missing(op.pyName(), device);
        Rows r = ReductionPlan.reduction(in.shape(), in.strides(), out.strides());
        if (r.rows() == 0) return;
        if ((op == ReduceOp.MAX || op == ReduceOp.MIN) && r.rowLength() == 0) {
            throw new IllegalArgumentException(op.pyName() + ": reduction over zero elements (input shape "
                    + java.util.Arrays.toString(in.shape()) + ")");
        }
        String entry = ReductionPlan.reduceEntry(op, in.dtype());
        rowReduction(in, out, r, entry, kin, ReductionPlan.reduceOutput(op, in.dtype()), (arena, x, o) -> op == ReduceOp.NORM
                ? ReductionPlan.normArgs(arena, x, o, r, p)
                : ReductionPlan.rowArgs(arena, x, o, r));
    }

    /** The arguments of a row kernel reading rows at {@code x} and writing one value a row at {@code o}. */
    private interface RowArgs {
        KernelArgs build(Arena arena, long x, long o);
    }

    /**
     * One value a row: stages the input as rows of {@code kin} and the output as {@code kout} where their
     * layouts or dtypes differ from the kernel's, launches {@code entry}, and copies the result into place.
     */
    private void rowReduction(StridedView in, StridedView out, Rows r, String entry, DType kin, DType kout, RowArgs args) {
        CudaKernels k = kernels.get();
        StridedView x = null, o = null;
        try {
            x = rowsInput(k, in, r, kin);
            o = rowsOutput(out, r.outputRows(), r.keptShape(), kout);
            try (Arena arena = Arena.ofConfined()) {
                launchRows(k, in.device(), entry, r, args.build(arena, addr(x, in), addr(o, out)));
            }
            storeReduced(k, o, out, r);
        } finally {
            CudaKernels.free(x, o);
        }
    }

    @Override
    public void argReduce(boolean max, StridedView in, StridedView values, StridedView indices, int dim) {
        Device device = in.device();
        Rows r = ReductionPlan.reduction(in.shape(), in.strides(), indices.strides());
        if (r.rows() == 0) return;
        if (r.rowLength() == 0) {
            throw new IllegalArgumentException((max ? "argmax" : "argmin") + ": reduction over zero elements (input shape "
                    + java.util.Arrays.toString(in.shape()) + ")");
        }
        DType kin = ReductionPlan.kernelInput(in.dtype());
        String entry = ReductionPlan.argReduceEntry(max, in.dtype());
        CudaKernels k = kernels.get();
        StridedView x = null, v = null, i = null;
        try {
            x = rowsInput(k, in, r, kin);
            if (values != null) {
                boolean direct = ReductionPlan.reduction(in.shape(), in.strides(), values.strides()).outputRows();
                v = rowsOutput(values, direct, r.keptShape(), kin);
            }
            i = rowsOutput(indices, r.outputRows(), r.keptShape(), DType.INT64);
            try (Arena arena = Arena.ofConfined()) {
                long vAddr = values == null ? 0 : addr(v, values);
                launchRows(k, device, entry, r, ReductionPlan.argArgs(arena, addr(x, in), vAddr, addr(i, indices), r));
            }
            if (values != null) storeReduced(k, v, values, r);
            storeReduced(k, i, indices, r);
        } finally {
            CudaKernels.free(x, v, i);
        }
    }

    @Override
    public void variance(StridedView in, StridedView out, double correction, boolean sqrt) {
        DType t = out.dtype();
        Rows r = ReductionPlan.reduction(in.shape(), in.strides(), out.strides());
        if (r.rows() == 0) return;
        rowReduction(in, out, r, ReductionPlan.floatingEntry("variance", t), t, t,
                (arena, x, o) -> ReductionPlan.varianceArgs(arena, x, o, r, correction, sqrt));
    }

    @Override
    public void logsumexp(StridedView in, StridedView out) {
        DType t = out.dtype();
        Rows r = ReductionPlan.reduction(in.shape(), in.strides(), out.strides());
        if (r.rows() == 0) return;
        rowReduction(in, out, r, ReductionPlan.floatingEntry("logsumexp", t), t, t,
                (arena, x, o) -> ReductionPlan.rowArgs(arena, x, o, r));
    }

    // ------------------------------------------------------------------ along one dimension

    /** Softmax or scan along {@code dim}: rows with {@code dim} last, output laid out the same way (or staged and copied back). */
    private void along(StridedView in, StridedView out, int dim, String entry, boolean scan,
                       java.util.function.BiFunction<Arena, long[], KernelArgs> args,
                       Rows r) {
        if (r.rows() == 0 || r.rowLength() == 0) return;
        Device device = out.device();
        CudaKernels k = kernels.get();
        StridedView x = null, o = null;
        try {
            x = rowsInput(k, in, r, out.dtype());
            o = rowsOutput(out, r.outputRows(), r.permutedShape(), out.dtype());
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs a = args.apply(arena, new long[] {addr(x, in), addr(o, out)});
                if (scan) {
                    long stream = k.currentStream(device);
                    int blocks = ReductionPlan.scanBlocks(r.rows(), k.multiprocessors(device));
                    k.launchRows(k.reduceFunction(device, entry), blocks, LaunchGeometry.THREADS, stream, a);
                } else {
                    launchRows(k, device, entry, r, a);
                }
            }
            if (o != null) {
                k.copyOnDevice(o, out.permute(r.permutation()));
            }
        } finally {
            CudaKernels.free(x, o);
        }
    }

    @Override
    public void scan(boolean prod, StridedView in, StridedView out, int dim) {
        String entry = ReductionPlan.scanEntry(prod, out.dtype());
        Rows r = ReductionPlan.line(in.shape(), dim, in.strides(), out.strides());
        along(in, out, dim, entry, true, (arena, p) -> ReductionPlan.rowArgs(arena, p[0], p[1], r), r);
    }

    /**
     * One block a row sorts the row's positions by a bitonic network in a scratch area of {@link ReductionPlan#sortSlots}
     * int64 slots per block (see {@code reduce.cu}); the input is staged as rows in its kernel dtype, the indices
     * written as rows and copied into place when {@code indices} is laid out otherwise.
     */
    @Override
    public void argsort(StridedView in, StridedView indices, int dim, boolean descending) {
        Rows r = ReductionPlan.line(in.shape(), dim, in.strides(), in.strides());
        Rows ro = ReductionPlan.line(indices.shape(), dim, indices.strides(), indices.strides());
        long k = in.dim() == 0 ? 1 : indices.size(dim);
        if (r.rows() == 0 || r.rowLength() == 0 || k == 0) return;
        Device device = in.device();
        CudaKernels cuda = kernels.get();
        long slots = ReductionPlan.sortSlots(r.rowLength());
        int threads = ReductionPlan.threads(slots);
        int blocks = ReductionPlan.blocks(r.rows(), threads, cuda.multiprocessors(device));
        StridedView x = null, o = null, scratch = null;
        try {
            x = rowsInput(cuda, in, r, ReductionPlan.kernelInput(in.dtype()));
            o = rowsOutput(indices, ro.outputRows(), ro.permutedShape(), DType.INT64);
            scratch = CudaKernels.scratch(device, new long[] {blocks * slots}, DType.INT64);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs a = ReductionPlan.argsortArgs(arena, addr(x, in), scratch.address(), addr(o, indices), r,
                        slots, descending, k);
                cuda.launchRows(cuda.reduceFunction(device, ReductionPlan.argsortEntry(in.dtype())), blocks, threads, cuda.currentStream(device), a);
            }
            if (o != null) {
                cuda.copyOnDevice(o, indices.permute(ro.permutation()));
            }
        } finally {
            CudaKernels.free(x, o, scratch);
        }
    }

    /** One thread a value ({@code reduce.cu}); the front end passes contiguous operands of one dtype. */
    @Override
    public void searchsorted(StridedView boundaries, StridedView values, StridedView out, boolean right) {
        long rows = values.size(0), m = values.size(1);
        if (rows * m == 0) return;
        Device device = values.device();
        CudaKernels k = kernels.get();
        int blocks = LaunchGeometry.blocks(rows * m, 1, k.multiprocessors(device));
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs a = ReductionPlan.searchsortedArgs(arena, boundaries.address(), values.address(),
                    out.address(), rows, m, boundaries.size(1), boundaries.size(0), right);
            k.launchRows(k.reduceFunction(device, ReductionPlan.searchsortedEntry(values.dtype())), blocks, LaunchGeometry.THREADS,
                    k.currentStream(device), a);
        }
    }

    @Override
    public void softmax(StridedView in, StridedView out, int dim, boolean log) {
        String entry = ReductionPlan.floatingEntry("softmax", out.dtype());
        Rows r = ReductionPlan.line(in.shape(), dim, in.strides(), out.strides());
        along(in, out, dim, entry, false, (arena, p) -> ReductionPlan.softmaxArgs(arena, p[0], p[1], r, log), r);
    }

    @Override
    public String toString() {
        return "CUDA ReductionKernels (reduce.cu: sum, prod, amax, amin, any, all, norm, argmax/argmin, var/std, logsumexp, softmax, cumsum/cumprod, sort, searchsorted)";
    }
}
