package org.jtorch.ops;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * What the tests of declared ops share: the ops a trace records, the first gradient as a function (for gradgradcheck), the
 * calls of a kernel, and a relative comparison of tensors.
 */
final class OpTestSupport {
    private OpTestSupport() {}

    /** The names of the ops a trace records while {@code body} runs, in order. */
    static List<String> traced(Runnable body) {
        List<String> names = new ArrayList<>();
        TraceHook<Tensor> hook = (OpDef op, List<Tensor> inputs, double[] scalars, ReduceArgs reduce, Tensor output) -> names.add(op.name());
        try (Dispatcher.TraceScope t = Dispatcher.trace(hook)) {
            body.run();
        }
        return names;
    }

    /**
     * The gradients of {@code sum(fn(x) * probe)} (a fixed float64 probe) with respect to every input, flattened into one
     * tensor with their graph: its gradcheck checks {@code fn}'s second derivatives (PyTorch's gradgradcheck).
     */
    static Function<Tensor[], Tensor> firstGradient(Function<Tensor[], Tensor> fn) {
        return a -> {
            Tensor y = fn.apply(a);
            Tensor probe = Torch.linspace(-1, 1, y.numel(), DType.FLOAT64, Device.cpu()).reshape(y.shape());
            Tensor[] g = Autograd.grad(new Tensor[] {y}, a, new Tensor[] {probe}, true, true, false);
            List<Tensor> flat = new ArrayList<>();
            for (Tensor t : g) flat.add(t.reshape(-1));
            return Torch.cat(flat, 0);
        };
    }

    /** How many times {@code body} called the kernel named {@code kernel} (the profiler's entries for that op, any shape). */
    static long kernelCalls(String kernel, Runnable body) {
        KernelProfiler.reset();
        KernelProfiler.start();
        try {
            body.run();
        } finally {
            KernelProfiler.stop();
        }
        return KernelProfiler.entries().stream().filter(e -> e.kernel().startsWith(kernel + " ")).mapToLong(KernelProfiler.Entry::calls).sum();
    }

    /** Elementwise {@code |expected - actual| <= tol * max(1, |expected|)}, NaN where NaN is expected. */
    static void assertCloseRelative(Tensor expected, Tensor actual, double tol, String what) {
        double[] e = expected.to(DType.FLOAT64).reshape(-1).toDoubleArray(), a = actual.to(DType.FLOAT64).reshape(-1).toDoubleArray();
        org.junit.jupiter.api.Assertions.assertEquals(e.length, a.length, what);
        for (int i = 0; i < e.length; i++) {
            if (Double.isNaN(e[i])) {
                org.junit.jupiter.api.Assertions.assertTrue(Double.isNaN(a[i]), what + " at " + i + ": expected NaN, got " + a[i]);
                continue;
            }
            org.junit.jupiter.api.Assertions.assertEquals(e[i], a[i], tol * Math.max(1, Math.abs(e[i])), what + " at " + i);
        }
    }
}
