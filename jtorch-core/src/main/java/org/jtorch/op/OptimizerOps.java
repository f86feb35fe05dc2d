package org.jtorch.op;

import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * The ops that update lists of tensors in place ({@link OpDef.Kind#MUTATING}): the fused optimizer steps and
 * GradScaler's unscale and scale update, with PyTorch's names and schemas. Each op's update rule lives here and in the
 * kernels that each backend registers for it ({@link KernelRegistry#registerMutating}): a new optimizer is one
 * declaration plus the kernels of the backends that take it, and where a backend registers none the optimizer takes its
 * composed path ({@link KernelRegistry#hasMutating}).
 *
 * <p>The optimizer steps differ from PyTorch's schemas in two ways, both said in their docs: the Adam family takes the
 * step count as a scalar ({@code step}) rather than a list of step tensors (jtorch counts steps on the host, and batches
 * parameters with one count per call), and none takes {@code grad_scale}/{@code found_inf} (GradScaler unscales first),
 * so {@code grads} is read only.
 */
public final class OptimizerOps {
    private OptimizerOps() {}

    private static Param list(String name, boolean mutable, char alias) {
        return new Param(name, mutable ? "Tensor(" + alias + "!)[]" : "Tensor[]", null);
    }

    private static Param scalar(String name, String type) {
        return new Param(name, type, null);
    }

    /**
     * {@code _amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale)}:
     * multiplies every tensor of {@code self} by {@code inv_scale} in place (finite or not) and sets {@code found_inf} to 1
     * where any element was infinite or NaN before, leaving it as it was otherwise. float32 multiplies in float32, float64
     * by {@code inv_scale} widened, 16-bit floats in float32 rounded once. {@code inv_scale} may be on the CPU for tensors
     * of a device (the kernel reads it on the host then: GradScaler keeps its scale there).
     */
    public static final OpDef AMP_UNSCALE = OpDef.mutating("_amp_foreach_non_finite_check_and_unscale_")
            .rule(DTypeRule.FLOATING_ONLY)
            .signature(list("self", true, 'a'), new Param("found_inf", "Tensor(b!)", null), Param.tensor("inv_scale"))
            .returns("()")
            .check(OptimizerOps::checkUnscale)
            .doc("GradScaler's unscale and inf/NaN check over a list of gradients (`GradScaler.unscale_`)").build();

    /**
     * {@code _amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor,
     * float scale_backoff_factor, int growth_interval) -> Tensor(a!)}: with {@code found_inf} nonzero,
     * {@code self *= backoff} and the tracker resets; otherwise the tracker counts one more clean step, and on reaching
     * {@code growth_interval} the scale grows (if the grown value is finite) and the tracker resets. {@code self} and
     * {@code found_inf} are one float32 element, {@code growth_tracker} one int32, all on one device.
     */
    public static final OpDef AMP_UPDATE_SCALE = OpDef.mutating("_amp_update_scale_")
            .rule(DTypeRule.FLOAT32_ONLY)
            .signature(new Param("self", "Tensor(a!)", null), new Param("growth_tracker", "Tensor(b!)", null),
                    Param.tensor("found_inf"), scalar("scale_growth_factor", "float"), scalar("scale_backoff_factor", "float"),
                    scalar("growth_interval", "int"))
            .returns("Tensor(a!)")
            .check(OptimizerOps::checkUpdateScale)
            .doc("GradScaler's scale update (`GradScaler.update`)").build();

    /**
     * {@code _fused_sgd_(Tensor(a!)[] self, Tensor[] grads, Tensor(c!)[] momentum_buffer_list, float weight_decay,
     * float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step)}: PyTorch 1.13's SGD
     * rule per element ({@link SgdScalars}), over contiguous float32 tensors; {@code momentum_buffer_list} empty without
     * momentum.
     */
    public static final OpDef FUSED_SGD = OpDef.mutating("_fused_sgd_")
            .rule(DTypeRule.FLOAT32_ONLY)
            .signature(list("self", true, 'a'), list("grads", false, 'b'), list("momentum_buffer_list", true, 'c'),
                    scalar("weight_decay", "float"), scalar("momentum", "float"), scalar("lr", "float"), scalar("dampening", "float"),
                    scalar("nesterov", "bool"), scalar("maximize", "bool"), scalar("is_first_step", "bool"))
            .returns("()")
            .check((lists, tensors, s) -> checkSteps("_fused_sgd_", lists, s[1] != 0 ? 3 : 2))
            .doc("SGD's step over lists of float32 parameters (`optim.SGD`); grads read only (no grad_scale)").build();

    /**
     * {@code _fused_adam_(Tensor(a!)[] self, Tensor[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs,
     * Tensor(e!)[] max_exp_avg_sqs, float step, float lr, float beta1, float beta2, float weight_decay, float eps,
     * bool amsgrad, bool maximize)}: PyTorch 1.13's Adam rule per element ({@link AdamScalars}), every parameter at step
     * count {@code step}; {@code max_exp_avg_sqs} empty without AMSGrad.
     */
    public static final OpDef FUSED_ADAM = adam("_fused_adam_", "Adam's step (L2 decay in the gradient; `optim.Adam`)");

    /** {@code _fused_adamw_}: as {@link #FUSED_ADAM} with AdamW's decoupled decay, {@code p *= 1 - lr * weight_decay} first. */
    public static final OpDef FUSED_ADAMW = adam("_fused_adamw_", "AdamW's step (decoupled decay; `optim.AdamW`)");

    /**
     * {@code _fused_adadelta_(Tensor(a!)[] self, Tensor[] grads, Tensor(c!)[] square_avgs, Tensor(d!)[] acc_deltas, float lr,
     * float rho, float eps, float weight_decay, bool maximize)}: PyTorch 1.13's Adadelta rule per element
     * ({@link AdadeltaScalars}), over contiguous float32 tensors. PyTorch has no fused Adadelta (its {@code foreach} path
     * runs a dozen list ops); this op is jtorch's, named in ATen's style.
     */
    public static final OpDef FUSED_ADADELTA = OpDef.mutating("_fused_adadelta_")
            .rule(DTypeRule.FLOAT32_ONLY)
            .signature(list("self", true, 'a'), list("grads", false, 'b'), list("square_avgs", true, 'c'),
                    list("acc_deltas", true, 'd'), scalar("lr", "float"), scalar("rho", "float"), scalar("eps", "float"),
                    scalar("weight_decay", "float"), scalar("maximize", "bool"))
            .returns("()")
            .check((lists, tensors, s) -> checkSteps("_fused_adadelta_", lists, 4))
            .doc("Adadelta's step over lists of float32 parameters (`optim.Adadelta`); grads read only (no grad_scale)").build();

    private static OpDef adam(String name, String doc) {
        return OpDef.mutating(name).rule(DTypeRule.FLOAT32_ONLY)
                .signature(list("self", true, 'a'), list("grads", false, 'b'), list("exp_avgs", true, 'c'),
                        list("exp_avg_sqs", true, 'd'), list("max_exp_avg_sqs", true, 'e'), scalar("step", "float"),
                        scalar("lr", "float"), scalar("beta1", "float"), scalar("beta2", "float"), scalar("weight_decay", "float"),
                        scalar("eps", "float"), scalar("amsgrad", "bool"), scalar("maximize", "bool"))
                .returns("()")
                .check((lists, tensors, s) -> checkSteps(name, lists, s[6] != 0 ? 5 : 4))
                .doc(doc + " over lists of float32 parameters at one step count; grads read only (no grad_scale)").build();
    }

    // ------------------------------------------------------------------ the update rules' scalars

    /**
     * SGD's scalars as the kernels take them, rounded to float once as ATen's kernels receive them: {@code d = ±g
     * (+ p*weightDecay)}; with momentum {@code buf = firstStep ? d : buf*momentum + d*oneMinusDampening} and
     * {@code d = nesterov ? d + buf*momentum : buf}; then {@code p += d*negLr}.
     */
    public record SgdScalars(float negLr, float weightDecay, float momentum, float oneMinusDampening, boolean nesterov,
                             boolean maximize, boolean firstStep) {
        /** From {@link #FUSED_SGD}'s scalars, in its signature's order. */
        public static SgdScalars of(double[] s) {
            return new SgdScalars((float) -s[2], (float) s[0], (float) s[1], (float) (1 - s[3]), s[4] != 0, s[5] != 0, s[6] != 0);
        }
    }

    /**
     * Adam's and AdamW's scalars as the kernels take them, computed in double for the step count as the composed path
     * computes them and rounded to float once: {@code p *= paramScale} (AdamW's decoupled decay; 1 for Adam),
     * {@code d = ±g (+ p*weightDecay)} (Adam's L2 decay; 0 for AdamW), {@code m = m*beta1 + d*oneMinusBeta1},
     * {@code v = v*beta2 + (d*oneMinusBeta2)*d}, with AMSGrad {@code vmax = max(vmax, v)}, then
     * {@code p += (m*negStepSize) / (sqrt(v or vmax)/bc2Sqrt + eps)}.
     */
    public record AdamScalars(float paramScale, float weightDecay, float beta1, float oneMinusBeta1, float beta2,
                              float oneMinusBeta2, float bc2Sqrt, float eps, float negStepSize, boolean maximize, boolean amsgrad) {
        /** From {@link #FUSED_ADAM}'s or {@link #FUSED_ADAMW}'s ({@code decoupled}) scalars, in their signature's order. */
        public static AdamScalars of(double[] s, boolean decoupled) {
            double step = s[0], lr = s[1], beta1 = s[2], beta2 = s[3], weightDecay = s[4], eps = s[5];
            double bias1 = 1 - Math.pow(beta1, step);
            double bias2 = 1 - Math.pow(beta2, step);
            double stepSize = lr / bias1;
            return new AdamScalars(decoupled ? (float) (1 - lr * weightDecay) : 1f, decoupled ? 0f : (float) weightDecay,
                    (float) beta1, (float) (1 - beta1), (float) beta2, (float) (1 - beta2), (float) Math.sqrt(bias2), (float) eps,
                    (float) -stepSize, s[7] != 0, s[6] != 0);
        }
    }

    /**
     * Adadelta's scalars as the kernels take them, rounded to float once: {@code d = ±g (+ p*weightDecay)},
     * {@code s = s*rho + (d*oneMinusRho)*d}, {@code delta = sqrt(a + eps) / sqrt(s + eps) * d},
     * {@code a = a*rho + (delta*oneMinusRho)*delta}, {@code p += delta*negLr}: the composed path's operations in its order.
     */
    public record AdadeltaScalars(float negLr, float rho, float oneMinusRho, float eps, float weightDecay, boolean maximize) {
        /** From {@link #FUSED_ADADELTA}'s scalars, in its signature's order. */
        public static AdadeltaScalars of(double[] s) {
            return new AdadeltaScalars((float) -s[0], (float) s[1], (float) (1 - s[1]), (float) s[2], (float) s[3], s[4] != 0);
        }
    }

    /**
     * {@link #AMP_UPDATE_SCALE}'s rule on host values (PyTorch's {@code _amp_update_scale_cpu_kernel}, as its CUDA kernel):
     * returns {@code {scale, growthTracker}} after one update. The grown scale is {@code scale * growthFactor} rounded to
     * float, kept only if finite.
     */
    public static double[] updateScale(float scale, int growthTracker, boolean foundInf, double growthFactor, double backoffFactor,
                                       long growthInterval) {
        if (foundInf) return new double[] {(float) (scale * backoffFactor), 0};
        int successful = growthTracker + 1;
        if (successful == growthInterval) {
            float grown = (float) (scale * growthFactor);
            return new double[] {Float.isFinite(grown) ? grown : scale, 0};
        }
        return new double[] {scale, successful};
    }

    // ------------------------------------------------------------------ checks

    private static void checkUnscale(StridedView[][] lists, StridedView[] tensors, double[] scalars) {
        String op = AMP_UNSCALE.pyName();
        StridedView foundInf = tensors[0], invScale = tensors[1];
        Device device = foundInf.device();
        checkOneElement(op, "found_inf", foundInf, DType.FLOAT32);
        checkOneElement(op, "inv_scale", invScale, DType.FLOAT32);
        if (!invScale.device().equals(device) && !invScale.device().isCpu()) {
            throw new IllegalArgumentException(op + ": inv_scale must be on found_inf's device (" + device + ") or the CPU, got "
                    + invScale.device());
        }
        for (StridedView g : lists[0]) {
            if (!g.dtype().isFloatingPoint()) {
                throw new IllegalArgumentException(op + ": expected floating-point tensors, got " + g.dtype() + " of shape "
                        + Shapes.format(g.shape()));
            }
        }
    }

    private static void checkUpdateScale(StridedView[][] lists, StridedView[] tensors, double[] s) {
        String op = AMP_UPDATE_SCALE.pyName();
        checkOneElement(op, "self", tensors[0], DType.FLOAT32);
        checkOneElement(op, "growth_tracker", tensors[1], DType.INT32);
        checkOneElement(op, "found_inf", tensors[2], DType.FLOAT32);
        if (!tensors[2].device().equals(tensors[0].device())) {
            throw new IllegalArgumentException(op + ": found_inf must be on self's device (" + tensors[0].device() + "), got "
                    + tensors[2].device());
        }
        if (s.length != 3 || s[2] != Math.rint(s[2])) {
            throw new IllegalArgumentException(op + ": expected scale_growth_factor, scale_backoff_factor and an integer growth_interval");
        }
    }

    private static void checkOneElement(String op, String name, StridedView t, DType dtype) {
        if (t.numel() != 1 || t.dtype() != dtype) {
            throw new IllegalArgumentException(op + ": " + name + " must be a one-element " + dtype + " tensor, got shape "
                    + Shapes.format(t.shape()) + " and dtype " + t.dtype());
        }
    }

    /**
     * An optimizer step's lists: the first {@code used} lists hold one contiguous float32 tensor per parameter, each of its
     * parameter's shape; the lists after them are empty.
     */
    private static void checkSteps(String op, StridedView[][] lists, int used) {
        for (int l = 0; l < lists.length; l++) {
            if (l >= used) {
                if (lists[l].length != 0) {
                    throw new IllegalArgumentException(op + ": list " + (l + 1) + " must be empty for these options, got "
                            + lists[l].length + " tensors");
                }
                continue;
            }
            if (lists[l].length != lists[0].length) {
                throw new IllegalArgumentException(op + ": list " + (l + 1) + " must hold one tensor per parameter ("
                        + lists[0].length + "), got " + lists[l].length);
            }
            for (int i = 0; i < lists[l].length; i++) {
                StridedView t = lists[l][i], p = lists[0][i];
                if (t.dtype() != DType.FLOAT32 || !t.isContiguous() || !java.util.Arrays.equals(t.shape(), p.shape())) {
                    throw new IllegalArgumentException(op + ": expected contiguous float32 tensors of the parameter's shape "
                            + Shapes.format(p.shape()) + ", got one of shape " + Shapes.format(t.shape()) + " and dtype " + t.dtype()
                            + (t.isContiguous() ? "" : " (not contiguous)") + " in list " + (l + 1) + " at " + i);
                }
            }
        }
    }
}
