package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Interpolation behaviour the PyTorch fixtures do not pin down: reduced-precision linear modes compute in float32
 * and round once (PyTorch 1.13 rounds each bfloat16 step), and nearest modes keep integer dtypes.
 */
class ResamplingTest {

    @Test
    void bfloat16BilinearIsTheFloat32ResultRoundedOnce() {
        try (Tensor x = Torch.randn(new long[] {2, 2, 4, 5}, DType.FLOAT32, Device.cpu(), new Generator(1)).to(DType.BFLOAT16);
             Tensor xf = x.to(DType.FLOAT32);
             Tensor y = F.interpolate(x, new long[] {7, 9}, "bilinear", false);
             Tensor yf = F.interpolate(xf, new long[] {7, 9}, "bilinear", false);
             Tensor expected = yf.to(DType.BFLOAT16)) {
            assertEquals(DType.BFLOAT16, y.dtype());
            assertArrayEquals(expected.toFloatArray(), y.toFloatArray());
        }
    }

    @Test
    void nearestKeepsIntegerValuesAndDtype() {
        try (Tensor x = Torch.arange(12).reshape(1, 1, 3, 4); Tensor y = F.interpolate(x, new double[] {2}, "nearest", null)) {
            assertEquals(DType.INT64, y.dtype());
            assertArrayEquals(new long[] {1, 1, 6, 8}, y.shape());
            long[] v = y.toLongArray();
            for (int h = 0; h < 6; h++) {
                for (int w = 0; w < 8; w++) assertEquals((h / 2) * 4L + w / 2, v[h * 8 + w]);
            }
        }
    }
}
