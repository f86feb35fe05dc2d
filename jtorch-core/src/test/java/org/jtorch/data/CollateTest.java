package org.jtorch.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.ScopePerTest;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Collate.defaultCollate against torch.utils.data.default_collate (PyTorch 1.13) for each kind of sample. */
@ExtendWith(ScopePerTest.class)
class CollateTest {
    record Pair(Tensor image, Object label) {}

    record Labelled(Tensor image, int label) {}

    @Test
    void tensorsAreStackedAlongANewFirstDimension() {
        Tensor b = (Tensor) Collate.defaultCollate(List.of(Torch.tensor(1f, 2f), Torch.tensor(3f, 4f), Torch.tensor(5f, 6f)));
        assertArrayEquals(new long[] {3, 2}, b.shape());
        assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, b.toFloatArray());
        assertEquals(DType.FLOAT32, b.dtype());
    }

    @Test
    void tensorsOfDifferentShapesAreRejectedNamingTheEntry() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> Collate.defaultCollate(List.of(Torch.zeros(3), Torch.zeros(3), Torch.zeros(4))));
        assertTrue(e.getMessage().contains("[3] at entry 0 and [4] at entry 2"), e.getMessage());
    }

    @Test
    void samplesAreCollatedFieldWise() {
        Sample b = (Sample) Collate.defaultCollate(List.of(
                new Sample(Torch.tensor(1f, 2f), Torch.scalar(0L)),
                new Sample(Torch.tensor(3f, 4f), Torch.scalar(1L))));
        assertArrayEquals(new long[] {2, 2}, b.input().shape());
        assertArrayEquals(new long[] {0, 1}, b.target().toLongArray());
        assertArrayEquals(new long[] {2}, b.target().shape());
    }

    @Test
    void recordsWithAnObjectComponentTakeCollatedNumbers() {
        Pair b = (Pair) Collate.defaultCollate(List.of(new Pair(Torch.zeros(2), 3), new Pair(Torch.ones(2), 5)));
        Tensor labels = (Tensor) b.label();
        assertEquals(DType.INT64, labels.dtype());
        assertArrayEquals(new long[] {3, 5}, labels.toLongArray());
    }

    @Test
    void recordsWithAPrimitiveComponentCannotHoldATensor() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> Collate.defaultCollate(List.of(new Labelled(Torch.zeros(2), 1), new Labelled(Torch.zeros(2), 2))));
        assertTrue(e.getMessage().contains("'label'"), e.getMessage());
    }

    @Test
    void integersBecomeInt64AndFloatingNumbersFloat64() {
        Tensor ints = (Tensor) Collate.defaultCollate(List.of(1, 2, 3));
        assertEquals(DType.INT64, ints.dtype());
        assertArrayEquals(new long[] {1, 2, 3}, ints.toLongArray());
        Tensor longs = (Tensor) Collate.defaultCollate(List.of(4L, 5L));
        assertEquals(DType.INT64, longs.dtype());
        Tensor doubles = (Tensor) Collate.defaultCollate(List.of(0.5, 1.5f));
        assertEquals(DType.FLOAT64, doubles.dtype());
        assertArrayEquals(new double[] {0.5, 1.5}, doubles.toDoubleArray());
        Tensor bools = (Tensor) Collate.defaultCollate(List.of(true, false));
        assertEquals(DType.BOOL, bools.dtype());
    }

    @Test
    void mapsAreCollatedPerKey() {
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("x", Torch.tensor(1f));
        a.put("id", 7);
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("x", Torch.tensor(2f));
        b.put("id", 8);
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Collate.defaultCollate(List.of(a, b));
        assertEquals(List.of("x", "id"), new ArrayList<>(m.keySet()));
        assertArrayEquals(new float[] {1, 2}, ((Tensor) m.get("x")).toFloatArray());
        assertArrayEquals(new long[] {7, 8}, ((Tensor) m.get("id")).toLongArray());
        Map<String, Object> missing = Map.of("x", Torch.tensor(3f));
        var e = assertThrows(IllegalArgumentException.class, () -> Collate.defaultCollate(List.of(a, missing)));
        assertTrue(e.getMessage().contains("'id'"), e.getMessage());
    }

    @Test
    void listsAreTransposedAndEachPositionCollated() {
        @SuppressWarnings("unchecked")
        List<Object> l = (List<Object>) Collate.defaultCollate(List.of(List.of(Torch.tensor(1f), 10), List.of(Torch.tensor(2f), 20)));
        assertEquals(2, l.size());
        assertArrayEquals(new float[] {1, 2}, ((Tensor) l.get(0)).toFloatArray());
        assertArrayEquals(new long[] {10, 20}, ((Tensor) l.get(1)).toLongArray());
        assertThrows(IllegalArgumentException.class, () -> Collate.defaultCollate(List.of(List.of(1, 2), List.of(3))));
    }

    @Test
    void tensorArraysStayTensorArrays() {
        Object b = Collate.defaultCollate(List.of(new Tensor[] {Torch.zeros(2), Torch.tensor(1L)},
                new Tensor[] {Torch.ones(2), Torch.tensor(2L)}));
        Tensor[] arr = assertInstanceOf(Tensor[].class, b);
        assertArrayEquals(new long[] {2, 2}, arr[0].shape());
        assertArrayEquals(new long[] {1, 2}, arr[1].toLongArray());
    }

    @Test
    void stringsBecomeAList() {
        assertEquals(List.of("a", "b"), Collate.defaultCollate(List.of("a", "b")));
    }

    @Test
    void mixedSampleTypesAreRejected() {
        var e = assertThrows(IllegalArgumentException.class, () -> Collate.defaultCollate(List.of(Torch.zeros(1), 3)));
        assertTrue(e.getMessage().contains("different types"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Collate.defaultCollate(List.of(new Object())));
    }

    @Test
    void toTensorTypesTheCollationOfNumbers() {
        Tensor t = Collate.<Integer>toTensor().collate(List.of(1, 2));
        assertArrayEquals(new long[] {1, 2}, t.toLongArray());
    }

    @Test
    void forEachTensorFindsTensorsInNestedBatchesOnce() {
        Tensor a = Torch.zeros(1);
        Tensor b = Torch.zeros(1);
        Object batch = Map.of("k", List.of(new Sample(a, b), new Tensor[] {a}));
        List<Tensor> found = new ArrayList<>();
        Collate.forEachTensor(batch, found::add);
        assertEquals(2, found.size());
        assertTrue(found.contains(a) && found.contains(b));
    }

    record Nested(Tensor a, Object rest, int id) {}

    @Test
    void mapTensorsRebuildsRecordsMapsListsAndArraysAndMapsEachTensorOnce() {
        Tensor x = Torch.tensor(new float[] {1, 2}), y = Torch.tensor(new float[] {3});
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("x", x);
        m.put("list", List.of(y, x, "label"));
        m.put("array", new Object[] {y});
        Object batch = new Nested(x, m, 7);
        List<Tensor> calls = new ArrayList<>();
        Object out = Collate.mapTensors(batch, t -> {
            calls.add(t);
            return t.mul(10);
        });
        assertEquals(2, calls.size(), "x and y are mapped once each");
        Nested p = assertInstanceOf(Nested.class, out);
        assertEquals(7, p.id());
        assertArrayEquals(new float[] {10, 20}, p.a().toFloatArray());
        Map<?, ?> rest = assertInstanceOf(Map.class, p.rest());
        assertTrue(rest.get("x") == p.a(), "one result per distinct tensor");
        List<?> list = assertInstanceOf(List.class, rest.get("list"));
        assertArrayEquals(new float[] {30}, ((Tensor) list.get(0)).toFloatArray());
        assertEquals("label", list.get(2));
        assertArrayEquals(new float[] {30}, ((Tensor) ((Object[]) rest.get("array"))[0]).toFloatArray());
        assertArrayEquals(new float[] {1, 2}, x.toFloatArray(), "the input batch is unchanged");
    }

    @Test
    void aNonBlockingCopyOnTheCpuEqualsABlockingOne() {
        Tensor src = Torch.tensor(new float[] {1, 2, 3, 4}).reshape(2, 2).t();
        Tensor dst = Torch.zeros(2, 2);
        dst.copy_(src, true);
        assertArrayEquals(new float[] {1, 3, 2, 4}, dst.toFloatArray());
        assertTrue(!dst.isPinned());
    }
}
