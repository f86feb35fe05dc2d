package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.junit.jupiter.api.Test;

/**
 * The 3-d convolutions' composite beyond the PyTorch fixtures (SpatialConformanceTest, KeywordOptionsConformanceTest,
 * AutocastConformanceTest): half-precision operands rounded once, as a native kernel's, and bad sizes refused naming the op.
 */
class Convolution3dTest {
    @Test
    void bfloat16OperandsSumTheirTapsInFloat32AndRoundOnce() {
        try (MemoryScope scope = new MemoryScope()) {
            Torch.manualSeed(3);
            Tensor x = Torch.randn(2, 4, 5, 6, 5).to(DType.BFLOAT16), w = Torch.randn(6, 2, 3, 3, 2).to(DType.BFLOAT16);
            Tensor b = Torch.randn(6).to(DType.BFLOAT16);
            Tensor y = F.conv3d(x, w, F.Conv.options().bias(b).padding(1, 0, 1).groups(2));
            Tensor wide = F.conv3d(x.to(DType.FLOAT32), w.to(DType.FLOAT32), F.Conv.options().bias(b.to(DType.FLOAT32)).padding(1, 0, 1).groups(2));
            assertEquals(DType.BFLOAT16, y.dtype());
            assertArrayEquals(wide.to(DType.BFLOAT16).to(DType.FLOAT32).toFloatArray(), y.to(DType.FLOAT32).toFloatArray());

            Tensor wt = Torch.randn(4, 3, 3, 2, 2).to(DType.BFLOAT16);
            Tensor t = F.convTranspose3d(x, wt, F.ConvTranspose.options().stride(2, 1, 1).padding(1));
            Tensor tWide = F.convTranspose3d(x.to(DType.FLOAT32), wt.to(DType.FLOAT32), F.ConvTranspose.options().stride(2, 1, 1).padding(1));
            assertEquals(DType.BFLOAT16, t.dtype());
            assertArrayEquals(tWide.to(DType.BFLOAT16).to(DType.FLOAT32).toFloatArray(), t.to(DType.FLOAT32).toFloatArray());
        }
    }

    @Test
    void nonPositiveStridesAndDilationsAndNegativePaddingAreRefusedNamingTheOp() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(1, 2, 4, 4, 4), w = Torch.randn(3, 2, 2, 2, 2), wt = Torch.randn(2, 3, 2, 2, 2);
            for (Runnable call : new Runnable[] {
                    () -> F.conv3d(x, w, F.Conv.options().stride(1, 0, 1)),
                    () -> F.conv3d(x, w, F.Conv.options().dilation(0)),
                    () -> F.conv3d(x, w, F.Conv.options().padding(-1))}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
                assertTrue(e.getMessage().startsWith("conv3d: expected positive stride"), e.getMessage());
            }
            for (Runnable call : new Runnable[] {
                    () -> F.convTranspose3d(x, wt, F.ConvTranspose.options().stride(0)),
                    () -> F.convTranspose3d(x, wt, F.ConvTranspose.options().dilation(1, 1, 0)),
                    () -> F.convTranspose3d(x, wt, F.ConvTranspose.options().outputPadding(-1))}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
                assertTrue(e.getMessage().startsWith("convTranspose3d: expected positive stride"), e.getMessage());
            }
        }
    }

    @Test
    void float16IsRefusedOnTheCpuNamingTheOp() {
        try (MemoryScope scope = new MemoryScope()) {
            Tensor x = Torch.randn(1, 2, 3, 3, 3).to(DType.FLOAT16), w = Torch.randn(2, 2, 2, 2, 2).to(DType.FLOAT16);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.conv3d(x, w));
            assertEquals("conv3d: not implemented for torch.float16 on the CPU", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> F.convTranspose3d(x, w));
            assertEquals("convTranspose3d: not implemented for torch.float16 on the CPU", e.getMessage());
        }
    }
}
