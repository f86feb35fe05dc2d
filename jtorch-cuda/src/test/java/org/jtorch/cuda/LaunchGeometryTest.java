package org.jtorch.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.jtorch.cuda.kernels.LaunchGeometry;
import org.junit.jupiter.api.Test;

/** Grid sizes of the grid-stride kernels: one item a thread, 256 threads a block, at most 8 blocks an SM. */
class LaunchGeometryTest {
    @Test
    void noElementsMeansNoLaunch() {
        assertEquals(0, LaunchGeometry.blocks(0, 4, 132));
    }

    @Test
    void blocksCoverEveryVectorOnce() {
        assertEquals(1, LaunchGeometry.blocks(1, 4, 132));
        assertEquals(1, LaunchGeometry.blocks(1024, 4, 132), "1024 floats = 256 vectors = one block");
        assertEquals(2, LaunchGeometry.blocks(1025, 4, 132), "one more element needs a second block");
        assertEquals(4, LaunchGeometry.blocks(1024, 1, 132), "strided kernels take one element a thread");
        assertEquals(128, LaunchGeometry.blocks(8 * 32768, 8, 132), "8 bf16 a vector");
    }

    @Test
    void largeTensorsAreCappedAtEightBlocksPerMultiprocessor() {
        assertEquals(132 * 8, LaunchGeometry.blocks(1L << 30, 4, 132), "H100/H200: 132 SMs");
        assertEquals(8, LaunchGeometry.blocks(Long.MAX_VALUE / 2, 1, 1));
    }

    @Test
    void vectorWidthIsSixteenBytes() {
        assertEquals(16, LaunchGeometry.vectorWidth(1));
        assertEquals(8, LaunchGeometry.vectorWidth(2));
        assertEquals(4, LaunchGeometry.vectorWidth(4));
        assertEquals(2, LaunchGeometry.vectorWidth(8));
    }

    @Test
    void invalidArgumentsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> LaunchGeometry.blocks(-1, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> LaunchGeometry.blocks(1, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> LaunchGeometry.blocks(1, 1, 0));
    }
}
