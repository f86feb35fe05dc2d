package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * CUDA's default index checks ({@link IndexCheckLog}): no synchronisation at the op, the error at the next
 * synchronisation with the op's stream, the device usable afterwards. {@link IndexDeviceConformanceTest}
 * checks the synchronous mode against the CPU.
 */
class DeferredIndexCheckTest {
    private static final Device CUDA = Device.cuda(0);
    private static final String DEFERRED = " (found by the op's CUDA index check and reported at the next synchronisation";
    @RegisterExtension
    final DeferredCheckCase deferred = new DeferredCheckCase();

    /** [[0, 1, 2], [3, 4, 5]] as float32 on cuda:0. */
    private static Tensor matrix() {
        return Torch.arange(6).to(DType.FLOAT32).reshape(2, 3).to(CUDA);
    }

    private static Tensor indices(long[] values, long... shape) {
        return Torch.tensor(values).reshape(shape).to(CUDA);
    }

    @Test
    void aBadGatherIndexIsReportedOnceAtTheNextReadAndItsElementIsZero() {
        Tensor y = matrix().gather(1, indices(new long[] {2, 7, 0, 1}, 2, 2));  // no exception: nothing was waited for
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, y::toFloatArray);
        assertTrue(e.getMessage().startsWith("gather: index 7 is out of bounds for dimension 1 with size 3" + DEFERRED), e.getMessage());
        assertArrayEquals(new float[] {2, 0, 3, 4}, y.toFloatArray(), "reported once; the bad element skipped (zero), the others gathered");
    }

    @Test
    void aBadScatterIndexWritesTheOthersAndIsReportedAtSynchronize() {
        Tensor x = matrix();
        Tensor i = indices(new long[] {1, -1, 0}, 1, 3), nines = Torch.full(new long[] {1, 3}, 9.0, DType.FLOAT32, CUDA);
        x.scatter_(0, i, nines);  // scatter_ does not wrap -1: that element is skipped
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> Cuda.synchronize(CUDA));
        assertTrue(e.getMessage().startsWith("scatter_: index -1 is out of bounds for dimension 0 with size 2" + DEFERRED), e.getMessage());
        assertArrayEquals(new float[] {0, 1, 9, 9, 4, 5}, x.toFloatArray());
    }

    @Test
    void theFirstBadOpIsReportedAndTheLaterOnesSuppressed() {
        Tensor x = matrix();
        Tensor i = indices(new long[] {0, 5}, 2), j = indices(new long[] {-4}, 1);  // (an upload waits for the stream)
        Tensor a = x.indexSelect(0, i);
        Tensor b = x.indexSelect(1, j);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> a.add(b).toFloatArray());
        assertTrue(e.getMessage().startsWith("index_select: index 5 is out of bounds for dimension 0 with size 2"), e.getMessage());
        assertEquals(1, e.getSuppressed().length);
        assertTrue(e.getSuppressed()[0].getMessage().startsWith("index_select: index -4 is out of bounds for dimension 1 with size 3"),
                e.getSuppressed()[0].getMessage());
    }

    @Test
    void aCheckOnASideStreamIsReportedByThatStreamsSynchronisation() {
        Tensor x = matrix();
        Tensor i = indices(new long[] {3}, 1);
        Cuda.synchronize(CUDA);
        try (Stream side = Stream.create(CUDA)) {
            try (Cuda.StreamScope s = Cuda.withStream(side); Tensor unread = x.indexSelect(0, i)) {
                // closed before its stream is
            }
            assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, x.toFloatArray(), "the default stream's read does not see the side stream's check");
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, side::synchronize);
            assertTrue(e.getMessage().startsWith("index_select: index 3 is out of bounds for dimension 0 with size 2"), e.getMessage());
        }
    }

    @Test
    void moreChecksInFlightThanRecordsWaitForTheDeviceAndStayCorrect() {
        Tensor x = matrix();
        Tensor i = indices(new long[] {1, 0}, 2);
        Tensor sum = Torch.zeros(new long[] {2, 3}, DType.FLOAT32, CUDA);
        for (int k = 0; k < IndexCheckLog.RECORDS + 44; k++) sum.add_(x.indexSelect(0, i));
        float n = IndexCheckLog.RECORDS + 44;
        assertArrayEquals(new float[] {3 * n, 4 * n, 5 * n, 0, n, 2 * n}, sum.toFloatArray());
    }

    @Test
    void aBadIndexAmongManyChecksInFlightIsReportedWhenTheRecordsRunOut() {
        Tensor x = matrix();
        Tensor bad = indices(new long[] {2}, 1), good = indices(new long[] {1}, 1);
        x.indexSelect(0, bad);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> {
            for (int k = 0; k < IndexCheckLog.RECORDS; k++) x.indexSelect(0, good);
        });
        assertTrue(e.getMessage().startsWith("index_select: index 2 is out of bounds for dimension 0 with size 2"), e.getMessage());
        assertFalse(Float.isNaN(x.indexSelect(0, good).toFloatArray()[0]), "the device stays usable");
    }
}
