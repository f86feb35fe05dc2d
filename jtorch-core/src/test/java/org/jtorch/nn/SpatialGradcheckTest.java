package org.jtorch.nn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;
import org.junit.jupiter.api.Test;

/**
 * Finite-difference checks (float64, PyTorch's gradcheck tolerances) of the spatial ops' gradients: pooling
 * kernels' own backward formulas (and their backwards, for double backward) and the composites' primitives.
 * Random normal inputs have no ties, so max pooling is differentiable at them.
 */
class SpatialGradcheckTest {
    private static final Generator GEN = new Generator(11);

    private static Tensor rand(long... shape) {
        return Torch.randn(shape, DType.FLOAT64, Device.cpu(), GEN).requiresGrad_(true);
    }

    private static void check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try {
            assertTrue(Gradcheck.check(fn, inputs));
        } finally {
            for (Tensor t : inputs) t.close();
        }
    }

    /**
     * {@code w -> d sum(fn(x) * w) / dx} at a fixed {@code x}, built with createGraph: checking its gradient
     * with respect to {@code w} checks the double backward (the backward formula's own backward).
     */
    private static Function<Tensor[], Tensor> inputGradient(Function<Tensor, Tensor> fn, Tensor x) {
        return w -> {
            Tensor y = fn.apply(x);
            return Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {w[0]}, true, true, false)[0];
        };
    }

    @Test
    void maxPool2d() {
        check(x -> F.maxPool2d(x[0], new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false), rand(2, 2, 7, 6));
        check(x -> F.maxPool2d(x[0], new int[] {2, 3}, new int[] {1, 2}, new int[] {1, 0}, new int[] {2, 1}, true), rand(1, 2, 6, 7));
        check(x -> F.maxPool2d(x[0], 2), rand(3, 4, 4));
    }

    @Test
    void maxPool1d() {
        check(x -> F.maxPool1d(x[0], 3, 2, 1, 1, true), rand(2, 3, 9));
    }

    @Test
    void avgPool2d() {
        check(x -> F.avgPool2d(x[0], new int[] {3}, new int[] {2}, new int[] {1}, true, false, 0), rand(2, 2, 7, 6));
        check(x -> F.avgPool2d(x[0], new int[] {2, 3}, new int[] {1, 2}, new int[] {1, 1}, false, true, 5), rand(1, 2, 5, 6));
    }

    @Test
    void avgPool1d() {
        check(x -> F.avgPool1d(x[0], 3, 2, 1, true, false), rand(2, 9));
    }

    @Test
    void adaptivePooling() {
        check(x -> F.adaptiveAvgPool2d(x[0], 3, 4), rand(2, 2, 7, 6));
        check(x -> F.adaptiveAvgPool2d(x[0], 1), rand(2, 3, 5, 5));
        check(x -> F.adaptiveAvgPool1d(x[0], 4), rand(2, 3, 7));
        check(x -> F.adaptiveMaxPool2d(x[0], 3, 2), rand(2, 2, 7, 6));
        check(x -> F.adaptiveMaxPool1d(x[0], 3), rand(3, 8));
    }

    @Test
    void maxUnpool2d() {
        try (Tensor x = rand(1, 2, 6, 6); var r = F.maxPool2dWithIndices(x, new int[] {2}, null, new int[] {0}, new int[] {1}, false)) {
            Tensor idx = r.indices();
            check(v -> F.maxUnpool2d(v[0], idx, new int[] {2}, null, new int[] {0}, null), rand(1, 2, 3, 3));
        }
    }

    @Test
    void poolingBackwardsHaveBackwards() {
        try (Tensor x = rand(1, 2, 5, 5)) {
            check(inputGradient(v -> F.avgPool2d(v, new int[] {3}, new int[] {2}, new int[] {1}, false, true, 0), x), rand(1, 2, 3, 3));
            check(inputGradient(v -> F.adaptiveAvgPool2d(v, 2, 3), x), rand(1, 2, 2, 3));
            check(inputGradient(v -> F.maxPool2d(v, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false), x),
                    rand(1, 2, 3, 3));
            check(inputGradient(v -> F.adaptiveMaxPool2d(v, 2, 2), x), rand(1, 2, 2, 2));
        }
    }

    @Test
    void padding() {
        check(x -> F.pad(x[0], new long[] {1, 2, -1, 1}, "constant", 0.5), rand(2, 3, 4));
        check(x -> F.pad(x[0], new long[] {2, 1, 1, 3}, "reflect"), rand(1, 2, 4, 5));
        check(x -> F.pad(x[0], new long[] {3, 1}, "replicate"), rand(2, 4));
        check(x -> F.pad(x[0], new long[] {2, -1, 1, 2}, "circular"), rand(1, 2, 3, 4));
    }

    @Test
    void interpolation() {
        check(x -> F.interpolate(x[0], new long[] {5, 7}, "bilinear", false), rand(1, 2, 3, 4));
        check(x -> F.interpolate(x[0], new double[] {1.5, 2.5}, "bilinear", true), rand(1, 2, 3, 4));
        check(x -> F.interpolate(x[0], new long[] {7}, "linear", null), rand(2, 2, 4));
        check(x -> F.interpolate(x[0], new double[] {1.7}, "nearest", null), rand(1, 2, 5));
        check(x -> F.interpolate(x[0], new long[] {3, 5}, "nearest-exact", null), rand(1, 1, 4, 4));
        check(x -> F.interpolate(x[0], new long[] {5, 7}, "bicubic", false), rand(1, 2, 3, 4));
        check(x -> F.interpolate(x[0], new long[] {2, 3}, "bicubic", true), rand(1, 2, 5, 4));
        check(x -> F.interpolate(x[0], F.Interpolate.options().size(3, 2).mode("bilinear").antialias(true)), rand(1, 2, 7, 5));
        check(x -> F.interpolate(x[0], F.Interpolate.options().scaleFactor(0.5, 1.5).mode("bicubic").alignCorners(true).antialias(true)),
                rand(1, 2, 8, 3));
    }

    @Test
    void pixelShuffle() {
        check(x -> F.pixelShuffle(x[0], 2), rand(1, 8, 2, 3));
        check(x -> F.pixelUnshuffle(x[0], 2), rand(2, 4, 6));
    }

    @Test
    void channelDropout() {
        check(x -> F.dropout2d(x[0], 0.4, true, new Generator(3)), rand(2, 4, 3, 3));
        check(x -> F.dropout1d(x[0], 0.4, true, new Generator(3)), rand(4, 5));
    }

    @Test
    void conv3dAndConvTranspose1dFromTheirOptionsFormsDifferentiateAsComposites() {
        check(t -> F.conv3d(t[0], t[1], F.Conv.options().bias(t[2]).stride(2, 1, 1).padding(1, 0, 1).dilation(1, 1, 2)),
                rand(1, 2, 4, 3, 5), rand(3, 2, 2, 2, 2), rand(3));
        check(t -> F.conv3d(t[0], t[1], F.Conv.options().padding("same").groups(2)), rand(1, 2, 3, 3, 3), rand(2, 1, 2, 3, 2));
        check(t -> F.convTranspose1d(t[0], t[1], F.ConvTranspose.options().bias(t[2]).stride(2).padding(1).outputPadding(1)),
                rand(1, 2, 4), rand(2, 3, 3), rand(3));
    }

    @Test
    void convTranspose3dDifferentiatesInInputWeightAndBias() {
        check(t -> F.convTranspose3d(t[0], t[1], F.ConvTranspose.options().bias(t[2]).stride(2, 1, 2).padding(1, 0, 1)
                .outputPadding(1, 0, 0).dilation(1, 2, 1)), rand(1, 2, 3, 2, 3), rand(2, 3, 2, 2, 3), rand(3));
        check(t -> F.convTranspose3d(t[0], t[1], F.ConvTranspose.options().groups(2).stride(3)), rand(2, 2, 2, 2), rand(2, 1, 2, 1, 2));
    }

    @Test
    void pooling3d() {
        check(x -> F.maxPool3d(x[0], new int[] {3, 2, 3}, F.MaxPool.options().stride(2, 1, 2).padding(1, 1, 0).dilation(1, 2, 1)
                .ceilMode(true)), rand(1, 2, 5, 5, 6));
        check(x -> F.avgPool3d(x[0], new int[] {3}, F.AvgPool.options().stride(2).padding(1).ceilMode(true).countIncludePad(false)),
                rand(1, 2, 5, 4, 6));
        check(x -> F.avgPool3d(x[0], new int[] {2, 3, 2}, F.AvgPool.options().padding(1, 1, 0).divisorOverride(5L)), rand(2, 3, 4, 3));
        check(x -> F.adaptiveAvgPool3d(x[0], 2, 3, 2), rand(1, 2, 5, 7, 4));
        check(x -> F.adaptiveMaxPool3d(x[0], 3, 2, 2), rand(2, 4, 5, 3));
        try (Tensor x = rand(1, 2, 4, 4, 4); var r = F.maxPool3dWithIndices(x, new int[] {2}, F.MaxPool.options())) {
            Tensor idx = r.indices();
            check(v -> F.maxUnpool3d(v[0], idx, new int[] {2}, null, new int[] {0}, null), rand(1, 2, 2, 2, 2));
        }
    }

    @Test
    void pooling3dBackwardsHaveBackwards() {
        try (Tensor x = rand(1, 2, 4, 5, 4)) {
            check(inputGradient(v -> F.avgPool3d(v, new int[] {3}, F.AvgPool.options().stride(2).padding(1)), x), rand(1, 2, 2, 3, 2));
            check(inputGradient(v -> F.maxPool3d(v, 2), x), rand(1, 2, 2, 2, 2));
            check(inputGradient(v -> F.adaptiveAvgPool3d(v, 2), x), rand(1, 2, 2, 2, 2));
        }
    }
}
