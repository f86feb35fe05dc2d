package org.jtorch.jit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Autograd;
import org.jtorch.autograd.Grad;
import org.jtorch.autograd.Gradients;
import org.jtorch.autograd.SavedTensor;
import org.jtorch.backend.Backends;
import org.jtorch.backend.LinalgKernels;
import org.jtorch.memory.MemoryScope;
import org.jtorch.op.Expr;
import org.jtorch.op.Fn;
import org.jtorch.op.FormulaKernel;
import org.jtorch.op.FrontEndOps;
import org.jtorch.op.KernelRegistry;
import org.jtorch.op.LinalgOps;
import org.jtorch.op.NormalizationOps;
import org.jtorch.op.OpDef;
import org.jtorch.op.PointwiseOps;
import org.jtorch.op.ReductionOps;
import org.jtorch.op.Shapes;
import org.jtorch.op.StridedView;
import org.jtorch.ops.Dispatcher;
import org.jtorch.ops.Elementwise;
import org.jtorch.ops.Linalg;
import org.jtorch.ops.Normalization;
import org.jtorch.types.DType;

/**
 * A traced graph compiled into steps: chains of float32 pointwise ops fused into one generated kernel each (their
 * intermediates never reach memory), a chain feeding a sum over trailing dimensions or a softmax over the last one
 * fused into it where the backend can, a chain fed by a linear layer run as the layer's GEMM epilogue, every other op
 * replayed through the dispatcher. Dead ops are dropped. Intermediates are closed after their last use (the caching
 * allocator hands the block to the next step of its size).
 */
final class Program {
    /** One step: a fused group or one replayed op, producing the value of {@code node}. */
    private sealed interface Step permits Fused, FusedSum, FusedSoftmax, FusedLayerNorm, GemmEpilogue, NormalizedGroup, FoldedConvBatchNorm,
            ConvEpilogue, MaskedLinear, Replayed, Reserved {
        Graph.Node node();
    }

    /**
     * A dropout drawn inside a fused group's kernel ({@link FusedGroup#dropouts}): at the dropout's place in the trace,
     * the Philox blocks its eager call would draw are reserved from its generator (so the generator advances, and
     * every random op after it draws, as eagerly), and the group's kernel draws the keep decisions from them; where
     * the group records autograd, the kernel also writes them as a bool mask, which the group's backward reads.
     */
    private record Reserved(Graph.Node node) implements Step {}

    /**
     * A fused group computed at its root's shape by {@code kernel}; with autograd, {@code gradients[k]} computes group
     * input k's gradient (null where none flows or none is needed).
     */
    private record Fused(Graph.Node node, FusedGroup group, FormulaKernel kernel, FormulaKernel[] gradients) implements Step {}

    /**
     * A fused group summed as it is computed: {@code node} is the sum, each of its outputs the sum of {@code rowLength}
     * consecutive values of the group (its trailing dimensions); {@code keepShape} is the group's shape with the summed
     * dimensions as 1, the shape the incoming gradient is broadcast from.
     */
    private record FusedSum(Graph.Node node, Fused group, long rowLength, long[] keepShape) implements Step {}

    /**
     * A fused group normalised as it is computed: {@code node} is a float32 softmax (or log-softmax, {@code log}) over
     * the group's last dimension, the group's only consumer; blocks of rows go through the formula and the softmax
     * while in cache ({@link FormulaKernel#runRowSoftmax}; on CUDA a row a block, one launch).
     */
    private record FusedSoftmax(Graph.Node node, Fused group, boolean log) implements Step {}

    /**
     * A fused group normalised as it is computed: {@code node} is a float32 {@code native_layer_norm} over the group's
     * trailing {@code rowLength} values, the group's only consumer; rows go through the formula and the layer norm in one
     * kernel ({@link FormulaKernel#runRowLayerNorm}: blocks of rows in cache on the CPU, a row a block on CUDA). With
     * autograd the group's values are not stored either: the backward computes them again ({@link #recordLayerNormBackward}).
     * {@code passThrough[k]} says that group input k's gradient is the layer norm's input gradient itself (a residual
     * add's operand), which the backward then hands out without a kernel of its own.
     *
     * <p>{@code keepsValues}: the group has one more reader after the layer norm (a transformer block's residual sum, read
     * by the next layer norm and by the next residual add): the kernel also writes the group's values, once, at the group's
     * slot, and normalises them from the block just written ({@link FormulaKernel#runRowLayerNormKeeping}). With autograd
     * the group's values are an output of the fused node, saved for the layer norm's backward instead of recomputed
     * ({@link #recordKeptLayerNormBackward}).
     */
    private record FusedLayerNorm(Graph.Node node, Fused group, long rowLength, boolean[] passThrough, boolean keepsValues) implements Step {}

    /**
     * A fused group fed by a float32 linear layer (or a matmul by a matrix, the same product) used by it alone and
     * computed at the layer's shape: the group runs as the layer's GEMM epilogue, on each block of the product while the
     * block is in cache ({@link Linalg#linear(Tensor, Tensor, Tensor, java.util.function.Function)}). {@code slot} is
     * the layer's index among the group's inputs. Without
     * autograd the group writes into the product's own memory; with it, the product stays (its linear backward and the
     * group's recomputing backward read it) and the group writes a second tensor.
     *
     * <p>{@code activation} (null for other groups) says that the group is one ReLU or tanh-GELU of the product alone:
     * a backend whose GEMM applies it itself ({@link LinalgKernels#mmBiasActivation}, cuBLASLt's epilogues on CUDA)
     * runs layer and group as one kernel, the op {@code _linear_activation} ({@link Linalg#linearActivation}), with autograd
     * too: the GEMM also writes GELU's input for its backward, and a ReLU's backward reads the sign of its output.
     * {@code declined} is set once the backend's test ({@link Linalg#fusesLinearActivation}) has said no, so that later
     * calls do not ask again.
     */
    private record GemmEpilogue(Graph.Node node, Fused group, Graph.Node producer, int slot, LinalgKernels.Activation activation,
                                java.util.concurrent.atomic.AtomicBoolean declined) implements Step {}

    /**
     * A fused group fed by a float32 batch norm in training ({@code producer}) used by it alone and of the group's
     * shape (ReLU after a convolution's batch norm; a residual add and ReLU): the statistics are one pass over the
     * batch norm's input, then one generated kernel normalises and computes the group, {@code kernel} being the
     * group's formula with the batch norm's output written as {@code (x - mean) * invstd * weight + bias}; the batch
     * norm's output never reaches memory. Its inputs are the group's other inputs in order, then {@code x},
     * {@code mean}, {@code invstd}, {@code weight} and {@code bias} ([C, 1, ...] views; the last two where given).
     * With autograd one node computes the gradient at the batch norm's output with {@code gradients[slot]} (the
     * group's intermediates and the normalised values recomputed), then the batch norm's backward kernel from the
     * saved statistics; the group's other inputs take their gradient kernels as a fused group's do.
     *
     * <p>{@code conv}, where not null, is the float32 2-D convolution feeding the batch norm alone: it runs at the
     * group's place with an epilogue that reads each block of its output as the thread that computed it finishes it,
     * while the block is in that core's cache, and gathers the block's per-channel moments; the statistics come from
     * those (combined in a fixed order, so they do not depend on the threads' schedule) instead of a second pass over
     * the output. The convolution's output is still stored: the batch norm's backward reads it.
     */
    private record NormalizedGroup(Graph.Node node, Fused group, Graph.Node producer, int slot, FormulaKernel kernel,
                                   FormulaKernel[] gradients, Graph.Node conv) implements Step {}

    /**
     * A convolution whose only consumer is a batch norm in evaluation, folded into it (inference only): the batch
     * norm's per-channel scale and shift are applied to the convolution's weight and bias ({@link BatchNormFolding},
     * folded again whenever a parameter or statistic has changed since), and one convolution replaces the two passes.
     * {@code node} is the batch norm.
     */
    private record FoldedConvBatchNorm(Graph.Node node, Graph.Node conv, BatchNormFolding folding) implements Step {}

    /**
     * A fused group fed by a float32 2-D convolution (or by a batch norm in evaluation folded into one, {@code bn}, with
     * its {@code folding}; else null) used by it alone and of the group's shape, in inference: the group runs as the
     * convolution's epilogue, on each block of the output as the thread that computed it finishes it, while the block
     * is in that core's cache ({@link org.jtorch.backend.ConvolutionKernels#conv2dWithEpilogue}), writing into the
     * convolution's own output. {@code slot} is the producer's (the convolution's, or the batch norm's) index among the
     * group's inputs. ReLU after a convolution's batch norm; add and ReLU at a residual block's end.
     *
     * <p>Where the convolution has a bias (a folded batch norm always gives one), {@code biased} is the group's formula
     * with the producer's value written as {@code product + bias} (the bias its last input, per channel): the
     * convolution then runs without its bias, and the epilogue adds it in the same pass. Null without a bias.
     */
    private record ConvEpilogue(Graph.Node node, Fused group, Graph.Node conv, Graph.Node bn, BatchNormFolding folding, int slot,
                                FormulaKernel biased) implements Step {}

    /**
     * A float32 linear layer, replayed, whose input is the output of a linear + ReLU layer read by it alone (see
     * {@link #inputMasks}): its backward writes its input's gradient through that ReLU's mask.
     */
    private record MaskedLinear(Graph.Node node) implements Step {}

    private record Replayed(Graph.Node node) implements Step {}

    private final Graph graph;
    /** Whether this program records autograd: grad mode was on and an input or captured tensor required grad. */
    private final boolean differentiable;
    private final List<Step> steps = new ArrayList<>();
    /** For each value's slot ({@link Graph#slot}), the index of the last step reading it (its value is closed after that step). */
    private final Map<Integer, Integer> lastUse = new HashMap<>();
    /**
     * The later outputs of multi-output nodes that some live node reads, or that the program returns: a replay keeps
     * these and closes the others at once (where none is read, the op runs asking for its first output alone).
     */
    private final java.util.Set<Graph.Output> liveOutputs = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    /**
     * Backward fusion, with autograd: a float32 linear layer (run at a linear + ReLU layer's place, or replayed as a
     * {@link MaskedLinear}) whose input is the output of a linear + ReLU layer read by it alone, mapped to that ReLU's
     * gradient kernel. The layer's backward applies it to its input's gradient in the GEMM's epilogue, on each block of
     * the product while the block is in cache, and the ReLU layer's own backward (its node in {@link #premasked}) takes
     * that gradient as it comes: the ReLU's backward pass, and the tensor it wrote, are gone.
     */
    private final Map<Graph.Node, FormulaKernel> inputMasks = new IdentityHashMap<>();
    /**
     * The linear + ReLU layers (their ReLU nodes) whose incoming gradient is already masked by the layer reading them
     * ({@link #inputMasks}). Masking twice gives the same values, so this only saves work: a layer whose consumer's
     * backward took another path (a backend's own fused GEMM) is still right.
     */
    private final java.util.Set<Graph.Node> premasked = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    /** Whether some group draws a dropout's keep decisions inside its kernel ({@link Reserved}). */
    private boolean draws;

    Program(Graph graph, boolean differentiable) {
        this.graph = graph;
        this.differentiable = differentiable;
        plan();
    }

    // ------------------------------------------------------------------ planning

    private void plan() {
        eliminateCommonSubexpressions();
        Map<Graph.Node, Integer> uses = new IdentityHashMap<>();
        Map<Graph.Node, Boolean> live = new IdentityHashMap<>();
        markLive(graph.output, live);
        // An in-place op is live for its effect on the tensor it writes; a random op for its draws, which advance its
        // generator as the eager call did even where its value goes unread; an op that checks its inputs' values for the
        // error it raises on bad ones.
        for (Graph.Node n : graph.nodes) if (n.inPlace || n.op.isRandom() || n.op.checksValues()) markLive(n, live);
        if (graph.output instanceof Graph.Output o) liveOutputs.add(o);
        for (Graph.Node n : graph.nodes) {
            if (live.containsKey(n)) for (Graph.Value v : n.inputs) if (v instanceof Graph.Output o) liveOutputs.add(o);
        }
        if (graph.output instanceof Graph.Node out) uses.merge(out, 1, Integer::sum);
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n)) continue;
            // Consumers count once however often they read a value (x * x reads x once in a fused formula).
            for (Graph.Value v : new java.util.LinkedHashSet<>(n.inputs)) if (v instanceof Graph.Node p) uses.merge(p, 1, Integer::sum);
        }
        // A fusable node is folded into its only consumer when that consumer is fusable and of the same size.
        Map<Graph.Node, Boolean> inlined = new IdentityHashMap<>();
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n) || !fusable(n)) continue;
            for (Graph.Value v : n.inputs) {
                if (v instanceof Graph.Node p && fusable(p) && uses.get(p) == 1 && Shapes.numel(p.shape) == Shapes.numel(n.shape)
                        && p.device.equals(n.device) && !(differentiable && FusedGroup.isDropout(n) && callsErf(p))) {
                    inlined.put(p, true);
                }
            }
        }
        splitOversizedGroups(live, inlined);
        // A group whose only consumer sums its trailing dimensions, or takes a softmax over the last one, is fused into
        // that consumer (even a single op: x * y summed is a dot product that never stores x * y).
        Map<Graph.Node, Graph.Node> summedBy = new IdentityHashMap<>();
        for (Graph.Node n : graph.nodes) {
            if (live.containsKey(n) && n.inputs.size() == 1 && n.inputs.get(0) instanceof Graph.Node p && fusable(p)
                    && !inlined.containsKey(p) && uses.get(p) == 1 && p.device.equals(n.device) && summedRow(n, p) >= 0) {
                summedBy.put(p, n);
            }
            if (live.containsKey(n) && (softmaxOverRows(n) || layerNormOverRows(n) > 0 && (!differentiable || fusesTrainingLayerNorm(n)))
                    && n.inputs.get(0) instanceof Graph.Node p && fusable(p) && !inlined.containsKey(p) && uses.get(p) == 1
                    && p.device.equals(n.device)) {
                summedBy.put(p, n);
            } else if (live.containsKey(n) && layerNormOverRows(n) > 0 && (!differentiable || fusesTrainingLayerNorm(n))
                    && n.inputs.get(0) instanceof Graph.Node p && keepsForLaterReader(p, n, uses, live)) {
                summedBy.put(p, n);
            }
        }
        // Groups of two ops or more; a group that cannot be compiled (its backward is not a formula) is replayed op by op.
        Map<Graph.Node, Step> groups = new IdentityHashMap<>();
        // Groups whose values a layer norm's step writes for a later reader: no step of their own, but an input (not a
        // member) of any group after them.
        java.util.Set<Graph.Node> keptByNorm = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n) || inlined.containsKey(n) || !fusable(n)) continue;
            FusedGroup g = FusedGroup.of(n, inlined::containsKey);
            Graph.Node sum = summedBy.get(n);
            boolean draws = !g.dropouts.isEmpty();
            // A group that draws runs alone or fused into a layer norm: the other fusions' kernels do not draw.
            if (draws && sum != null && sum.op != NormalizationOps.NATIVE_LAYER_NORM) sum = null;
            Graph.Node producer = sum == null && !draws ? epilogueProducer(g, uses) : null;
            Graph.Node normalizer = sum == null && producer == null && !draws ? batchNormProducer(g, uses) : null;
            Graph.Node convolution = sum == null && producer == null && normalizer == null && !draws ? convolutionProducer(g, uses) : null;
            if (g.ops < 2 && sum == null && producer == null && normalizer == null && convolution == null) continue;
            Fused f = compile(g);
            if (f == null) {
                for (Graph.Node member : g.nodes()) inlined.remove(member);
            } else if (sum != null && sum.op == NormalizationOps.NATIVE_LAYER_NORM) {
                boolean keeps = uses.get(n) > 1;
                if (keeps ? f.kernel().layerNormsRowsKeeping()
                        : f.kernel().layerNormsRows() && (!draws || f.kernel().layerNormsRowsDrawing())) {
                    groups.put(sum, new FusedLayerNorm(sum, f, layerNormOverRows(sum), passThrough(g, f), keeps));
                    if (keeps) keptByNorm.add(n);
                    else inlined.put(n, true);
                } else if (g.ops >= 2) {
                    groups.put(n, f);
                }
            } else if (sum != null && sum.op != ReductionOps.SUM && f.kernel().softmaxesRows()) {
                groups.put(sum, new FusedSoftmax(sum, f, sum.op == ReductionOps.LOG_SOFTMAX));
                inlined.put(n, true);
            } else if (sum != null && sum.op == ReductionOps.SUM && f.kernel().sumsRows()) {
                groups.put(sum, new FusedSum(sum, f, summedRow(sum, n), keepShape(sum, n)));
                inlined.put(n, true);
            } else if (producer != null) {
                groups.put(n, new GemmEpilogue(n, f, producer, g.inputs.indexOf(producer), gemmActivation(g),
                        new java.util.concurrent.atomic.AtomicBoolean()));
                inlined.put(producer, true);
            } else if (normalizer != null) {
                Graph.Node conv = statisticsConvolution(normalizer, uses);
                groups.put(n, normalized(f, normalizer, conv));
                inlined.put(normalizer, true);
                if (conv != null) inlined.put(conv, true);
            } else if (convolution != null) {
                boolean folded = convolution.op == FrontEndOps.BATCH_NORM;
                Graph.Node conv = folded ? (Graph.Node) convolution.inputs.get(0) : convolution;
                int slot = g.inputs.indexOf(convolution);
                FormulaKernel biased = null;
                if (folded || conv.inputs.get(2) != null) {
                    Expr plusBias = new Expr.Math(Fn.ADD, List.of(new Expr.In(slot, Graph.name(convolution)), new Expr.In(g.inputs.size(), "bias")));
                    biased = KernelRegistry.formulaCompiler(n.device.type())
                            .compile(withInputs(g.formula, k -> k == slot ? plusBias : new Expr.In(k, Graph.name(g.inputs.get(k)))), g.inputs.size() + 1);
                }
                groups.put(n, new ConvEpilogue(n, f, conv, folded ? convolution : null, folded ? new BatchNormFolding(convolution.scalars[2]) : null,
                        slot, biased));
                inlined.put(convolution, true);
                inlined.put(conv, true);
            } else if (g.ops >= 2) {
                groups.put(n, f);
            }
        }
        if (differentiable) planMaskedLinears(groups, inlined, uses, live);
        if (!differentiable) {
            for (Graph.Node n : graph.nodes) {
                if (live.containsKey(n) && !inlined.containsKey(n) && foldsIntoConv(n, uses) && !graph.mutated.contains(n)
                        && !graph.mutated.contains(n.inputs.get(0))) {
                    Graph.Node conv = (Graph.Node) n.inputs.get(0);
                    groups.put(n, new FoldedConvBatchNorm(n, conv, new BatchNormFolding(n.scalars[2])));
                    inlined.put(conv, true);
                }
            }
        }
        java.util.Set<Graph.Node> drawnInside = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (Step step : groups.values()) {
            Fused f = fusedOf(step);
            if (f != null) drawnInside.addAll(f.group().dropouts);
        }
        for (Graph.Node n : graph.nodes) {
            if (drawnInside.contains(n)) steps.add(new Reserved(n));
            if (!live.containsKey(n) || inlined.containsKey(n) || keptByNorm.contains(n)) continue;
            Step f = groups.get(n);
            steps.add(f != null ? f : new Replayed(n));
        }
        draws = !drawnInside.isEmpty();
        for (int s = 0; s < steps.size(); s++) {
            for (Graph.Value v : reads(steps.get(s))) if (Graph.slot(v) >= 0) lastUse.put(Graph.slot(v), s);
        }
    }

    /** The identity of a node's computation: its op, its inputs (as values) and its arguments. */
    private record Computation(OpDef op, List<Graph.Value> inputs, List<Double> scalars, List<Integer> dims, boolean keepdim) {
        static Computation of(Graph.Node n) {
            List<Double> scalars = new ArrayList<>();
            for (double d : n.scalars) scalars.add(d);
            List<Integer> dims = new ArrayList<>();
            if (n.reduce != null) for (int d : n.reduce.dims()) dims.add(d);
            // Inputs compare by identity (values are not records): an IdentityList would do as well.
            return new Computation(n.op, java.util.Collections.unmodifiableList(new ArrayList<>(n.inputs)), scalars, dims,
                    n.reduce != null && n.reduce.keepdim());
        }
    }

    /**
     * Common subexpressions: a node that repeats an earlier node's computation (the same op on the same values with
     * the same arguments) is replaced by it. Random ops are not: two draws are two draws. Nor are values written in
     * place, or reads of them: two {@code zeros} are two buffers once one is written, and a read after a write differs
     * from the same read before it. Nor are {@code empty}'s: two are two buffers, written or not.
     */
    private void eliminateCommonSubexpressions() {
        Map<Computation, Graph.Node> seen = new HashMap<>();
        Map<Graph.Node, Graph.Node> replaced = new IdentityHashMap<>();
        for (Graph.Node n : graph.nodes) {
            for (int k = 0; k < n.inputs.size(); k++) n.inputs.set(k, replacement(n.inputs.get(k), replaced));
            // An in-place op repeats its effect; a read of a value written in place depends on where it stands; a value
            // written in place later (zeros then exponential_ or copy_) is its own buffer, whatever made it.
            if (n.inPlace || n.op.isRandom() || readsMutated(n) || graph.mutated.contains(n) || FrontEndOps.uninitialised(n.op)) continue;
            Graph.Node first = seen.putIfAbsent(Computation.of(n), n);
            // A multi-output node stands in for another only with the same outputs kept (the op skips some unasked).
            if (first != null && sameOutputs(first, n)) replaced.put(n, first);
        }
        graph.output = replacement(graph.output, replaced);
    }

    /** {@code v}, or what stands for it once the nodes in {@code replaced} are replaced: the same output of their replacement. */
    private static Graph.Value replacement(Graph.Value v, Map<Graph.Node, Graph.Node> replaced) {
        if (v instanceof Graph.Node p && replaced.containsKey(p)) return replaced.get(p);
        if (v instanceof Graph.Output o && replaced.containsKey(o.node)) return replaced.get(o.node).outputs[o.index - 1];
        return v;
    }

    /**
     * Splits each group whose kernel, or one of its gradients' kernels, would not run at full speed as one
     * ({@link FormulaKernel.Compiler#fitsOneKernel}: on the CPU, C2's inlining cutoff), cutting out its largest op
     * (with that op's own producers) until it fits. Consumers first, so that a cut op is checked as a group in turn.
     */
    private void splitOversizedGroups(Map<Graph.Node, Boolean> live, Map<Graph.Node, Boolean> inlined) {
        for (int k = graph.nodes.size() - 1; k >= 0; k--) {
            Graph.Node n = graph.nodes.get(k);
            if (!live.containsKey(n) || inlined.containsKey(n) || !fusable(n)) continue;
            FormulaKernel.Compiler compiler = KernelRegistry.formulaCompiler(n.device.type());
            while (true) {
                FusedGroup g = FusedGroup.of(n, inlined::containsKey);
                if (g.ops < 2 || fitsOneKernel(compiler, g)) break;
                Graph.Node largest = null;
                int most = -1;
                for (Graph.Node m : g.nodes()) {
                    int size = m == n || m.op.formula() == null ? -1 : compiler.size(m.op.formula(), m.dtype);
                    if (size > most) {
                        most = size;
                        largest = m;
                    }
                }
                if (largest == null) break;
                inlined.remove(largest);
            }
        }
    }

    private boolean fitsOneKernel(FormulaKernel.Compiler compiler, FusedGroup g) {
        DType dtype = g.root.node().dtype;
        if (!compiler.fitsOneKernel(g.formula, dtype)) return false;
        if (!differentiable) return true;
        try {
            for (Expr gradient : g.gradients()) if (gradient != null && !compiler.fitsOneKernel(gradient, dtype)) return false;
        } catch (FusedGroup.NotAFormula e) {
            // replayed op by op in autograd anyway
        }
        return true;
    }

    private static boolean sameOutputs(Graph.Node a, Graph.Node b) {
        if (a.outputs.length != b.outputs.length) return false;
        for (int k = 0; k < a.outputs.length; k++) if ((a.outputs[k] == null) != (b.outputs[k] == null)) return false;
        return true;
    }

    private Fused compile(FusedGroup g) {
        FormulaKernel.Compiler compiler = KernelRegistry.formulaCompiler(g.root.node().device.type());
        FormulaKernel[] gradients = null;
        if (differentiable) {
            Expr[] grads;
            try {
                grads = g.gradients();
            } catch (FusedGroup.NotAFormula e) {
                return null;
            }
            gradients = new FormulaKernel[grads.length];
            for (int k = 0; k < grads.length; k++) {
                if (grads[k] == null) continue;
                // Inputs with the same gradient (both operands of relu(a + b)) share one kernel, and one run of it.
                int same = java.util.Arrays.asList(grads).indexOf(grads[k]);
                gradients[k] = same < k ? gradients[same] : compiler.compile(grads[k], grads.length + 1 + g.dropouts.size());
            }
        }
        return new Fused(g.root.node(), g, compiler.compile(g.formula, g.inputs.size() + g.dropouts.size()), gradients);
    }

    /**
     * The float32 linear layer (or matmul of a matrix or batch of rows by a matrix) among {@code g}'s inputs whose GEMM
     * can run {@code g} as its epilogue: read by the group alone, of the group's shape (the group computes over the product's blocks), on its device, and not written in
     * place, nor its operands (the layer runs at the group's place in the order); null where none.
     */
    private Graph.Node epilogueProducer(FusedGroup g, Map<Graph.Node, Integer> uses) {
        Graph.Node root = g.root.node();
        for (Graph.Value v : g.inputs) {
            if (v instanceof Graph.Node p && (p.op == LinalgOps.LINEAR || isMatmulByMatrix(p)) && p.dtype == DType.FLOAT32 && uses.get(p) == 1
                    && java.util.Arrays.equals(p.shape, root.shape) && p.device.equals(root.device) && !graph.mutated.contains(p)
                    && !readsMutated(p)) {
                return p;
            }
        }
        return null;
    }

    /**
     * Finds the linear layers that can apply the ReLU mask of the layer before them in their backward ({@link
     * #inputMasks}): a float32 linear layer, not reading what is written in place, whose input is the output of a
     * linear + ReLU layer ({@link #reluLayer}) read by it alone, of two dimensions, on its device, not the program's
     * output nor written in place (its gradient is seen by no one but that layer's backward). The reading layer runs
     * either at another linear + ReLU layer's place or, left alone, as a {@link MaskedLinear}.
     */
    private void planMaskedLinears(Map<Graph.Node, Step> groups, Map<Graph.Node, Boolean> inlined, Map<Graph.Node, Integer> uses,
                                   Map<Graph.Node, Boolean> live) {
        Map<Graph.Node, GemmEpilogue> reluLayers = new IdentityHashMap<>();
        Map<Graph.Node, GemmEpilogue> byProducer = new IdentityHashMap<>();
        for (Step s : groups.values()) {
            if (s instanceof GemmEpilogue e && reluLayer(e)) {
                reluLayers.put(e.node(), e);
                byProducer.put(e.producer(), e);
            }
        }
        for (Graph.Node n : graph.nodes) {
            if (!live.containsKey(n) || n.op != LinalgOps.LINEAR || n.dtype != DType.FLOAT32 || n.inPlace || graph.mutated.contains(n)
                    || readsMutated(n) || !(n.inputs.get(0) instanceof Graph.Node h) || !(reluLayers.get(h) instanceof GemmEpilogue before)) {
                continue;
            }
            if (uses.get(h) != 1 || h == graph.output || graph.mutated.contains(h) || h.shape.length != 2 || !h.device.equals(n.device)) continue;
            boolean replayed = !inlined.containsKey(n) && !groups.containsKey(n);
            if (!replayed && !byProducer.containsKey(n)) continue;
            inputMasks.put(n, before.group().gradients()[before.slot()]);
            premasked.add(h);
            if (replayed) groups.put(n, new MaskedLinear(n));
        }
    }

    /**
     * Whether {@code e} is a float32 linear layer (not a matmul) of a 2-D input followed by its lone ReLU, with the
     * ReLU's gradient compiled: its backward can be one node ({@link #recordLinearBackward}).
     */
    private static boolean reluLayer(GemmEpilogue e) {
        return e.activation() == LinalgKernels.Activation.RELU && e.producer().op == LinalgOps.LINEAR && e.producer().inputs.get(0) != null
                && e.producer().inputs.get(0).shape().length == 2 && e.group().gradients() != null && e.group().gradients()[e.slot()] != null;
    }

    /** The activation a GEMM could apply for {@code g}: where {@code g} is one ReLU or tanh-GELU of its only input. */
    private static LinalgKernels.Activation gemmActivation(FusedGroup g) {
        Graph.Node root = g.root.node();
        if (g.ops != 1 || g.inputs.size() != 1 || root.inputs.size() != 1) return null;
        if (root.op == PointwiseOps.RELU) return LinalgKernels.Activation.RELU;
        if (root.op == PointwiseOps.GELU_TANH) return LinalgKernels.Activation.GELU_TANH;
        return null;
    }

    /**
     * The float32 batch norm in training among {@code g}'s inputs that can be normalised inside the group's kernel:
     * read by the group alone, of the group's shape, on its device, its input float32 too, and its running statistics
     * read by no op between it and the group (they are updated at the group's place in the order); null where none.
     */
    private Graph.Node batchNormProducer(FusedGroup g, Map<Graph.Node, Integer> uses) {
        Graph.Node root = g.root.node();
        for (Graph.Value v : g.inputs) {
            if (v instanceof Graph.Node p && p.op == FrontEndOps.BATCH_NORM && p.scalars[0] != 0 && p.dtype == DType.FLOAT32
                    && uses.get(p) == 1 && p.shape.length >= 2 && Shapes.numel(p.shape) > 0 && java.util.Arrays.equals(p.shape, root.shape)
                    && p.device.equals(root.device) && p.inputs.get(0) != null && p.inputs.get(0).dtype() == DType.FLOAT32
                    && !graph.mutated.contains(p) && !readsMutated(p) && !runningStatisticsReadBefore(p, root)) {
                return p;
            }
        }
        return null;
    }

    /**
     * The float32 2-D convolution of a batched input that feeds training-mode batch norm {@code bn} alone, on its device,
     * neither written in place nor reading what is (it runs at the fused group's place in the order): its epilogue
     * can gather the batch norm's statistics ({@link NormalizedGroup}); null where none.
     */
    private Graph.Node statisticsConvolution(Graph.Node bn, Map<Graph.Node, Integer> uses) {
        if (!(bn.inputs.get(0) instanceof Graph.Node conv) || conv.op != FrontEndOps.CONV2D || uses.get(conv) != 1
                || conv.dtype != DType.FLOAT32 || conv.shape.length != 4 || conv.inputs.get(0) == null
                || conv.inputs.get(0).shape().length != 4 || !conv.device.equals(bn.device) || graph.mutated.contains(conv)
                || readsMutated(conv)) {
            return null;
        }
        return conv;
    }

    /** Whether a node after batch norm {@code bn} and before {@code root} reads its running mean or variance. */
    private boolean runningStatisticsReadBefore(Graph.Node bn, Graph.Node root) {
        for (Graph.Node n : graph.nodes.subList(bn.id + 1, root.id)) {
            for (Graph.Value v : n.inputs) {
                if (v != null && (v == bn.inputs.get(1) || v == bn.inputs.get(2))) return true;
            }
        }
        return false;
    }

    /** {@code f} with its input {@code bn} (a batch norm) computed inside its kernels: see {@link NormalizedGroup}. */
    private NormalizedGroup normalized(Fused f, Graph.Node bn, Graph.Node conv) {
        FusedGroup g = f.group();
        int slot = g.inputs.indexOf(bn);
        int others = g.inputs.size() - 1;
        boolean weight = bn.inputs.get(3) != null;
        boolean bias = bn.inputs.size() > 4 && bn.inputs.get(4) != null;
        int count = others + 3 + (weight ? 1 : 0) + (bias ? 1 : 0);
        Expr y = new Expr.Math(Fn.MUL, List.of(new Expr.Math(Fn.SUB, List.of(new Expr.In(others, "x"), new Expr.In(others + 1, "mean"))),
                new Expr.In(others + 2, "invstd")));
        if (weight) y = new Expr.Math(Fn.MUL, List.of(y, new Expr.In(others + 3, "weight")));
        if (bias) y = new Expr.Math(Fn.ADD, List.of(y, new Expr.In(count - 1, "bias")));
        Expr normalizedValue = y;
        java.util.function.IntFunction<Expr> input = k -> k == slot ? normalizedValue
                : k == g.inputs.size() ? new Expr.In(count, "grad") : new Expr.In(k < slot ? k : k - 1, Graph.name(g.inputs.get(k)));
        FormulaKernel.Compiler compiler = KernelRegistry.formulaCompiler(f.node().device.type());
        FormulaKernel kernel = compiler.compile(withInputs(g.formula, input), count);
        FormulaKernel[] gradients = null;
        if (f.gradients() != null) {
            Expr[] grads = g.gradients();
            gradients = new FormulaKernel[grads.length];
            for (int k = 0; k < grads.length; k++) {
                if (grads[k] == null) continue;
                int same = java.util.Arrays.asList(grads).indexOf(grads[k]);
                gradients[k] = same < k ? gradients[same] : compiler.compile(withInputs(grads[k], input), count + 1);
            }
        }
        return new NormalizedGroup(f.node(), f, bn, slot, kernel, gradients, conv);
    }

    /** {@code e} with each input {@code k} replaced by {@code input.apply(k)}. */
    private static Expr withInputs(Expr e, java.util.function.IntFunction<Expr> input) {
        return switch (e) {
            case Expr.In in -> input.apply(in.index());
            case Expr.Math m -> new Expr.Math(m.fn(), m.args().stream().map(a -> withInputs(a, input)).toList());
            default -> e;
        };
    }

    /** {@code a @ b} with {@code a} of two dimensions or more and {@code b} a matrix: {@code linear(a, b.T)}. */
    private static boolean isMatmulByMatrix(Graph.Node n) {
        return n.op == FrontEndOps.MATMUL && n.inputs.size() == 2 && n.inputs.get(0) != null && n.inputs.get(1) != null
                && n.inputs.get(0).shape().length >= 2 && n.inputs.get(1).shape().length == 2;
    }

    /**
     * In inference, the float32 value among {@code g}'s inputs that a convolution's epilogue can feed the group from: a
     * 2-D convolution of a batched input, or a batch norm in evaluation folded into one ({@link #foldsIntoConv}), read
     * by the group alone, of the group's shape, on its device, neither written in place nor reading what is (the
     * convolution runs at the group's place in the order); null where none.
     */
    private Graph.Node convolutionProducer(FusedGroup g, Map<Graph.Node, Integer> uses) {
        if (differentiable) return null;
        Graph.Node root = g.root.node();
        for (Graph.Value v : g.inputs) {
            if (!(v instanceof Graph.Node p) || p.dtype != DType.FLOAT32 || uses.get(p) != 1 || !java.util.Arrays.equals(p.shape, root.shape)
                    || !p.device.equals(root.device) || p.shape.length != 4 || graph.mutated.contains(p) || readsMutated(p)) {
                continue;
            }
            Graph.Node conv = p.op == FrontEndOps.BATCH_NORM && foldsIntoConv(p, uses) ? (Graph.Node) p.inputs.get(0) : p;
            if (conv.op == FrontEndOps.CONV2D && conv.inputs.get(0).shape().length == 4 && !graph.mutated.contains(conv) && !readsMutated(conv)) {
                return p;
            }
        }
        return null;
    }

    /**
     * Whether {@code n} is a batch norm in evaluation with running statistics whose input is a convolution used by it
     * alone, of the same floating dtype: then the batch norm folds into the convolution.
     */
    private static boolean foldsIntoConv(Graph.Node n, Map<Graph.Node, Integer> uses) {
        if (n.op != FrontEndOps.BATCH_NORM || n.scalars[0] != 0 || n.inputs.get(1) == null || n.inputs.get(2) == null) return false;
        if (!(n.inputs.get(0) instanceof Graph.Node conv) || conv.op != FrontEndOps.CONV2D || uses.get(conv) != 1) return false;
        return conv.dtype == n.dtype && conv.dtype.isFloatingPoint() && conv.device.equals(n.device);
    }

    /**
     * The number of consecutive values of {@code p} each output of {@code sum} adds when {@code sum} is a float32 sum
     * over trailing dimensions of {@code p} (all of them, or its last dims in any order), else -1.
     */
    private static long summedRow(Graph.Node sum, Graph.Node p) {
        if (sum.op != ReductionOps.SUM || sum.dtype != DType.FLOAT32 || sum.reduce == null) return -1;
        int rank = p.shape.length;
        boolean[] reduced = reducedDims(sum, rank);
        if (reduced == null) return -1;
        long row = 1;
        boolean inner = true;
        for (int d = rank - 1; d >= 0; d--) {
            if (reduced[d] && !inner) return -1;
            if (reduced[d]) row *= p.shape[d];
            else inner = false;
        }
        return row;
    }

    /** Whether {@code n} is a float32 softmax or log-softmax over its last dimension, of a float32 value. */
    private static boolean softmaxOverRows(Graph.Node n) {
        if (n.op != ReductionOps.SOFTMAX && n.op != ReductionOps.LOG_SOFTMAX || n.dtype != DType.FLOAT32 || n.scalars.length < 1) return false;
        int rank = n.shape.length;
        int dim = (int) n.scalars[0];
        return rank > 0 && (dim == -1 || dim == rank - 1) && n.inputs.get(0) != null && n.inputs.get(0).dtype() == DType.FLOAT32;
    }

    /**
     * The row length of a float32 {@code native_layer_norm} of a float32 value whose weight and bias (where given) are
     * float32 too, or 0 where {@code n} is none.
     */
    private static long layerNormOverRows(Graph.Node n) {
        if (n.op != NormalizationOps.NATIVE_LAYER_NORM || n.dtype != DType.FLOAT32 || n.scalars.length < 2) return 0;
        for (Graph.Value v : n.inputs) if (v != null && v.dtype() != DType.FLOAT32) return 0;
        Graph.Value x = n.inputs.get(0);
        int k = (int) n.scalars[0];
        if (x == null || k < 1 || k > n.shape.length) return 0;
        long row = 1;
        for (int d = n.shape.length - k; d < n.shape.length; d++) row *= n.shape[d];
        return row;
    }

    /**
     * Whether layer norm {@code n} is fused with its producer in a program with autograd ({@link FusedLayerNorm}'s
     * backward): not where the program reads its statistics (they would need gradients of their own), nor with
     * {@code -Djtorch.jit.trainingLayerNorm=false}, which keeps the producer's values stored as before.
     */
    private boolean fusesTrainingLayerNorm(Graph.Node n) {
        if (!TRAINING_LAYER_NORM) return false;
        for (Graph.Output o : n.outputs) if (o != null && liveOutputs.contains(o)) return false;
        return true;
    }

    /** For each input of group {@code g}, whether its gradient formula is the incoming gradient itself; null without autograd. */
    private static boolean[] passThrough(FusedGroup g, Fused f) {
        if (f.gradients() == null) return null;
        Expr[] grads = g.gradients();
        boolean[] same = new boolean[grads.length];
        for (int k = 0; k < grads.length; k++) same[k] = grads[k] instanceof Expr.In in && in.index() == grads.length;
        return same;
    }

    private static final boolean TRAINING_LAYER_NORM = !"false".equals(System.getProperty("jtorch.jit.trainingLayerNorm"));

    /**
     * Whether fusable {@code p}, read by layer norm {@code n} and by exactly one other reader that comes after {@code n}
     * (the fused step runs at the layer norm's place), is fused into the norm keeping its values for that reader. Three
     * readers or more are not: their gradients would be summed in an order other than eager's.
     * {@code -Djtorch.jit.keptLayerNorm=false} (read when a program is planned) turns it off. The char GPT's compiled
     * step is level with and without it (one JVM, alternating: branch fuse18; the 5% loss seen across JVMs in branch
     * fuse17 did not repeat), the 16M residual block 3-6% faster with it (docs/BENCHMARKS.md, branch fuse17).
     */
    private boolean keepsForLaterReader(Graph.Node p, Graph.Node n, Map<Graph.Node, Integer> uses, Map<Graph.Node, Boolean> live) {
        if ("false".equals(System.getProperty("jtorch.jit.keptLayerNorm")) || !fusable(p) || uses.get(p) != 2 || !p.device.equals(n.device)) return false;
        for (Graph.Node m : graph.nodes) {
            if (m == n) return true;
            if (live.containsKey(m) && m.inputs.contains(p)) return false;
        }
        return false;
    }


    /** Which of {@code rank} dimensions {@code sum} reduces (all for no dims), or null for a repeated or invalid dim. */
    private static boolean[] reducedDims(Graph.Node sum, int rank) {
        int[] dims = sum.reduce.dims();
        boolean[] reduced = new boolean[rank];
        if (dims.length == 0) {
            java.util.Arrays.fill(reduced, true);
            return reduced;
        }
        for (int d : dims) {
            int w = d < 0 ? d + rank : d;
            if (w < 0 || w >= rank || reduced[w]) return null;
            reduced[w] = true;
        }
        return reduced;
    }

    /** {@code p}'s shape with the dimensions {@code sum} reduces as 1. */
    private static long[] keepShape(Graph.Node sum, Graph.Node p) {
        boolean[] reduced = reducedDims(sum, p.shape.length);
        long[] keep = p.shape.clone();
        for (int d = 0; d < keep.length; d++) if (reduced[d]) keep[d] = 1;
        return keep;
    }

    private static void markLive(Graph.Value v, Map<Graph.Node, Boolean> live) {
        if (v instanceof Graph.Output o) v = o.node;
        if (!(v instanceof Graph.Node n) || live.containsKey(n)) return;
        live.put(n, true);
        for (Graph.Value in : n.inputs) if (in != null) markLive(in, live);
    }

    private static List<Graph.Value> reads(Step s) {
        return switch (s) {
            case Fused f -> f.group().inputs;
            case FusedSum f -> f.group().group().inputs;
            case FusedSoftmax f -> f.group().group().inputs;
            case FusedLayerNorm f -> {
                List<Graph.Value> in = new ArrayList<>(f.group().group().inputs);
                for (Graph.Value v : f.node().inputs.subList(1, f.node().inputs.size())) if (v != null) in.add(v);
                yield in;
            }
            case GemmEpilogue e -> {
                List<Graph.Value> in = new ArrayList<>(e.group().group().inputs);
                in.remove(e.slot());
                in.addAll(e.producer().inputs);
                yield in;
            }
            case NormalizedGroup e -> {
                List<Graph.Value> in = new ArrayList<>(e.group().group().inputs);
                in.remove(e.slot());
                List<Graph.Value> bnInputs = e.producer().inputs;
                for (Graph.Value v : e.conv() == null ? bnInputs : bnInputs.subList(1, bnInputs.size())) if (v != null) in.add(v);
                if (e.conv() != null) for (Graph.Value v : e.conv().inputs) if (v != null) in.add(v);
                yield in;
            }
            case FoldedConvBatchNorm f -> {
                List<Graph.Value> in = new ArrayList<>(f.conv().inputs);
                in.addAll(f.node().inputs.subList(1, f.node().inputs.size()));
                yield in;
            }
            case ConvEpilogue e -> {
                List<Graph.Value> in = new ArrayList<>(e.group().group().inputs);
                in.remove(e.slot());
                in.addAll(e.conv().inputs);
                if (e.bn() != null) in.addAll(e.bn().inputs.subList(1, e.bn().inputs.size()));
                yield in;
            }
            case MaskedLinear m -> m.node().inputs;
            case Replayed r -> r.node().inputs;
            case Reserved r -> List.of();
        };
    }

    /** The fused group a step computes, or null for a replayed op or a reservation. */
    private static Fused fusedOf(Step s) {
        return switch (s) {
            case Fused f -> f;
            case FusedSum f -> f.group();
            case FusedSoftmax f -> f.group();
            case FusedLayerNorm f -> f.group();
            case GemmEpilogue e -> e.group();
            case NormalizedGroup e -> e.group();
            case ConvEpilogue e -> e.group();
            case FoldedConvBatchNorm f -> null;
            case MaskedLinear m -> null;
            case Replayed r -> null;
            case Reserved r -> null;
        };
    }

    private boolean readsMutated(Graph.Node n) {
        for (Graph.Value v : n.inputs) if (v != null && graph.mutated.contains(v)) return true;
        return false;
    }

    /**
     * A float32 pointwise op with a formula, on a device that compiles formulas, that neither writes in place nor reads
     * or makes a value something writes in place (a fused group computes at its root's place in the order).
     */
    private boolean fusable(Graph.Node n) {
        if (n.inPlace || graph.mutated.contains(n) || readsMutated(n)) return false;
        if (FusedGroup.isDropout(n)) return fusableDropout(n);
        if (!n.op.kind().isPointwise() || n.op.formula() == null || n.dtype != DType.FLOAT32) return false;
        if (KernelRegistry.formulaCompiler(n.device.type()) == null) return false;
        for (Graph.Value v : n.inputs) {
            if (v == null) return false;
            if (v instanceof Graph.Constant c && c.isNumber()) continue;
            if (v.dtype() != DType.FLOAT32) return false;
        }
        return true;
    }

    /**
     * Whether {@code n}'s formula calls erf (GELU): with autograd a dropout right after one is not fused with it. Its
     * inference kernel gains (1M floats, one thread, one JVM alternating: 4.1-5.5 ms fused against 5.1-7.9 for the GELU
     * kernel then eager's dropout), but the training step did not measurably (docs/BENCHMARKS.md, branch jit12). The
     * earlier 2x slowdown of the drawing GELU kernel was C2's inlining budget (NodeCountInliningCutoff): with erf
     * inlined, the dropout's comparison and selection in the generated loop were left as calls that boxed their
     * vectors; the kernel now multiplies by a factor made outside the loop.
     */
    private static boolean callsErf(Graph.Node n) {
        return n.op.formula() != null && callsErf(n.op.formula());
    }

    private static boolean callsErf(Expr e) {
        return e instanceof Expr.Math m && (m.fn() == Fn.ERF || m.fn() == Fn.GELU || m.args().stream().anyMatch(Program::callsErf));
    }

    /**
     * A float32 training dropout whose mask the program does not read, on a device whose kernels draw inside
     * ({@link FormulaKernel#drawsInside}) and, in a program with autograd, write the mask for the backward
     * ({@link FormulaKernel.Compiler#savesMasks}; a backward drawing the decisions again was slower than the replayed
     * dropout reading its stored mask: 7.6-8.0 against 6.4-6.5 ms, docs/BENCHMARKS.md, branch jit11).
     */
    private boolean fusableDropout(Graph.Node n) {
        FormulaKernel.Compiler compiler = KernelRegistry.formulaCompiler(n.device.type());
        if (compiler == null || !compiler.drawsInside() || (differentiable && !compiler.savesMasks()) || n.dtype != DType.FLOAT32) return false;
        for (Graph.Output o : n.outputs) if (o != null && liveOutputs.contains(o)) return false;
        return n.inputs.size() == 1 && n.inputs.get(0) != null && n.inputs.get(0).dtype() == DType.FLOAT32;
    }

    /** Constant folding: functions of constants become constants, and multiplying by one disappears. */
    static Expr fold(Expr e) {
        if (!(e instanceof Expr.Math m)) return e;
        List<Expr> args = m.args().stream().map(Program::fold).toList();
        if (args.stream().allMatch(a -> a instanceof Expr.Const)) {
            double[] v = args.stream().mapToDouble(a -> ((Expr.Const) a).value()).toArray();
            return new Expr.Const(m.fn().apply(v[0], v.length > 1 ? v[1] : 0, v.length > 2 ? v[2] : 0));
        }
        if (m.fn() == Fn.MUL) {
            if (isOne(args.get(0))) return args.get(1);
            if (isOne(args.get(1))) return args.get(0);
        }
        return new Expr.Math(m.fn(), args);
    }

    private static boolean isOne(Expr e) {
        return e instanceof Expr.Const c && c.value() == 1.0;
    }

    // ------------------------------------------------------------------ running

    Tensor run(Tensor[] inputs) {
        Tensor[] values = new Tensor[graph.slots()];
        // Each dropout drawn inside a kernel: its generator's seed and first block, at [2 id] and [2 id + 1].
        long[] drawn = draws ? new long[2 * graph.nodes.size()] : null;
        try {
            for (int s = 0; s < steps.size(); s++) {
                Step step = steps.get(s);
                Graph.Node node = step.node();
                values[node.id] = switch (step) {
                    case Fused f -> runFused(f, inputs, values, s, drawn);
                    case FusedSum f -> runFusedSum(f, inputs, values);
                    case FusedSoftmax f -> runFusedSoftmax(f, inputs, values);
                    case FusedLayerNorm f -> runFusedLayerNorm(f, inputs, values, drawn);
                    case GemmEpilogue e -> runEpilogue(e, inputs, values);
                    case NormalizedGroup e -> runNormalized(e, inputs, values, s);
                    case FoldedConvBatchNorm f -> runFolded(f, inputs, values);
                    case ConvEpilogue e -> runConvEpilogue(e, inputs, values);
                    case MaskedLinear m -> runMaskedLinear(m, inputs, values);
                    case Replayed r -> replay(r.node(), inputs, values);
                    case Reserved r -> reserve(r.node(), drawn);
                };
                for (Graph.Value v : reads(step)) {
                    int slot = Graph.slot(v);
                    if (slot >= 0 && lastUse.get(slot) == s && v != graph.output && values[slot] != null) {
                        values[slot].close();
                        values[slot] = null;
                    }
                }
            }
            Tensor out = resolve(graph.output, inputs, values);
            if (Graph.slot(graph.output) >= 0) values[Graph.slot(graph.output)] = null;
            return out;
        } finally {
            for (Tensor t : values) if (t != null) t.close();
        }
    }

    private static Tensor resolve(Graph.Value v, Tensor[] inputs, Tensor[] values) {
        return switch (v) {
            case null -> null;
            case Graph.Input i -> inputs[i.index()];
            case Graph.Constant c -> c.tensor;
            case Graph.Node n -> values[n.id];
            case Graph.Output o -> values[o.slot];
        };
    }

    private Tensor runFused(Fused f, Tensor[] inputs, Tensor[] values, int step, long[] drawn) {
        Graph.Node root = f.node();
        Tensor[] args = arguments(f, inputs, values);
        boolean record = differentiable && Autograd.needsGrad(args);
        Tensor out = record ? null : reusable(f.group().inputs, step, root, values);
        if (out == null) out = Tensor.empty(root.shape, DType.FLOAT32, root.device);
        Tensor[] masks = record ? masks(f.group(), root) : null;
        try {
            apply(f.kernel(), root, args, null, out, draws(f.group(), drawn, masks));
            if (record) recordBackward(f, args, out, null, masks);
        } finally {
            if (masks != null) for (Tensor m : masks) m.close();
        }
        return out;
    }

    /** A bool mask of the group's shape for each of its dropouts (none: null), written by its forward for its backward. */
    private static Tensor[] masks(FusedGroup g, Graph.Node root) {
        if (g.dropouts.isEmpty()) return null;
        Tensor[] masks = new Tensor[g.dropouts.size()];
        for (int j = 0; j < masks.length; j++) masks[j] = Tensor.empty(root.shape, DType.BOOL, root.device);
        return masks;
    }

    /**
     * Reserves the Philox blocks dropout {@code n}'s eager call draws ({@code native_dropout}'s {@link OpDef#draws}: a
     * float32 uniform per element) from its generator, as the dispatcher's random layer would, and keeps the state for
     * the group that draws them. The dropout has no value of its own here.
     */
    private static Tensor reserve(Graph.Node n, long[] drawn) {
        org.jtorch.types.Generator gen = org.jtorch.types.Generator.byId(n.op.pyName(), (long) n.scalars[n.op.generatorScalar()]);
        long[] st = gen.reserve(n.op.draws().blocks(Shapes.numel(n.shape), n.dtype, new StridedView[1], n.scalars));
        drawn[2 * n.id] = st[0];
        drawn[2 * n.id + 1] = st[1];
        return null;
    }

    /**
     * The draws of group {@code g}'s dropouts from their reserved states, as formula inputs after the group's inputs;
     * each keep mask written into {@code masks[j]} where {@code masks} is not null; null for a group without dropout.
     */
    private static FormulaKernel.Draws draws(FusedGroup g, long[] drawn, Tensor[] masks) {
        int m = g.dropouts.size();
        if (m == 0) return null;
        int[] in = new int[m];
        long[] seeds = new long[m], blocks = new long[m];
        float[] keepBelow = new float[m];
        for (int j = 0; j < m; j++) {
            Graph.Node d = g.dropouts.get(j);
            in[j] = g.inputs.size() + j;
            seeds[j] = drawn[2 * d.id];
            blocks[j] = drawn[2 * d.id + 1];
            keepBelow[j] = FusedGroup.keepBelow(d);
        }
        return new FormulaKernel.Draws(in, seeds, blocks, keepBelow, scales(g), masks == null ? null : views(masks));
    }

    private static float[] scales(FusedGroup g) {
        float[] scales = new float[g.dropouts.size()];
        for (int j = 0; j < scales.length; j++) scales[j] = FusedGroup.scale(g.dropouts.get(j));
        return scales;
    }

    private static StridedView[] views(Tensor[] ts) {
        StridedView[] v = new StridedView[ts.length];
        for (int k = 0; k < v.length; k++) v[k] = Dispatcher.view(ts[k]);
        return v;
    }

    /**
     * Memory planning: an intermediate that step {@code step} reads last (not the result, not written in place; float32,
     * contiguous, of the step's shape, and its memory held by this one handle) becomes the step's output where the step
     * records no autograd, since a pointwise kernel reads each element before writing it. Its slot in {@code values} is
     * cleared so that it is not closed after the step. Null where none can be; with autograd the group's inputs are
     * saved for its backward, so nothing is reused.
     */
    private Tensor reusable(List<Graph.Value> candidates, int step, Graph.Node root, Tensor[] values) {
        for (Graph.Value v : candidates) {
            if (!(v instanceof Graph.Node p) || p == graph.output || graph.mutated.contains(p)) continue;
            Integer last = lastUse.get(p.id);
            Tensor t = values[p.id];
            if (last != null && last == step && t != null && t.dtype() == DType.FLOAT32 && t.device().equals(root.device)
                    && java.util.Arrays.equals(t.shape(), root.shape) && t.isContiguous() && !t.requiresGrad()
                    && t.storage().refCount() == 1) {
                values[p.id] = null;
                return t;
            }
        }
        return null;
    }

    private Tensor runFusedSum(FusedSum s, Tensor[] inputs, Tensor[] values) {
        Fused f = s.group();
        Graph.Node root = f.node();
        Tensor[] args = arguments(f, inputs, values);
        Tensor out = Tensor.empty(s.node().shape, DType.FLOAT32, root.device);
        withBroadcastViews(root, args, null, out, views -> f.kernel().runRowSums(root.device.index(), Dispatcher.view(out), views,
                s.rowLength(), new double[0]));
        if (differentiable && Autograd.needsGrad(args)) recordBackward(f, args, out, s.keepShape());
        return out;
    }

    /**
     * The group and the softmax in one pass over blocks of rows. Operands whose leading dimensions do not merge into
     * one stride send the step the unfused way: the group, then the softmax.
     */
    private Tensor runFusedSoftmax(FusedSoftmax s, Tensor[] inputs, Tensor[] values) {
        Fused f = s.group();
        Graph.Node root = f.node();
        Tensor[] args = arguments(f, inputs, values);
        long numel = Shapes.numel(root.shape);
        long cols = root.shape[root.shape.length - 1];
        Tensor out = Tensor.empty(root.shape, DType.FLOAT32, root.device);
        Tensor[] broadcast = new Tensor[args.length];
        try {
            // The output, then the operands.
            StridedView[] views = new StridedView[args.length + 1];
            views[0] = Dispatcher.view(out);
            for (int k = 0; k < args.length; k++) {
                Tensor bc = args[k].broadcastTo(root.shape);
                if (bc != args[k]) broadcast[k] = bc;
                views[k + 1] = Dispatcher.view(bc);
            }
            Backends.hold("jit", Dispatcher.view(out), null, null);
            boolean rows;
            try {
                rows = numel > 0 && forEachSoftmaxSlab(f.kernel(), root.shape, views, m -> f.kernel().runRowSoftmax(root.device.index(), m[0],
                        java.util.Arrays.copyOfRange(m, 1, m.length), cols, s.log(), NO_PARAMS));
            } finally {
                Backends.drop(Dispatcher.view(out), null, null);
            }
            if (!rows) {
                out.close();
                try (Tensor group = runFused(f, inputs, values, -1, null)) {
                    return Dispatcher.alongDim(s.node().op, group, -1, null);
                }
            }
        } finally {
            for (Tensor t : broadcast) if (t != null) t.close();
        }
        if (differentiable && Autograd.needsGrad(args)) recordSoftmaxBackward(f, args, out, s.log());
        return out;
    }

    /**
     * The fused group and softmax as one autograd node, saving the group's inputs and the softmax's output. Its backward
     * runs the backend's one pass ({@link #fusedSoftmaxGradients}) where it has one, else the softmax's gradient as ops,
     * {@code y (g - sum(g y))} or, through a log-softmax, {@code g - exp(y) sum(g)}, then the group's gradient kernels.
     */
    private static void recordSoftmaxBackward(Fused f, Tensor[] args, Tensor out, boolean log) {
        SavedTensor result = Autograd.save(out);
        SavedTensor[] saved = new SavedTensor[args.length + 1];
        for (int k = 0; k < args.length; k++) saved[k] = Autograd.save(args[k]);
        saved[args.length] = result;
        boolean[] needs = new boolean[args.length];
        for (int k = 0; k < args.length; k++) needs[k] = args[k].requiresGrad();
        Autograd.record(log ? "JitFusedLogSoftmaxBackward" : "JitFusedSoftmaxBackward", out, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a softmax fused with "
                        + f.group().ops + " ops is not supported yet; call the function eagerly for higher-order gradients");
            }
            Tensor[] values = new Tensor[args.length];
            for (int k = 0; k < args.length; k++) values[k] = saved[k].get();
            Tensor y = result.get();
            Tensor[] fused = fusedSoftmaxGradients(f, values, y, g[0], needs, log);
            if (fused != null) return fused;
            Tensor grad;
            try (MemoryScope scope = new MemoryScope()) {
                grad = scope.keep(log ? g[0].sub(y.exp().mul(g[0].sum(new int[] {-1}, true)))
                        : y.mul(g[0].sub(g[0].mul(y).sum(new int[] {-1}, true))));
            }
            try {
                return groupGradients(f, values, grad, needs, null);
            } finally {
                grad.close();
            }
        }, args, saved);
    }

    /**
     * The gradients of a fused softmax's group inputs {@code values} by the backend's one pass over blocks of rows
     * ({@link FormulaKernel#runRowSoftmaxBackward}: the softmax's gradient never stored), each distinct gradient kernel
     * run once, or null where the backend has none, {@code -Djtorch.jit.fusedSoftmaxBackward=false}, or an
     * operand's leading dimensions do not merge into one stride.
     */
    private static Tensor[] fusedSoftmaxGradients(Fused f, Tensor[] values, Tensor y, Tensor grad, boolean[] needs, boolean log) {
        Graph.Node root = f.node();
        if (!f.kernel().softmaxBackwardsRows() || !FUSED_SOFTMAX_BACKWARD) return null;
        long numel = Shapes.numel(root.shape), cols = root.shape[root.shape.length - 1];
        if (numel == 0) return null;
        List<Tensor> closing = new ArrayList<>();
        try {
            Tensor g = grad.broadcastTo(root.shape);
            if (g != grad) closing.add(g);
            if (!y.isContiguous()) return null;
            StridedView[] operands = new StridedView[values.length];
            for (int k = 0; k < values.length; k++) {
                Tensor bc = values[k].broadcastTo(root.shape);
                if (bc != values[k]) closing.add(bc);
                operands[k] = Dispatcher.view(bc);
            }
            List<FormulaKernel> kernels = new ArrayList<>();
            List<Tensor> fulls = new ArrayList<>();
            for (int k = 0; k < values.length; k++) {
                FormulaKernel kernel = f.gradients()[k];
                if (!needs[k] || kernel == null || kernels.contains(kernel)) continue;
                kernels.add(kernel);
                Tensor full = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                closing.add(full);
                fulls.add(full);
            }
            // The output, the incoming gradient, the operands, then the gradient kernels' outputs.
            List<StridedView> views = new ArrayList<>(List.of(Dispatcher.view(y), Dispatcher.view(g)));
            views.addAll(java.util.Arrays.asList(operands));
            for (Tensor full : fulls) views.add(Dispatcher.view(full));
            FormulaKernel[] gradients = kernels.toArray(FormulaKernel[]::new);
            int n = values.length;
            if (!forEachSoftmaxSlab(f.kernel(), root.shape, views.toArray(StridedView[]::new), m -> f.kernel().runRowSoftmaxBackward(root.device.index(), m[0], m[1],
                    java.util.Arrays.copyOfRange(m, 2, 2 + n), cols, log, gradients, java.util.Arrays.copyOfRange(m, 2 + n, m.length)))) {
                return null;
            }
            Tensor[] grads = new Tensor[values.length];
            for (int k = 0; k < values.length; k++) {
                if (!needs[k] || f.gradients()[k] == null) continue;
                Tensor full = fulls.get(kernels.indexOf(f.gradients()[k]));
                grads[k] = Gradients.sumTo(full, values[k].shape(), DType.FLOAT32);
                // The engine owns each result: a value handed out twice goes out as two handles on one storage.
                if (grads[k] == full) grads[k] = full.alias();
            }
            return grads;
        } finally {
            for (Tensor t : closing) t.close();
        }
    }

    /**
     * {@link #forEachSlab} for a fused softmax's kernel {@code kernel}, or {@code body} once on the views themselves where
     * the kernel takes rows of any strides ({@link FormulaKernel#softmaxesRowsOfAnyStrides}: one CUDA launch, not one a slab).
     */
    private static boolean forEachSoftmaxSlab(FormulaKernel kernel, long[] shape, StridedView[] views,
                                              java.util.function.Consumer<StridedView[]> body) {
        if (kernel.softmaxesRowsOfAnyStrides() && shape.length <= 8) {
            body.accept(views);
            return true;
        }
        return forEachSlab(shape, views, body);
    }

    /**
     * Runs {@code body} on {@code views} (all of {@code shape}) as {@code [rows, cols]} matrices over the last dimension:
     * at once where every view's leading dimensions merge into one stride, else once per index of as many leading
     * dimensions as must be taken apart (attention scores {@code [b, t, t]} with a {@code [t, t]} mask broadcast over
     * {@code b}: once per b). Returns false, having run nothing, where even single rows do not serve (a last dimension
     * that is not one stride cannot occur for a view of the shape). A null view stays null.
     */
    private static boolean forEachSlab(long[] shape, StridedView[] views, java.util.function.Consumer<StridedView[]> body) {
        int rank = shape.length;
        long cols = shape[rank - 1];
        for (int lead = 0; lead < rank; lead++) {
            long rows = 1;
            for (int d = lead; d < rank - 1; d++) rows *= shape[d];
            StridedView[] first = slabs(views, shape, lead, new long[lead], rows, cols);
            if (first == null) continue;
            long slabCount = 1;
            for (int d = 0; d < lead; d++) slabCount *= shape[d];
            long[] index = new long[lead];
            for (long s = 0; s < slabCount; s++) {
                body.accept(s == 0 ? first : slabs(views, shape, lead, index, rows, cols));
                for (int d = lead - 1; d >= 0 && ++index[d] == shape[d]; d--) index[d] = 0;
            }
            return true;
        }
        return false;
    }

    /** The {@code [rows, cols]} matrices of {@code views} at {@code index} of their first {@code lead} dimensions, or null. */
    private static StridedView[] slabs(StridedView[] views, long[] shape, int lead, long[] index, long rows, long cols) {
        StridedView[] m = new StridedView[views.length];
        for (int k = 0; k < views.length; k++) {
            StridedView v = views[k];
            if (v == null) continue;
            long offset = v.offset();
            for (int d = 0; d < lead; d++) offset += index[d] * v.strides()[d];
            long[] strides = java.util.Arrays.copyOfRange(v.strides(), lead, shape.length);
            m[k] = matrix(new StridedView(v.memory(), offset, java.util.Arrays.copyOfRange(shape, lead, shape.length), strides, v.dtype()), rows, cols);
            if (m[k] == null) return null;
        }
        return m;
    }

    /** {@code -Djtorch.jit.fusedSoftmaxBackward=false} runs a fused softmax's gradient as ops, then the group's gradient kernels. */
    private static final boolean FUSED_SOFTMAX_BACKWARD = !"false".equals(System.getProperty("jtorch.jit.fusedSoftmaxBackward"));

    /**
     * The group and the layer norm in one pass over blocks of rows, the statistics written where the program reads them.
     * Operands whose leading dimensions do not merge into one stride, or a weight or bias that is not contiguous, send the
     * step the unfused way: the group, then the layer norm.
     */
    private Tensor runFusedLayerNorm(FusedLayerNorm s, Tensor[] inputs, Tensor[] values, long[] drawn) {
        Fused f = s.group();
        Graph.Node root = f.node(), ln = s.node();
        Tensor[] args = arguments(f, inputs, values);
        Tensor weight = resolve(ln.inputs.get(1), inputs, values), bias = resolve(ln.inputs.get(2), inputs, values);
        long numel = Shapes.numel(root.shape), cols = s.rowLength(), rows = cols == 0 ? 0 : numel / cols;
        Tensor[] broadcast = new Tensor[args.length];
        try {
            StridedView[] operands = new StridedView[args.length];
            boolean fused = numel > 0 && (weight == null || weight.isContiguous()) && (bias == null || bias.isContiguous());
            for (int k = 0; k < args.length && fused; k++) {
                Tensor bc = args[k].broadcastTo(root.shape);
                if (bc != args[k]) broadcast[k] = bc;
                operands[k] = matrix(Dispatcher.view(bc), rows, cols, (int) ln.scalars[0]);
                fused = operands[k] != null;
            }
            if (!fused) {
                Tensor group = runFused(f, inputs, values, -1, drawn);
                try {
                    Tensor[] outs = Dispatcher.callAll(ln.op, new Tensor[] {group, weight, bias}, ln.scalars);
                    return keepStatistics(ln, outs, values);
                } finally {
                    if (s.keepsValues()) values[root.id] = group;
                    else group.close();
                }
            }
            // native_layer_norm's outputs: the normalised rows, and the statistics with a one for each normalised dimension.
            long[] stats = root.shape.clone();
            for (int d = stats.length - (int) ln.scalars[0]; d < stats.length; d++) stats[d] = 1;
            Tensor[] outs = {Tensor.empty(root.shape, DType.FLOAT32, root.device), Tensor.empty(stats, DType.FLOAT32, root.device),
                    Tensor.empty(stats, DType.FLOAT32, root.device)};
            StridedView out = matrix(Dispatcher.view(outs[0]), rows, cols, (int) ln.scalars[0]);
            boolean record = differentiable && (Autograd.needsGrad(args) || Autograd.needsGrad(new Tensor[] {weight, bias}));
            Tensor[] masks = record ? masks(f.group(), root) : null;
            Tensor kept = s.keepsValues() ? Tensor.empty(root.shape, DType.FLOAT32, root.device) : null;
            StridedView keptRows = kept == null ? null : matrix(Dispatcher.view(kept), rows, cols, (int) ln.scalars[0]);
            Backends.hold("jit", out, keptRows, null);
            try {
                FormulaKernel.Draws draws = draws(f.group(), drawn, masks);
                if (kept != null) {
                    f.kernel().runRowLayerNormKeeping(root.device.index(), keptRows, out, draws == null ? operands : withDrawn(operands, draws),
                            cols, Dispatcher.view(weight), Dispatcher.view(bias), ln.scalars[1], Dispatcher.view(outs[1]),
                            Dispatcher.view(outs[2]), draws);
                } else if (draws == null) {
                    f.kernel().runRowLayerNorm(root.device.index(), out, operands, cols, Dispatcher.view(weight), Dispatcher.view(bias),
                            ln.scalars[1], Dispatcher.view(outs[1]), Dispatcher.view(outs[2]), NO_PARAMS);
                } else {
                    f.kernel().runRowLayerNormDrawing(root.device.index(), out, withDrawn(operands, draws), cols, Dispatcher.view(weight),
                            Dispatcher.view(bias), ln.scalars[1], Dispatcher.view(outs[1]), Dispatcher.view(outs[2]), draws);
                }
                if (record && kept != null) recordKeptLayerNormBackward(s, args, weight, bias, outs, kept, masks);
                else if (record) recordLayerNormBackward(s, args, weight, bias, outs, masks);
            } catch (RuntimeException ex) {
                for (Tensor t : outs) t.close();
                if (kept != null) kept.close();
                throw ex;
            } finally {
                Backends.drop(out, keptRows, null);
                if (masks != null) for (Tensor m : masks) m.close();
            }
            if (kept != null) values[root.id] = kept;
            return keepStatistics(ln, outs, values);
        } finally {
            for (Tensor t : broadcast) if (t != null) t.close();
        }
    }

    /**
     * The fused group and layer norm as one autograd node. Saved: the group's inputs, its dropouts' masks, the row
     * statistics and the affine parameters; not the group's values, which the backward recomputes (one pass of the
     * group's kernel, the masks read back) for the layer norm's own backward kernel, whose input gradient then goes
     * through the group's gradient kernels. Every kernel is eager's or computes eager's values, so the gradients are
     * eager's to the bit.
     */
    private static void recordLayerNormBackward(FusedLayerNorm s, Tensor[] args, Tensor weight, Tensor bias, Tensor[] outs, Tensor[] masks) {
        Fused f = s.group();
        Graph.Node root = f.node(), ln = s.node();
        double normalized = ln.scalars[0];
        List<Tensor> inputs = new ArrayList<>(java.util.Arrays.asList(args));
        if (weight != null) inputs.add(weight);
        if (bias != null) inputs.add(bias);
        SavedTensor[] saved = new SavedTensor[args.length];
        for (int k = 0; k < args.length; k++) saved[k] = Autograd.save(args[k]);
        SavedTensor[] savedMasks = masks == null ? new SavedTensor[0] : new SavedTensor[masks.length];
        for (int j = 0; j < savedMasks.length; j++) savedMasks[j] = Autograd.save(masks[j]);
        SavedTensor mean = Autograd.save(outs[1]), rstd = Autograd.save(outs[2]);
        SavedTensor savedWeight = weight == null ? null : Autograd.save(weight), savedBias = bias == null ? null : Autograd.save(bias);
        List<SavedTensor> kept = new ArrayList<>(java.util.Arrays.asList(saved));
        kept.addAll(java.util.Arrays.asList(savedMasks));
        kept.add(mean);
        kept.add(rstd);
        if (savedWeight != null) kept.add(savedWeight);
        if (savedBias != null) kept.add(savedBias);
        boolean[] needs = new boolean[args.length];
        for (int k = 0; k < args.length; k++) needs[k] = args[k].requiresGrad();
        boolean weightNeeds = weight != null && weight.requiresGrad(), biasNeeds = bias != null && bias.requiresGrad();
        Autograd.record("JitFusedLayerNormBackward", inputs.toArray(Tensor[]::new), new Tensor[] {outs[0]}, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a layer norm fused with "
                        + f.group().ops + " ops is not supported yet; call the function eagerly for higher-order gradients");
            }
            Tensor[] values = new Tensor[saved.length];
            for (int k = 0; k < saved.length; k++) values[k] = saved[k].get();
            Tensor w = savedWeight == null ? null : savedWeight.get(), b = savedBias == null ? null : savedBias.get();
            Tensor[] grads = fusedLayerNormBackward(s, values, g[0], mean.get(), rstd.get(), w, needs, weightNeeds, biasNeeds, savedMasks);
            if (grads != null) {
                Tensor[] all = new Tensor[inputs.size()];
                System.arraycopy(grads, 0, all, 0, grads.length);
                return all;
            }
            Tensor[] lnGrads;
            try (Tensor x = Tensor.empty(root.shape, DType.FLOAT32, root.device)) {
                // The forward kernel's drawn inputs follow the group's; the gradient kernels' follow the incoming gradient too.
                apply(f.kernel(), root, values, null, x, maskDraws(f, savedMasks, values.length));
                lnGrads = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM_BACKWARD,
                        new Tensor[] {g[0], x, mean.get(), rstd.get(), w, b}, normalized);
            }
            grads = new Tensor[inputs.size()];
            try {
                Tensor[] groupGrads = groupGradients(f, values, lnGrads[0], needs, maskDraws(f, savedMasks, values.length + 1));
                System.arraycopy(groupGrads, 0, grads, 0, groupGrads.length);
                putAffineGradients(grads, values.length, lnGrads, w, b, weightNeeds, biasNeeds);
            } finally {
                closeUnhanded(lnGrads, w, b, weightNeeds, biasNeeds);
            }
            return grads;
        }, kept.toArray(SavedTensor[]::new));
    }

    /**
     * A fused group and layer norm keeping the group's values ({@link FusedLayerNorm#keepsValues}) as one autograd node
     * of two outputs: the norm's, and the group's values read later. Saved: the group's values (eager's layer norm saves
     * them too), the statistics, the affine parameters, the masks, and the group's inputs only where a gradient kernel
     * reads them (a residual add's operands take the gradient as it comes). The backward is eager's layer-norm backward
     * kernel on the saved values, the later reader's gradient added in place (a sum of two, the same bits as the eager
     * engine's accumulation in either order), then the group's gradient kernels; so every gradient is eager's to the bit.
     */
    private static void recordKeptLayerNormBackward(FusedLayerNorm s, Tensor[] args, Tensor weight, Tensor bias, Tensor[] outs, Tensor kept,
                                                    Tensor[] masks) {
        Fused f = s.group();
        double normalized = s.node().scalars[0];
        boolean[] needs = new boolean[args.length];
        boolean anyKernel = false;
        long[][] shapes = new long[args.length][];
        for (int k = 0; k < args.length; k++) {
            needs[k] = args[k].requiresGrad() && f.gradients()[k] != null;
            shapes[k] = args[k].shape();
            anyKernel |= needs[k] && !s.passThrough()[k];
        }
        boolean readsInputs = anyKernel;
        List<SavedTensor> held = new ArrayList<>();
        SavedTensor[] saved = new SavedTensor[readsInputs ? args.length : 0];
        for (int k = 0; k < saved.length; k++) held.add(saved[k] = Autograd.save(args[k]));
        SavedTensor[] savedMasks = masks == null || !readsInputs ? new SavedTensor[0] : new SavedTensor[masks.length];
        for (int j = 0; j < savedMasks.length; j++) held.add(savedMasks[j] = Autograd.save(masks[j]));
        SavedTensor savedValues = Autograd.save(kept), mean = Autograd.save(outs[1]), rstd = Autograd.save(outs[2]);
        SavedTensor savedWeight = weight == null ? null : Autograd.save(weight), savedBias = bias == null ? null : Autograd.save(bias);
        held.addAll(java.util.Arrays.asList(savedValues, mean, rstd));
        if (savedWeight != null) held.add(savedWeight);
        if (savedBias != null) held.add(savedBias);
        boolean weightNeeds = weight != null && weight.requiresGrad(), biasNeeds = bias != null && bias.requiresGrad();
        List<Tensor> inputs = new ArrayList<>(java.util.Arrays.asList(args));
        if (weight != null) inputs.add(weight);
        if (bias != null) inputs.add(bias);
        Autograd.record("JitFusedLayerNormBackward", inputs.toArray(Tensor[]::new), new Tensor[] {outs[0], kept}, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a layer norm fused with "
                        + f.group().ops + " ops is not supported yet; call the function eagerly for higher-order gradients");
            }
            Tensor w = savedWeight == null ? null : savedWeight.get(), b = savedBias == null ? null : savedBias.get();
            Tensor[] lnGrads = Dispatcher.callAll(NormalizationOps.NATIVE_LAYER_NORM_BACKWARD,
                    new Tensor[] {g[0], savedValues.get(), mean.get(), rstd.get(), w, b}, normalized);
            Tensor[] grads = new Tensor[inputs.size()];
            try {
                if (g[1] != null) lnGrads[0].add_(g[1]);
                boolean[] kernelNeeds = new boolean[args.length];
                for (int k = 0; k < args.length; k++) {
                    if (!needs[k]) continue;
                    if (!s.passThrough()[k]) {
                        kernelNeeds[k] = true;
                        continue;
                    }
                    grads[k] = Gradients.sumTo(lnGrads[0], shapes[k], DType.FLOAT32);
                    // The engine owns each result: a value handed out twice goes out as two handles on one storage.
                    if (grads[k] == lnGrads[0]) grads[k] = lnGrads[0].alias();
                }
                if (readsInputs) {
                    Tensor[] values = new Tensor[saved.length];
                    for (int k = 0; k < saved.length; k++) values[k] = saved[k].get();
                    Tensor[] groupGrads = groupGradients(f, values, lnGrads[0], kernelNeeds, maskDraws(f, savedMasks, values.length + 1));
                    for (int k = 0; k < groupGrads.length; k++) if (kernelNeeds[k]) grads[k] = groupGrads[k];
                }
                putAffineGradients(grads, args.length, lnGrads, w, b, weightNeeds, biasNeeds);
            } finally {
                closeUnhanded(lnGrads, w, b, weightNeeds, biasNeeds);
            }
            return grads;
        }, held.toArray(SavedTensor[]::new));
    }

    /** {@code native_layer_norm_backward}'s weight and bias gradients at {@code grads[at]} on, for a weight and a bias where given. */
    private static void putAffineGradients(Tensor[] grads, int at, Tensor[] lnGrads, Tensor w, Tensor b, boolean weightNeeds, boolean biasNeeds) {
        if (w != null) grads[at++] = weightNeeds ? lnGrads[1] : null;
        if (b != null) grads[at] = biasNeeds ? lnGrads[2] : null;
    }

    /** Closes {@code native_layer_norm_backward}'s results that {@link #putAffineGradients} did not hand out, and the input gradient. */
    private static void closeUnhanded(Tensor[] lnGrads, Tensor w, Tensor b, boolean weightNeeds, boolean biasNeeds) {
        lnGrads[0].close();
        if (lnGrads[1] != null && (w == null || !weightNeeds)) lnGrads[1].close();
        if (lnGrads[2] != null && (b == null || !biasNeeds)) lnGrads[2].close();
    }

    /**
     * The gradients of {@link #recordLayerNormBackward}'s inputs (the group's, then the weight and bias where given) by
     * the backend's one pass ({@link FormulaKernel#runRowLayerNormBackward}: the group's values recomputed a block of rows
     * at a time, never stored), or null where the backend has none or declines, or an operand's rows do not merge into
     * one stride: then the caller stores the recomputed values.
     */
    private static Tensor[] fusedLayerNormBackward(FusedLayerNorm s, Tensor[] values, Tensor grad, Tensor mean, Tensor rstd, Tensor weight,
                                                   boolean[] needs, boolean weightNeeds, boolean biasNeeds, SavedTensor[] savedMasks) {
        Fused f = s.group();
        Graph.Node root = f.node(), ln = s.node();
        if (!f.kernel().layerNormBackwardsRows() || !FUSED_LAYER_NORM_BACKWARD) return null;
        int k0 = (int) ln.scalars[0];
        long numel = Shapes.numel(root.shape), cols = s.rowLength(), rows = cols == 0 ? 0 : numel / cols;
        boolean hasBias = ln.inputs.get(2) != null;
        List<Tensor> closing = new ArrayList<>();
        try {
            StridedView gradRows = gradientRows(grad, rows, cols, k0, closing);
            StridedView[] operands = new StridedView[values.length];
            for (int k = 0; k < values.length; k++) {
                Tensor bc = values[k].broadcastTo(root.shape);
                if (bc != values[k]) closing.add(bc);
                operands[k] = matrix(Dispatcher.view(bc), rows, cols, k0);
                if (operands[k] == null) return null;
            }
            // The layer norm's input gradient is stored where it is some input's gradient; each other distinct gradient
            // kernel runs once, inputs sharing it reading the same values.
            Tensor gradInput = null;
            for (int k = 0; k < values.length && gradInput == null; k++) {
                if (needs[k] && s.passThrough()[k]) closing.add(gradInput = Tensor.empty(root.shape, DType.FLOAT32, root.device));
            }
            List<FormulaKernel> kernels = new ArrayList<>();
            List<Tensor> fulls = new ArrayList<>();
            for (int k = 0; k < values.length; k++) {
                FormulaKernel kernel = f.gradients()[k];
                if (!needs[k] || kernel == null || s.passThrough()[k] || kernels.contains(kernel)) continue;
                kernels.add(kernel);
                Tensor full = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                closing.add(full);
                fulls.add(full);
            }
            Tensor gradWeight = weightNeeds ? Tensor.empty(weight.shape(), DType.FLOAT32, root.device) : null;
            Tensor gradBias = biasNeeds ? Tensor.empty(ln.inputs.get(2).shape(), DType.FLOAT32, root.device) : null;
            if (gradWeight != null) closing.add(gradWeight);
            if (gradBias != null) closing.add(gradBias);
            StridedView[] outs = new StridedView[fulls.size()];
            for (int k = 0; k < outs.length; k++) outs[k] = matrix(Dispatcher.view(fulls.get(k)), rows, cols, k0);
            FormulaKernel.Draws draws = maskDraws(f, savedMasks, values.length), gradientDraws = maskDraws(f, savedMasks, values.length + 1);
            StridedView[] in = draws == null ? operands : withDrawn(operands, draws);
            if (!f.kernel().runRowLayerNormBackward(root.device.index(), gradRows, in, draws, cols,
                    Dispatcher.view(mean), Dispatcher.view(rstd), Dispatcher.view(weight),
                    gradInput == null ? null : matrix(Dispatcher.view(gradInput), rows, cols, k0), kernels.toArray(FormulaKernel[]::new), outs,
                    gradientDraws, Dispatcher.view(gradWeight), Dispatcher.view(gradBias))) {
                return null;
            }
            Tensor[] grads = new Tensor[values.length + (weight != null ? 1 : 0) + (hasBias ? 1 : 0)];
            for (int k = 0; k < values.length; k++) {
                if (!needs[k] || f.gradients()[k] == null) continue;
                Tensor full = s.passThrough()[k] ? gradInput : fulls.get(kernels.indexOf(f.gradients()[k]));
                grads[k] = Gradients.sumTo(full, values[k].shape(), DType.FLOAT32);
                // The engine owns each result: a value handed out twice goes out as two handles on one storage.
                if (grads[k] == full) grads[k] = full.alias();
            }
            int at = values.length;
            if (weight != null) grads[at++] = gradWeight == null ? null : gradWeight.alias();
            if (hasBias) grads[at] = gradBias == null ? null : gradBias.alias();
            return grads;
        } finally {
            for (Tensor t : closing) t.close();
        }
    }

    /**
     * The incoming gradient as the {@code [rows, cols]} matrix the fused backward reads: where it is broadcast over the
     * rows (a sum's gradient is one value broadcast everywhere), one row, contiguous, read for every row, instead of the
     * whole tensor made contiguous (a write and a read of every value); else {@code grad} made contiguous.
     */
    private static StridedView gradientRows(Tensor grad, long rows, long cols, int k0, List<Tensor> closing) {
        StridedView v = matrix(Dispatcher.view(grad), rows, cols, k0);
        if (v != null && v.strides()[0] == 0 && BROADCAST_GRADIENT_ROWS) {
            if (v.strides()[1] == 1) return v;
            Tensor row = grad;
            for (int d = 0; d < grad.dim() - k0; d++) closing.add(row = row.select(0, 0));
            Tensor dense = row.contiguous();
            if (dense != row) closing.add(dense);
            StridedView r = Dispatcher.view(dense);
            return new StridedView(r.memory(), r.offset(), new long[] {rows, cols}, new long[] {0, 1}, r.dtype());
        }
        Tensor g = grad.contiguous();
        if (g != grad) closing.add(g);
        return matrix(Dispatcher.view(g), rows, cols, k0);
    }

    /** {@code -Djtorch.jit.broadcastGradientRows=false}: a gradient broadcast over the rows is made contiguous, whole. */
    private static final boolean BROADCAST_GRADIENT_ROWS = !"false".equals(System.getProperty("jtorch.jit.broadcastGradientRows"));

    /** {@code -Djtorch.jit.fusedLayerNormBackward=false} stores the recomputed group for the eager layer-norm backward instead. */
    private static final boolean FUSED_LAYER_NORM_BACKWARD = !"false".equals(System.getProperty("jtorch.jit.fusedLayerNormBackward"));

    /** A multi-output node's later outputs kept at their slots where the program reads them, the others closed; the first returned. */
    private Tensor keepStatistics(Graph.Node n, Tensor[] outs, Tensor[] values) {
        for (int k = 1; k < outs.length; k++) {
            Graph.Output o = n.outputs[k - 1];
            if (o != null && liveOutputs.contains(o)) values[o.slot] = outs[k];
            else if (outs[k] != null) outs[k].close();
        }
        return outs[0];
    }

    /**
     * The linear layer with the group as its epilogue. The group's operands are seen as {@code [rows, features]}
     * matrices, as the product is; an operand whose leading dimensions do not merge into one (a broadcast in the
     * middle) sends the step the unfused way: the layer, then the group over its whole output.
     */
    private Tensor runEpilogue(GemmEpilogue e, Tensor[] inputs, Tensor[] values) {
        Fused f = e.group();
        Graph.Node root = f.node();
        Graph.Node linear = e.producer();
        boolean matmul = linear.op == FrontEndOps.MATMUL;
        Tensor x = resolve(linear.inputs.get(0), inputs, values);
        // a @ m is linear(a, m.T): the transposed view multiplies as m itself.
        Tensor w = matmul ? resolve(linear.inputs.get(1), inputs, values).t() : resolve(linear.inputs.get(1), inputs, values);
        Tensor b = !matmul && linear.inputs.size() > 2 ? resolve(linear.inputs.get(2), inputs, values) : null;
        Tensor[] args = arguments(f, inputs, values);
        boolean needsGrad = Autograd.needsGrad(x, w, b) || Autograd.needsGrad(args);
        long numel = Shapes.numel(root.shape);
        long cols = root.shape[root.shape.length - 1];
        Tensor[] broadcast = new Tensor[args.length];
        boolean record = differentiable && needsGrad;
        // A layer that masks its input's gradient for the ReLU layer before it (which then does not mask it itself) must
        // record its own backward: the backend's fused GEMM and activation would record the plain linear one.
        boolean masksInput = record && inputMasks.containsKey(linear);
        if (e.activation() != null && !e.declined().get() && !masksInput) {
            if (Linalg.fusesLinearActivation(x, w, b, e.activation(), record)) {
                // The op's own derivative (the activation's gradient, then the layer's) is the group's backward.
                Tensor[] fused;
                try (var g = record ? null : Grad.noGrad()) {
                    fused = Linalg.linearActivation(x, w, b, e.activation(), record);
                } finally {
                    if (matmul) w.close();
                }
                fused[1].close();
                return fused[0];
            }
            e.declined().set(true);
        }
        if (record && reluLayer(e) && (premasked.contains(root) || masksInput)) {
            // Layer and ReLU as one autograd node: the product written over by the ReLU, then one backward for both.
            Tensor product;
            try (var off = Grad.noGrad()) {
                int device = root.device.index();
                product = Linalg.linear(x, w, b, cv -> {
                    return (r0, r1, c0, c1) -> {
                        StridedView block = block(cv, r0, r1, c0, c1);
                        f.kernel().run(device, DType.FLOAT32, block, new StridedView[] {block}, NO_PARAMS);
                    };
                });
            }
            recordLinearBackward(root, product, x, w, b, premasked.contains(root) ? null : f.gradients()[e.slot()], inputMasks.get(linear));
            return product;
        }
        // A lone ReLU of the product writes into the product with autograd too: its gradient reads only its input's sign,
        // which the ReLU's output keeps, so the product need not be kept beside the output (one tensor stored, not two).
        boolean inPlace = !needsGrad || record && e.activation() == LinalgKernels.Activation.RELU;
        Tensor out = inPlace ? null : Tensor.empty(root.shape, DType.FLOAT32, root.device);
        try {
            StridedView[] operands = new StridedView[args.length];
            boolean blocks = numel > 0;
            for (int k = 0; k < args.length && blocks; k++) {
                if (k == e.slot()) continue;
                Tensor bc = args[k].broadcastTo(root.shape);
                if (bc != args[k]) broadcast[k] = bc;
                operands[k] = matrix(Dispatcher.view(bc), numel / cols, cols);
                blocks = operands[k] != null;
            }
            StridedView target = out == null || !blocks ? null : matrix(Dispatcher.view(out), numel / cols, cols);
            Tensor product;
            if (blocks) {
                int device = root.device.index();
                product = Linalg.linear(x, w, b, cv -> {
                    StridedView into = target != null ? target : cv;
                    return (r0, r1, c0, c1) -> {
                        StridedView[] in = new StridedView[operands.length];
                        for (int k = 0; k < in.length; k++) in[k] = block(k == e.slot() ? cv : operands[k], r0, r1, c0, c1);
                        f.kernel().run(device, DType.FLOAT32, block(into, r0, r1, c0, c1), in, NO_PARAMS);
                    };
                });
            } else {
                product = Linalg.linear(x, w, b, null);
                if (out == null) out = Tensor.empty(root.shape, DType.FLOAT32, root.device);
            }
            args[e.slot()] = product;
            if (!blocks) apply(f.kernel(), root, args, null, out);
            if (out == null && !record) return product;
            if (out == null) {
                // The ReLU's values are in the product; its node (on a second handle) saves them for the sign.
                out = product.alias();
                recordBackward(f, args, out, null);
                product.close();
                return out;
            }
            if (differentiable && needsGrad) recordBackward(f, args, out, null);
            product.close();
            return out;
        } finally {
            for (Tensor t : broadcast) if (t != null) t.close();
            if (matmul) w.close();
        }
    }

    /** A linear layer replayed without its own autograd, recorded as one node that masks its input's gradient. */
    private Tensor runMaskedLinear(MaskedLinear m, Tensor[] inputs, Tensor[] values) {
        Graph.Node n = m.node();
        Tensor x = resolve(n.inputs.get(0), inputs, values);
        Tensor w = resolve(n.inputs.get(1), inputs, values);
        Tensor b = n.inputs.size() > 2 ? resolve(n.inputs.get(2), inputs, values) : null;
        Tensor out;
        try (var off = Grad.noGrad()) {
            out = Linalg.linear(x, w, b, null);
        }
        if (Autograd.needsGrad(x, w, b)) recordLinearBackward(n, out, x, w, b, null, inputMasks.get(n));
        return out;
    }

    /**
     * One autograd node for {@code out = x @ w.T + b} (2-D {@code x}), its output's activation ({@code ownMask}, the
     * ReLU's gradient kernel reading {@code out}; null where the incoming gradient is already masked or there is
     * none), and the ReLU before it ({@code inputMask}, the previous layer's ReLU gradient kernel reading {@code x};
     * null for none): the input's gradient is masked by the GEMM's epilogue as each block of it is written, so the
     * ReLU layer before receives it masked and runs no pass of its own. The bias's gradient is the column sum of the
     * incoming gradient itself where that is masked already (no chain is left to fuse it with). Saves {@code x},
     * {@code w} and, with {@code ownMask}, {@code out}.
     */
    private static void recordLinearBackward(Graph.Node root, Tensor out, Tensor x, Tensor w, Tensor b, FormulaKernel ownMask,
                                             FormulaKernel inputMask) {
        SavedTensor savedX = Autograd.save(x);
        SavedTensor savedW = Autograd.save(w);
        SavedTensor savedOut = ownMask == null ? null : Autograd.save(out);
        boolean[] needs = {x.requiresGrad(), w.requiresGrad(), b != null && b.requiresGrad()};
        long[] biasShape = b == null ? null : b.shape();
        int device = root.device.index();
        SavedTensor[] saved = savedOut == null ? new SavedTensor[] {savedX, savedW} : new SavedTensor[] {savedX, savedW, savedOut};
        Autograd.record(inputMask == null ? "JitLinearReluBackward" : "JitLinearMaskedBackward", out, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a fused linear layer's backward is not"
                        + " supported yet; call the function eagerly for higher-order gradients");
            }
            Tensor xv = savedX.get();
            Tensor wv = savedW.get();
            Tensor gy = g[0];
            if (ownMask != null) {
                gy = Tensor.empty(out.shape(), DType.FLOAT32, root.device);
                apply(ownMask, root, new Tensor[] {savedOut.get()}, g[0], gy);
            }
            try {
                Tensor[] grads = new Tensor[3];
                if (needs[2]) {
                    grads[2] = Gradients.sumTo(gy, biasShape, DType.FLOAT32);
                    if (grads[2] == gy) grads[2] = gy.alias();
                }
                if (needs[1]) {
                    try (Tensor gt = gy.t()) {
                        grads[1] = Linalg.mm(gt, xv);
                    }
                }
                if (needs[0] && inputMask == null) {
                    grads[0] = Linalg.mm(gy, wv);
                } else if (needs[0]) {
                    StridedView xs = Dispatcher.view(xv);
                    try (Tensor wt = wv.t()) {
                        // The product of the gradient and the weight, each block multiplied by the ReLU's mask as it is written.
                        grads[0] = Linalg.linear(gy, wt, null, cv -> {
                            return (r0, r1, c0, c1) -> {
                                StridedView block = block(cv, r0, r1, c0, c1);
                                inputMask.run(device, DType.FLOAT32, block, new StridedView[] {block(xs, r0, r1, c0, c1), block}, NO_PARAMS);
                            };
                        });
                    }
                }
                return grads;
            } finally {
                if (gy != g[0]) gy.close();
            }
        }, new Tensor[] {x, w, b}, saved);
    }

    /**
     * The batch norm's statistics (its running statistics updated, as eagerly), then the group's kernel normalising as it
     * goes: the batch norm's output is never written.
     */
    private Tensor runNormalized(NormalizedGroup e, Tensor[] inputs, Tensor[] values, int step) {
        Graph.Node root = e.node();
        Graph.Node bn = e.producer();
        Tensor runningMean = resolve(bn.inputs.get(1), inputs, values);
        Tensor runningVar = resolve(bn.inputs.get(2), inputs, values);
        // With the convolution fused in: its output, its statistics gathered by its epilogue (null: it could not take one).
        Tensor[] convolved = e.conv() == null ? null : convolutionWithStatistics(e, inputs, values, runningMean, runningVar);
        Tensor input = convolved != null ? convolved[0] : e.conv() != null ? replay(e.conv(), inputs, values) : resolve(bn.inputs.get(0), inputs, values);
        // The convolution's output is this step's: closed at its end unless it becomes the step's output.
        Tensor owned = e.conv() != null ? input : null;
        Tensor weight = resolve(bn.inputs.get(3), inputs, values);
        Tensor bias = bn.inputs.size() > 4 ? resolve(bn.inputs.get(4), inputs, values) : null;
        Tensor[] groupArgs = arguments(e.group(), inputs, values);
        List<Tensor> others = new ArrayList<>(java.util.Arrays.asList(groupArgs));
        others.remove(e.slot());
        Tensor[] edges = new Tensor[3 + others.size()];
        edges[0] = input;
        edges[1] = weight;
        edges[2] = bias;
        for (int k = 0; k < others.size(); k++) edges[3 + k] = others.get(k);
        boolean record = differentiable && Autograd.needsGrad(edges);
        // Without autograd the output may take the memory of the batch norm's input or of another operand (memory planning).
        List<Graph.Value> candidates = new ArrayList<>(e.group().group().inputs);
        candidates.set(e.slot(), bn.inputs.get(0));
        Tensor reused = record ? null : reusable(candidates, step, root, values);
        if (reused == null && !record && owned != null && owned.isContiguous()) {
            // Memory planning: the convolution's output is read by this kernel alone, each element before it is written.
            reused = owned;
            owned = null;
        }
        Tensor x;
        Tensor[] stats;
        try (var off = Grad.noGrad()) {
            x = input.contiguous();
            stats = convolved != null ? new Tensor[] {convolved[1], convolved[2]}
                    : Normalization.batchNormStatistics(x, runningMean, runningVar, bn.scalars[1], bn.scalars[2]);
        }
        Tensor[] perChannel = {stats[0], stats[1], weight, bias};
        Tensor out = reused != null ? reused : Tensor.empty(root.shape, DType.FLOAT32, root.device);
        try {
            Tensor[] args = normalizedArguments(others, x, perChannel, root.shape.length);
            try {
                apply(e.kernel(), root, args, null, out);
            } finally {
                closeChannelViews(args, others.size());
            }
            if (record) recordNormalizedBackward(e, edges, x, perChannel, out);
        } finally {
            x.close();
            stats[0].close();
            stats[1].close();
            if (owned != null) owned.close();
        }
        return out;
    }

    /** One block's per-channel moments (over its images and pixels), where it starts in the output. */
    private record BlockMoments(long image0, long pixel0, int channel0, double count, double[] mean, double[] m2) {}

    /**
     * The convolution feeding {@code e}'s batch norm with an epilogue gathering each block's per-channel moments, and
     * the batch norm's statistics from them (the running statistics updated as eagerly): {@code [output, mean,
     * invstd]}, or null, having done nothing, where the convolution does not take an epilogue. Where the backend does
     * not read its blocks on the host, the statistics are one pass over the output after it.
     */
    private static Tensor[] convolutionWithStatistics(NormalizedGroup e, Tensor[] inputs, Tensor[] values, Tensor runningMean,
                                                      Tensor runningVar) {
        Graph.Node conv = e.conv();
        Graph.Node bn = e.producer();
        org.jtorch.backend.NormalizationKernels kernels = Backends.of(conv.device).normalization();
        List<BlockMoments> parts = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicBoolean onHost = new java.util.concurrent.atomic.AtomicBoolean(true);
        Tensor out = org.jtorch.ops.Convolution.conv2dObserved(resolve(conv.inputs.get(0), inputs, values),
                resolve(conv.inputs.get(1), inputs, values), resolve(conv.inputs.get(2), inputs, values), conv.scalars, pv -> {
                    return (i0, i1, c0, c1, p0, p1) -> {
                        double[] mean = new double[c1 - c0];
                        double[] m2 = new double[c1 - c0];
                        if (kernels.blockMoments(block(pv, i0, i1, c0, c1, p0, p1), mean, m2)) {
                            parts.add(new BlockMoments(i0, p0, c0, (double) (i1 - i0) * (p1 - p0), mean, m2));
                        } else {
                            onHost.set(false);
                        }
                    };
                });
        if (out == null) return null;
        try (var off = Grad.noGrad()) {
            if (!onHost.get()) {
                try (Tensor x = out.contiguous()) {
                    Tensor[] stats = Normalization.batchNormStatistics(x, runningMean, runningVar, bn.scalars[1], bn.scalars[2]);
                    return new Tensor[] {out, stats[0], stats[1]};
                }
            }
            int channels = Math.toIntExact(out.size(1));
            double[] count = new double[channels];
            double[] mean = new double[channels];
            double[] m2 = new double[channels];
            // Chan et al.'s pairwise update, in the blocks' order in the output (not the order the threads finished them).
            parts.sort(java.util.Comparator.comparingLong(BlockMoments::image0).thenComparingLong(BlockMoments::pixel0)
                    .thenComparingInt(BlockMoments::channel0));
            for (BlockMoments p : parts) {
                if (p.count() == 0) continue;
                for (int k = 0; k < p.mean().length; k++) {
                    int ch = p.channel0() + k;
                    double total = count[ch] + p.count();
                    double delta = p.mean()[k] - mean[ch];
                    mean[ch] += delta * p.count() / total;
                    m2[ch] += p.m2()[k] + delta * delta * count[ch] * p.count() / total;
                    count[ch] = total;
                }
            }
            float[] meanValues = new float[channels];
            float[] varValues = new float[channels];
            for (int ch = 0; ch < channels; ch++) {
                meanValues[ch] = (float) mean[ch];
                varValues[ch] = (float) (m2[ch] / count[ch]);
            }
            Tensor meanTensor = Torch.tensor(meanValues);
            try (Tensor var = Torch.tensor(varValues)) {
                Tensor[] stats = Normalization.batchNormStatistics(meanTensor, var, out.numel() / channels, runningMean, runningVar,
                        bn.scalars[1], bn.scalars[2]);
                return new Tensor[] {out, stats[0], stats[1]};
            }
        } catch (RuntimeException ex) {
            out.close();
            throw ex;
        }
    }

    /** The normalised kernel's arguments: the group's other inputs, {@code x}, then the per-channel values as {@code [C, 1, ...]}. */
    private static Tensor[] normalizedArguments(List<Tensor> others, Tensor x, Tensor[] perChannel, int rank) {
        List<Tensor> args = new ArrayList<>(others);
        args.add(x);
        long[] channel = new long[rank - 1];
        java.util.Arrays.fill(channel, 1);
        for (Tensor t : perChannel) {
            if (t == null) continue;
            channel[0] = t.numel();
            args.add(t.view(channel));
        }
        return args.toArray(new Tensor[0]);
    }

    /** Closes the per-channel views {@link #normalizedArguments} made (after the others and {@code x}). */
    private static void closeChannelViews(Tensor[] args, int others) {
        for (int k = others + 1; k < args.length; k++) args[k].close();
    }

    /**
     * One node for the batch norm and its group: the gradient at the batch norm's output (one kernel, recomputing the
     * normalised values), then the batch norm's backward kernel from the saved statistics for its input, weight and
     * bias; each other input of the group its own gradient kernel, shared where the formulas are the same. {@code
     * edges} are the batch norm's input, weight and bias, then the group's other inputs.
     */
    private static void recordNormalizedBackward(NormalizedGroup e, Tensor[] edges, Tensor x, Tensor[] perChannel, Tensor out) {
        Graph.Node root = e.node();
        int others = edges.length - 3;
        SavedTensor[] saved = new SavedTensor[others + 5];
        for (int k = 0; k < others; k++) saved[k] = Autograd.save(edges[3 + k]);
        saved[others] = Autograd.save(x);
        for (int k = 0; k < 4; k++) saved[others + 1 + k] = perChannel[k] == null ? null : Autograd.save(perChannel[k]);
        long[][] shapes = new long[others][];
        for (int k = 0; k < others; k++) shapes[k] = edges[3 + k].shape();
        boolean[] needs = new boolean[edges.length];
        for (int k = 0; k < edges.length; k++) needs[k] = edges[k] != null && edges[k].requiresGrad();
        long n = root.shape[0];
        long c = root.shape[1];
        long spatial = Shapes.numel(root.shape) / (n * c);
        boolean loneRelu = others == 0 && e.group().group().ops == 1 && root.op == PointwiseOps.RELU;
        boolean join = isResidualJoin(e);
        Autograd.record("JitBatchNormFusedBackward", out, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a batch norm fused with "
                        + e.group().group().ops + " ops is not supported yet; call the function eagerly for higher-order gradients");
            }
            List<Tensor> otherValues = new ArrayList<>();
            for (int k = 0; k < others; k++) otherValues.add(saved[k].get());
            Tensor xv = saved[others].get();
            Tensor[] channels = new Tensor[4];
            for (int k = 0; k < 4; k++) channels[k] = saved[others + 1 + k] == null ? null : saved[others + 1 + k].get();
            Tensor[] args = normalizedArguments(otherValues, xv, channels, root.shape.length);
            Map<FormulaKernel, Tensor> fulls = new IdentityHashMap<>();
            try {
                java.util.function.Function<FormulaKernel, Tensor> full = kernel -> fulls.computeIfAbsent(kernel, k -> {
                    Tensor t = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                    apply(k, root, args, g[0], t);
                    return t;
                });
                Tensor[] grads = new Tensor[edges.length];
                FormulaKernel atNorm = e.gradients()[e.slot()];
                if (atNorm != null && (needs[0] || needs[1] || needs[2])) {
                    Tensor gi = needs[0] ? Tensor.empty(root.shape, DType.FLOAT32, root.device) : null;
                    Tensor gw = needs[1] ? Tensor.empty(new long[] {c}, channels[2].dtype(), root.device) : null;
                    Tensor gb = needs[2] ? Tensor.empty(new long[] {c}, channels[3].dtype(), root.device) : null;
                    org.jtorch.backend.NormalizationKernels kernels = Backends.of(root.device).normalization();
                    // A lone ReLU's mask is applied as the batch norm's backward reads the gradient (recomputed from x), where
                    // the backend can: the masked gradient is never written.
                    // At a residual join the masked gradient is also the residual's: written once, by batch norm's first pass.
                    boolean joined = false;
                    if (join) {
                        Tensor gm = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                        if (kernels.batchNormAddReluBackward(Dispatcher.view(g[0]), Dispatcher.view(xv), Dispatcher.view(otherValues.get(0)), n, c,
                                spatial, Dispatcher.view(channels[0]), Dispatcher.view(channels[1]), viewOrNull(channels[2]),
                                viewOrNull(channels[3]), Dispatcher.view(gm), viewOrNull(gi), viewOrNull(gw), viewOrNull(gb))) {
                            fulls.put(e.gradients()[1 - e.slot()], gm);
                            joined = true;
                        } else {
                            gm.close();
                        }
                    }
                    boolean masked = joined || loneRelu && kernels.batchNormReluBackward(Dispatcher.view(g[0]), Dispatcher.view(xv), n, c, spatial,
                            Dispatcher.view(channels[0]), Dispatcher.view(channels[1]), viewOrNull(channels[2]), viewOrNull(channels[3]),
                            viewOrNull(gi), viewOrNull(gw), viewOrNull(gb));
                    if (!masked) {
                        Tensor gy = full.apply(atNorm);
                        kernels.batchNormBackward(Dispatcher.view(gy), Dispatcher.view(xv), n, c, spatial, Dispatcher.view(channels[0]),
                                Dispatcher.view(channels[1]), viewOrNull(channels[2]), true, viewOrNull(gi), viewOrNull(gw), viewOrNull(gb));
                    }
                    grads[0] = gi;
                    grads[1] = gw;
                    grads[2] = gb;
                }
                for (int k = 0; k < others; k++) {
                    FormulaKernel kernel = e.gradients()[k < e.slot() ? k : k + 1];
                    if (!needs[3 + k] || kernel == null) continue;
                    Tensor f = full.apply(kernel);
                    grads[3 + k] = Gradients.sumTo(f, shapes[k], DType.FLOAT32);
                    if (grads[3 + k] == f) grads[3 + k] = f.alias();
                }
                return grads;
            } finally {
                closeChannelViews(args, others);
                for (Tensor t : fulls.values()) t.close();
            }
        }, edges, java.util.Arrays.stream(saved).filter(java.util.Objects::nonNull).toArray(SavedTensor[]::new));
    }

    /**
     * Whether {@code e} is a residual block's join, {@code relu(batch_norm(x) + r)}: the gradient at the batch norm's
     * output and at {@code r} is the same masked gradient ({@code r} of the join's shape, not broadcast).
     */
    private static boolean isResidualJoin(NormalizedGroup e) {
        Graph.Node root = e.node();
        List<Graph.Value> in = e.group().group().inputs;
        return e.group().group().ops == 2 && in.size() == 2 && java.util.Arrays.equals(in.get(1 - e.slot()).shape(), root.shape)
                && root.op == PointwiseOps.RELU && root.inputs.get(0) instanceof Graph.Node add && add.op == PointwiseOps.ADD
                && add.scalars.length == 1 && add.scalars[0] == 1 && add.inputs.contains(e.producer()) && e.gradients() != null && e.gradients()[1 - e.slot()] != null;
    }

    private static StridedView viewOrNull(Tensor t) {
        return t == null ? null : Dispatcher.view(t);
    }

    private static final double[] NO_PARAMS = new double[0];

    /**
     * {@code v} (a row-major shape whose last dimension has {@code cols} values) as a {@code [rows, cols]} matrix, or
     * null where its leading dimensions do not merge into one stride.
     */
    private static StridedView matrix(StridedView v, long rows, long cols) {
        return matrix(v, rows, cols, 1);
    }

    /**
     * {@code v} as a {@code [rows, cols]} matrix whose rows are its last {@code k} dimensions ({@code cols} values), or
     * null where those dimensions, or the leading ones, do not merge into one stride each.
     */
    private static StridedView matrix(StridedView v, long rows, long cols, int k) {
        long[] shape = v.shape();
        long[] strides = v.strides();
        int first = shape.length - k;
        long colStride = strides[shape.length - 1];
        long next = -1;
        for (int d = shape.length - 1; d >= first; d--) {
            if (shape[d] == 1) continue;
            if (next < 0) colStride = strides[d];
            else if (strides[d] != next) return null;
            next = strides[d] * shape[d];
        }
        long rowStride = 0;
        next = -1;
        for (int d = first - 1; d >= 0; d--) {
            if (shape[d] == 1) continue;
            if (next < 0) rowStride = strides[d];
            else if (strides[d] != next) return null;
            next = strides[d] * shape[d];
        }
        return new StridedView(v.memory(), v.offset(), new long[] {rows, cols}, new long[] {rowStride, colStride}, v.dtype());
    }

    /** Rows {@code [r0, r1)} and columns {@code [c0, c1)} of a matrix view. */
    private static StridedView block(StridedView m, long r0, long r1, long c0, long c1) {
        long[] st = m.strides();
        return new StridedView(m.memory(), m.offset() + r0 * st[0] + c0 * st[1], new long[] {r1 - r0, c1 - c0}, st, m.dtype());
    }

    /**
     * {@code batch_norm(conv(x, w, b))} in evaluation as {@code conv(x, w * s, (b - mean) * s + beta)} per output
     * channel, with {@code s = gamma / sqrt(var + eps)} (gamma and beta 1 and 0 without affine parameters).
     */
    private static Tensor runFolded(FoldedConvBatchNorm f, Tensor[] inputs, Tensor[] values) {
        Graph.Node conv = f.conv();
        Tensor[] folded = folded(f.folding(), conv, f.node(), inputs, values);
        try (Tensor w = folded[0]; Tensor b = folded[1]) {
            return Dispatcher.call(FrontEndOps.CONV2D, new Tensor[] {resolve(conv.inputs.get(0), inputs, values), w, b}, conv.scalars);
        }
    }

    /** The folded weight and bias of {@code conv} followed by {@code bn} (handles the caller closes). */
    private static Tensor[] folded(BatchNormFolding folding, Graph.Node conv, Graph.Node bn, Tensor[] inputs, Tensor[] values) {
        return folding.folded(resolve(conv.inputs.get(1), inputs, values), resolve(conv.inputs.get(2), inputs, values),
                resolve(bn.inputs.get(1), inputs, values), resolve(bn.inputs.get(2), inputs, values),
                resolve(bn.inputs.get(3), inputs, values), resolve(bn.inputs.get(4), inputs, values));
    }

    /**
     * The convolution (its batch norm folded in where there is one) with the group as its epilogue, written into the
     * convolution's output. The group's operands are seen as {@code [N, C, H * W]}; one whose height and width do not
     * merge into one stride, or a convolution the fused entry does not take, sends the step the unfused way: the
     * convolution, then the group over its whole output.
     */
    private static Tensor runConvEpilogue(ConvEpilogue e, Tensor[] inputs, Tensor[] values) {
        Fused f = e.group();
        Graph.Node root = f.node();
        Graph.Node conv = e.conv();
        Tensor[] args = arguments(f, inputs, values);
        Tensor[] folded = e.bn() == null ? null : folded(e.folding(), conv, e.bn(), inputs, values);
        Tensor x = resolve(conv.inputs.get(0), inputs, values);
        Tensor w = folded != null ? folded[0] : resolve(conv.inputs.get(1), inputs, values);
        Tensor b = folded != null ? folded[1] : resolve(conv.inputs.get(2), inputs, values);
        // The bias goes into the epilogue's formula where there is one, as a last operand of shape [C, 1, 1].
        boolean biasInEpilogue = e.biased() != null && b != null && b.dim() == 1;
        Tensor[] operandTensors = java.util.Arrays.copyOf(args, args.length + (biasInEpilogue ? 1 : 0));
        if (biasInEpilogue) operandTensors[args.length] = b.view(b.size(0), 1, 1);
        Tensor[] broadcast = new Tensor[operandTensors.length];
        try {
            StridedView[] operands = new StridedView[operandTensors.length];
            boolean blocks = true;
            for (int k = 0; k < operands.length && blocks; k++) {
                if (k == e.slot()) continue;
                Tensor bc = operandTensors[k].broadcastTo(root.shape);
                if (bc != operandTensors[k]) broadcast[k] = bc;
                operands[k] = Dispatcher.view(bc);
                blocks = pixelsMerge(operands[k]);
            }
            FormulaKernel kernel = biasInEpilogue ? e.biased() : f.kernel();
            Tensor out = !blocks ? null : org.jtorch.ops.Convolution.conv2d(x, w, biasInEpilogue ? null : b, conv.scalars, pv -> {
                int device = root.device.index();
                return (i0, i1, c0, c1, p0, p1) -> {
                    StridedView[] in = new StridedView[operands.length];
                    for (int k = 0; k < in.length; k++) in[k] = block(k == e.slot() ? pv : operands[k], i0, i1, c0, c1, p0, p1);
                    kernel.run(device, DType.FLOAT32, block(pv, i0, i1, c0, c1, p0, p1), in, NO_PARAMS);
                };
            });
            if (out != null) return out;
            Tensor product = Dispatcher.call(FrontEndOps.CONV2D, new Tensor[] {x, w, b}, conv.scalars);
            args[e.slot()] = product;
            try (product) {
                Tensor result = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                apply(f.kernel(), root, args, null, result);
                return result;
            }
        } finally {
            for (Tensor t : broadcast) if (t != null) t.close();
            if (biasInEpilogue) operandTensors[args.length].close();
            if (folded != null) {
                folded[0].close();
                folded[1].close();
            }
        }
    }

    /** Whether an {@code [N, C, H, W]} view's pixels are one stride apart in row-major order (its H and W merge). */
    private static boolean pixelsMerge(StridedView v) {
        long[] shape = v.shape(), strides = v.strides();
        return shape[2] == 1 || shape[3] == 1 || strides[2] == shape[3] * strides[3];
    }

    /** Images {@code [i0, i1)}, channels {@code [c0, c1)} and pixels {@code [p0, p1)} of an {@code [N, C, H, W]} view, as {@code [images, channels, pixels]}. */
    private static StridedView block(StridedView v, long i0, long i1, int c0, int c1, long p0, long p1) {
        long[] st = v.strides();
        long pixelStride = v.shape()[3] == 1 ? st[2] : st[3];
        return new StridedView(v.memory(), v.offset() + i0 * st[0] + c0 * st[1] + p0 * pixelStride, new long[] {i1 - i0, c1 - c0, p1 - p0},
                new long[] {st[0], st[1], pixelStride}, v.dtype());
    }

    private static Tensor[] arguments(Fused f, Tensor[] inputs, Tensor[] values) {
        List<Graph.Value> in = f.group().inputs;
        Tensor[] args = new Tensor[in.size()];
        for (int k = 0; k < args.length; k++) args[k] = resolve(in.get(k), inputs, values);
        return args;
    }

    /** {@code out = kernel(args[, grad])} at {@code root}'s shape, the operands broadcast to it. */
    private static void apply(FormulaKernel kernel, Graph.Node root, Tensor[] args, Tensor grad, Tensor out) {
        apply(kernel, root, args, grad, out, null);
    }

    /** {@link #apply} with the inputs {@code draws} names (after the others) drawn inside the kernel, where not null. */
    private static void apply(FormulaKernel kernel, Graph.Node root, Tensor[] args, Tensor grad, Tensor out, FormulaKernel.Draws draws) {
        withBroadcastViews(root, args, grad, out, views -> {
            if (draws == null) kernel.run(root.device.index(), DType.FLOAT32, Dispatcher.view(out), views, new double[0]);
            else kernel.runDrawing(root.device.index(), Dispatcher.view(out), withDrawn(views, draws), draws);
        });
    }

    /** {@code views} followed by a null for each drawn input. */
    private static StridedView[] withDrawn(StridedView[] views, FormulaKernel.Draws draws) {
        return java.util.Arrays.copyOf(views, views.length + draws.inputs().length);
    }

    /** Runs {@code body} on views of {@code args} (and {@code grad}) broadcast to {@code root}'s shape, {@code out} held. */
    private static void withBroadcastViews(Graph.Node root, Tensor[] args, Tensor grad, Tensor out,
                                           java.util.function.Consumer<StridedView[]> body) {
        int n = args.length + (grad == null ? 0 : 1);
        Tensor[] broadcast = new Tensor[n];
        StridedView[] views = new StridedView[n];
        try {
            for (int k = 0; k < n; k++) {
                Tensor source = k < args.length ? args[k] : grad;
                Tensor b = source.broadcastTo(root.shape);
                // broadcastTo returns the tensor itself when the shape already matches: only a new view is closed here.
                if (b != source) broadcast[k] = b;
                views[k] = Dispatcher.view(b);
            }
            Backends.hold("jit", Dispatcher.view(out), null, null);
            try {
                body.accept(views);
            } finally {
                Backends.drop(Dispatcher.view(out), null, null);
            }
        } finally {
            for (Tensor b : broadcast) if (b != null) b.close();
        }
    }

    /**
     * Records the group as one autograd node: its backward runs each input's gradient formula (the intermediates
     * recomputed, not saved) and sums a broadcast input's gradient back to its shape. For a fused sum, the incoming
     * gradient is first seen at {@code keepShape} (the summed dimensions as 1) and broadcast over the group's values.
     */
    private static void recordBackward(Fused f, Tensor[] args, Tensor out, long[] keepShape) {
        recordBackward(f, args, out, keepShape, null);
    }

    /** {@link #recordBackward(Fused, Tensor[], Tensor, long[])} whose gradient kernels read the group's dropout masks {@code masks}. */
    private static void recordBackward(Fused f, Tensor[] args, Tensor out, long[] keepShape, Tensor[] masks) {
        recordBackward(f, args, out, keepShape == null ? "JitFusedBackward" : "JitFusedSumBackward", null,
                g -> keepShape == null ? g : g.reshape(keepShape), masks);
    }

    private static void recordBackward(Fused f, Tensor[] args, Tensor out, String name, SavedTensor extra,
                                       java.util.function.UnaryOperator<Tensor> incoming) {
        recordBackward(f, args, out, name, extra, incoming, null);
    }

    /**
     * Records the group as one autograd node named {@code name}, whose incoming gradient {@code incoming} turns into
     * the gradient at the group's output (a new tensor, or the incoming one itself); {@code extra} is saved beside the
     * group's inputs, and so are its dropouts' {@code masks} (null without dropout), which the gradient kernels read.
     */
    private static void recordBackward(Fused f, Tensor[] args, Tensor out, String name, SavedTensor extra,
                                       java.util.function.UnaryOperator<Tensor> incoming, Tensor[] masks) {
        SavedTensor[] saved = new SavedTensor[args.length];
        for (int k = 0; k < args.length; k++) saved[k] = Autograd.save(args[k]);
        SavedTensor[] savedMasks = masks == null ? new SavedTensor[0] : new SavedTensor[masks.length];
        for (int j = 0; j < savedMasks.length; j++) savedMasks[j] = Autograd.save(masks[j]);
        List<SavedTensor> keptList = new ArrayList<>(java.util.Arrays.asList(saved));
        if (extra != null) keptList.add(extra);
        keptList.addAll(java.util.Arrays.asList(savedMasks));
        SavedTensor[] kept = keptList.toArray(SavedTensor[]::new);
        boolean[] needs = new boolean[args.length];
        for (int k = 0; k < args.length; k++) needs[k] = args[k].requiresGrad();
        Autograd.record(name, out, g -> {
            if (Grad.isEnabled()) {
                throw new UnsupportedOperationException("jit: a double backward (createGraph) through a fused group of "
                        + f.group().ops + " ops is not supported yet; call the function eagerly for higher-order gradients");
            }
            Tensor[] values = new Tensor[saved.length];
            for (int k = 0; k < saved.length; k++) values[k] = saved[k].get();
            FormulaKernel.Draws draws = maskDraws(f, savedMasks, args.length + 1);
            Tensor grad = incoming.apply(g[0]);
            try {
                return groupGradients(f, values, grad, needs, draws);
            } finally {
                if (grad != g[0]) grad.close();
            }
        }, args, kept);
    }

    /**
     * The group's dropout factors read back from its saved masks ({@code firstInput} is the first mask's index among the
     * gradient kernels' inputs: the group's inputs, then the incoming gradient), or null for a group without dropout.
     */
    private static FormulaKernel.Draws maskDraws(Fused f, SavedTensor[] savedMasks, int firstInput) {
        if (savedMasks.length == 0) return null;
        int[] maskInputs = new int[savedMasks.length];
        StridedView[] maskViews = new StridedView[savedMasks.length];
        for (int j = 0; j < maskViews.length; j++) {
            maskInputs[j] = firstInput + j;
            maskViews[j] = Dispatcher.view(savedMasks[j].get());
        }
        return FormulaKernel.Draws.fromMasks(maskInputs, scales(f.group()), maskViews);
    }

    /**
     * The gradients of the group's inputs {@code values} (null where {@code needs} is false or none flows) from
     * {@code grad}, the gradient at the group's output, each summed to its input's shape.
     */
    private static Tensor[] groupGradients(Fused f, Tensor[] values, Tensor grad, boolean[] needs, FormulaKernel.Draws draws) {
        Graph.Node root = f.node();
        // Each distinct gradient kernel runs once at the group's shape; inputs sharing it read the same values.
        Map<FormulaKernel, Tensor> fulls = new IdentityHashMap<>();
        try {
            Tensor[] grads = new Tensor[values.length];
            for (int k = 0; k < values.length; k++) {
                FormulaKernel kernel = f.gradients()[k];
                if (!needs[k] || kernel == null) continue;
                Tensor full = fulls.get(kernel);
                if (full == null) {
                    full = Tensor.empty(root.shape, DType.FLOAT32, root.device);
                    apply(kernel, root, values, grad, full, draws);
                    fulls.put(kernel, full);
                }
                grads[k] = Gradients.sumTo(full, values[k].shape(), DType.FLOAT32);
                // The engine owns each result: a value handed out twice goes out as two handles on one storage.
                if (grads[k] == full) grads[k] = full.alias();
            }
            return grads;
        } finally {
            for (Tensor full : fulls.values()) full.close();
        }
    }

    private Tensor replay(Graph.Node n, Tensor[] inputs, Tensor[] values) {
        Tensor[] args = new Tensor[n.inputs.size()];
        for (int k = 0; k < args.length; k++) args[k] = resolve(n.inputs.get(k), inputs, values);
        double[] s = n.scalars;
        OpDef op = n.op;
        if (readsLaterOutputs(n)) return replayAll(n, args, values);
        if (n.inPlace) {
            // Writes into its first input's tensor; the node has no value of its own.
            if (op.kind() == OpDef.Kind.UNARY) Elementwise.unaryInPlace(op, args[0], s[0], s[1]);
            else if (op.kind() == OpDef.Kind.STRUCTURED) Dispatcher.callInPlace(op, args, s);
            else Elementwise.binaryInPlace(op, args[0], args[1], s[0]);
            return null;
        }
        return switch (op.kind()) {
            case UNARY -> Dispatcher.unary(op, args[0], s.length > 0 ? s[0] : 0, s.length > 1 ? s[1] : 0);
            case BINARY -> Dispatcher.binary(op, args[0], args[1], s.length > 0 ? s[0] : 1);
            case REDUCTION -> Dispatcher.reduce(op, args[0], n.reduce, resultDtype(op, args[0], n.dtype), s.length > 0 ? s[0] : 0);
            case ALONG_DIM -> Dispatcher.alongDim(op, args[0], (int) s[0], null);
            case COMPOSITE, FRONT_END, STRUCTURED, MUTATING -> Dispatcher.call(op, args, s); // a mutating op is never traced: call refuses it
        };
    }

    /** Whether the program reads an output of {@code n} after its first. */
    private boolean readsLaterOutputs(Graph.Node n) {
        for (Graph.Output o : n.outputs) if (o != null && liveOutputs.contains(o)) return true;
        return false;
    }

    /**
     * Replays a multi-output node whose later outputs the program reads: all its outputs, as eager's call made them
     * (autograd records the op once, with every output, as eagerly), the read ones kept at their slots and the others
     * closed at once. Returns the first.
     */
    private Tensor replayAll(Graph.Node n, Tensor[] args, Tensor[] values) {
        Tensor[] outs = Dispatcher.callAll(n.op, args, n.scalars);
        if (outs.length != n.outputs.length + 1) {
            for (Tensor t : outs) if (t != null) t.close();
            throw new IllegalStateException(n.op.pyName() + " made " + outs.length + " outputs when replayed, " + (n.outputs.length + 1) + " when traced");
        }
        for (int k = 1; k < outs.length; k++) {
            Graph.Output o = n.outputs[k - 1];
            if (o != null && liveOutputs.contains(o)) values[o.slot] = outs[k];
            else if (outs[k] != null) outs[k].close();
        }
        return outs[0];
    }

    /** The dtype a reduction was asked for: null where the op's own rule gives the traced result type. */
    private static DType resultDtype(OpDef op, Tensor x, DType traced) {
        DType natural = op.resultType(op.computeType(x.dtype(), Torch.defaultDtype()));
        return natural == traced ? null : traced;
    }

    // ------------------------------------------------------------------ explaining

    int fusedGroups() {
        // A masked linear layer's forward is the eager op's: only its backward is fused.
        return (int) steps.stream().filter(s -> !(s instanceof Replayed) && !(s instanceof MaskedLinear) && !(s instanceof Reserved)).count();
    }

    int kernelLaunches() {
        // A reservation advances a generator on the host: no kernel.
        return (int) steps.stream().filter(s -> !(s instanceof Reserved)).count();
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder();
        for (Step step : steps) {
            switch (step) {
                case Fused f -> {
                    FusedGroup g = f.group();
                    s.append(f.node()).append(" = fused ").append(g.ops).append(" ops over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                    if (f.gradients() != null) {
                        Expr[] grads = g.gradients();
                        for (int k = 0; k < grads.length; k++) {
                            if (grads[k] == null) continue;
                            int same = java.util.Arrays.asList(f.gradients()).indexOf(f.gradients()[k]);
                            s.append("    grad ").append(Graph.name(g.inputs.get(k))).append(" = ")
                                    .append(same < k ? "grad " + Graph.name(g.inputs.get(same)) + " (one kernel, run once)" : grads[k])
                                    .append('\n');
                        }
                    }
                }
                case FusedSum f -> {
                    FusedGroup g = f.group().group();
                    s.append(f.node()).append(" = sum of rows of ").append(f.rowLength()).append(", fused with ").append(g.ops)
                            .append(g.ops == 1 ? " op" : " ops").append(" over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                }
                case FusedLayerNorm f -> {
                    FusedGroup g = f.group().group();
                    s.append(f.node()).append(" = native_layer_norm of rows of ").append(f.rowLength()).append(", fused with ").append(g.ops)
                            .append(g.ops == 1 ? " op" : " ops").append(" over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                    if (f.keepsValues()) {
                        s.append("    also writes the group's values once, at ").append(f.group().node()).append(", for its later reader\n");
                    }
                    if (differentiable && f.keepsValues()) {
                        s.append("    backward: native_layer_norm_backward on the saved group's values, the later reader's gradient added in place, ")
                                .append("then the group's gradients\n");
                    } else if (differentiable) {
                        s.append("    backward: saves the statistics, not the group's values; recomputes them for native_layer_norm_backward, ")
                                .append("then the group's gradients\n");
                    }
                }
                case FusedSoftmax f -> {
                    FusedGroup g = f.group().group();
                    s.append(f.node()).append(f.log() ? " = log_softmax" : " = softmax").append(" of rows, fused with ").append(g.ops)
                            .append(g.ops == 1 ? " op" : " ops").append(" over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                    if (differentiable) {
                        s.append(f.group().kernel().softmaxBackwardsRows() && FUSED_SOFTMAX_BACKWARD
                                ? "    backward: the softmax's gradient and the group's in one pass over blocks of rows, the former never stored\n"
                                : "    backward: the softmax's gradient as ops (this backend has no fused softmax backward), then the group's\n");
                    }
                }
                case GemmEpilogue e -> {
                    FusedGroup g = e.group().group();
                    s.append(e.node()).append(" = ").append(e.producer().op.name()).append(" (").append(e.producer())
                            .append(") with an epilogue of ").append(g.ops)
                            .append(g.ops == 1 ? " op" : " ops").append(" over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                    if (inputMasks.containsKey(e.producer())) {
                        s.append("    backward: the input's gradient masked by ").append(Graph.name(e.producer().inputs.get(0)))
                                .append("'s ReLU in the GEMM's epilogue\n");
                    }
                    if (premasked.contains(e.node())) s.append("    backward: the incoming gradient arrives masked (no ReLU pass)\n");
                }
                case NormalizedGroup e -> {
                    FusedGroup g = e.group().group();
                    s.append(e.node()).append(" = batch norm statistics of ").append(Graph.name(e.producer().inputs.get(0)))
                            .append(e.conv() != null ? " gathered by its convolution's epilogue (" + e.conv() + ")" : "")
                            .append(", then one kernel normalising (").append(e.producer()).append(") into ").append(g.ops)
                            .append(g.ops == 1 ? " op" : " ops").append(" over (")
                            .append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ").append(g.formula).append('\n');
                    if (differentiable && isResidualJoin(e)) {
                        s.append("    backward: the join's masked gradient written once, by batch norm's first backward pass (where the backend has")
                                .append(" the kernel), read by its second and as ").append(Graph.name(g.inputs.get(1 - e.slot()))).append("'s gradient\n");
                    }
                }
                case FoldedConvBatchNorm f -> s.append(f.node()).append(" = conv2d with the evaluation batch norm folded into its weight and bias (")
                        .append(f.conv()).append(")\n");
                case ConvEpilogue e -> {
                    FusedGroup g = e.group().group();
                    s.append(e.node()).append(" = conv2d").append(e.bn() != null ? " with the evaluation batch norm folded into its weight and bias" : "")
                            .append(" (").append(e.conv()).append(") and an epilogue of ").append(g.ops).append(g.ops == 1 ? " op" : " ops")
                            .append(" over (").append(String.join(", ", g.inputs.stream().map(Graph::name).toList())).append("): ")
                            .append(g.formula).append('\n');
                }
                case Reserved r -> s.append(r.node()).append(" = native_dropout's Philox blocks reserved (p = ").append(r.node().scalars[0])
                        .append(differentiable ? "; its keep decisions drawn inside the fused kernel, which writes the mask for the backward)\n"
                                : "; its keep decisions drawn inside the fused kernel, the mask never stored)\n");
                case MaskedLinear m -> s.append(m.node()).append(" = linear, its input's gradient masked by ")
                        .append(Graph.name(m.node().inputs.get(0))).append("'s ReLU in the GEMM's epilogue\n");
                case Replayed r -> {
                    s.append(r.node()).append(" = ").append(r.node().op.name()).append(r.node().inPlace ? "_ (eager, in place" : " (eager");
                    if (r.node().multiOutput()) {
                        List<String> read = new ArrayList<>();
                        for (Graph.Output o : r.node().outputs) if (o != null && liveOutputs.contains(o)) read.add(o.toString());
                        s.append(", ").append(r.node().outputs.length + 1).append(" outputs")
                                .append(read.isEmpty() ? ", the first read" : ", also read: " + String.join(", ", read));
                    }
                    s.append(")\n");
                }
            }
        }
        return s.toString();
    }
}

