package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link Stream}'s life cycle on cuda:0: closed streams are pooled, never destroyed (as PyTorch's). */
class StreamDeviceTest {
    private static final Device CUDA = Device.cuda(0);

    @BeforeEach
    void cuda() {
        assumeTrue(Cuda.isAvailable(), () -> "cuda:0 unavailable: " + Cuda.unavailableReason());
    }

    /** Regression: closing the stream destroyed it, and freeing a tensor allocated on it then failed in cuEventRecord. */
    @Test
    void aTensorAllocatedOnAStreamIsFreedAfterTheStreamIsClosed() {
        Tensor t;
        try (Stream side = Stream.create(CUDA); Cuda.StreamScope s = Cuda.withStream(side)) {
            t = Torch.full(new long[] {1 << 18}, 2.0, DType.FLOAT32, CUDA).mul(3.0);
            side.synchronize();  // the default stream reads t below: the side stream's work must be done
        }
        assertEquals(6f, t.toFloatArray()[12345]);
        t.close();
        try (Tensor u = Torch.ones(new long[] {1 << 18}, DType.FLOAT32, CUDA)) {
            assertEquals((double) (1 << 18), u.sum().item(), "the freed memory is reused correctly");
        }
    }

    @Test
    void aClosedStreamIsReusedByTheNextCreateOnce() {
        Stream first = Stream.create(CUDA);
        long handle = first.handle();
        first.close();
        first.close();  // a second close does not pool the handle twice
        try (Stream again = Stream.create(CUDA); Stream other = Stream.create(CUDA)) {
            assertEquals(handle, again.handle());
            assertNotEquals(handle, other.handle());
            try (Cuda.StreamScope s = Cuda.withStream(again); Tensor x = Torch.arange(4).to(DType.FLOAT32).to(CUDA)) {
                assertArrayEquals(new float[] {0, 2, 4, 6}, x.add(x).toFloatArray());
            }
        }
        assertThrows(IllegalStateException.class, first::handle);
    }
}
