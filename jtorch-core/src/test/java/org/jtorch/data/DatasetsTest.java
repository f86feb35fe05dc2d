package org.jtorch.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/** Map-style datasets and random_split, with the semantics of torch.utils.data in PyTorch 1.13. */
class DatasetsTest {
    /** A dataset whose sample i is i. */
    static Dataset<Integer> range(int n) {
        return new Dataset<>() {
            @Override
            public Integer get(int index) {
                return index;
            }

            @Override
            public int size() {
                return n;
            }
        };
    }

    static <T> List<T> all(Dataset<T> d) {
        List<T> out = new ArrayList<>();
        for (int i = 0; i < d.size(); i++) out.add(d.get(i));
        return out;
    }

    @Test
    void tensorDatasetSampleIsRowViewOfEachTensor() {
        try (Tensor x = Torch.tensor(new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 4, 3); Tensor y = Torch.tensor(10L, 11, 12, 13)) {
            TensorDataset d = new TensorDataset(x, y);
            assertEquals(4, d.size());
            Tensor[] row = d.get(2);
            try (Tensor a = row[0]; Tensor b = row[1]) {
                assertArrayEquals(new long[] {6, 7, 8}, a.toLongArray());
                assertEquals(12, b.itemLong());
                assertTrue(a.storage() == x.storage(), "a view, not a copy");
            }
        }
    }

    @Test
    void tensorDatasetViewOutlivesTheDatasetTensors() {
        Tensor x = Torch.tensor(new long[] {0, 1, 2, 3, 4, 5}, 3, 2);
        TensorDataset d = new TensorDataset(x);
        Tensor row = d.get(1)[0];
        x.close();
        try (row) {
            assertArrayEquals(new long[] {2, 3}, row.toLongArray());
        }
        assertTrue(x.storage().isReleased(), "storage freed once the last view is closed");
    }

    @Test
    void tensorDatasetRejectsDifferentFirstDimensions() {
        try (Tensor x = Torch.zeros(4, 3); Tensor y = Torch.zeros(5)) {
            var e = assertThrows(IllegalArgumentException.class, () -> new TensorDataset(x, y));
            assertTrue(e.getMessage().contains("size mismatch"), e.getMessage());
        }
    }

    @Test
    void tensorDatasetAsSamplesPairsInputAndTargetRows() {
        try (Tensor x = Torch.tensor(new long[] {0, 1, 2, 3, 4, 5}, 3, 2); Tensor y = Torch.tensor(7L, 8, 9)) {
            Dataset<Sample> d = new TensorDataset(x, y).asSamples();
            try (Sample s = d.get(0)) {
                assertArrayEquals(new long[] {0, 1}, s.input().toLongArray());
                assertEquals(7, s.target().itemLong());
            }
            assertThrows(IndexOutOfBoundsException.class, () -> d.get(3));
        }
    }

    @Test
    void mapAppliesTheTransformWhenASampleIsRead() {
        Dataset<String> d = range(3).map(i -> "#" + i);
        assertEquals(3, d.size());
        assertEquals(List.of("#0", "#1", "#2"), all(d));
    }

    @Test
    void subsetMapsIndices() {
        Subset<Integer> s = new Subset<>(range(10), new int[] {7, 2, 5});
        assertEquals(List.of(7, 2, 5), all(s));
        assertThrows(IndexOutOfBoundsException.class, () -> new Subset<>(range(3), new int[] {3}));
    }

    @Test
    void concatDatasetChainsDatasetsAndSkipsEmptyOnes() {
        ConcatDataset<Integer> c = new ConcatDataset<>(range(2), range(0), range(3));
        assertEquals(5, c.size());
        assertEquals(List.of(0, 1, 0, 1, 2), all(c));
        assertArrayEquals(new int[] {2, 2, 5}, c.cumulativeSizes());
        assertThrows(IndexOutOfBoundsException.class, () -> c.get(5));
    }

    @Test
    void randomSplitPartitionsTheDataset() {
        List<Subset<Integer>> parts = Datasets.randomSplit(range(10), new int[] {3, 7}, new Generator(42));
        assertEquals(3, parts.get(0).size());
        assertEquals(7, parts.get(1).size());
        int[] union = IntStream.concat(Arrays.stream(parts.get(0).indices()), Arrays.stream(parts.get(1).indices())).sorted().toArray();
        assertArrayEquals(IntStream.range(0, 10).toArray(), union);
    }

    @Test
    void randomSplitIsReproducibleWithTheSameSeed() {
        var a = Datasets.randomSplit(range(50), new int[] {25, 25}, new Generator(7));
        var b = Datasets.randomSplit(range(50), new int[] {25, 25}, new Generator(7));
        var c = Datasets.randomSplit(range(50), new int[] {25, 25}, new Generator(8));
        assertArrayEquals(a.get(0).indices(), b.get(0).indices());
        assertFalse(Arrays.equals(a.get(0).indices(), c.get(0).indices()));
    }

    @Test
    void randomSplitByFractionsDealsTheRemainderInOrder() {
        // PyTorch 1.13: floor(11 * f) = [3, 3, 4]; the 1 left over goes to the first split.
        var parts = Datasets.randomSplit(range(11), new double[] {0.3, 0.3, 0.4}, new Generator(0));
        assertEquals(List.of(4, 3, 4), parts.stream().map(Subset::size).toList());
        var halves = Datasets.randomSplit(range(5), new double[] {0.5, 0.5}, new Generator(0));
        assertEquals(List.of(3, 2), halves.stream().map(Subset::size).toList());
    }

    @Test
    void randomSplitRejectsLengthsThatDoNotSumToTheSize() {
        var e = assertThrows(IllegalArgumentException.class, () -> Datasets.randomSplit(range(10), new int[] {3, 6}, null));
        assertTrue(e.getMessage().contains("does not equal the length"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Datasets.randomSplit(range(10), new double[] {0.5, 0.6}, null));
    }

    @Test
    void randomSplitDrawsFromTheGenerator() {
        Generator g = new Generator(3);
        var first = Datasets.randomSplit(range(20), new int[] {10, 10}, g);
        var second = Datasets.randomSplit(range(20), new int[] {10, 10}, g);
        assertNotEquals(Arrays.toString(first.get(0).indices()), Arrays.toString(second.get(0).indices()));
    }
}
