package org.jtorch.nn;

import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.op.RandomOps;
import org.jtorch.op.SpecialFunctions;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Generator;

/**
 * In-place parameter initialisations, as {@code torch.nn.init}: each fills its tensor without
 * recording a gradient and returns it. The distributions and their parameters (fans, gains, bounds)
 * are PyTorch's; the random streams are jtorch's own (Philox), so values differ from PyTorch's while
 * following the same law. Every function has an overload taking a {@link Generator}; the others use
 * the default generator.
 */
public final class Init {
    private Init() {}

    /** How {@link #kaimingUniform_} picks the fan: preserving the forward pass's variance, or the backward pass's. */
    public enum FanMode { FAN_IN, FAN_OUT }

    // ------------------------------------------------------------------ basic fills

    public static Tensor uniform_(Tensor t, double low, double high) {
        return uniform_(t, low, high, Generator.defaultGenerator());
    }

    /** Uniform in {@code [low, high)}. */
    public static Tensor uniform_(Tensor t, double low, double high, Generator gen) {
        Arguments.nonNull("uniform_", "t", t);
        Arguments.nonNull("uniform_", "gen", gen);
        requireFloating("uniform_", t);
        try (Grad.Mode g = Grad.noGrad()) {
            return Dispatcher.callInPlace(RandomOps.UNIFORM, new Tensor[] {t}, low, high, gen.id());
        }
    }

    public static Tensor normal_(Tensor t, double mean, double std) {
        return normal_(t, mean, std, Generator.defaultGenerator());
    }

    /** Normal(mean, std). */
    public static Tensor normal_(Tensor t, double mean, double std, Generator gen) {
        Arguments.nonNull("normal_", "t", t);
        Arguments.nonNull("normal_", "gen", gen);
        requireFloating("normal_", t);
        if (std < 0) throw new IllegalArgumentException("normal_: expects std >= 0.0, but found std " + std);
        try (Grad.Mode g = Grad.noGrad()) {
            return Dispatcher.callInPlace(RandomOps.NORMAL, new Tensor[] {t}, mean, std, gen.id());
        }
    }

    public static Tensor constant_(Tensor t, double value) {
        Arguments.nonNull("constant_", "t", t);
        t.checkWritable("constant_");
        try (Grad.Mode g = Grad.noGrad()) {
            return t.fill_(value);
        }
    }

    public static Tensor zeros_(Tensor t) {
        Arguments.nonNull("zeros_", "t", t);
        return constant_(t, 0);
    }

    public static Tensor ones_(Tensor t) {
        Arguments.nonNull("ones_", "t", t);
        return constant_(t, 1);
    }

    public static Tensor truncNormal_(Tensor t, double mean, double std, double a, double b) {
        return truncNormal_(t, mean, std, a, b, Generator.defaultGenerator());
    }

    /**
     * Normal(mean, std) truncated to {@code [a, b]} (absolute bounds, as PyTorch's {@code trunc_normal_}),
     * by the inverse CDF of uniform samples in {@code [cdf(a), cdf(b)]}.
     */
    public static Tensor truncNormal_(Tensor t, double mean, double std, double a, double b, Generator gen) {
        Arguments.nonNull("truncNormal_", "t", t);
        Arguments.nonNull("truncNormal_", "gen", gen);
        requireFloating("truncNormal_", t);
        t.checkNoInternalOverlap("truncNormal_");
        if (!(a <= b)) throw new IllegalArgumentException("truncNormal_: expected a <= b, got a=" + a + ", b=" + b);
        double lo = normCdf((a - mean) / std);
        double hi = normCdf((b - mean) / std);
        double[] u;
        try (Tensor r = Torch.rand(t.shape(), DType.FLOAT64, t.device(), gen)) {
            u = r.toDoubleArray();
        }
        for (int i = 0; i < u.length; i++) {
            double p = 2 * (lo + (hi - lo) * u[i]) - 1;
            double v = erfinv(p) * std * Math.sqrt(2) + mean;
            u[i] = Math.min(Math.max(v, a), b);
        }
        return copyFrom("truncNormal_", t, u);
    }

    private static double normCdf(double x) {
        return (1 + SpecialFunctions.erf(x / Math.sqrt(2))) / 2;
    }

    /** Inverse error function: Giles' single-precision approximation refined by Newton steps on erf. */
    static double erfinv(double y) {
        if (y <= -1) return Double.NEGATIVE_INFINITY;
        if (y >= 1) return Double.POSITIVE_INFINITY;
        double w = -Math.log((1 - y) * (1 + y));
        double x;
        if (w < 5) {
            w -= 2.5;
            double p = 2.81022636e-08;
            p = 3.43273939e-07 + p * w;
            p = -3.5233877e-06 + p * w;
            p = -4.39150654e-06 + p * w;
            p = 0.00021858087 + p * w;
            p = -0.00125372503 + p * w;
            p = -0.00417768164 + p * w;
            p = 0.246640727 + p * w;
            p = 1.50140941 + p * w;
            x = p * y;
        } else {
            w = Math.sqrt(w) - 3;
            double p = -0.000200214257;
            p = 0.000100950558 + p * w;
            p = 0.00134934322 + p * w;
            p = -0.00367342844 + p * w;
            p = 0.00573950773 + p * w;
            p = -0.0076224613 + p * w;
            p = 0.00943887047 + p * w;
            p = 1.00167406 + p * w;
            p = 2.83297682 + p * w;
            x = p * y;
        }
        for (int i = 0; i < 3; i++) {
            double err = SpecialFunctions.erf(x) - y;
            double d = 2 / Math.sqrt(Math.PI) * Math.exp(-x * x);
            if (d == 0) break;
            x -= err / d;
        }
        return x;
    }

    // ------------------------------------------------------------------ fan-based schemes

    /**
     * {@code [fan_in, fan_out]} of a weight: {@code size(1) * receptive} and {@code size(0) * receptive},
     * where receptive is the product of the dimensions after the second.
     */
    public static long[] calculateFanInAndFanOut(Tensor t) {
        Arguments.nonNull("calculateFanInAndFanOut", "t", t);
        if (t.dim() < 2) {
            throw new IllegalArgumentException("calculateFanInAndFanOut: Fan in and fan out can not be computed for tensor with fewer than 2"
                    + " dimensions (shape " + org.jtorch.op.Shapes.format(t.shape()) + ")");
        }
        long receptive = 1;
        for (int d = 2; d < t.dim(); d++) receptive *= t.size(d);
        return new long[] {t.size(1) * receptive, t.size(0) * receptive};
    }

    /**
     * The recommended gain for a nonlinearity, as {@code torch.nn.init.calculate_gain}: 1 for linear,
     * conv and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu
     * ({@code param} is the slope, 0.01 when null), 3/4 for selu.
     */
    public static double calculateGain(String nonlinearity, Double param) {
        Arguments.nonNull("calculateGain", "nonlinearity", nonlinearity);
        return switch (nonlinearity) {
            case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid" -> 1.0;
            case "tanh" -> 5.0 / 3;
            case "relu" -> Math.sqrt(2.0);
            case "leaky_relu" -> {
                double slope = param == null ? 0.01 : param;
                yield Math.sqrt(2.0 / (1 + slope * slope));
            }
            case "selu" -> 3.0 / 4;
            default -> throw new IllegalArgumentException("calculateGain: Unsupported nonlinearity " + nonlinearity);
        };
    }

    public static double calculateGain(String nonlinearity) {
        return calculateGain(nonlinearity, null);
    }

    public static Tensor xavierUniform_(Tensor t, double gain) {
        return xavierUniform_(t, gain, Generator.defaultGenerator());
    }

    /** Uniform in {@code ±gain * sqrt(6 / (fan_in + fan_out))} (Glorot and Bengio, 2010). */
    public static Tensor xavierUniform_(Tensor t, double gain, Generator gen) {
        Arguments.nonNull("xavierUniform_", "t", t);
        Arguments.nonNull("xavierUniform_", "gen", gen);
        long[] fans = calculateFanInAndFanOut(t);
        double std = gain * Math.sqrt(2.0 / (fans[0] + fans[1]));
        double bound = Math.sqrt(3.0) * std;
        return uniform_(t, -bound, bound, gen);
    }

    public static Tensor xavierNormal_(Tensor t, double gain) {
        return xavierNormal_(t, gain, Generator.defaultGenerator());
    }

    /** Normal(0, {@code gain * sqrt(2 / (fan_in + fan_out))}). */
    public static Tensor xavierNormal_(Tensor t, double gain, Generator gen) {
        Arguments.nonNull("xavierNormal_", "t", t);
        Arguments.nonNull("xavierNormal_", "gen", gen);
        long[] fans = calculateFanInAndFanOut(t);
        return normal_(t, 0, gain * Math.sqrt(2.0 / (fans[0] + fans[1])), gen);
    }

    public static Tensor kaimingUniform_(Tensor t, double a, FanMode mode, String nonlinearity) {
        return kaimingUniform_(t, a, mode, nonlinearity, Generator.defaultGenerator());
    }

    /**
     * Uniform in {@code ±gain * sqrt(3 / fan)} with {@code gain = calculateGain(nonlinearity, a)} (He et
     * al., 2015); PyTorch's defaults are {@code a = 0, FAN_IN, "leaky_relu"}. Empty tensors are left as they are.
     */
    public static Tensor kaimingUniform_(Tensor t, double a, FanMode mode, String nonlinearity, Generator gen) {
        Arguments.nonNull("kaimingUniform_", "t", t);
        Arguments.nonNull("kaimingUniform_", "mode", mode);
        Arguments.nonNull("kaimingUniform_", "nonlinearity", nonlinearity);
        Arguments.nonNull("kaimingUniform_", "gen", gen);
        if (t.numel() == 0) return t;
        double bound = Math.sqrt(3.0) * kaimingStd(t, a, mode, nonlinearity);
        return uniform_(t, -bound, bound, gen);
    }

    public static Tensor kaimingNormal_(Tensor t, double a, FanMode mode, String nonlinearity) {
        return kaimingNormal_(t, a, mode, nonlinearity, Generator.defaultGenerator());
    }

    /** Normal(0, {@code gain / sqrt(fan)}). */
    public static Tensor kaimingNormal_(Tensor t, double a, FanMode mode, String nonlinearity, Generator gen) {
        Arguments.nonNull("kaimingNormal_", "t", t);
        Arguments.nonNull("kaimingNormal_", "mode", mode);
        Arguments.nonNull("kaimingNormal_", "nonlinearity", nonlinearity);
        Arguments.nonNull("kaimingNormal_", "gen", gen);
        if (t.numel() == 0) return t;
        return normal_(t, 0, kaimingStd(t, a, mode, nonlinearity), gen);
    }

    private static double kaimingStd(Tensor t, double a, FanMode mode, String nonlinearity) {
        long[] fans = calculateFanInAndFanOut(t);
        long fan = mode == FanMode.FAN_IN ? fans[0] : fans[1];
        return calculateGain(nonlinearity, a) / Math.sqrt(fan);
    }

    // ------------------------------------------------------------------ orthogonal

    public static Tensor orthogonal_(Tensor t, double gain) {
        return orthogonal_(t, gain, Generator.defaultGenerator());
    }

    /**
     * A (semi-)orthogonal matrix times {@code gain} (Saxe et al., 2013): the Q factor of a standard
     * normal matrix of shape {@code [size(0), numel / size(0)]} (transposed when it is wide), with the
     * signs that make R's diagonal positive, as PyTorch. QR is modified Gram-Schmidt, run twice for
     * orthogonality to double precision, on the CPU in double.
     */
    public static Tensor orthogonal_(Tensor t, double gain, Generator gen) {
        Arguments.nonNull("orthogonal_", "t", t);
        Arguments.nonNull("orthogonal_", "gen", gen);
        t.checkWritable("orthogonal_");
        if (t.dim() < 2) {
            throw new IllegalArgumentException("orthogonal_: Only tensors with 2 or more dimensions are supported, got shape "
                    + org.jtorch.op.Shapes.format(t.shape()));
        }
        requireFloating("orthogonal_", t);
        t.checkNoInternalOverlap("orthogonal_");
        if (t.numel() == 0) return t;
        int rows = Math.toIntExact(t.size(0));
        int cols = Math.toIntExact(t.numel() / rows);
        double[] a;
        try (Tensor r = Torch.randn(new long[] {rows, cols}, DType.FLOAT64, org.jtorch.types.Device.cpu(), gen)) {
            a = r.toDoubleArray();
        }
        boolean wide = rows < cols;
        int m = wide ? cols : rows; // tall matrix m x n with m >= n
        int n = wide ? rows : cols;
        double[][] col = new double[n][m];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                if (wide) col[i][j] = a[i * cols + j];
                else col[j][i] = a[i * cols + j];
            }
        }
        for (int j = 0; j < n; j++) {
            for (int pass = 0; pass < 2; pass++) {
                for (int p = 0; p < j; p++) {
                    double dot = 0;
                    for (int i = 0; i < m; i++) dot += col[p][i] * col[j][i];
                    for (int i = 0; i < m; i++) col[j][i] -= dot * col[p][i];
                }
            }
            double norm = 0;
            for (int i = 0; i < m; i++) norm += col[j][i] * col[j][i];
            norm = Math.sqrt(norm);
            for (int i = 0; i < m; i++) col[j][i] /= norm;
        }
        double[] q = new double[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) q[i * cols + j] = gain * (wide ? col[i][j] : col[j][i]);
        }
        return copyFrom("orthogonal_", t, q);
    }

    // ------------------------------------------------------------------ helpers

    private static Tensor copyFrom(String op, Tensor t, double[] values) {
        try (Grad.Mode g = Grad.noGrad(); Tensor src = Torch.tensor(values, t.shape())) {
            t.copy_(src);
        }
        return t;
    }

    private static void requireFloating(String op, Tensor t) {
        t.checkWritable(op);
        if (!t.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": expected a floating point tensor, got " + t.dtype());
        }
    }

}
