package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.Supplier;
import org.jtorch.backend.RandomKernels;
import org.jtorch.backend.RandomOpKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.cuda.kernels.RandomPlan.Fill;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link RandomKernels} on a CUDA device: the Philox fills of {@code random.cu}, in the CPU backend's
 * counter scheme, so a (seed, first block) pair gives the same tensor on either device (uniform and
 * randint bit for bit; normal to a few ulp of CUDA's double {@code log/sin/cos}); and multinomial's draws
 * ({@code multinomial.cu}), the host loop's indices from the same numbers, with nothing read back.
 */
final class CudaRandomKernels implements RandomKernels {
    private final Supplier<CudaKernels> kernels;

    CudaRandomKernels(Supplier<CudaKernels> kernels) {
        this.kernels = kernels;
    }

    @Override
    public void uniform(StridedView out, double low, double high, long seed, long firstBlock) {
        kernels.get().random(Fill.UNIFORM, out, seed, firstBlock, low, high, 0, 0);
    }

    @Override
    public void normal(StridedView out, double mean, double std, long seed, long firstBlock) {
        kernels.get().random(Fill.NORMAL, out, seed, firstBlock, mean, std, 0, 0);
    }

    @Override
    public void randint(StridedView out, long low, long high, long seed, long firstBlock) {
        kernels.get().random(Fill.RANDINT, out, seed, firstBlock, 0, 0, low, high);
    }

    /** Threads a block of {@code multinomial.cu} ({@code JT_MULTINOMIAL_THREADS}: its arg-max reduction's size). */
    static final int MULTINOMIAL_THREADS = 256;
    /** At most this many blocks (one a row, grid-stride beyond). */
    private static final int MULTINOMIAL_MAX_BLOCKS = 65535;

    /**
     * One launch of {@code multinomial.cu} (a block a row), its rows' checks into an {@link IndexCheckLog} record: a bad
     * row is raised at the next synchronisation with the stream as the CPU's {@link IllegalArgumentException} naming the
     * shape and the first bad row, or here in synchronous mode (the CPU's message, one round trip).
     */
    @Override
    public boolean multinomial(StridedView buffer, long rows, long c, long k, boolean replacement, long[] shape, StridedView out) {
        if (buffer.dtype() != DType.FLOAT64 || !buffer.isContiguous() || out.dtype() != DType.INT64 || !out.isContiguous()) {
            throw new IllegalArgumentException("multinomial: the CUDA kernel takes a contiguous float64 buffer and int64 output, got "
                    + buffer.dtype() + " and " + out.dtype());
        }
        if (rows == 0 || k == 0) return true;
        CudaKernels kk = kernels.get();
        Device device = out.device();
        long stream = kk.currentStream(device);
        IndexCheckLog log = IndexCheckLog.of(device);
        boolean fastPathMessages = !replacement || k == 1;
        long record = log.claim((word0, word1) -> deferred(RandomOpKernels.multinomialRowError(shape, word0 >>> 3, (word0 & 1) != 0,
                (word0 & 2) != 0, (word0 & 4) != 0, fastPathMessages)), stream);
        String entry = replacement ? "jt_multinomial_with_replacement" : "jt_multinomial_without_replacement";
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(buffer.address()).i64(rows).i64(c).i64(k);
            if (replacement) args.i64(RandomOpKernels.multinomialScanChunk(c));
            args.pointer(out.address()).pointer(record);
            kk.launchRows(kk.wholeFileFunction(device, "multinomial.cu", entry), (int) Math.min(rows, MULTINOMIAL_MAX_BLOCKS),
                    MULTINOMIAL_THREADS, stream, args);
        }
        if (IndexCheckLog.synchronous()) {
            CudaGraph.refuseDuringCapture(device, "a synchronous multinomial check (JTORCH_CUDA_SYNC_INDEX_CHECKS=1)");
            CudaRuntime.system().driver().streamSynchronize(stream);
            log.report(stream, false);
        }
        return true;
    }

    /** The CPU's error as found by the device: in synchronous mode as is, else saying where it was found. */
    private static IllegalArgumentException deferred(IllegalArgumentException e) {
        if (IndexCheckLog.synchronous()) return e;
        return new IllegalArgumentException(e.getMessage() + " (found by multinomial's CUDA check and reported at the next synchronisation"
                + " with its stream; that row's samples are 0 and the ops after it ran on them; set JTORCH_CUDA_SYNC_INDEX_CHECKS=1 or call"
                + " Cuda.setSynchronousIndexChecks(true) to have it raised by the op itself)");
    }

    @Override
    public String toString() {
        return "CUDA RandomKernels (random.cu)";
    }
}
