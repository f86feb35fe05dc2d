package org.jtorch.autograd;

import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.op.Shapes;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;

/**
 * Finite-difference check of backward formulas, as {@code torch.autograd.gradcheck}: compares the
 * analytical Jacobian (one backward pass per output element) with central differences, in float64.
 */
public final class Gradcheck {
    private Gradcheck() {}

    /** Thrown when analytical and numerical gradients disagree; the message names input, output and element. */
    public static final class GradcheckError extends AssertionError {
        GradcheckError(String message) {
            super(message);
        }
    }

    /** Checks with PyTorch's defaults: eps 1e-6, atol 1e-5, rtol 1e-3. Returns true or throws {@link GradcheckError}. */
    public static boolean check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        return check(fn, inputs, 1e-6, 1e-5, 1e-3);
    }

    /**
     * Inputs that require grad are perturbed; they must be float64 (the finite differences are
     * meaningless in lower precision). {@code fn} must not modify its inputs.
     */
    public static boolean check(Function<Tensor[], Tensor> fn, Tensor[] inputs, double eps, double atol, double rtol) {
        Arguments.nonNull("Gradcheck.check", "fn", fn);
        Arguments.nonNullElements("Gradcheck.check", "inputs", inputs);
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t != null && t.requiresGrad() && t.dtype() != DType.FLOAT64) {
                throw new IllegalArgumentException("gradcheck: input " + i + " requires grad but is " + t.dtype()
                        + "; use float64 inputs");
            }
        }
        double[] out0;
        long[] outShape;
        try (Tensor out = fn.apply(inputs)) {
            out0 = out.toDoubleArray();
            outShape = out.shape();
            if (!out.requiresGrad() && anyRequiresGrad(inputs)) {
                throw new GradcheckError("gradcheck: the output does not require grad although an input does (no graph was recorded)");
            }
        }
        int nOut = out0.length;
        for (int i = 0; i < inputs.length; i++) {
            Tensor x = inputs[i];
            if (x == null || !x.requiresGrad()) continue;
            int nIn = Math.toIntExact(x.numel());
            double[][] numerical = numericalJacobian(fn, inputs, x, nIn, nOut, eps);
            double[][] analytical = analyticalJacobian(fn, inputs, i, nIn, nOut, outShape);
            for (int o = 0; o < nOut; o++) {
                for (int k = 0; k < nIn; k++) {
                    double a = analytical[o][k];
                    double n = numerical[o][k];
                    if (!(Math.abs(a - n) <= atol + rtol * Math.abs(n))) {
                        throw new GradcheckError("gradcheck: Jacobian mismatch for output element " + o + " with respect to input "
                                + i + " (shape " + Shapes.format(x.shape()) + ") element " + k + ": numerical " + n
                                + ", analytical " + a);
                    }
                }
            }
        }
        return true;
    }

    private static boolean anyRequiresGrad(Tensor[] inputs) {
        for (Tensor t : inputs) if (t != null && t.requiresGrad()) return true;
        return false;
    }

    /**
     * Central differences, perturbing {@code x} in place through a detached alias. {@code fn} runs in
     * the caller's grad mode, so that it may itself differentiate (a gradcheck of gradients).
     */
    private static double[][] numericalJacobian(Function<Tensor[], Tensor> fn, Tensor[] inputs, Tensor x, int nIn, int nOut,
                                                double eps) {
        double[][] jac = new double[nOut][nIn];
        try (Tensor flat = x.detach()) {
            double[] base = flat.toDoubleArray();
            long[] shape = x.shape();
            for (int k = 0; k < nIn; k++) {
                double[] plus = evalWith(fn, inputs, flat, base, k, base[k] + eps, shape);
                double[] minus = evalWith(fn, inputs, flat, base, k, base[k] - eps, shape);
                for (int o = 0; o < nOut; o++) jac[o][k] = (plus[o] - minus[o]) / (2 * eps);
            }
            // restore
            try (Tensor restored = Torch.tensor(base, shape)) {
                flat.copy_(restored);
            }
        }
        return jac;
    }

    private static double[] evalWith(Function<Tensor[], Tensor> fn, Tensor[] inputs, Tensor target, double[] base, int k,
                                     double value, long[] shape) {
        double[] v = base.clone();
        v[k] = value;
        try (Tensor t = Torch.tensor(v, shape)) {
            target.copy_(t);
        }
        try (Tensor out = fn.apply(inputs)) {
            return out.toDoubleArray();
        }
    }

    private static double[][] analyticalJacobian(Function<Tensor[], Tensor> fn, Tensor[] inputs, int which, int nIn, int nOut,
                                                 long[] outShape) {
        double[][] jac = new double[nOut][nIn];
        for (int o = 0; o < nOut; o++) {
            double[] onehot = new double[nOut];
            onehot[o] = 1;
            try (Tensor out = fn.apply(inputs); Tensor host = Torch.tensor(onehot, outShape); Tensor seed = host.to(out.device())) {
                Tensor[] g = Autograd.grad(new Tensor[] {out}, new Tensor[] {inputs[which]}, new Tensor[] {seed}, false, false, true);
                if (g[0] != null) {
                    double[] row = g[0].toDoubleArray();
                    System.arraycopy(row, 0, jac[o], 0, nIn);
                    g[0].close();
                }
            }
        }
        return jac;
    }
}
