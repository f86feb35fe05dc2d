package org.jtorch.backend;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongFunction;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LossOps;
import org.jtorch.op.StridedView;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The kernels that refuse some values of their inputs, with the check inside the kernel: binary_cross_entropy's
 * probabilities ({@link LossOps#BINARY_CROSS_ENTROPY_ELEMENTWISE}) and bernoulli's. Each backend registers its loops over
 * contiguous float32 or float64 operands ({@link #registerBinaryCrossEntropy}, {@link #registerUnitInterval}); this class
 * converts other operands (dtypes, strides, a broadcast weight) into scratch of the compute dtype first. A loop hands
 * the first bad element (row-major) to the error function it is given: the CPU raises at once, a device records it
 * where it reports its deferred checks (raised at its next synchronisation; nothing is read back at the call).
 */
public final class ValueCheckKernels {
    private ValueCheckKernels() {}

    /**
     * {@code out = (target - 1) max(log1p(-self), -100) - target max(log(self), -100)}, times {@code weight} where it is
     * not null, each step rounded to the operands' dtype; an element of {@code self} outside [0, 1] or NaN is reported as
     * {@code outOfRange.apply(its row-major position)}. Every view is contiguous, of one shape and dtype (float32 or float64).
     */
    @FunctionalInterface
    public interface BinaryCrossEntropy {
        void run(StridedView out, StridedView self, StridedView target, StridedView weight, LongFunction<RuntimeException> outOfRange);
    }

    /** Reports the first element of {@code v} (contiguous float32 or float64) outside [0, 1] or NaN, as {@code outOfRange.apply(position)}. */
    @FunctionalInterface
    public interface UnitInterval {
        void check(StridedView v, LongFunction<RuntimeException> outOfRange);
    }

    private static final Map<Device.Type, BinaryCrossEntropy> BCE = new ConcurrentHashMap<>();
    private static final Map<Device.Type, UnitInterval> UNIT_INTERVAL = new ConcurrentHashMap<>();

    public static void registerBinaryCrossEntropy(Device.Type type, BinaryCrossEntropy loop) {
        BCE.put(type, loop);
    }

    public static void registerUnitInterval(Device.Type type, UnitInterval loop) {
        UNIT_INTERVAL.put(type, loop);
    }

    static void register(Backend backend) {
        KernelRegistry.register(backend.deviceType(), LossOps.BINARY_CROSS_ENTROPY_ELEMENTWISE.kernel(),
                (out, in, s) -> binaryCrossEntropy(backend, out, in));
    }

    private static void binaryCrossEntropy(Backend backend, StridedView out, StridedView[] in) {
        if (out.numel() == 0) return;
        BinaryCrossEntropy loop = loop(BCE, backend, "binary_cross_entropy");
        long[] shape = out.shape();
        StridedView self = in[0];
        DType compute = out.dtype() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            StridedView x = scratch.operand(self, compute, shape);
            StridedView t = scratch.operand(in[1], compute, shape);
            StridedView w = in.length > 2 && in[2] != null ? scratch.operand(in[2].expand("binary_cross_entropy", shape), compute, shape) : null;
            StridedView r = out.isContiguous() ? scratch.result(out, compute) : scratch.allocate(out.device(), shape, compute);
            loop.run(r, x, t, w, position -> LossOps.binaryCrossEntropyRangeError(shape, self.dtype(), position));
            scratch.finish(r, out);
        }
    }

    /**
     * Refuses probabilities {@code p} (any floating dtype and strides) outside [0, 1] or NaN by the backend's loop:
     * {@code outOfRange} makes the error from the first bad element's row-major position in {@code p}.
     */
    static void checkUnitInterval(Backend backend, StridedView p, LongFunction<RuntimeException> outOfRange) {
        if (p.numel() == 0) return;
        UnitInterval loop = loop(UNIT_INTERVAL, backend, "bernoulli");
        DType compute = p.dtype() == DType.FLOAT64 ? DType.FLOAT64 : DType.FLOAT32;
        try (ConvolutionOpKernels.Scratch scratch = new ConvolutionOpKernels.Scratch(backend)) {
            loop.check(scratch.operand(p, compute, p.shape()), outOfRange);
        }
    }

    private static <T> T loop(Map<Device.Type, T> loops, Backend backend, String op) {
        T loop = loops.get(backend.deviceType());
        if (loop == null) {
            throw new UnsupportedOperationException(op + ": no " + backend.deviceType().name().toLowerCase()
                    + " kernel is registered for its check of the values");
        }
        return loop;
    }
}
