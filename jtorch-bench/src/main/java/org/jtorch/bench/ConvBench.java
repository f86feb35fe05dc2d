package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.nn.F;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Convolution measurements (float32, NCHW): the 128x64x32x32 3x3 pad-1 convolution forward and
 * forward+backward (input, weight and bias gradients), the ResNet-20 (CIFAR) shapes at batch 128, and the
 * ResNet-50 (ImageNet, 224 px) layer shapes at batch 8: the 7x7 stride-2 stem, 1x1 reductions and expansions,
 * 3x3 at 56/28/14/7 px, the stride-2 3x3s (56, 28 and 14 px) and the stride-2 1x1 downsampling shortcut; ResNet-18's
 * last two stages at 64 px (batch 32: 3x3 at 4x4 and 2x2, and the stride-2 3x3s into them). Each
 * time comes with its rate as a fraction of the FMA peak ({@code *_of_peak}, {@link PeakBench}; forward+backward
 * counts three convolutions' FLOPs).
 * {@code jtorch-bench/python/bench_conv.py} makes the same measurements with PyTorch.
 */
final class ConvBench {
    private ConvBench() {}

    /** One convolution shape: batch, in/out channels, square input size, square kernel, stride, padding. */
    private record Shape(String name, int n, int cin, int cout, int size, int k, int stride, int pad) {
        int outSize() {
            return (size + 2 * pad - k) / stride + 1;
        }

        /** Multiply-adds times two of the forward. */
        double flops() {
            return 2.0 * n * cout * cin * k * k * outSize() * outSize();
        }
    }

    private static final Shape[] SHAPES = {
        new Shape("conv2d_128x64x32x32_k3", 128, 64, 64, 32, 3, 1, 1),
        new Shape("resnet20_16c_32px", 128, 16, 16, 32, 3, 1, 1),
        new Shape("resnet20_32c_16px", 128, 32, 32, 16, 3, 1, 1),
        new Shape("resnet20_64c_8px", 128, 64, 64, 8, 3, 1, 1),
        new Shape("resnet20_16to32c_s2", 128, 16, 32, 32, 3, 2, 1),
        new Shape("resnet20_32to64c_s2", 128, 32, 64, 16, 3, 2, 1),
        new Shape("resnet50_stem_7x7s2", 8, 3, 64, 224, 7, 2, 3),
        new Shape("resnet50_1x1_256to64_56px", 8, 256, 64, 56, 1, 1, 0),
        new Shape("resnet50_1x1_64to256_56px", 8, 64, 256, 56, 1, 1, 0),
        new Shape("resnet50_1x1_1024to256_14px", 8, 1024, 256, 14, 1, 1, 0),
        new Shape("resnet50_1x1_2048to512_7px", 8, 2048, 512, 7, 1, 1, 0),
        new Shape("resnet50_1x1s2_256to512_56px", 8, 256, 512, 56, 1, 2, 0),
        new Shape("resnet50_3x3_64c_56px", 8, 64, 64, 56, 3, 1, 1),
        new Shape("resnet50_3x3_128c_28px", 8, 128, 128, 28, 3, 1, 1),
        new Shape("resnet50_3x3_256c_14px", 8, 256, 256, 14, 3, 1, 1),
        new Shape("resnet50_3x3_512c_7px", 8, 512, 512, 7, 3, 1, 1),
        new Shape("resnet50_3x3s2_128c_56px", 8, 128, 128, 56, 3, 2, 1),
        new Shape("resnet50_3x3s2_256c_28px", 8, 256, 256, 28, 3, 2, 1),
        new Shape("resnet50_3x3s2_512c_14px", 8, 512, 512, 14, 3, 2, 1),
        new Shape("resnet18_64px_stem_7x7s2", 32, 3, 64, 64, 7, 2, 3),
        new Shape("resnet18_64px_3x3_64c_16px", 32, 64, 64, 16, 3, 1, 1),
        new Shape("resnet18_64px_3x3_128c_8px", 32, 128, 128, 8, 3, 1, 1),
        new Shape("resnet18_64px_3x3_256c_4px", 32, 256, 256, 4, 3, 1, 1),
        new Shape("resnet18_64px_3x3_512c_2px", 32, 512, 512, 2, 3, 1, 1),
        new Shape("resnet18_64px_3x3s2_128to256_8px", 32, 128, 256, 8, 3, 2, 1),
        new Shape("resnet18_64px_3x3s2_256to512_4px", 32, 256, 512, 4, 3, 2, 1),
    };

    /**
     * The shapes whose name contains {@code only} (all when null). With {@code cpuTime} (meant for
     * {@code JTORCH_NUM_THREADS=1}), times in the calling thread's CPU time, and the peak is the one-thread peak
     * measured the same way; {@code bench_conv.py --cputime} does the same on one thread.
     */
    static Map<String, Double> run(boolean quick, boolean cpuTime, String only) {
        PeakBench.Timer timing = cpuTime ? Timing::medianCpu : Timing::median;
        double peak = PeakBench.get(quick, cpuTime).fmaAllCoresGflops() * 1e9;
        Map<String, Double> r = new LinkedHashMap<>();
        int reps = quick ? 5 : 11;
        for (Shape s : SHAPES) {
            if (only != null && !s.name().contains(only)) continue;
            boolean main = s.name().startsWith("conv2d_");
            try (Tensor x = Torch.randn(new long[] {s.n(), s.cin(), s.size(), s.size()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(1));
                 Tensor w = Torch.randn(new long[] {s.cout(), s.cin(), s.k(), s.k()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(2));
                 Tensor b = Torch.randn(new long[] {s.cout()}, DType.FLOAT32, Device.cpu(), Torch.manualSeed(3))) {
                int[] st = {s.stride()}, pd = {s.pad()}, dl = {1};
                // The small shapes warm up for 30 calls: a kernel path a shape is first to use (the stride-2
                // col2im, say) is still being compiled by C2 after 6-10.
                double fwd = timing.median(main ? 5 : 30, reps, () -> F.conv2d(x, w, b, st, pd, dl, 1).close());
                r.put(s.name() + "_fwd_ms", fwd * 1e3);
                r.put(s.name() + "_fwd_of_peak", s.flops() / fwd / peak);
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
                double fb = timing.median(main ? 3 : 30, reps, step);
                r.put(s.name() + "_fwd_bwd_ms", fb * 1e3);
                r.put(s.name() + "_fwd_bwd_of_peak", 3 * s.flops() / fb / peak);
            }
        }
        return r;
    }
}
