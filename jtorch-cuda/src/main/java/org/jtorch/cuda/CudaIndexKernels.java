package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.jtorch.backend.IndexKernels;
import org.jtorch.cuda.kernels.ElementwisePlan;
import org.jtorch.cuda.kernels.IndexPlan;
import org.jtorch.cuda.kernels.IndexPlan.Check;
import org.jtorch.cuda.kernels.IndexPlan.Compaction;
import org.jtorch.cuda.kernels.IndexPlan.Geometry;
import org.jtorch.cuda.kernels.IndexPlan.Kernel;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.LaunchGeometry;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link IndexKernels} on a CUDA device: the gather, scatter, atomic scatter-add and row-major compaction
 * kernels of {@code index.cu}, laid out by {@link IndexPlan}.
 *
 * <p>Index validation costs no synchronisation: every index tensor of the call is checked on the device
 * ({@code jt_index_check_*} records the first out-of-range row-major position and its value per tensor)
 * into an {@link IndexCheckLog} record that the host reads at its next synchronisation with the stream,
 * where a bad index becomes the CPU backend's {@link IndexOutOfBoundsException} naming the op, the value
 * and the dimension's size. The data kernels skip an out-of-range index (gather writes 0), so no device
 * fault can occur. PyTorch's index kernels use a device-side assert instead, which kills the context. In
 * synchronous mode ({@link Cuda#setSynchronousIndexChecks}) the record is read before any data kernel
 * runs, so the error surfaces at the op and the destination is unchanged, for one round trip per op.
 *
 * <p>Accumulation ({@code scatter_add}, {@code index_add}, {@code index_put(accumulate=True)}) uses atomics,
 * as PyTorch's CUDA kernels: integer results are exact and order-independent, floating-point sums over
 * duplicate indices are added in an unspecified order (the CPU backend adds them in index order), so they
 * may differ from the CPU's in the last bits and between runs. nonzero and masked_select are
 * deterministic (the CPU's row-major order).
 */
final class CudaIndexKernels implements IndexKernels {
    private final Supplier<CudaKernels> kernels;

    CudaIndexKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    private static long addr(StridedView t) {
        return t.address();
    }

    /**
     * Checks each index tensor on the device into {@link IndexCheckLog} records: a bad value is reported at
     * the stream's next synchronisation, or here (the first bad value of the first failing tensor, in
     * argument order, row-major within a tensor, before any data kernel runs) in synchronous mode.
     */
    private static void validate(CudaKernels k, Device device, StridedView[] indices, Check[] checks) {
        IndexCheckLog log = null;
        long stream = 0;
        for (int q = 0; q < checks.length; q++) {
            Check c = checks[q];
            if (c.n() == 0) continue;
            if (log == null) {
                log = IndexCheckLog.of(device);
                stream = k.currentStream(device);
            }
            long record = log.claim(c, stream);
            try (Arena arena = Arena.ofConfined()) {
                k.launchRows(k.indexFunction(device, IndexPlan.checkEntry(c.dtype())), LaunchGeometry.blocks(c.n(), 1, k.multiprocessors(device)),
                        LaunchGeometry.THREADS, stream, IndexPlan.checkArgs(arena, addr(indices[q]), c, record));
                k.launchRows(k.indexFunction(device, IndexPlan.checkValueEntry(c.dtype())), 1, 1, stream,
                        IndexPlan.checkValueArgs(arena, addr(indices[q]), c, record));
            }
        }
        if (log != null && IndexCheckLog.synchronous()) {
            CudaGraph.refuseDuringCapture(device, "a synchronous index check (JTORCH_CUDA_SYNC_INDEX_CHECKS=1)");
            CudaRuntime.system().driver().streamSynchronize(stream);
            log.report(stream, false);
        }
    }

    /** Launches {@code kernel} over {@code g} ({@code a} = out or dst, {@code b} = src or values); no launch for an empty geometry. */
    private void run(Kernel kernel, DType dtype, StridedView a, StridedView b, Geometry g, StridedView[] indices, double alpha) {
        if (g.n() == 0) return;
        CudaKernels k = kernels.get();
        Device device = a.device();
        long[] indexAddresses = new long[indices.length];
        for (int q = 0; q < indices.length; q++) indexAddresses[q] = addr(indices[q]);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = switch (kernel) {
                case GATHER -> IndexPlan.gatherArgs(arena, addr(a), addr(b), g, indexAddresses);
                case SCATTER -> IndexPlan.scatterArgs(arena, addr(a), addr(b), g, indexAddresses);
                case SCATTER_ADD -> IndexPlan.scatterAddArgs(arena, addr(a), addr(b), g, indexAddresses, alpha);
                default -> throw new IllegalArgumentException("run: " + kernel + " is not a gather or scatter");
            };
            long stream = k.currentStream(device);
            k.launchRows(k.indexFunction(device, IndexPlan.entry(kernel, dtype)), LaunchGeometry.blocks(g.n(), 1, k.multiprocessors(device)),
                    LaunchGeometry.THREADS, stream, args);
        }
    }

    private static long size(StridedView self, int dim) {
        return self.dim() == 0 ? 1 : self.size(dim);
    }

    // ------------------------------------------------------------------ gather / scatter family

    @Override
    public void indexSelect(StridedView self, int dim, StridedView index, StridedView out) {
        validate(kernels.get(), self.device(), new StridedView[] {index},
                new Check[] {IndexPlan.check("index_select", index, dim, size(self, dim), false)});
        run(Kernel.GATHER, self.dtype(), out, self, IndexPlan.indexSelect(self, dim, index, out), new StridedView[] {index}, 1);
    }

    @Override
    public void gather(StridedView self, int dim, StridedView index, StridedView out) {
        validate(kernels.get(), self.device(), new StridedView[] {index},
                new Check[] {IndexPlan.check("gather", index, dim, size(self, dim), false)});
        run(Kernel.GATHER, self.dtype(), out, self, IndexPlan.gather(self, dim, index, out), new StridedView[] {index}, 1);
    }

    @Override
    public void scatter(String op, StridedView self, int dim, StridedView index, StridedView src, boolean accumulate) {
        validate(kernels.get(), self.device(), new StridedView[] {index}, new Check[] {IndexPlan.check(op, index, dim,
                size(self, dim), false)});
        run(accumulate ? Kernel.SCATTER_ADD : Kernel.SCATTER, self.dtype(), self, src, IndexPlan.scatter(op, self, dim, index, src),
                new StridedView[] {index}, 1);
    }

    @Override
    public void indexAccumulate(String op, StridedView self, int dim, StridedView index, StridedView source,
                                boolean accumulate, double alpha,
                                boolean wrapNegative) {
        validate(kernels.get(), self.device(), new StridedView[] {index},
                new Check[] {IndexPlan.check(op, index, dim, size(self, dim), wrapNegative)});
        run(accumulate ? Kernel.SCATTER_ADD : Kernel.SCATTER, self.dtype(), self, source,
                IndexPlan.indexAccumulate(op, self, dim, index, source, wrapNegative), new StridedView[] {index}, alpha);
    }

    @Override
    public void advancedIndex(StridedView src, StridedView[] indices, long[] sizes, long[] strides, StridedView out) {
        validate(kernels.get(), src.device(), indices, advancedChecks("index", indices, sizes));
        run(Kernel.GATHER, src.dtype(), out, src, IndexPlan.advanced("index", src, indices, sizes, strides, out), indices, 1);
    }

    @Override
    public void indexPut(StridedView dst, StridedView[] indices, long[] sizes, long[] strides, StridedView values,
                         boolean accumulate) {
        validate(kernels.get(), dst.device(), indices, advancedChecks("indexPut_", indices, sizes));
        run(accumulate ? Kernel.SCATTER_ADD : Kernel.SCATTER, dst.dtype(), dst, values,
                IndexPlan.advanced("indexPut_", dst, indices, sizes, strides, values), indices, 1);
    }

    private static Check[] advancedChecks(String op, StridedView[] indices, long[] sizes) {
        Check[] checks = new Check[indices.length];
        for (int q = 0; q < indices.length; q++) checks[q] = IndexPlan.check(op, indices[q], -1, sizes[q], true);
        return checks;
    }

    // ------------------------------------------------------------------ row-major compaction

    /** Per-block counts of the nonzero elements of {@code t} over {@code c}'s chunks (device scratch the caller frees). */
    private static StridedView blockCounts(CudaKernels k, StridedView t, Compaction c) {
        Device device = t.device();
        StridedView counts = CudaKernels.scratch(device, new long[] {c.blocks()}, DType.INT64);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = IndexPlan.countArgs(arena, addr(t), IndexPlan.countLayout(t), c, addr(counts));
            k.launchRows(k.indexFunction(device, IndexPlan.entry(Kernel.COUNT_NONZERO, t.dtype())), c.blocks(), IndexPlan.COMPACT_THREADS,
                    k.currentStream(device), args);
        } catch (RuntimeException e) {
            CudaKernels.free(counts);
            throw e;
        }
        return counts;
    }

    @Override
    public long countNonzero(StridedView t) {
        CudaKernels k = kernels.get();
        Compaction c = IndexPlan.compaction(t.numel(), k.multiprocessors(t.device()));
        if (c.blocks() == 0) return 0;
        long total = 0;
        StridedView counts = blockCounts(k, t, c);
        try {
            for (long v : k.toLongArray(counts)) total += v;
        } finally {
            CudaKernels.free(counts);
        }
        return total;
    }

    /** {@code out} itself when the kernel can write it (contiguous), else contiguous scratch to copy back. */
    private static StridedView writable(StridedView out) {
        return out.isContiguous() ? out : CudaKernels.scratch(out.device(), out.shape(), out.dtype());
    }

    private static void storeBack(CudaKernels k, StridedView target, StridedView out) {
        if (target == out) return;
        try {
            k.copyOnDevice(target, out);
        } finally {
            CudaKernels.free(target);
        }
    }

    @Override
    public void nonzero(StridedView t, StridedView out) {
        if (t.numel() == 0 || out.numel() == 0) return;
        CudaKernels k = kernels.get();
        Device device = t.device();
        ElementwisePlan.Strided layout = IndexPlan.nonzeroLayout(t);
        Compaction c = IndexPlan.compaction(t.numel(), k.multiprocessors(device));
        StridedView target = writable(out);
        StridedView counts = blockCounts(k, t, c);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = IndexPlan.nonzeroArgs(arena, addr(t), layout, c, addr(counts), addr(target), out.size(0));
            k.launchRows(k.indexFunction(device, IndexPlan.entry(Kernel.NONZERO, t.dtype())), c.blocks(), IndexPlan.COMPACT_THREADS,
                    k.currentStream(device), args);
        } finally {
            CudaKernels.free(counts);
        }
        storeBack(k, target, out);
    }

    @Override
    public void maskedSelect(StridedView self, StridedView mask, StridedView out) {
        if (out.numel() == 0) return;
        CudaKernels k = kernels.get();
        Device device = self.device();
        Compaction c = IndexPlan.compaction(self.numel(), k.multiprocessors(device));
        StridedView target = writable(out);
        StridedView counts = blockCounts(k, mask, c);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = IndexPlan.maskedSelectArgs(arena, addr(self), addr(mask), IndexPlan.maskedSelectLayout(self, mask), c,
                    addr(counts), addr(target), out.numel());
            k.launchRows(k.indexFunction(device, IndexPlan.entry(Kernel.MASKED_SELECT, self.dtype())), c.blocks(), IndexPlan.COMPACT_THREADS,
                    k.currentStream(device), args);
        } finally {
            CudaKernels.free(counts);
        }
        storeBack(k, target, out);
    }

    @Override
    public String toString() {
        return "CUDA IndexKernels (index.cu: index_select, gather, scatter(_add), index_copy/fill/add, nonzero, masked_select, index, index_put)";
    }
}
