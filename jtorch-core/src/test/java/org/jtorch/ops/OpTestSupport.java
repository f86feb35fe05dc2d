package org.jtorch.ops;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.op.OpDef;
import org.jtorch.op.ReduceArgs;
import org.jtorch.op.TraceHook;

/** What the tests of declared ops share: the ops a trace records, and the first gradient as a function (for gradgradcheck). */
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
}
