package org.jtorch.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.testing.Fixtures;

/** Inputs for gradchecks: float64 leaves with reproducible values kept away from non-differentiable points. */
final class GradcheckSupport {
    private GradcheckSupport() {}

    /** The gradient of {@code sum(f(x))} with respect to {@code x}, on the host. */
    static double[] gradOf(Tensor x, Function<Tensor, Tensor> f) {
        try (Tensor y = f.apply(x); Tensor ones = Torch.onesLike(y)) {
            Tensor g = Autograd.grad(new Tensor[] {y}, new Tensor[] {x}, new Tensor[] {ones}, false, false, false)[0];
            try (g) {
                return g.toDoubleArray();
            }
        }
    }

    /** A float64 leaf requiring grad with values in [-1, -0.1] or [0.1, 1] (never near 0), seeded by shape. */
    static Tensor input(long... shape) {
        return values(shape, 0.1, 1.0, true);
    }

    /** Like {@link #input} with other values (a second operand of the same shape). */
    static Tensor other(long... shape) {
        return values(shape, 0.1, 1.0, true, 7);
    }

    /** A float64 leaf requiring grad with values in [0.5, 2]. */
    static Tensor positive(long... shape) {
        return values(shape, 0.5, 2.0, false);
    }

    private static Tensor values(long[] shape, double lo, double hi, boolean signed) {
        return values(shape, lo, hi, signed, 0);
    }

    private static Tensor values(long[] shape, double lo, double hi, boolean signed, long seed) {
        long n = 1;
        for (long s : shape) n *= s;
        Random r = new Random(31L * n + shape.length + 1000 * seed);
        double[] v = new double[(int) n];
        for (int i = 0; i < v.length; i++) {
            double m = lo + (hi - lo) * r.nextDouble();
            v[i] = signed && r.nextBoolean() ? -m : m;
        }
        return on(Torch.tensor(v, shape)).requiresGrad_();
    }

    /** {@code host} moved to the device the suites run on ({@link Fixtures#device()}, cpu by default); {@code host} is closed. */
    static Tensor on(Tensor host) {
        try (host) {
            return host.to(Fixtures.device());
        }
    }

    static Tensor longs(long[] values, long... shape) {
        return on(Torch.tensor(values, shape));
    }

    static Tensor mask(boolean[] values, long... shape) {
        return on(Torch.tensor(values, shape));
    }

    /** Runs the gradcheck (which throws with the mismatching element on failure). */
    static void gradcheck(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        assertTrue(Gradcheck.check(fn, inputs));
    }

    /** The backward node name {@code fn} gives its result, as PyTorch's {@code grad_fn} name. */
    static void assertNode(String expected, Function<Tensor[], Tensor> fn, Tensor... inputs) {
        try (Tensor out = fn.apply(inputs)) {
            assertEquals(expected, out.gradFn() == null ? null : out.gradFn().name());
        }
    }
}
