package org.jtorch.cuda;

import java.lang.foreign.Arena;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import org.jtorch.backend.ValueCheckKernels;
import org.jtorch.cuda.kernels.KernelArgs;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * {@link ValueCheckKernels}' loops on a CUDA device ({@code valuecheck.cu}): binary cross entropy with its range check in
 * the same kernel, and bernoulli's check of its probabilities, each one launch that records the first bad element in an
 * {@link IndexCheckLog} record. The error (the CPU's message, naming the op, shape, dtype and element) is raised at the
 * next synchronisation with the stream, or by the op itself in synchronous mode ({@code JTORCH_CUDA_SYNC_INDEX_CHECKS=1}):
 * nothing is read back at the call. PyTorch 1.13 asserts on the device instead, which loses the context.
 */
final class CudaValueCheckKernels {
    private CudaValueCheckKernels() {}

    private static final String FILE = "valuecheck.cu";
    private static final int THREADS = 256;
    /** At most this many blocks (grid-stride beyond): enough to fill a large GPU several times. */
    private static final int MAX_BLOCKS = 8192;

    static void register(Supplier<CudaKernels> kernels) {
        ValueCheckKernels.registerBinaryCrossEntropy(Device.Type.CUDA, (out, x, t, w, outOfRange) ->
                launch(kernels.get(), "binary_cross_entropy", "jt_bce_" + suffix(out), out, outOfRange,
                        (a, record) -> a.pointer(out.address()).pointer(x.address()).pointer(t.address()).pointer(w == null ? 0 : w.address())
                                .i64(out.numel()).pointer(record)));
        ValueCheckKernels.registerUnitInterval(Device.Type.CUDA, (p, outOfRange) ->
                launch(kernels.get(), "bernoulli", "jt_unit_interval_" + suffix(p), p, outOfRange,
                        (a, record) -> a.pointer(p.address()).i64(p.numel()).pointer(record)));
    }

    private static String suffix(StridedView v) {
        if (v.dtype() == DType.FLOAT32) return "f32";
        if (v.dtype() == DType.FLOAT64) return "f64";
        throw new IllegalArgumentException("valuecheck.cu takes float32 or float64 operands, got " + v.dtype() + " of shape "
                + org.jtorch.op.Shapes.format(v.shape()));
    }

    private interface Arguments {
        KernelArgs add(KernelArgs args, long record);
    }

    /** One launch of {@code entry} over {@code v}'s elements, its check into a claimed record of the device's check log. */
    private static void launch(CudaKernels kk, String op, String entry, StridedView v, LongFunction<RuntimeException> outOfRange,
                               Arguments arguments) {
        Device device = v.device();
        long stream = kk.currentStream(device);
        IndexCheckLog log = IndexCheckLog.of(device);
        long record = log.claim((word0, word1) -> deferred(op, outOfRange.apply(word0)), stream);
        long n = v.numel();
        int blocks = (int) Math.min(MAX_BLOCKS, (n + THREADS - 1) / THREADS);
        try (Arena arena = Arena.ofConfined()) {
            kk.launchRows(kk.wholeFileFunction(device, FILE, entry), blocks, THREADS, stream, arguments.add(new KernelArgs(arena), record));
        }
        if (IndexCheckLog.synchronous()) {
            CudaGraph.refuseDuringCapture(device, "a synchronous " + op + " check (JTORCH_CUDA_SYNC_INDEX_CHECKS=1)");
            CudaRuntime.system().driver().streamSynchronize(stream);
            log.report(stream, false);
        }
    }

    /** The CPU's error as found by the device: in synchronous mode as is, else saying where it was found. */
    private static RuntimeException deferred(String op, RuntimeException e) {
        if (IndexCheckLog.synchronous()) return e;
        return new IllegalArgumentException(e.getMessage() + " (found by " + op + "'s CUDA check and reported at the next synchronisation"
                + " with its stream, so the ops after it ran on its result; set JTORCH_CUDA_SYNC_INDEX_CHECKS=1 or call"
                + " Cuda.setSynchronousIndexChecks(true) to have it raised by the op itself)");
    }
}
