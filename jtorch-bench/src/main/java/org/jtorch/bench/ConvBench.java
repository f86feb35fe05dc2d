package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;

/**
 * Convolution measurements (float32, NCHW): the 128x64x32x32 3x3 pad-1 convolution forward and
 * forward+backward (input, weight and bias gradients), and the ResNet-20 (CIFAR) shapes at batch 128.
 * {@code jtorch-bench/python/bench_conv.py} makes the same measurements with PyTorch.
 */
final class ConvBench {
    private ConvBench() {}

    /** One convolution shape: batch, in/out channels, square size, 3x3 kernel with padding 1, stride. */
    private record Shape(String name, int n, int cin, int cout, int size, int k, int stride, int pad) {}

    private static final Shape[] SHAPES = {
        new Shape("conv2d_128x64x32x32_k3", 128, 64, 64, 32, 3, 1, 1),
        new Shape("resnet20_16c_32px", 128, 16, 16, 32, 3, 1, 1),
        new Shape("resnet20_32c_16px", 128, 32, 32, 16, 3, 1, 1),
        new Shape("resnet20_64c_8px", 128, 64, 64, 8, 3, 1, 1),
        new Shape("resnet20_16to32c_s2", 128, 16, 32, 32, 3, 2, 1),
        new Shape("resnet20_32to64c_s2", 128, 32, 64, 16, 3, 2, 1),
    };

    static Map<String, Double> run(boolean quick) {
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 5 : 11;
        for (Shape s : SHAPES) {
            boolean main = s.name().startsWith("conv2d_");
            try (Tensor x = Torch.randn(new long[] {s.n(), s.cin(), s.size(), s.size()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(1));
                 Tensor w = Torch.randn(new long[] {s.cout(), s.cin(), s.k(), s.k()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(2));
                 Tensor b = Torch.randn(new long[] {s.cout()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(3))) {
                int[] st = {s.stride()}, pd = {s.pad()}, dl = {1};
                // The small shapes warm up for 30 calls: a kernel path a shape is first to use (the stride-2
                // col2im, say) is still being compiled by C2 after 6-10.
                double fwd = Timing.median(main ? 5 : 30, reps, () -> F.conv2d(x, w, b, st, pd, dl, 1).close());
                r.put(s.name() + "_fwd_ms", fwd * 1e3);
                x.requiresGrad_(true);
                w.requiresGrad_(true);
                b.requiresGrad_(true);
                Runnable step = () -> {
                    try (Tensor y = F.conv2d(x, w, b, st, pd, dl, 1); Tensor g = Torch.onesLike(y)) {
                        y.backward(g);
                    }
                    x.grad().close();
                    x.setGrad(null);
                    w.grad().close();
                    w.setGrad(null);
                    b.grad().close();
                    b.setGrad(null);
                };
                double fb = Timing.median(main ? 3 : 30, reps, step);
                r.put(s.name() + "_fwd_bwd_ms", fb * 1e3);
            }
        }
        return r;
    }
}
