package org.jtorch.jit;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Tensor;
import org.jtorch.amp.Autocast;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;
import org.jtorch.backend.GraphCapture;
import org.jtorch.nn.Module;
import org.jtorch.ops.Arguments;
import org.jtorch.ops.Dispatcher;

/**
 * The JIT: traces a function of tensors through the dispatcher, fuses its chains of float32 pointwise ops into
 * generated kernels (Vector API bytecode on the CPU), and replays the rest op by op.
 *
 * <pre>{@code
 * TensorFunction f = Jit.trace(x -> x[0].relu().add(c), example);   // relu(x) + c: one kernel
 * Tensor y = f.apply(x);
 * }</pre>
 *
 * <p>What a compiled function guarantees:
 * <ul>
 *   <li><b>Guards.</b> A compiled graph is specialised on its inputs' shapes, dtypes and devices and on whether
 *   they require grad (and on grad mode and autocast); a call that differs traces again, and graphs are cached per
 *   input signature.</li>
 *   <li><b>Never a wrong result.</b> What the trace cannot replay runs eagerly: a function that uses an op the
 *   dispatcher does not see yet (views, matmul, convolution, indexing, ...), reads values on the host
 *   ({@code item}, {@code toFloatArray}) or changes a tensor in place is called as it is, every time, for that
 *   signature. {@link Options#debug} prints why.</li>
 *   <li><b>Autograd.</b> Where an input or captured tensor requires grad, each fused group records one node whose
 *   backward is fused too: each input's gradient is one generated kernel, derived from the registry's derivatives,
 *   recomputing the group's intermediates instead of saving them. Replayed ops record as they do eagerly. A double
 *   backward through a fused group is refused with an error, not computed wrong.</li>
 *   <li><b>CUDA graphs</b> ({@link Options#cudaGraphs()}): on a CUDA device, where the result needs no autograd
 *   (inference, or grad mode off), the second call of a signature warms the function up on a side stream and
 *   captures it into a CUDA graph with static copies of the inputs; every later call copies its inputs into them,
 *   replays the graph (one launch for the whole function) and returns a copy of the static output. A new
 *   signature captures its own graph; a function the capture refuses (it synchronises, reads a value on the
 *   host) runs as without graphs, and {@link Options#debug} says why. The parameters the function reads must be
 *   updated in place (as optimizers do), not replaced.</li>
 *   <li><b>Trace semantics.</b> As {@code torch.jit.trace}: Java control flow and Java numbers are fixed at
 *   trace time (a branch on a Java value is not re-taken); tensors the function captures (parameters) are read
 *   at each call.</li>
 * </ul>
 */
public final class Jit {
    private Jit() {}

    /** Compilation options. */
    public record Options(boolean debug, boolean useCudaGraphs) {
        public static Options defaults() {
            return new Options(false, false);
        }

        /** The defaults with CUDA graphs: calls on a CUDA device replay a captured graph (see {@link Jit}). */
        public static Options cudaGraphs() {
            return new Options(false, true);
        }

        /** Prints each trace, its fusion groups, each graph break and each CUDA graph decision to standard error. */
        public Options withDebug(boolean debug) {
            return new Options(debug, useCudaGraphs);
        }

        public Options withCudaGraphs(boolean useCudaGraphs) {
            return new Options(debug, useCudaGraphs);
        }
    }

    /** {@code fn} compiled, traced first with {@code example} (whose result is discarded). */
    public static TensorFunction trace(TensorFunction fn, Tensor... example) {
        return trace(fn, Options.defaults(), example);
    }

    public static TensorFunction trace(TensorFunction fn, Options options, Tensor... example) {
        Arguments.nonNull("Jit.trace", "fn", fn);
        Compiled c = new Compiled(fn, options);
        if (example.length > 0) {
            try (Tensor warm = c.apply(example)) {
                // Traced and compiled for the example's signature; its value is not needed.
            }
        }
        return c;
    }

    /** {@code module.forward} compiled; its parameters are read at each call. */
    public static TensorFunction compile(Module module) {
        return compile(module, Options.defaults());
    }

    public static TensorFunction compile(Module module, Options options) {
        Arguments.nonNull("Jit.compile", "module", module);
        return new Compiled(x -> module.forward(x[0]), options);
    }

    /** The graph {@code fn} traces to on {@code inputs}, the steps it compiles to (fusion groups and their formulas), or why it runs eagerly. */
    public static String explain(TensorFunction fn, Tensor... inputs) {
        Tracer tracer = new Tracer(inputs);
        Tensor result = Compiled.traceInto(tracer, fn, inputs);
        if (tracer.graph.output instanceof Graph.Node) result.close();
        StringBuilder s = new StringBuilder("graph:\n").append(tracer.graph);
        if (tracer.breakReason() != null) return s.append("runs eagerly: ").append(tracer.breakReason()).append('\n').toString();
        Program p = new Program(tracer.graph, Compiled.needsGrad(tracer.graph, inputs));
        return s.append("steps (").append(p.kernelLaunches()).append(" kernels, ").append(p.fusedGroups()).append(" fused):\n")
                .append(p).toString();
    }

    /** What a compiled graph is specialised on. */
    private record Signature(long[][] shapes, DType[] dtypes, Device[] devices, boolean[] requiresGrad, boolean gradMode,
                             boolean autocast) {
        static Signature of(Tensor[] inputs) {
            int n = inputs.length;
            long[][] shapes = new long[n][];
            DType[] dtypes = new DType[n];
            Device[] devices = new Device[n];
            boolean[] grad = new boolean[n];
            for (int i = 0; i < n; i++) {
                Arguments.nonNull("Jit", "input " + i, inputs[i]);
                shapes[i] = inputs[i].shape();
                dtypes[i] = inputs[i].dtype();
                devices[i] = inputs[i].device();
                grad[i] = inputs[i].requiresGrad();
            }
            return new Signature(shapes, dtypes, devices, grad, Grad.isEnabled(), Autocast.isActive());
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Signature s && Arrays.deepEquals(shapes, s.shapes) && Arrays.equals(dtypes, s.dtypes)
                    && Arrays.equals(devices, s.devices) && Arrays.equals(requiresGrad, s.requiresGrad) && gradMode == s.gradMode
                    && autocast == s.autocast;
        }

        @Override
        public int hashCode() {
            return Arrays.deepHashCode(shapes) * 31 + Arrays.hashCode(dtypes) * 7 + Arrays.hashCode(requiresGrad) + (gradMode ? 1 : 0);
        }
    }

    /** A compiled function: one program (or the eager function) per input signature. */
    private static final class Compiled implements TensorFunction {
        private final TensorFunction fn;
        private final Options options;
        /** Per signature, the compiled program, or empty where the function runs eagerly. */
        private final Map<Signature, Optional<Program>> programs = new ConcurrentHashMap<>();
        /** With CUDA graphs, per signature: the graph, or empty where none can be used; absent until the second call. */
        private final Map<Signature, Optional<Graphed>> graphs = new ConcurrentHashMap<>();
        /** Signatures whose first call gave a result a graph can replay (on one CUDA device, without autograd). */
        private final Map<Signature, Device> graphable = new ConcurrentHashMap<>();

        Compiled(TensorFunction fn, Options options) {
            this.fn = fn;
            this.options = options;
        }

        @Override
        public Tensor apply(Tensor... inputs) {
            Signature sig = Signature.of(inputs);
            if (!options.useCudaGraphs()) return applyCompiled(sig, inputs);
            Optional<Graphed> g = graphs.get(sig);
            if (g != null && g.isPresent()) return g.get().call(inputs);
            if (g == null && programs.containsKey(sig)) {
                Graphed captured = capture(sig, inputs);
                if (captured != null) return captured.call(inputs);
            }
            boolean first = !programs.containsKey(sig);
            Tensor result = applyCompiled(sig, inputs);
            if (first) noteGraphable(sig, inputs, result);
            return result;
        }

        /** After a signature's first call: whether a CUDA graph can replay it. */
        private void noteGraphable(Signature sig, Tensor[] inputs, Tensor result) {
            Device device = result.device();
            String why = null;
            if (!device.isCuda()) why = "the result is on " + device;
            else if (result.requiresGrad()) why = "the result needs autograd, which a replayed forward would not record";
            for (Tensor t : inputs) if (why == null && !t.device().equals(device)) why = "inputs on " + t.device() + " and " + device;
            if (why == null && Backends.of(device).graphCapture() == null) why = "the " + device.type() + " backend has no graph capture";
            if (why == null) {
                graphable.put(sig, device);
            } else {
                graphs.put(sig, Optional.empty());
                if (options.debug()) System.err.println("jit: no CUDA graph for " + describe(inputs) + ": " + why);
            }
        }

        /** The second call of a graphable signature: static inputs, warm-up and capture; null (and never again) if refused. */
        private Graphed capture(Signature sig, Tensor[] inputs) {
            Device device = graphable.get(sig);
            if (device == null) return null;
            Tensor[] statics = new Tensor[inputs.length];
            for (int i = 0; i < inputs.length; i++) statics[i] = inputs[i].detach().clone();
            try {
                GraphCapture.Recorded r = Backends.of(device).graphCapture().capture(device, 2, () -> applyCompiled(sig, statics));
                Graphed graphed = new Graphed(statics, r);
                graphs.put(sig, Optional.of(graphed));
                if (options.debug()) System.err.println("jit: captured a CUDA graph for " + describe(inputs));
                return graphed;
            } catch (IllegalStateException refused) {
                for (Tensor t : statics) t.close();
                graphs.put(sig, Optional.empty());
                if (options.debug()) System.err.println("jit: no CUDA graph for " + describe(inputs) + ": " + refused.getMessage());
                return null;
            }
        }

        private Tensor applyCompiled(Signature sig, Tensor[] inputs) {
            Optional<Program> p = programs.get(sig);
            if (p != null) return p.isPresent() ? p.get().run(inputs) : fn.apply(inputs);
            // First call with this signature: trace (the traced call's own result is the answer), then compile.
            Tracer tracer = new Tracer(inputs);
            Tensor result = traceInto(tracer, fn, inputs);
            String reason = tracer.breakReason();
            if (reason != null) {
                programs.put(sig, Optional.empty());
                if (options.debug()) System.err.println("jit: runs eagerly for " + describe(inputs) + ": " + reason);
                return result;
            }
            Program program = new Program(tracer.graph, needsGrad(tracer.graph, inputs));
            programs.put(sig, Optional.of(program));
            if (options.debug()) System.err.println("jit: compiled for " + describe(inputs) + ":\n" + tracer.graph + program);
            return result;
        }

        /** A captured graph of one signature and its static inputs. */
        private record Graphed(Tensor[] statics, GraphCapture.Recorded recorded) {
            /** Copies {@code inputs} into the static inputs, replays, and returns a copy of the static output. */
            Tensor call(Tensor[] inputs) {
                for (int i = 0; i < inputs.length; i++) {
                    if (inputs[i] != statics[i]) statics[i].copy_(inputs[i]);
                }
                recorded.replay();
                return recorded.output().clone();
            }
        }

        /** Runs {@code fn} eagerly under {@code tracer} and returns its result. */
        static Tensor traceInto(Tracer tracer, TensorFunction fn, Tensor[] inputs) {
            Tensor result;
            try (var scope = Dispatcher.trace(tracer)) {
                result = fn.apply(inputs);
            }
            tracer.finish(result);
            return result;
        }

        /** Whether the program records autograd: grad mode is on and an input or captured tensor requires grad. */
        static boolean needsGrad(Graph graph, Tensor[] inputs) {
            if (!Grad.isEnabled()) return false;
            for (Tensor t : inputs) if (t.requiresGrad()) return true;
            for (Graph.Node n : graph.nodes) {
                for (Graph.Value v : n.inputs) if (v instanceof Graph.Constant c && c.tensor.requiresGrad()) return true;
            }
            return false;
        }

        private static String describe(Tensor[] inputs) {
            return String.join(", ", List.of(inputs).stream().map(t -> t.dtype() + org.jtorch.op.Shapes.format(t.shape())).toList());
        }
    }
}
