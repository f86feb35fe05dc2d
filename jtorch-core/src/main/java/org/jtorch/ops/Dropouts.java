package org.jtorch.ops;

import java.util.Arrays;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.OpDef;
import org.jtorch.op.RandomOps;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * The dropout family's front ends ({@link RandomOps#DROPOUT}, {@link RandomOps#FEATURE_DROPOUT}, {@link
 * RandomOps#ALPHA_DROPOUT}, {@link RandomOps#FEATURE_ALPHA_DROPOUT}) and {@code F}'s channel dropouts over them. The
 * feature and alpha forms are PyTorch 1.13's {@code _dropout_impl}, op for op in the input's dtype, so that a kept or
 * dropped element has PyTorch's bits: a uniform draw per element or per {@code (n, c)} channel below {@code 1 - p}, then
 * {@code x * (noise / (1 - p))}, or for alpha dropout {@code x * (noise * a) + ((noise - 1) * alpha a + alpha a p)}.
 * Under a trace each is one random op whose replay draws anew from the generator its id names (as {@code native_dropout}).
 */
public final class Dropouts {
    private Dropouts() {}

    /** SELU's {@code scale * alpha}, the value alpha dropout sends a dropped element towards (PyTorch's constant). */
    private static final double SELU_ALPHA = 1.7580993408473766;

    /**
     * {@code dropout(x, p, train)}: each element zeroed with probability {@code p}, the rest scaled by {@code 1 / (1 - p)}
     * ({@code native_dropout}'s output); zeros at p = 1; an alias out of training or at p = 0.
     */
    public static Tensor dropout(Tensor x, double p, boolean train, Generator gen) {
        checkArguments(RandomOps.DROPOUT, x, p, gen);
        // The trace sees native_dropout (args null), which the JIT fuses; autocast still asks this op's (empty) policy.
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(RandomOps.DROPOUT, new Tensor[] {x}, null, t -> dropoutOf(t[0], p, train, gen));
        }
        return dropoutOf(x, p, train, gen);
    }

    private static Tensor dropoutOf(Tensor x, double p, boolean train, Generator gen) {
        if (!train || p == 0) return x.alias();
        if (p == 1) return x.mul(0.0);
        return Dispatcher.call(RandomOps.NATIVE_DROPOUT, new Tensor[] {x}, p, 1, gen.id());
    }

    /**
     * {@code F.dropout(x, p, training, inplace=True)}: in training, {@code x} itself multiplied by the mask scaled by
     * {@code 1 / (1 - p)} drawn as {@link #dropout}'s (the same mask from the same generator state). Not a declared op:
     * the trace records the draw and the in-place product. Returns a new handle to {@code x}.
     */
    public static Tensor dropout_(Tensor x, double p, boolean train, Generator gen) {
        checkP("dropout_", p);
        if (train && p > 0) {
            try (MemoryScope scope = new MemoryScope()) {
                x.mul_(p == 1 ? Torch.zerosLike(x) : dropoutScale(x.shape(), x.dtype(), x.device(), p, gen));
            }
        }
        return x.alias();
    }

    /** Dropout's multiplier for a tensor of {@code shape}: 0 with probability {@code p}, else {@code 1 / (1 - p)}; one uniform draw per element. */
    public static Tensor dropoutScale(long[] shape, DType dtype, Device device, double p, Generator gen) {
        return Torch.rand(shape, dtype, device, gen).lt(1 - p).to(dtype).mul(1.0 / (1 - p));
    }

    /** {@code feature_dropout(x, p, train)}: whole {@code (n, c)} channels of an input of at least two dimensions zeroed. */
    public static Tensor featureDropout(Tensor x, double p, boolean train, Generator gen) {
        return declared(RandomOps.FEATURE_DROPOUT, x, p, train, gen);
    }

    /** {@code alpha_dropout(x, p, train)}: SELU's dropout, per element. */
    public static Tensor alphaDropout(Tensor x, double p, boolean train, Generator gen) {
        return declared(RandomOps.ALPHA_DROPOUT, x, p, train, gen);
    }

    /** {@code feature_alpha_dropout(x, p, train)}: SELU's dropout, per {@code (n, c)} channel. */
    public static Tensor featureAlphaDropout(Tensor x, double p, boolean train, Generator gen) {
        return declared(RandomOps.FEATURE_ALPHA_DROPOUT, x, p, train, gen);
    }

    /**
     * {@code F.dropout1d/2d/3d}: {@link #featureDropout} of an input of {@code spatial + 2} dimensions, or of {@code spatial
     * + 1} read as one unbatched sample (not for 2-d, which reads a 3-d input as {@code (N, C, L)}, as PyTorch 1.13).
     * {@code dropout1d} refuses other ranks, as PyTorch's; the others pass them to the op, as PyTorch's (which warns).
     */
    public static Tensor channelDropout(String fn, int spatial, Tensor x, double p, boolean train, Generator gen) {
        checkP(fn, p);
        int dim = x.dim();
        if (spatial == 1 && dim != 2 && dim != 3) {
            throw new IllegalArgumentException(fn + ": expected 2D or 3D input, but received a " + dim + "D input of shape "
                    + Shapes.format(x.shape()) + " (" + x.dtype() + ", " + x.device() + "). Note that dropout1d exists to provide "
                    + "channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension "
                    + "(i.e. 2D or 3D inputs).");
        }
        if (spatial == 2 || dim != spatial + 1) return featureDropout(x, p, train, gen);
        try (Tensor batched = x.unsqueeze(0); Tensor r = featureDropout(batched, p, train, gen)) {
            return r.squeeze(0);
        }
    }

    /** Whether {@code op} is one of this family's declared ops ({@link #callAs}). */
    static boolean isDeclared(OpDef op) {
        return op == RandomOps.DROPOUT || op == RandomOps.FEATURE_DROPOUT || op == RandomOps.ALPHA_DROPOUT || op == RandomOps.FEATURE_ALPHA_DROPOUT;
    }

    /** A declared op of this family called from its arguments as the trace records them: p, train, the generator's id. */
    static Tensor callAs(OpDef op, Tensor x, double[] args) {
        if (args.length != 3) {
            throw new IllegalArgumentException(op.pyName() + ": expected 3 arguments (p, train, generator), got " + Arrays.toString(args));
        }
        Generator gen = Generator.byId(op.pyName(), (long) args[2]);
        return op == RandomOps.DROPOUT ? dropout(x, args[0], args[1] != 0, gen) : declared(op, x, args[0], args[1] != 0, gen);
    }

    private static Tensor declared(OpDef op, Tensor x, double p, boolean train, Generator gen) {
        checkArguments(op, x, p, gen);
        if (Dispatcher.wrapsFrontEnds()) {
            return Dispatcher.frontEnd(op, new Tensor[] {x}, new double[] {p, train ? 1 : 0, gen.id()}, t -> masked(op, t[0], p, train, gen));
        }
        return masked(op, x, p, train, gen);
    }

    /** PyTorch 1.13's {@code _dropout_impl}: what is drawn, and each step, in its order and the input's dtype. */
    private static Tensor masked(OpDef op, Tensor x, double p, boolean train, Generator gen) {
        if (!train || p == 0 || x.numel() == 0) return x.alias();
        // PyTorch multiplies by a zero of the input's dtype: zeros, whatever the dtype, NaN where x is not finite
        if (p == 1) return MemoryScope.run(() -> x.mul(Torch.zeros(new long[0], x.dtype(), x.device())));
        boolean feature = op == RandomOps.FEATURE_DROPOUT || op == RandomOps.FEATURE_ALPHA_DROPOUT;
        if (feature && x.dim() < 2) {
            throw new IllegalArgumentException(op.pyName() + ": Feature dropout requires at least 2 dimensions in the input, got shape "
                    + Shapes.format(x.shape()) + " (" + x.dtype() + ", " + x.device() + ")");
        }
        if (!x.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op.pyName() + ": expected a floating point input in training, got " + x.dtype() + " of shape "
                    + Shapes.format(x.shape()) + " (" + x.device() + ")");
        }
        return MemoryScope.run(() -> {
            Tensor noise = Torch.rand(feature ? channelShape(x) : x.shape(), x.dtype(), x.device(), gen).lt(1 - p).to(x.dtype());
            if (op == RandomOps.FEATURE_DROPOUT) return x.mul(noise.div(1 - p));
            double a = 1 / Math.sqrt((SELU_ALPHA * SELU_ALPHA * p + 1) * (1 - p));
            Tensor shift = noise.add(-1.0).mul(SELU_ALPHA * a).add(SELU_ALPHA * a * p);
            return x.mul(noise.mul(a)).add(shift);
        });
    }

    /** {@code [N, C, 1, ...]}: one draw per channel, broadcast over the rest. */
    private static long[] channelShape(Tensor x) {
        long[] shape = new long[x.dim()];
        Arrays.fill(shape, 1);
        shape[0] = x.size(0);
        shape[1] = x.size(1);
        return shape;
    }

    private static void checkArguments(OpDef op, Tensor x, double p, Generator gen) {
        Arguments.nonNull(op.pyName(), "input", x);
        Arguments.nonNull(op.pyName(), "generator", gen);
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(op.pyName() + ": dropout probability has to be between 0 and 1, but got " + p + " (input of shape "
                    + Shapes.format(x.shape()) + ", " + x.dtype() + ", " + x.device() + ")");
        }
    }

    private static void checkP(String fn, double p) {
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException(fn + ": dropout probability has to be between 0 and 1, but got " + p);
    }
}
