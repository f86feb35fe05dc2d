package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * The spatial layers: PyTorch 1.13's reprs (printed by {@code repr(nn.X(...))} in PyTorch 1.13), forward equal to
 * the functional form, and channel dropout's train/eval behaviour.
 */
class SpatialModulesTest {

    @Test
    void reprsMatchPyTorch() {
        assertEquals("MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)", new MaxPool1d(3).toString());
        assertEquals("MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)", new MaxPool2d(3, 2, 1).toString());
        assertEquals("MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=False)",
                new MaxPool2d(new int[] {2, 3}, null, new int[] {0}, new int[] {1}, false).toString());
        assertEquals("AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))", new AvgPool1d(3).toString());
        assertEquals("AvgPool2d(kernel_size=2, stride=2, padding=0)", new AvgPool2d(2).toString());
        assertEquals("AvgPool2d(kernel_size=(2, 3), stride=1, padding=(1, 0))",
                new AvgPool2d(new int[] {2, 3}, F.AvgPool.options().stride(1).padding(1, 0).divisorOverride(2L)).toString());
        assertEquals("AdaptiveAvgPool1d(output_size=5)", new AdaptiveAvgPool1d(5).toString());
        assertEquals("AdaptiveAvgPool2d(output_size=(None, 3))", new AdaptiveAvgPool2d(null, 3L).toString());
        assertEquals("AdaptiveAvgPool2d(output_size=1)", new AdaptiveAvgPool2d(1).toString());
        assertEquals("AdaptiveMaxPool2d(output_size=(2, 3))", new AdaptiveMaxPool2d(2, 3).toString());
        assertEquals("ZeroPad2d((2, 2, 2, 2))", new ZeroPad2d(2).toString());
        assertEquals("ZeroPad2d((1, 2, 3, 4))", new ZeroPad2d(new long[] {1, 2, 3, 4}).toString());
        assertEquals("ConstantPad1d(padding=(2, 2), value=0.5)", new ConstantPad1d(2, 0.5).toString());
        assertEquals("ConstantPad2d(padding=(1, 2, 3, 4), value=1.5)", new ConstantPad2d(new long[] {1, 2, 3, 4}, 1.5).toString());
        assertEquals("ReflectionPad1d((2, 2))", new ReflectionPad1d(2).toString());
        assertEquals("ReflectionPad2d((1, 2, 3, 4))", new ReflectionPad2d(new long[] {1, 2, 3, 4}).toString());
        assertEquals("ReplicationPad1d((1, 2))", new ReplicationPad1d(new long[] {1, 2}).toString());
        assertEquals("ReplicationPad2d((1, 1, 1, 1))", new ReplicationPad2d(1).toString());
        assertEquals("Upsample(scale_factor=2.0, mode=nearest)", Upsample.scale(2).toString());
        assertEquals("Upsample(size=(4, 5), mode=bilinear)", Upsample.size(new long[] {4, 5}, "bilinear", true).toString());
        assertEquals("Upsample(scale_factor=(2.0, 1.5), mode=nearest)", Upsample.scale(new double[] {2, 1.5}, "nearest", null).toString());
        assertEquals("PixelShuffle(upscale_factor=2)", new PixelShuffle(2).toString());
        assertEquals("PixelUnshuffle(downscale_factor=3)", new PixelUnshuffle(3).toString());
        assertEquals("Dropout1d(p=0.5, inplace=False)", new Dropout1d().toString());
        assertEquals("Dropout2d(p=0.2, inplace=False)", new Dropout2d(0.2).toString());
    }

    @Test
    void layersComputeTheirFunctionalForm() {
        try (Tensor x = Torch.randn(new long[] {2, 4, 6, 6}, DType.FLOAT32, Device.cpu(), new Generator(1))) {
            same(F.maxPool2d(x, 3, 2, 1), new MaxPool2d(3, 2, 1).forward(x));
            same(F.avgPool2d(x, 2), new AvgPool2d(2).forward(x));
            same(F.adaptiveAvgPool2d(x, 1), new AdaptiveAvgPool2d(1).forward(x));
            same(F.adaptiveMaxPool2d(x, 2, 3), new AdaptiveMaxPool2d(2, 3).forward(x));
            same(F.pad(x, new long[] {1, 2, 3, 4}, "reflect"), new ReflectionPad2d(new long[] {1, 2, 3, 4}).forward(x));
            same(F.pad(x, new long[] {1, 1, 1, 1}, "replicate"), new ReplicationPad2d(1).forward(x));
            same(F.pad(x, new long[] {1, 1, 1, 1}, "constant", 0.0), new ZeroPad2d(1).forward(x));
            same(F.pad(x, new long[] {1, 0, 2, 1}, "constant", 3.0), new ConstantPad2d(new long[] {1, 0, 2, 1}, 3).forward(x));
            same(F.interpolate(x, new double[] {2}, "nearest", null), Upsample.scale(2).forward(x));
            same(F.pixelShuffle(x, 2), new PixelShuffle(2).forward(x));
            same(F.pixelUnshuffle(x, 2), new PixelUnshuffle(2).forward(x));
        }
        try (Tensor x = Torch.randn(new long[] {2, 3, 8}, DType.FLOAT32, Device.cpu(), new Generator(2))) {
            same(F.maxPool1d(x, 2), new MaxPool1d(2).forward(x));
            same(F.avgPool1d(x, 3, 1, 1, false, true), new AvgPool1d(3, 1, 1, false, true).forward(x));
            same(F.adaptiveAvgPool1d(x, 3), new AdaptiveAvgPool1d(3).forward(x));
            same(F.pad(x, new long[] {2, 1}, "reflect"), new ReflectionPad1d(new long[] {2, 1}).forward(x));
            same(F.pad(x, new long[] {2, 1}, "replicate"), new ReplicationPad1d(new long[] {2, 1}).forward(x));
            same(F.pad(x, new long[] {2, 2}, "constant", 0.5), new ConstantPad1d(2, 0.5).forward(x));
        }
    }

    @Test
    void globalAveragePoolIsThePlaneMean() {
        try (Tensor x = Torch.randn(new long[] {3, 5, 7, 9}, DType.FLOAT32, Device.cpu(), new Generator(4));
             Tensor pooled = F.adaptiveAvgPool2d(x, 1); Tensor mean = x.mean(new int[] {2, 3}, true)) {
            assertArrayEquals(new long[] {3, 5, 1, 1}, pooled.shape());
            float[] a = pooled.toFloatArray();
            float[] b = mean.toFloatArray();
            for (int i = 0; i < a.length; i++) assertEquals(b[i], a[i], 1e-5);
        }
    }

    @Test
    void channelsLastInputGivesTheContiguousResult() {
        try (Tensor x = Torch.randn(new long[] {2, 3, 6, 5}, DType.FLOAT32, Device.cpu(), new Generator(6));
             Tensor nhwc = x.permute(0, 2, 3, 1).contiguous(); Tensor cl = nhwc.permute(0, 3, 1, 2)) {
            same(F.maxPool2d(x, 3, 2, 1), F.maxPool2d(cl, 3, 2, 1));
            same(F.avgPool2d(x, 2), F.avgPool2d(cl, 2));
            same(F.adaptiveAvgPool2d(x, 1), F.adaptiveAvgPool2d(cl, 1));
        }
    }

    @Test
    void dropout2dZeroesWholeChannelsAndScalesTheRest() {
        double p = 0.4;
        try (Dropout2d d = new Dropout2d(p, new Generator(9)); Tensor x = Torch.ones(new long[] {40, 50, 3, 2}, DType.FLOAT32, Device.cpu());
             Tensor y = d.forward(x)) {
            float[] v = y.toFloatArray();
            int zeroChannels = 0;
            for (int ch = 0; ch < 40 * 50; ch++) {
                float first = v[ch * 6];
                for (int k = 1; k < 6; k++) assertEquals(first, v[ch * 6 + k], "channel " + ch + " is not uniform");
                if (first == 0) zeroChannels++;
                else assertEquals(1 / (1 - p), first, 1e-6);
            }
            // Binomial(2000, 0.4): std ~ 22; allow 5 sigma.
            assertEquals(2000 * p, zeroChannels, 5 * Math.sqrt(2000 * p * (1 - p)));
        }
    }

    @Test
    void dropout1dOnUnbatchedInputZeroesRows() {
        try (Tensor x = Torch.ones(new long[] {64, 5}, DType.FLOAT32, Device.cpu()); Tensor y = F.dropout1d(x, 0.5, true, new Generator(2))) {
            assertArrayEquals(new long[] {64, 5}, y.shape());
            float[] v = y.toFloatArray();
            int zeros = 0;
            for (int r = 0; r < 64; r++) {
                for (int k = 1; k < 5; k++) assertEquals(v[r * 5], v[r * 5 + k]);
                if (v[r * 5] == 0) zeros++;
                else assertEquals(2f, v[r * 5]);
            }
            assertTrue(zeros > 10 && zeros < 54, "zeroed rows: " + zeros);
        }
    }

    @Test
    void channelDropoutIsTheIdentityInEvalAndChecksItsArguments() {
        try (Dropout2d d = new Dropout2d(0.5); Tensor x = Torch.randn(2, 3, 4, 4)) {
            d.eval();
            same(x.alias(), d.forward(x));
        }
        assertThrows(IllegalArgumentException.class, () -> new Dropout1d(1.5));
        try (Tensor x = Torch.randn(2, 3, 4, 4)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> F.dropout1d(x, 0.5, true));
            assertTrue(e.getMessage().contains("dropout1d"), e.getMessage());
        }
    }

    @Test
    void maxPoolIndicesUnpoolBackToTheMaxima() {
        // Positive values: the zeros that unpooling leaves never beat a window's maximum.
        try (Tensor x = Torch.rand(new long[] {1, 2, 4, 4}, DType.FLOAT32, Device.cpu(), new Generator(8));
             var r = new MaxPool2d(2).forwardWithIndices(x);
             Tensor up = F.maxUnpool2d(r.values(), r.indices(), new int[] {2}, null, new int[] {0}, null);
             Tensor again = F.maxPool2d(up, 2)) {
            assertArrayEquals(new long[] {1, 2, 4, 4}, up.shape());
            assertArrayEquals(r.values().toFloatArray(), again.toFloatArray());
        }
    }

    @Test
    void volumeLayersPrintAsPyTorch() {
        assertEquals("MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)", new MaxPool3d(3, 2, 1).toString());
        assertEquals("MaxPool3d(kernel_size=(2, 3, 1), stride=(2, 3, 1), padding=0, dilation=1, ceil_mode=False)",
                new MaxPool3d(new int[] {2, 3, 1}, F.MaxPool.options()).toString());
        assertEquals("AvgPool3d(kernel_size=2, stride=2, padding=0)", new AvgPool3d(2).toString());
        assertEquals("AvgPool3d(kernel_size=(2, 3, 2), stride=1, padding=(1, 0, 1))",
                new AvgPool3d(new int[] {2, 3, 2}, F.AvgPool.options().stride(1).padding(1, 0, 1).divisorOverride(2L)).toString());
        assertEquals("AdaptiveAvgPool3d(output_size=(None, 3, 2))", new AdaptiveAvgPool3d(null, 3L, 2L).toString());
        assertEquals("AdaptiveAvgPool3d(output_size=1)", new AdaptiveAvgPool3d(1).toString());
        assertEquals("AdaptiveMaxPool3d(output_size=(2, 3, 2))", new AdaptiveMaxPool3d(2, 3, 2).toString());
        assertEquals("MaxUnpool3d(kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1))",
                new MaxUnpool3d(new int[] {3}, new int[] {2}, new int[] {1}).toString());
        try (Conv3d conv = new Conv3d(4, 6, 3, Conv3d.options().stride(2).padding(1).bias(false));
             ConvTranspose3d convT = new ConvTranspose3d(4, 6, new int[] {2, 3, 2}, ConvTranspose3d.options().stride(2).outputPadding(1).groups(2))) {
            assertEquals("Conv3d(4, 6, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), bias=False)", conv.toString());
            assertEquals("ConvTranspose3d(4, 6, kernel_size=(2, 3, 2), stride=(2, 2, 2), output_padding=(1, 1, 1), groups=2)",
                    convT.toString());
            assertArrayEquals(new long[] {6, 4, 3, 3, 3}, conv.weight().shape());
            assertArrayEquals(new long[] {4, 3, 2, 3, 2}, convT.weight().shape());
        }
    }

    @Test
    void volumeLayersComputeTheirFunctionalForm() {
        try (Tensor x = Torch.randn(new long[] {2, 4, 5, 6, 4}, DType.FLOAT32, Device.cpu(), new Generator(9))) {
            same(F.maxPool3d(x, new int[] {3}, F.MaxPool.options().stride(2).padding(1)), new MaxPool3d(3, 2, 1).forward(x));
            same(F.avgPool3d(x, 2), new AvgPool3d(2).forward(x));
            same(F.adaptiveAvgPool3d(x, 1), new AdaptiveAvgPool3d(1).forward(x));
            same(F.adaptiveMaxPool3d(x, 2, 3, 2), new AdaptiveMaxPool3d(2, 3, 2).forward(x));
            try (Conv3d conv = new Conv3d(4, 6, 3, Conv3d.options().stride(2).padding(1));
                 ConvTranspose3d convT = new ConvTranspose3d(4, 6, 2, ConvTranspose3d.options().stride(2).groups(2))) {
                same(F.conv3d(x, conv.weight(), F.Conv.options().bias(conv.bias()).stride(2).padding(1)), conv.forward(x));
                same(F.convTranspose3d(x, convT.weight(), F.ConvTranspose.options().bias(convT.bias()).stride(2).groups(2)),
                        convT.forward(x));
            }
        }
    }

    @Test
    void maxPool3dIndicesUnpoolBackToTheMaxima() {
        try (Tensor x = Torch.rand(new long[] {1, 2, 4, 4, 6}, DType.FLOAT32, Device.cpu(), new Generator(8));
             var r = new MaxPool3d(2).forwardWithIndices(x);
             Tensor up = new MaxUnpool3d(2).forward(r.values(), r.indices());
             Tensor again = F.maxPool3d(up, 2)) {
            assertArrayEquals(new long[] {1, 2, 4, 4, 6}, up.shape());
            assertArrayEquals(r.values().toFloatArray(), again.toFloatArray());
        }
    }

    private static void same(Tensor expected, Tensor actual) {
        try (expected; actual) {
            assertArrayEquals(expected.shape(), actual.shape());
            assertArrayEquals(expected.toFloatArray(), actual.toFloatArray());
        }
    }
}
