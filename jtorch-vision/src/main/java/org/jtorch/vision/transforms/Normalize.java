package org.jtorch.vision.transforms;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;

/**
 * {@code torchvision.transforms.Normalize}: {@code output[c] = (input[c] - mean[c]) / std[c]} for a
 * float tensor image {@code [..., C, H, W]}; mean and std are first converted to the image's dtype,
 * as torchvision does. One value applies to every channel.
 */
public final class Normalize implements Transform {
    private final double[] mean;
    private final double[] std;

    public Normalize(double[] mean, double[] std) {
        if (mean.length == 0 || std.length == 0) throw new IllegalArgumentException("Normalize: mean and std must not be empty");
        for (double s : std) {
            if (s == 0) throw new IllegalArgumentException("Normalize: std " + Arrays.toString(std) + " has a zero, leading to division by zero");
        }
        this.mean = mean.clone();
        this.std = std.clone();
    }

    @Override
    public Tensor apply(Tensor img) {
        ImageDims.requireTensorImage("Normalize", img);
        if (!img.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("Normalize: input tensor should be a float tensor, got " + img.dtype());
        }
        ImageDims.requireImage("Normalize", img, 3);
        long c = img.size(img.dim() - 3);
        try (Tensor m = channels("mean", mean, c, img); Tensor s = channels("std", std, c, img); Tensor centred = img.sub(m)) {
            return centred.div(s);
        }
    }

    private static Tensor channels(String what, double[] v, long c, Tensor img) {
        if (v.length != 1 && v.length != c) {
            throw new IllegalArgumentException("Normalize: " + what + " has " + v.length + " values for an image of " + c + " channels");
        }
        return Torch.tensor(v, img.dtype(), v.length, 1, 1);
    }

    @Override
    public String toString() {
        return "Normalize(mean=" + Arrays.toString(mean) + ", std=" + Arrays.toString(std) + ")";
    }
}
