package org.jtorch.cuda.kernels;

import org.jtorch.types.DType;

/**
 * Host-side choices for a launch of {@code random.cu}, with no GPU involved: the entry point for a fill
 * and dtype, and how many Philox blocks it reads (one thread computes one block and writes its
 * elements, so the grid is sized in blocks). The counter scheme is {@code CpuRandomKernels}': element
 * {@code i} reads block {@code firstBlock + i / perBlock}, with {@code perBlock} 4 for uniform of
 * 16/32-bit floats and for normal, 2 for uniform of float64 and for randint.
 */
public final class RandomPlan {
    private RandomPlan() {}

    /** The three fills of {@link org.jtorch.backend.RandomKernels}. */
    public enum Fill { UNIFORM, NORMAL, RANDINT }

    /** One launch: {@code entry} writes {@code n} elements from {@code philoxBlocks} Philox blocks. */
    public record Launch(String entry, Fill fill, long n, long philoxBlocks) {}

    /** Elements written per Philox block. */
    public static int perBlock(Fill fill, DType t) {
        return switch (fill) {
            case UNIFORM -> t == DType.FLOAT64 ? 2 : 4;
            case NORMAL -> 4;
            case RANDINT -> 2;
        };
    }

    /** The launch filling {@code n} contiguous elements of dtype {@code t}; uniform and normal need a floating dtype. */
    public static Launch plan(Fill fill, DType t, long n) {
        if (n < 0) throw new IllegalArgumentException("random: negative element count " + n);
        if (fill != Fill.RANDINT && !t.isFloatingPoint()) {
            throw new UnsupportedOperationException(name(fill) + ": no CUDA kernel for " + t + " (floating dtypes only) (device cuda)");
        }
        int per = perBlock(fill, t);
        return new Launch("jt_random_" + fill.name().toLowerCase(java.util.Locale.ROOT) + "_" + ElementwisePlan.suffix(t), fill, n,
                (n + per - 1) / per);
    }

    /** The op's name in error messages. */
    public static String name(Fill fill) {
        return switch (fill) {
            case UNIFORM -> "uniform_";
            case NORMAL -> "normal_";
            case RANDINT -> "randint";
        };
    }
}
