package org.jtorch.bench;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.nn.F;
import org.jtorch.ops.Reductions.ValuesIndices;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The pooling ops of a ResNet training step, float32 NCHW, forward and backward, in milliseconds (median);
 * {@code jtorch-bench/python/bench_spatial.py} prints the same keys for PyTorch. Run:
 * {@code java --add-modules jdk.incubator.vector -cp jtorch-core/target/classes:jtorch-bench/target/classes
 * org.jtorch.bench.SpatialBench}.
 */
public final class SpatialBench {
    private SpatialBench() {}

    public static void main(String[] args) {
        int reps = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        Generator gen = new Generator(0);
        try (Grad.Mode m = Grad.noGrad()) {
            try (Tensor x = Torch.randn(new long[] {32, 64, 56, 56}, DType.FLOAT32, Device.cpu(), gen)) {
                report("maxpool3x3s2_fwd_32x64x56x56_ms", reps, () -> {
                    try (ValuesIndices r = F.maxPool2dWithIndices(x, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false)) {
                        // values and indices, as PyTorch computes both in training
                    }
                });
                try (ValuesIndices r = F.maxPool2dWithIndices(x, new int[] {3}, new int[] {2}, new int[] {1}, new int[] {1}, false);
                     Tensor g = Torch.randn(r.values().shape(), DType.FLOAT32, Device.cpu(), gen)) {
                    report("maxpool3x3s2_bwd_32x64x56x56_ms", reps, () -> {
                        try (Tensor gi = org.jtorch.ops.Pooling.maxPool2dBackward(g, r.indices(), x.shape())) {
                            // scatter only
                        }
                    });
                }
                report("maxpool2x2s2_fwd_32x64x56x56_ms", reps, () -> {
                    try (ValuesIndices r = F.maxPool2dWithIndices(x, new int[] {2}, null, new int[] {0}, new int[] {1}, false)) {
                        // values and indices
                    }
                });
                report("avgpool2x2s2_fwd_32x64x56x56_ms", reps, () -> {
                    try (Tensor r = F.avgPool2d(x, 2)) {
                        // output only
                    }
                });
                try (Tensor g = Torch.randn(new long[] {32, 64, 28, 28}, DType.FLOAT32, Device.cpu(), gen)) {
                    report("avgpool2x2s2_bwd_32x64x56x56_ms", reps, () -> {
                        try (Tensor gi = org.jtorch.ops.Pooling.avgPool2dBackward(g, x.shape(), new int[] {2}, null, new int[] {0}, false,
                                true, 0)) {
                            // gradient only
                        }
                    });
                }
            }
            try (Tensor x = Torch.randn(new long[] {128, 64, 8, 8}, DType.FLOAT32, Device.cpu(), gen);
                 Tensor g = Torch.randn(new long[] {128, 64, 1, 1}, DType.FLOAT32, Device.cpu(), gen)) {
                report("gap_fwd_128x64x8x8_ms", reps * 10, () -> {
                    try (Tensor r = F.adaptiveAvgPool2d(x, 1)) {
                        // output only
                    }
                });
                report("gap_bwd_128x64x8x8_ms", reps * 10, () -> {
                    try (Tensor gi = org.jtorch.ops.Pooling.adaptiveAvgPool2dBackward(g, x.shape())) {
                        // gradient only
                    }
                });
            }
        }
    }

    private static void report(String key, int reps, Runnable body) {
        double s = Timing.median(Math.max(5, reps / 2), reps, body);
        System.out.printf("%s %.4f%n", key, s * 1e3);
    }
}
