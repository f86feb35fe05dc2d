package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.types.DType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Properties of the indexing and joining ops that hold for any input (round trips, identities, view
 * semantics, version counters, validation before writing), and agreement of the kernels' fast paths
 * with their generic strided paths on sizes large enough to run in parallel. Values here are
 * checked against each other or against plain Java loops; PyTorch's values are in
 * {@link IndexingConformanceTest}.
 */
class IndexingTest {

    @BeforeEach
    void seed() {
        Torch.manualSeed(1234);
    }

    private static Tensor nonContiguousCopy(Tensor t) {
        // Same values, transposed storage: forces the generic strided path.
        try (Tensor tt = t.t(); Tensor c = tt.contiguous()) {
            return c.t();
        }
    }

    private static Tensor permutationRows(int rows, int n) {
        List<Tensor> perms = new ArrayList<>();
        for (int i = 0; i < rows; i++) perms.add(Torch.randperm(n));
        try {
            return Torch.stack(perms, 0);
        } finally {
            perms.forEach(Tensor::close);
        }
    }

    // ---------------------------------------------------------------- round trips and identities

    @Test
    void gatherUndoesScatterWithPermutationIndices() {
        try (Tensor x = Torch.randn(64, 50);
             Tensor p = permutationRows(64, 50);
             Tensor zeros = Torch.zeros(64, 50);
             Tensor y = zeros.scatter(1, p, x);
             Tensor back = y.gather(1, p)) {
            assertArrayEquals(x.toFloatArray(), back.toFloatArray());
            float[] xs = x.toFloatArray();
            float[] ys = y.toFloatArray();
            long[] ps = p.toLongArray();
            for (int i = 0; i < 64; i++) {
                for (int j = 0; j < 50; j++) assertEquals(xs[i * 50 + j], ys[i * 50 + (int) ps[i * 50 + j]]);
            }
        }
    }

    @Test
    void scatterAddOfPermutationEqualsScatter() {
        try (Tensor x = Torch.randn(30, 40);
             Tensor p = permutationRows(30, 40);
             Tensor zeros = Torch.zeros(30, 40);
             Tensor a = zeros.scatter(1, p, x);
             Tensor b = zeros.scatterAdd(1, p, x)) {
            assertArrayEquals(a.toFloatArray(), b.toFloatArray());
        }
    }

    @Test
    void splitThenCatIsIdentity() {
        try (Tensor x = Torch.randn(7, 5, 6)) {
            for (int dim = -3; dim < 3; dim++) {
                for (long size : new long[] {1, 2, 3, 7, 10}) {
                    List<Tensor> parts = x.split(size, dim);
                    try (Tensor joined = Torch.cat(parts, dim)) {
                        assertArrayEquals(x.toFloatArray(), joined.toFloatArray(), "dim " + dim + " size " + size);
                    } finally {
                        parts.forEach(Tensor::close);
                    }
                }
            }
            List<Tensor> parts = x.split(new long[] {2, 0, 4}, 2);
            try (Tensor joined = Torch.cat(parts, 2)) {
                assertArrayEquals(x.toFloatArray(), joined.toFloatArray());
            } finally {
                parts.forEach(Tensor::close);
            }
        }
    }

    @Test
    void chunkThenCatAndUnbindThenStackAreIdentities() {
        try (Tensor x = Torch.randn(5, 6)) {
            for (int chunks = 1; chunks <= 7; chunks++) {
                List<Tensor> parts = x.chunk(chunks, 1);
                assertTrue(parts.size() <= chunks);
                try (Tensor joined = Torch.cat(parts, 1)) {
                    assertArrayEquals(x.toFloatArray(), joined.toFloatArray());
                } finally {
                    parts.forEach(Tensor::close);
                }
            }
            for (int dim = 0; dim < 2; dim++) {
                List<Tensor> rows = x.unbind(dim);
                try (Tensor stacked = Torch.stack(rows, dim)) {
                    assertArrayEquals(x.toFloatArray(), stacked.toFloatArray());
                } finally {
                    rows.forEach(Tensor::close);
                }
            }
        }
    }

    @Test
    void splitPartsAreViewsOfTheInput() {
        try (Tensor x = Torch.zeros(4, 3)) {
            List<Tensor> parts = x.split(2, 0);
            try {
                assertSame(x.storage(), parts.get(1).storage());
                parts.get(1).fill_(5.0);
                assertArrayEquals(new float[] {0, 0, 0, 0, 0, 0, 5, 5, 5, 5, 5, 5}, x.toFloatArray());
            } finally {
                parts.forEach(Tensor::close);
            }
        }
    }

    @Test
    void advancedIndexingWithOneIndexEqualsIndexSelect() {
        try (Tensor x = Torch.randn(6, 4, 3);
             Tensor idx = Torch.tensor(5L, 0L, 2L, 2L);
             Tensor a = x.index(idx);
             Tensor b = x.indexSelect(0, idx);
             Tensor c = x.index(null, Torch.tensor(3L, 1L));
             Tensor d = x.indexSelect(1, Torch.tensor(3L, 1L))) {
            assertArrayEquals(b.toFloatArray(), a.toFloatArray());
            assertArrayEquals(d.toFloatArray(), c.toFloatArray());
        }
    }

    /**
     * nonzero is a declared op whose kernel the dispatcher runs (the profile names it), its count read by count_nonzero; a
     * count given by hand is checked, and the kernel writes no more rows than it.
     */
    @Test
    void nonzeroRunsAsADeclaredOpThroughTheDispatcher() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.tensor(new float[] {0, 2, 0, -1, 3, 0}).reshape(2, 3);
            org.jtorch.backend.KernelProfiler.reset();
            org.jtorch.backend.KernelProfiler.start();
            Tensor nz;
            try {
                nz = x.nonzero();
            } finally {
                org.jtorch.backend.KernelProfiler.stop();
            }
            assertArrayEquals(new long[] {0, 1, 1, 0, 1, 1}, nz.toLongArray());
            assertArrayEquals(new long[] {3, 2}, nz.shape());
            List<String> kernels = org.jtorch.backend.KernelProfiler.entries().stream().map(org.jtorch.backend.KernelProfiler.Entry::kernel).toList();
            assertTrue(kernels.stream().anyMatch(k -> k.startsWith("nonzero ")), kernels.toString());
            assertTrue(kernels.stream().anyMatch(k -> k.startsWith("count_nonzero ")), kernels.toString());
            Tensor first = Dispatcher.call(org.jtorch.op.IndexingOps.NONZERO, new Tensor[] {x}, 2);
            assertArrayEquals(new long[] {0, 1, 1, 0}, first.toLongArray(), "at most count rows");
            RuntimeException e = assertThrows(RuntimeException.class, () -> Dispatcher.call(org.jtorch.op.IndexingOps.NONZERO, new Tensor[] {x}, -1));
            assertTrue(e.getMessage().startsWith("nonzero: count must be a non-negative integer, got -1.0 (self of shape [2, 3])"), e.getMessage());
        }
    }

    @Test
    void fullMaskIndexEqualsMaskedSelectAndWhereEqualsNonzero() {
        try (Tensor x = Torch.randn(5, 7);
             Tensor mask = x.gt(0.2);
             Tensor a = x.index(mask);
             Tensor b = x.maskedSelect(mask);
             Tensor nz = mask.nonzero()) {
            assertArrayEquals(b.toFloatArray(), a.toFloatArray());
            List<Tensor> coords = Torch.where(mask);
            try {
                assertEquals(2, coords.size());
                for (int d = 0; d < 2; d++) {
                    try (Tensor col = nz.select(1, d)) {
                        assertArrayEquals(col.toLongArray(), coords.get(d).toLongArray());
                    }
                }
            } finally {
                coords.forEach(Tensor::close);
            }
        }
    }

    @Test
    void int32AndInt64IndicesSelectTheSameRows() {
        try (Tensor x = Torch.randn(9, 4);
             Tensor a = x.indexSelect(0, Torch.tensor(8L, 0L, 3L));
             Tensor b = x.indexSelect(0, Torch.tensor(8, 0, 3))) {
            assertArrayEquals(a.toFloatArray(), b.toFloatArray());
        }
    }

    // ---------------------------------------------------------------- in-place semantics and validation

    @Test
    void inPlaceOpsReturnTheirReceiverAndBumpTheVersion() {
        List<UnaryOperator<Tensor>> ops = List.of(
                t -> t.scatter_(1, Torch.tensor(new long[] {0, 1}, 2, 1), 1.0),
                t -> t.scatter_(1, Torch.tensor(new long[] {0, 1}, 2, 1), Torch.ones(2, 1)),
                t -> t.scatterAdd_(1, Torch.tensor(new long[] {0, 1}, 2, 1), Torch.ones(2, 1)),
                t -> t.indexAdd_(0, Torch.tensor(1L), Torch.ones(1, 3)),
                t -> t.indexCopy_(0, Torch.tensor(1L), Torch.ones(1, 3)),
                t -> t.indexFill_(1, Torch.tensor(2L), 4.0),
                t -> t.maskedFill_(Torch.tensor(true, false, true), 2.0),
                t -> t.indexPut_(new Tensor[] {Torch.tensor(0L)}, Torch.scalar(3.0).to(DType.FLOAT32), true));
        for (UnaryOperator<Tensor> op : ops) {
            try (MemoryScope s = new MemoryScope(); Tensor t = Torch.zeros(2, 3)) {
                int before = t.version();
                assertSame(t, op.apply(t));
                assertTrue(t.version() > before);
                assertFalse(allZero(t), "the op wrote something");
            }
        }
    }

    private static boolean allZero(Tensor t) {
        for (float v : t.toFloatArray()) if (v != 0) return false;
        return true;
    }

    @Test
    void badIndexIsReportedBeforeAnythingIsWritten() {
        try (Tensor t = Torch.zeros(4, 3);
             Tensor idx = Torch.tensor(0L, 1L, 99L);
             Tensor src = Torch.ones(3, 3)) {
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> t.indexAdd_(0, idx, src));
            assertTrue(e.getMessage().contains("index_add_") && e.getMessage().contains("99") && e.getMessage().contains("4"),
                    e.getMessage());
            assertTrue(allZero(t));
            try (Tensor sIdx = Torch.tensor(new long[] {0, 1, 2, 7, 0, 1, 2, 3, 0}, 3, 3)) {
                assertThrows(IndexOutOfBoundsException.class, () -> t.scatterAdd_(0, sIdx, src));
                assertThrows(IndexOutOfBoundsException.class, () -> t.scatter_(0, sIdx, 1.0));
            }
            assertThrows(IndexOutOfBoundsException.class, () -> t.indexPut_(new Tensor[] {idx}, src, true));
            assertThrows(IndexOutOfBoundsException.class, () -> t.indexFill_(0, idx, 1.0));
            assertTrue(allZero(t));
        }
    }

    @Test
    void opsReleaseTheirTemporaries() {
        try (Tensor x = Torch.randn(4, 5);
             Tensor idx = Torch.tensor(3L, -1L);
             Tensor zero = Torch.tensor(0L);
             Tensor one = Torch.tensor(new long[] {1}, 1, 1);
             Tensor value = Torch.scalar(0.0);
             Tensor mask = x.gt(0)) {
            long before = Torch.memoryStats(x.device()).allocatedBytes();
            for (int i = 0; i < 3; i++) {
                Tensor[] results = {
                    x.index(null, idx), x.index(mask), x.index(idx, zero), x.maskedFill(mask, 1.0), x.indexFill(1, idx, 2.0),
                    x.scatter(1, one, 3.0), x.gather(1, one), x.indexPut(new Tensor[] {mask}, value, false),
                    Torch.stack(x, x), x.nonzero(), x.maskedSelect(mask)};
                for (Tensor r : results) r.close();
                Torch.where(mask).forEach(Tensor::close);
                x.chunk(3, 1).forEach(Tensor::close);
            }
            long after = Torch.memoryStats(x.device()).allocatedBytes();
            assertEquals(before, after, "bytes still allocated after every result was closed");
        }
    }

    @Test
    void closedTensorsAreRejectedByName() {
        Tensor x = Torch.randn(3, 3);
        x.close();
        try (Tensor idx = Torch.tensor(0L)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> x.indexSelect(0, idx));
            assertTrue(e.getMessage().contains("index_select"), e.getMessage());
        }
    }

    @Test
    void catConvertsEveryInputToThePromotedType() {
        try (Tensor a = Torch.tensor(true, false);
             Tensor b = Torch.tensor(3, 4);
             Tensor c = Torch.tensor(0.5, 1.5).to(DType.BFLOAT16);
             Tensor r = Torch.cat(a, b, c)) {
            assertEquals(DType.BFLOAT16, r.dtype());
            assertArrayEquals(new double[] {1, 0, 3, 4, 0.5, 1.5}, r.toDoubleArray());
        }
    }

    // ---------------------------------------------------------------- fast paths against generic paths (parallel sizes)

    @Test
    void embeddingLookupRowCopiesMatchTheStridedPath() {
        try (Tensor table = Torch.randn(4000, 64);
             Tensor strided = nonContiguousCopy(table);
             Tensor idx = Torch.randint(0, 4000, 3000);
             Tensor fast = table.indexSelect(0, idx);
             Tensor slow = strided.indexSelect(0, idx)) {
            assertFalse(strided.isContiguous());
            assertArrayEquals(fast.toFloatArray(), slow.toFloatArray());
            float[] t = table.toFloatArray();
            float[] f = fast.toFloatArray();
            long[] ix = idx.toLongArray();
            for (int i = 0; i < ix.length; i += 97) {
                for (int j = 0; j < 64; j++) assertEquals(t[(int) ix[i] * 64 + j], f[i * 64 + j]);
            }
        }
    }

    @Test
    void lastDimGatherMatchesTheStridedPath() {
        try (Tensor logits = Torch.randn(3000, 40);
             Tensor strided = nonContiguousCopy(logits);
             Tensor idx = Torch.randint(0, 40, 3000, 20);
             Tensor fast = logits.gather(1, idx);
             Tensor slow = strided.gather(1, idx)) {
            assertArrayEquals(fast.toFloatArray(), slow.toFloatArray());
        }
    }

    @Test
    void embeddingGradientAccumulationMatchesTheStridedPath() {
        try (Tensor grad = Torch.randn(5000, 48);
             Tensor gradStrided = nonContiguousCopy(grad);
             Tensor idx = Torch.randint(0, 300, 5000);
             Tensor zeros = Torch.zeros(300, 48);
             Tensor fast = zeros.indexAdd(0, idx, grad, 0.5);
             Tensor slow = zeros.indexAdd(0, idx, gradStrided, 0.5)) {
            assertArrayEquals(slow.toFloatArray(), fast.toFloatArray());
            // And against a plain loop in double precision.
            float[] g = grad.toFloatArray();
            long[] ix = idx.toLongArray();
            double[] ref = new double[300 * 48];
            for (int i = 0; i < ix.length; i++) {
                for (int j = 0; j < 48; j++) ref[(int) ix[i] * 48 + j] += 0.5 * g[i * 48 + j];
            }
            float[] f = fast.toFloatArray();
            for (int k = 0; k < ref.length; k++) assertEquals(ref[k], f[k], 1e-4 * (1 + Math.abs(ref[k])));
        }
    }

    @Test
    void dim0ScatterAddMatchesTheStridedPath() {
        try (Tensor src = Torch.randn(2000, 64);
             Tensor idx = Torch.randint(0, 100, 2000, 64);
             Tensor zeros = Torch.zeros(100, 64);
             Tensor zerosStrided = nonContiguousCopy(zeros);
             Tensor fast = zeros.scatterAdd(0, idx, src);
             Tensor slow = zerosStrided.scatterAdd(0, idx, src)) {
            assertArrayEquals(slow.toFloatArray(), fast.toFloatArray());
        }
    }

    @Test
    void largeCatOfContiguousInputsCopiesEveryBlock() {
        try (Tensor a = Torch.randn(300, 200);
             Tensor b = Torch.randn(300, 50);
             Tensor r = Torch.cat(new Tensor[] {a, b}, 1)) {
            float[] av = a.toFloatArray();
            float[] bv = b.toFloatArray();
            float[] rv = r.toFloatArray();
            for (int i = 0; i < 300; i++) {
                for (int j = 0; j < 200; j++) assertEquals(av[i * 200 + j], rv[i * 250 + j]);
                for (int j = 0; j < 50; j++) assertEquals(bv[i * 50 + j], rv[i * 250 + 200 + j]);
            }
        }
    }
}
