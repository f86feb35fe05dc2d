package org.jtorch.cuda;

import java.util.function.Supplier;
import org.jtorch.backend.RandomKernels;
import org.jtorch.cuda.kernels.RandomPlan.Fill;
import org.jtorch.op.StridedView;

/**
 * {@link RandomKernels} on a CUDA device: the Philox fills of {@code random.cu}, in the CPU backend's
 * counter scheme, so a (seed, first block) pair gives the same tensor on either device (uniform and
 * randint bit for bit; normal to a few ulp of CUDA's double {@code log/sin/cos}).
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

    @Override
    public String toString() {
        return "CUDA RandomKernels (random.cu)";
    }
}
