package org.jtorch.nn;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.types.Arguments;

/**
 * Upsampling by {@link F#interpolate} with a fixed size or scale factor, as {@code torch.nn.Upsample}: modes
 * {@code nearest} (default), {@code nearest-exact}, {@code linear}, {@code bilinear}, {@code trilinear};
 * {@code alignCorners} may be null (false).
 */
public class Upsample extends Module {
    private final long[] size;
    private final double[] scaleFactor;
    private final String mode;
    private final Boolean alignCorners;

    private Upsample(long[] size, double[] scaleFactor, String mode, Boolean alignCorners) {
        this.size = size;
        this.scaleFactor = scaleFactor;
        this.mode = mode;
        this.alignCorners = alignCorners;
    }

    /** Nearest upsampling by {@code scaleFactor} in every spatial dimension. */
    public static Upsample scale(double scaleFactor) {
        return new Upsample(null, new double[] {scaleFactor}, "nearest", null);
    }

    public static Upsample scale(double[] scaleFactor, String mode, Boolean alignCorners) {
        Arguments.nonNull("Upsample.scale", "scaleFactor", scaleFactor);
        Arguments.nonNull("Upsample.scale", "mode", mode);
        return new Upsample(null, scaleFactor.clone(), mode, alignCorners);
    }

    public static Upsample size(long[] size, String mode, Boolean alignCorners) {
        Arguments.nonNull("Upsample.size", "size", size);
        Arguments.nonNull("Upsample.size", "mode", mode);
        return new Upsample(size.clone(), null, mode, alignCorners);
    }

    @Override
    public Tensor forward(Tensor input) {
        return F.interpolate(input, size, scaleFactor, mode, alignCorners, false);
    }

    @Override
    protected String extraRepr() {
        String info;
        if (scaleFactor != null) {
            info = "scale_factor=" + (scaleFactor.length == 1 ? String.valueOf(scaleFactor[0])
                    : "(" + String.join(", ", Arrays.stream(scaleFactor).mapToObj(Double::toString).toList()) + ")");
        } else {
            info = "size=" + SpatialRepr.of(size);
        }
        return info + ", mode=" + mode;
    }
}
