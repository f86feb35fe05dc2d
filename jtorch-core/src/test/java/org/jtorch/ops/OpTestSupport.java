package org.jtorch.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Gradcheck;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.op.OpDef;
import org.jtorch.op.OpRegistry;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.types.Generator;

/**
 * What the tests of declared ops share: the ops a trace records, the first gradient as a function (for gradgradcheck), the
 * calls of a kernel, a relative comparison of tensors, and the checks every declared one-input front end passes.
 */
final class OpTestSupport {
    private OpTestSupport() {}

    /** An F call of a declared one-input front end: the op PyTorch runs for it, an input shape, the call, and the op's arguments as the trace records them. */
    record FrontEndCase(String op, long[] shape, Function<Tensor, Tensor> call, double[] args) {}

    /**
     * The case's op is a differentiable declared front end; the F call on {@code x} is traced as that one op, and the op
     * called from its recorded arguments (as the JIT replays it) gives the eager call's values bit for bit.
     */
    static void assertDeclaredTracedAndReplayed(FrontEndCase c, Tensor x) {
        OpDef op = OpRegistry.get(c.op());
        assertEquals(OpDef.Kind.FRONT_END, op.kind(), c.op());
        assertTrue(op.isDifferentiable(), c.op());
        assertEquals(List.of(c.op()), traced(() -> c.call().apply(x)), c.op());
        Tensor eager = c.call().apply(x);
        Tensor replayed = Dispatcher.call(op, new Tensor[] {x}, c.args());
        assertArrayEquals(eager.shape(), replayed.shape(), c.op());
        assertArrayEquals(eager.toFloatArray(), replayed.toFloatArray(), 0f, c.op());
    }

    /** The op has no autocast policy: under CPU bf16 autocast the call runs in its input's dtype, with the same values. */
    static void assertAutocastLeavesTheInputsDtype(FrontEndCase c, Generator gen) {
        OpDef op = OpRegistry.get(c.op());
        assertNull(op.autocast(Device.Type.CPU), c.op());
        assertNull(op.autocast(Device.Type.CUDA), c.op());
        Tensor x = Torch.randn(c.shape(), DType.FLOAT32, Device.cpu(), gen).to(DType.BFLOAT16);
        Tensor y;
        try (Autocast ac = Autocast.enable(Device.cpu(), DType.BFLOAT16)) {
            y = c.call().apply(x);
        }
        assertEquals(DType.BFLOAT16, y.dtype(), c.op());
        assertArrayEquals(c.call().apply(x).to(DType.FLOAT32).toFloatArray(), y.to(DType.FLOAT32).toFloatArray(), 0f, c.op());
    }

    /** The op called from its arguments passes gradcheck in float64, and so does its first gradient (gradgradcheck). */
    static void assertGradientsOfBothOrders(FrontEndCase c, Generator gen) {
        OpDef op = OpRegistry.get(c.op());
        Function<Tensor[], Tensor> fn = a -> Dispatcher.call(op, new Tensor[] {a[0]}, c.args());
        Tensor x = Torch.randn(c.shape(), DType.FLOAT64, Device.cpu(), gen).requiresGrad_(true);
        assertTrue(Gradcheck.check(fn, x), c.op());
        assertTrue(Gradcheck.check(firstGradient(a -> fn.apply(a).pow(2.0)), x), c.op());
    }

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
