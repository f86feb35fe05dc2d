package org.jtorch.jit;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jtorch.Tensor;
import org.jtorch.amp.Autocast;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.backend.Backends;
import org.jtorch.backend.GraphCapture;
import org.jtorch.nn.Module;
import org.jtorch.ops.Dispatcher;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

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
 *   they require grad (and on grad mode and autocast; for a compiled module, on which of its modules are in training
 *   mode); a call that differs traces again, and graphs are cached per input signature.</li>
 *   <li><b>Never a wrong result.</b> What the trace cannot replay runs eagerly: a function that uses an op the
 *   dispatcher does not see yet (views, matmul, convolution, indexing, ...), reads values on the host
 *   ({@code item}, {@code toFloatArray}) or changes a tensor in place is called as it is, every time, for that
 *   signature. {@link Options#debug} prints why.</li>
 *   <li><b>Autograd.</b> Where an input or captured tensor requires grad, each fused group records one node whose
 *   backward is fused too: each input's gradient is one generated kernel, derived from the registry's derivatives,
 *   recomputing the group's intermediates instead of saving them. Replayed ops record as they do eagerly. A double
 *   backward through a fused group is refused with an error, not computed wrong.</li>
 *   <li><b>CUDA graphs</b> ({@link Options#cudaGraphs()}): on a CUDA device, the second call of a signature warms
 *   the function up on a side stream and captures it into a CUDA graph with static copies of the inputs; every
 *   later call copies its inputs into them, replays the graph (one launch for the whole function) and returns a
 *   copy of the static output. Where the result needs autograd (a module compiled with {@link #compile(Module,
 *   Options)} in training), the backward is captured too, into the same memory pool, as PyTorch's
 *   {@code make_graphed_callables}: the result's backward replays it and hands the gradients of the inputs and the
 *   parameters to autograd; each backward must follow its own forward (a second forward replay in between
 *   overwrites what the backward reads, and that backward then throws). A new signature captures its own graphs;
 *   a function the capture refuses (it synchronises, reads a value on the host) runs as without graphs, and
 *   {@link Options#debug} says why. The parameters the function reads must be updated in place (as optimizers
 *   do), not replaced.</li>
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
        Compiled c = new Compiled(fn, options, List.of(), List.of(), null);
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
        return new Compiled(x -> module.forward(x[0]), options, module.parameters(), module.buffers(), module);
    }

    /** The graph {@code fn} traces to on {@code inputs}, the steps it compiles to (fusion groups and their formulas), or why it runs eagerly. */
    public static String explain(TensorFunction fn, Tensor... inputs) {
        Tracer tracer = new Tracer(inputs);
        Tensor result = Compiled.traceInto(tracer, fn, inputs);
        if (tracer.graph.output instanceof Graph.Node || tracer.graph.output instanceof Graph.Output) result.close();
        StringBuilder s = new StringBuilder("graph:\n").append(tracer.graph);
        if (tracer.breakReason() != null) return s.append("runs eagerly: ").append(tracer.breakReason()).append('\n').toString();
        Program p = new Program(tracer.graph, Compiled.needsGrad(tracer.graph, inputs));
        return s.append("steps (").append(p.kernelLaunches()).append(" kernels, ").append(p.fusedGroups()).append(" fused):\n")
                .append(p).toString();
    }

    /** What a compiled graph is specialised on. */
    private record Signature(long[][] shapes, DType[] dtypes, Device[] devices, boolean[] requiresGrad, boolean gradMode,
                             boolean autocast, boolean[] training) {
        /** {@code module} (null for a traced function): its modules' training flags are part of the signature (batch norm, dropout). */
        static Signature of(Tensor[] inputs, Module module) {
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
            boolean[] training = NO_MODULES;
            if (module != null) {
                List<Module> modules = module.modules();
                training = new boolean[modules.size()];
                for (int i = 0; i < training.length; i++) training[i] = modules.get(i).isTraining();
            }
            return new Signature(shapes, dtypes, devices, grad, Grad.isEnabled(), Autocast.isActive(), training);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Signature s && Arrays.deepEquals(shapes, s.shapes) && Arrays.equals(dtypes, s.dtypes)
                    && Arrays.equals(devices, s.devices) && Arrays.equals(requiresGrad, s.requiresGrad) && gradMode == s.gradMode
                    && autocast == s.autocast && Arrays.equals(training, s.training);
        }

        @Override
        public int hashCode() {
            return Arrays.deepHashCode(shapes) * 31 + Arrays.hashCode(dtypes) * 7 + Arrays.hashCode(requiresGrad) + (gradMode ? 1 : 0)
                    + Arrays.hashCode(training) * 11;
        }

        private static final boolean[] NO_MODULES = new boolean[0];
    }

    /** A compiled function: one program (or the eager function) per input signature. */
    private static final class Compiled implements TensorFunction {
        private final TensorFunction fn;
        private final Options options;
        /** Per signature, the compiled program, or empty where the function runs eagerly. */
        private final Map<Signature, Optional<Program>> programs = new ConcurrentHashMap<>();
        /** With CUDA graphs, per signature: the graph, or empty where none can be used; absent until the second call. */
        private final Map<Signature, Optional<Graphed>> graphs = new ConcurrentHashMap<>();
        /** Signatures whose first call gave a result graphs can replay (on one CUDA device), and whether it needed autograd. */
        private final Map<Signature, Graphable> graphable = new ConcurrentHashMap<>();

        private record Graphable(Device device, boolean training) {}

        /** Signatures whose traced call drew random numbers: a CUDA graph would replay the same draws, so none is captured. */
        private final java.util.Set<Signature> random = ConcurrentHashMap.newKeySet();

        /** The tensors the function reads that may need gradients besides its inputs (a module's parameters), for graphs. */
        private final List<Tensor> parameters;
        /** A module's buffers (batch norm's running statistics): restored after the warm-up calls before a capture. */
        private final List<Tensor> buffers;

        /** The compiled module, whose modules' training flags guard the programs; null for a traced function. */
        private final Module module;

        Compiled(TensorFunction fn, Options options, List<Tensor> parameters, List<Tensor> buffers, Module module) {
            this.fn = fn;
            this.options = options;
            this.parameters = parameters;
            this.buffers = buffers;
            this.module = module;
        }

        @Override
        public Tensor apply(Tensor... inputs) {
            Signature sig = Signature.of(inputs, module);
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
            else if (result.requiresGrad() && parameters.isEmpty()) why = "the result needs autograd, and a traced function's parameters are unknown (Jit.compile(module) knows them)";
            for (Tensor t : inputs) if (why == null && !t.device().equals(device)) why = "inputs on " + t.device() + " and " + device;
            if (why == null && Backends.of(device).graphCapture() == null) why = "the " + device.type() + " backend has no graph capture";
            if (why == null && random.contains(sig)) why = "the function draws random numbers (a graph would replay the same draws)";
            if (why == null) {
                graphable.put(sig, new Graphable(device, result.requiresGrad()));
            } else {
                graphs.put(sig, Optional.empty());
                if (options.debug()) System.err.println("jit: no CUDA graph for " + describe(inputs) + ": " + why);
            }
        }

        /** The second call of a graphable signature: static inputs, warm-up and capture; null (and never again) if refused. */
        private Graphed capture(Signature sig, Tensor[] inputs) {
            Graphable how = graphable.get(sig);
            if (how == null) return null;
            Device device = how.device();
            GraphCapture recorder = Backends.of(device).graphCapture();
            Tensor[] statics = new Tensor[inputs.length];
            List<Tensor> gradInputs = new java.util.ArrayList<>();
            for (int i = 0; i < inputs.length; i++) {
                statics[i] = inputs[i].detach().clone().untrack(); // the graph's, not the caller's MemoryScope's
                if (how.training() && inputs[i].requiresGrad()) gradInputs.add(statics[i].requiresGrad_(true));
            }
            if (how.training()) for (Tensor p : parameters) if (p.requiresGrad()) gradInputs.add(p);
            Tensor[] wrt = gradInputs.toArray(new Tensor[0]);
            GraphCapture.Graph forward = null, backward = null;
            try {
                // The warm-up calls are not the caller's: the buffers they update (running statistics) are put back.
                List<Tensor> saved = new java.util.ArrayList<>();
                try (var off = Grad.noGrad()) {
                    for (Tensor b : buffers) saved.add(b.clone());
                }
                recorder.warmUp(device, 2, () -> {
                    Tensor out = applyCompiled(sig, statics);
                    if (how.training()) Autograd.grad(new Tensor[] {out}, wrt, new Tensor[] {Torch.onesLike(out)}, false, false, true);
                });
                try (var off = Grad.noGrad()) {
                    for (int b = 0; b < saved.size(); b++) {
                        buffers.get(b).copy_(saved.get(b));
                        saved.get(b).close();
                    }
                }
                forward = recorder.begin(device, null);
                Tensor staticOut = captured(forward, () -> applyCompiled(sig, statics)).untrack();
                Graphed graphed;
                if (how.training()) {
                    Tensor gradOut = Torch.zerosLike(staticOut).untrack();
                    backward = recorder.begin(device, forward); // the forward's pool: it reads what the forward saved
                    Tensor[] staticGrads = captured(backward,
                            () -> Autograd.grad(new Tensor[] {staticOut}, wrt, new Tensor[] {gradOut}, false, false, true));
                    for (Tensor g : staticGrads) if (g != null) g.untrack();
                    graphed = new Graphed(statics, forward, staticOut.detach().untrack(), backward, gradOut, staticGrads, parameters);
                } else {
                    graphed = new Graphed(statics, forward, staticOut, null, null, null, parameters);
                }
                graphs.put(sig, Optional.of(graphed));
                if (options.debug()) {
                    System.err.println("jit: captured CUDA graphs (" + (how.training() ? "forward and backward" : "forward") + ") for " + describe(inputs));
                }
                return graphed;
            } catch (IllegalStateException refused) {
                if (forward != null) forward.close();
                if (backward != null) backward.close();
                for (Tensor t : statics) t.close();
                graphs.put(sig, Optional.empty());
                if (options.debug()) System.err.println("jit: no CUDA graph for " + describe(inputs) + ": " + refused.getMessage());
                return null;
            }
        }

        /** {@code region}'s value, captured into {@code graph}; the capture is ended whatever happens. */
        private static <T> T captured(GraphCapture.Graph graph, java.util.function.Supplier<T> region) {
            T value;
            try {
                value = region.get();
            } catch (RuntimeException e) {
                try {
                    graph.end();
                } catch (RuntimeException failed) {
                    e.addSuppressed(failed);
                }
                throw e;
            }
            graph.end();
            return value;
        }

        private Tensor applyCompiled(Signature sig, Tensor[] inputs) {
            Optional<Program> p = programs.get(sig);
            if (p != null) return p.isPresent() ? p.get().run(inputs) : fn.apply(inputs);
            // First call with this signature: trace (the traced call's own result is the answer), then compile.
            Tracer tracer = new Tracer(inputs);
            Tensor result = traceInto(tracer, fn, inputs);
            if (tracer.drewRandomNumbers()) random.add(sig);
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

        /**
         * The captured graphs of one signature: the forward, and with autograd the backward, which reads what the
         * forward saved and writes the gradients of the inputs that require grad and of the parameters.
         */
        private static final class Graphed {
            private final Tensor[] statics;
            private final GraphCapture.Graph forward, backward;
            private final Tensor staticOut, gradOut;
            private final Tensor[] staticGrads;
            private final List<Tensor> parameters;
            /** Forward replays so far: a backward is valid only right after its own forward's replay. */
            private long replays;

            Graphed(Tensor[] statics, GraphCapture.Graph forward, Tensor staticOut, GraphCapture.Graph backward, Tensor gradOut,
                    Tensor[] staticGrads, List<Tensor> parameters) {
                this.statics = statics;
                this.forward = forward;
                this.staticOut = staticOut;
                this.backward = backward;
                this.gradOut = gradOut;
                this.staticGrads = staticGrads;
                this.parameters = parameters;
            }

            /** Copies {@code inputs} into the static inputs, replays, and returns a copy of the static output. */
            Tensor call(Tensor[] inputs) {
                try (var off = Grad.noGrad()) {
                    for (int i = 0; i < inputs.length; i++) {
                        if (inputs[i] != statics[i]) statics[i].detach().copy_(inputs[i]);
                    }
                }
                forward.replay();
                long replay = ++replays;
                Tensor out = staticOut.detach().clone();
                if (backward == null) return out;
                List<Tensor> edges = new java.util.ArrayList<>();
                for (int i = 0; i < inputs.length; i++) if (statics[i].requiresGrad()) edges.add(inputs[i]);
                for (Tensor p : parameters) if (p.requiresGrad()) edges.add(p);
                return Autograd.record("CudaGraphBackward", out, g -> {
                    if (replays != replay) {
                        throw new IllegalStateException("backward through a CUDA-graphed forward after the forward was replayed again:"
                                + " the replay overwrote what this backward reads; run each backward before the next forward");
                    }
                    try (var off = Grad.noGrad()) {
                        if (g[0] == null) gradOut.zero_();
                        else gradOut.copy_(g[0]);
                    }
                    backward.replay();
                    Tensor[] grads = new Tensor[staticGrads.length];
                    for (int k = 0; k < grads.length; k++) grads[k] = staticGrads[k] == null ? null : staticGrads[k].clone();
                    return grads;
                }, edges.toArray(new Tensor[0]));
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
