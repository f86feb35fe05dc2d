package org.jtorch.jit;

import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BinaryOperator;
import org.jtorch.Tensor;
import org.jtorch.autograd.Grad;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.Module;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;

/**
 * A compiled training step ({@link Jit#compileStep}): the gradients cleared (set to null), the module's compiled forward
 * ({@link Jit#compile(Module, Jit.Options)}), the loss, the backward, and the optimizer's update of each parameter run
 * inside the backward, right after that parameter's gradient is accumulated (while the weight gradient's GEMM has just
 * written it) instead of in a separate pass over all parameters afterwards, as PyTorch's optimizer-in-backward
 * ({@code register_post_accumulate_grad_hook}).
 *
 * <p>The result equals {@code opt.zeroGrad(); loss(compiled(x), y).backward(); opt.step()} with the same compiled
 * module: parameters, gradients and the optimizer's state, bit for bit (each parameter's update is the same kernel with
 * the same scalars; only the order in which parameters are updated differs). After a step each parameter's
 * {@code grad()} holds its gradient, as after PyTorch's step. A parameter that gets no gradient (frozen, unused) keeps
 * a null gradient and is not updated. Gradient accumulation: {@link #step(Tensor[], Tensor[])} runs one backward per
 * micro-batch and updates once, during the last backward.
 *
 * <p>If the last backward fails part-way, the parameters whose gradient was already complete have been updated.
 * Not thread-safe; one thread runs the steps of a module.
 */
public final class TrainingStep {
    private final TensorFunction forward;
    private final BinaryOperator<Tensor> loss;
    private final Optimizer optimizer;
    /** Parameters whose post-accumulate hook this step has registered (hooks cannot be removed, so each is added once). */
    private final Map<Tensor, Boolean> hooked = new IdentityHashMap<>();
    /** During the last backward of a step: each parameter's group; null otherwise (the hooks then do nothing). */
    private Map<Tensor, ParamGroup> updating;
    /** The parameters updated during the current step's last backward. */
    private final Map<Tensor, Boolean> updated = new IdentityHashMap<>();

    TrainingStep(TensorFunction forward, BinaryOperator<Tensor> loss, Optimizer optimizer) {
        this.forward = forward;
        this.loss = loss;
        this.optimizer = optimizer;
    }

    /** One step on one batch; returns its loss, detached (the caller owns it). */
    public Tensor step(Tensor input, Tensor target) {
        return step(new Tensor[] {input}, new Tensor[] {target});
    }

    /**
     * One step accumulating the gradients of {@code inputs.length} micro-batches (one backward each; the loss function
     * should scale its loss where a mean over the whole batch is wanted); returns the sum of their losses, detached
     * (the caller owns it).
     */
    public Tensor step(Tensor[] inputs, Tensor[] targets) {
        Arguments.nonNull("TrainingStep.step", "inputs", inputs);
        Arguments.nonNull("TrainingStep.step", "targets", targets);
        if (inputs.length == 0 || inputs.length != targets.length) {
            throw new IllegalArgumentException("TrainingStep.step: needs as many targets as inputs, at least one (got "
                    + inputs.length + " inputs and " + targets.length + " targets)");
        }
        Map<Tensor, ParamGroup> groups = parameterGroups();
        optimizer.zeroGrad();
        try (MemoryScope scope = new MemoryScope(); var grad = Grad.enableGrad()) {
            Tensor total = null;
            for (int k = 0; k < inputs.length; k++) {
                Tensor l = loss.apply(forward.apply(inputs[k]), targets[k]);
                if (k < inputs.length - 1) {
                    l.backward();
                } else {
                    backwardUpdating(l, groups);
                }
                try (var off = Grad.noGrad()) {
                    total = total == null ? l.detach().clone() : total.add(l);
                }
            }
            return scope.keep(total);
        }
    }

    /** The last backward, each parameter updated as its gradient is complete; then the ones whose gradient came only earlier. */
    private void backwardUpdating(Tensor l, Map<Tensor, ParamGroup> groups) {
        updated.clear();
        updating = groups;
        try {
            l.backward();
        } finally {
            updating = null;
        }
        for (Map.Entry<Tensor, ParamGroup> e : groups.entrySet()) {
            Tensor p = e.getKey();
            if (!updated.containsKey(p) && p.grad() != null) optimizer.stepParameters(e.getValue(), List.of(p));
        }
    }

    /** Each of the optimizer's parameters that requires grad with its group; hooks the ones not hooked yet (groups may be added). */
    private Map<Tensor, ParamGroup> parameterGroups() {
        Map<Tensor, ParamGroup> groups = new IdentityHashMap<>();
        for (ParamGroup g : optimizer.paramGroups()) {
            for (Tensor p : g.params()) {
                if (!p.requiresGrad()) continue;
                groups.put(p, g);
                if (hooked.put(p, Boolean.TRUE) == null) p.registerPostAccumulateGradHook(this::gradientAccumulated);
            }
        }
        return groups;
    }

    private void gradientAccumulated(Tensor p) {
        Map<Tensor, ParamGroup> groups = updating;
        if (groups == null) return;
        ParamGroup g = groups.get(p);
        if (g == null) return;
        optimizer.stepParameters(g, List.of(p));
        updated.put(p, Boolean.TRUE);
    }
}
