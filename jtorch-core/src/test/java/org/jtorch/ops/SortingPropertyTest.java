package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;
import org.jtorch.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * argsort of every dtype against a reference stable sort (Java's object merge sort) of the same values: lengths on
 * both sides of the CPU's small-line and packing paths and of CUDA's power-of-two padding, many ties, NaN and
 * -0.0 / 0.0 (floating dtypes), int64 values beyond 2^53, ascending and descending. The reference order is
 * PyTorch's: NaN above every number, equal values (including -0.0 and 0.0) in their original order.
 */
class SortingPropertyTest {
    private static final int[] LENGTHS = {1, 2, 5, 31, 32, 33, 100, 257, 1000};

    @ParameterizedTest
    @EnumSource(DType.class)
    void argsortIsTheStableSortOfTheValues(DType dtype) {
        Random random = new Random(dtype.ordinal() * 31L + 7);
        for (int n : LENGTHS) {
            double[] values = new double[n];
            long[] longs = new long[n];
            for (int i = 0; i < n; i++) {
                longs[i] = switch (dtype) {
                    case BOOL -> random.nextInt(2);
                    case UINT8 -> random.nextInt(256);
                    case INT8 -> random.nextInt(256) - 128;
                    case INT64 -> random.nextBoolean() ? random.nextLong() : (1L << 53) + random.nextInt(4);
                    default -> random.nextInt(21) - 10;
                };
                values[i] = longs[i] / (dtype.isFloatingPoint() ? 4.0 : 1.0);
                if (dtype.isFloatingPoint() && random.nextInt(10) == 0) values[i] = Double.NaN;
                if (dtype.isFloatingPoint() && random.nextInt(10) == 0) values[i] = random.nextBoolean() ? -0.0 : 0.0;
            }
            try (Tensor host = dtype == DType.INT64 ? Torch.tensor(longs) : hostOf(values, dtype); Tensor x = host.to(Fixtures.device())) {
                for (boolean descending : new boolean[] {false, true}) {
                    long[] expected = dtype == DType.INT64 ? reference(longs, descending) : reference(values, descending);
                    try (Tensor idx = x.argsort(0, descending)) {
                        assertArrayEquals(expected, idx.toLongArray(), dtype + " n=" + n + " descending=" + descending);
                    }
                    if (dtype == DType.BOOL) continue;  // no topk for bool, as PyTorch
                    for (long k : new long[] {1, n / 10, n / 2, n - 1}) {
                        // topk picks the stable order's first k (PyTorch leaves ties unspecified; jtorch documents this order)
                        try (Reductions.ValuesIndices top = x.topk(k, 0, descending, true)) {
                            assertArrayEquals(Arrays.copyOf(expected, (int) k), top.indices().toLongArray(), dtype + " topk k=" + k);
                        }
                    }
                }
            }
        }
    }

    private static Tensor hostOf(double[] values, DType dtype) {
        try (Tensor d = Torch.tensor(values)) {
            return d.to(dtype);
        }
    }

    private static long[] reference(double[] values, boolean descending) {
        Comparator<Integer> byValue = (a, b) -> {
            double x = values[a], y = values[b];
            if (x < y) return -1;
            if (x > y) return 1;
            boolean nx = Double.isNaN(x), ny = Double.isNaN(y);
            return nx == ny ? 0 : nx ? 1 : -1;
        };
        return stable(values.length, descending ? byValue.reversed() : byValue);
    }

    private static long[] reference(long[] values, boolean descending) {
        Comparator<Integer> byValue = (a, b) -> Long.compare(values[a], values[b]);
        return stable(values.length, descending ? byValue.reversed() : byValue);
    }

    private static long[] stable(int n, Comparator<Integer> order) {
        Integer[] positions = new Integer[n];
        for (int i = 0; i < n; i++) positions[i] = i;
        Arrays.sort(positions, order);  // a stable merge sort
        return Arrays.stream(positions).mapToLong(Integer::longValue).toArray();
    }
}
