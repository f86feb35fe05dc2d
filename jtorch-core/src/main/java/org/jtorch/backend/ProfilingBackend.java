package org.jtorch.backend;

import org.jtorch.memory.Allocator;
import org.jtorch.memory.Storage;
import org.jtorch.op.StridedView;
import org.jtorch.types.Device;

/** A backend whose kernel calls are timed into {@link KernelProfiler}; everything else is the wrapped backend's. */
final class ProfilingBackend implements Backend {
    private final Backend b;
    private final ReductionKernels reductions;
    private final IndexKernels indexing;
    private final LinalgKernels linalg;
    private final RandomKernels random;
    private final ConvolutionKernels convolution;
    private final SpatialKernels spatial;
    private final NormalizationKernels normalization;
    private final RecurrentKernels recurrent;
    private final AttentionKernels attention;

    ProfilingBackend(Backend b) {
        this.b = b;
        reductions = KernelProfiler.timed(ReductionKernels.class, b.reductions(), "reductions");
        indexing = KernelProfiler.timed(IndexKernels.class, b.indexing(), "indexing");
        linalg = KernelProfiler.timed(LinalgKernels.class, b.linalg(), "linalg");
        random = KernelProfiler.timed(RandomKernels.class, b.random(), "random");
        convolution = KernelProfiler.timed(ConvolutionKernels.class, b.convolution(), "convolution");
        spatial = KernelProfiler.timed(SpatialKernels.class, b.spatial(), "spatial");
        normalization = KernelProfiler.timed(NormalizationKernels.class, b.normalization(), "normalization");
        recurrent = KernelProfiler.timed(RecurrentKernels.class, b.recurrent(), "recurrent");
        attention = b.attention() == null ? null : KernelProfiler.timed(AttentionKernels.class, b.attention(), "attention");
    }

    @Override
    public Device.Type deviceType() {
        return b.deviceType();
    }

    @Override
    public boolean isAvailable() {
        return b.isAvailable();
    }

    @Override
    public String unavailableReason() {
        return b.unavailableReason();
    }

    @Override
    public String describe() {
        return b.describe();
    }

    @Override
    public Allocator allocator(Device device) {
        return b.allocator(device);
    }

    @Override
    public Storage allocate(Device device, long bytes) {
        return b.allocate(device, bytes);
    }

    @Override
    public void copy(StridedView src, StridedView dst) {
        long t0 = KernelProfiler.begin();
        b.copy(src, dst);
        KernelProfiler.end("copy", new Object[] {dst}, t0);
    }

    @Override
    public void copy(StridedView src, StridedView dst, boolean nonBlocking) {
        long t0 = KernelProfiler.begin();
        b.copy(src, dst, nonBlocking);
        KernelProfiler.end("copy", new Object[] {dst}, t0);
    }

    @Override
    public void fill(StridedView dst, double value, long longValue) {
        long t0 = KernelProfiler.begin();
        b.fill(dst, value, longValue);
        KernelProfiler.end("fill", new Object[] {dst}, t0);
    }

    @Override
    public void where(StridedView cond, StridedView a, StridedView bt, StridedView out) {
        long t0 = KernelProfiler.begin();
        b.where(cond, a, bt, out);
        KernelProfiler.end("where", new Object[] {out}, t0);
    }

    @Override
    public ReductionKernels reductions() {
        return reductions;
    }

    @Override
    public IndexKernels indexing() {
        return indexing;
    }

    @Override
    public LinalgKernels linalg() {
        return linalg;
    }

    @Override
    public RandomKernels random() {
        return random;
    }

    @Override
    public ConvolutionKernels convolution() {
        return convolution;
    }

    @Override
    public SpatialKernels spatial() {
        return spatial;
    }

    @Override
    public NormalizationKernels normalization() {
        return normalization;
    }

    @Override
    public RecurrentKernels recurrent() {
        return recurrent;
    }

    @Override
    public GraphCapture graphCapture() {
        return b.graphCapture();
    }


    @Override
    public AttentionKernels attention() {
        return attention;
    }
}
