package org.jtorch.amp;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.autograd.Grad;
import org.jtorch.io.StateReader;
import org.jtorch.op.OptimizerOps;
import org.jtorch.ops.Dispatcher;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.types.Arguments;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Dynamic loss scaling, as PyTorch 1.13's {@code torch.cuda.amp.GradScaler}: multiply the loss by a
 * large scale so that small float16 gradients do not flush to zero, unscale the gradients before the
 * optimizer uses them, skip steps whose gradients overflowed, and adapt the scale.
 *
 * <pre>{@code
 * var scaler = new GradScaler();
 * for (var batch : loader) {
 *     optimizer.zeroGrad();
 *     Tensor loss;
 *     try (var ac = Autocast.enable(Device.cuda(), DType.FLOAT16)) {
 *         loss = lossFn.apply(model.forward(batch.input()), batch.target());
 *     }
 *     scaler.scale(loss).backward();
 *     scaler.unscale_(optimizer);                     // optional: to clip the true gradients
 *     ClipGrad.clipGradNorm_(model.parameters(), 1.0);
 *     scaler.step(optimizer);                         // skipped if a gradient is inf or NaN
 *     scaler.update();
 * }
 * }</pre>
 *
 * <p>Update rule ({@code _amp_update_scale_}): after a step with an inf/NaN gradient the scale is
 * multiplied by {@code backoffFactor} and the growth tracker reset; after {@code growthInterval}
 * consecutive clean steps it is multiplied by {@code growthFactor} (kept only if finite) and the
 * tracker reset. The scale is a float32 value, as PyTorch's.
 *
 * <p>Each optimizer may be unscaled once and stepped once between {@link #update()}s; with gradient
 * accumulation, call {@code scale(loss).backward()} for each micro-batch and step/update once.
 * Unlike PyTorch 1.13 (whose {@code torch.cuda.amp.GradScaler} disables itself without CUDA), the scaler
 * works on CPU tensors too. Not thread-safe: one training loop uses it.
 */
public final class GradScaler {
    private enum Stage { READY, UNSCALED, STEPPED }

    private static final class OptimizerState {
        Stage stage = Stage.READY;
        /** Null until unscale_ has checked this optimizer's gradients (PyTorch's empty found_inf_per_device). */
        Boolean foundInf;
    }

    private final boolean enabled;
    private double growthFactor;
    private double backoffFactor;
    private int growthInterval;
    /** The scale as a float32 value (PyTorch keeps it in a float32 tensor). */
    private float scale;
    private int growthTracker;
    private Tensor scaleTensor;
    private float scaleTensorValue;
    private final Map<Optimizer, OptimizerState> perOptimizer = new IdentityHashMap<>();

    /** PyTorch's defaults: initial scale 65536, growth 2.0, backoff 0.5, growth interval 2000, enabled. */
    public GradScaler() {
        this(65536.0, 2.0, 0.5, 2000, true);
    }

    /** A disabled scaler is a no-op: {@code scale} returns the loss, {@code step} just steps. */
    public GradScaler(boolean enabled) {
        this(65536.0, 2.0, 0.5, 2000, enabled);
    }

    public GradScaler(double initScale, double growthFactor, double backoffFactor, int growthInterval, boolean enabled) {
        if (!(growthFactor > 1.0)) throw new IllegalArgumentException("GradScaler: the growth factor must be > 1.0, got " + growthFactor);
        if (!(backoffFactor < 1.0)) throw new IllegalArgumentException("GradScaler: the backoff factor must be < 1.0, got " + backoffFactor);
        if (growthInterval <= 0) throw new IllegalArgumentException("GradScaler: growth_interval must be positive, got " + growthInterval);
        this.enabled = enabled;
        this.scale = (float) initScale;
        this.growthFactor = growthFactor;
        this.backoffFactor = backoffFactor;
        this.growthInterval = growthInterval;
    }

    public boolean isEnabled() {
        return enabled;
    }

    /**
     * {@code loss * scale}, with the scale a float32 tensor of shape {@code [1]} as PyTorch's (so a
     * float16 loss is scaled in float32 and cannot overflow here); the caller owns the result. When
     * disabled, a new reference to {@code loss}.
     */
    public Tensor scale(Tensor loss) {
        Arguments.nonNull("GradScaler.scale", "loss", loss);
        if (!enabled) return loss.alias();
        if (scaleTensor == null || !scaleTensor.device().equals(loss.device())) {
            if (scaleTensor != null) scaleTensor.close();
            scaleTensor = Torch.full(new long[] {1}, scale, DType.FLOAT32, loss.device()).untrack();
        } else if (scaleTensorValue != scale) {
            // Refilled only when update() changed the scale, as PyTorch's in-place update: losses scaled
            // since the last update share one unmodified tensor, so their graphs stay valid together.
            scaleTensor.fill_(scale);
        }
        scaleTensorValue = scale;
        return loss.mul(scaleTensor);
    }

    /**
     * Divides {@code optimizer}'s gradients by the scale in place and records whether any was infinite
     * or NaN, in one pass per gradient (on CUDA one multi-tensor kernel over all of a device's gradients,
     * then one read of its found-inf flag). Call it before clipping gradients; {@link #step} then does not
     * unscale again.
     *
     * @throws IllegalStateException when called twice for one optimizer, or after {@code step}, before {@link #update()}
     * @throws IllegalArgumentException for float16 gradients (PyTorch refuses them: keep float32 master weights)
     */
    public void unscale_(Optimizer optimizer) {
        Arguments.nonNull("GradScaler.unscale_", "optimizer", optimizer);
        if (!enabled) return;
        OptimizerState st = perOptimizer.computeIfAbsent(optimizer, o -> new OptimizerState());
        if (st.stage == Stage.UNSCALED) {
            throw new IllegalStateException("unscale_() has already been called on this optimizer since the last update().");
        }
        if (st.stage == Stage.STEPPED) throw new IllegalStateException("unscale_() is being called after step().");
        // PyTorch: inv_scale = scale.double().reciprocal().float()
        float invScale = (float) (1.0 / (double) scale);
        Map<Device, List<Tensor>> gradsByDevice = new LinkedHashMap<>();
        for (ParamGroup group : optimizer.paramGroups()) {
            for (Tensor p : group.params()) {
                Tensor grad = p.grad();
                if (grad == null) continue;
                if (grad.dtype() == DType.FLOAT16) throw new IllegalArgumentException("unscale_: Attempting to unscale FP16 gradients.");
                gradsByDevice.computeIfAbsent(grad.device(), d -> new ArrayList<>()).add(grad);
            }
        }
        boolean found = false;
        try (Grad.Mode g = Grad.noGrad()) {
            for (Map.Entry<Device, List<Tensor>> e : gradsByDevice.entrySet()) found |= unscaleOnDevice(e.getKey(), e.getValue(), invScale);
        }
        st.foundInf = gradsByDevice.isEmpty() ? null : found;
        st.stage = Stage.UNSCALED;
    }

    /**
     * Unscales the gradients of one device with {@code _amp_foreach_non_finite_check_and_unscale_} (one multi-tensor
     * pass over all of them on CUDA) and reads the device's found-inf flag. Reading it waits for the kernel, as PyTorch's
     * {@code step} does when it sums {@code found_inf_per_device}; the scale stays a host float, passed as a CPU
     * {@code inv_scale} that the kernel reads on the host.
     */
    private static boolean unscaleOnDevice(Device device, List<Tensor> grads, float invScale) {
        for (Tensor grad : grads) grad.checkWritable("GradScaler.unscale_");
        try (Tensor foundInf = Torch.zeros(new long[] {1}, DType.FLOAT32, device);
             Tensor inv = Torch.full(new long[] {1}, invScale, DType.FLOAT32, Device.cpu())) {
            Dispatcher.callMutating(OptimizerOps.AMP_UNSCALE, List.of(grads), new Tensor[] {foundInf, inv});
            return foundInf.item() != 0;
        }
    }

    /** Unscales one gradient in place through its backend; whether it held an inf or NaN. */
    static boolean unscaleGrad(Tensor grad, float invScale) {
        return unscaleOnDevice(grad.device(), List.of(grad), invScale);
    }

    /**
     * Unscales {@code optimizer}'s gradients if {@link #unscale_} was not called, then steps it unless a
     * gradient was infinite or NaN. Returns whether the optimizer stepped. When disabled, just steps.
     *
     * @throws IllegalStateException when called twice before {@link #update()}, or when no parameter has a gradient
     */
    public boolean step(Optimizer optimizer) {
        Arguments.nonNull("GradScaler.step", "optimizer", optimizer);
        if (!enabled) {
            optimizer.step();
            return true;
        }
        OptimizerState st = perOptimizer.computeIfAbsent(optimizer, o -> new OptimizerState());
        if (st.stage == Stage.STEPPED) throw new IllegalStateException("step() has already been called since the last update().");
        if (st.stage == Stage.READY) unscale_(optimizer);
        if (st.foundInf == null) throw new IllegalStateException("step: No inf checks were recorded for this optimizer.");
        boolean stepped = !st.foundInf;
        if (stepped) optimizer.step();
        st.stage = Stage.STEPPED;
        return stepped;
    }

    /**
     * Adapts the scale from the inf/NaN checks of every optimizer since the last update (backoff if any
     * found one, growth after {@code growthInterval} clean updates), and readies the scaler for the next
     * iteration.
     *
     * @throws IllegalStateException when no optimizer was unscaled or stepped since the last update
     */
    public void update() {
        if (!enabled) return;
        boolean recorded = false;
        boolean foundInf = false;
        for (OptimizerState st : perOptimizer.values()) {
            if (st.foundInf != null) {
                recorded = true;
                foundInf |= st.foundInf;
            }
        }
        if (!recorded) throw new IllegalStateException("update: No inf checks were recorded prior to update.");
        // PyTorch's _amp_update_scale_ on one-element CPU tensors: the scale and tracker are host values here.
        try (Tensor scaleT = Torch.full(new long[] {1}, scale, DType.FLOAT32, Device.cpu());
             Tensor tracker = Torch.full(new long[] {1}, growthTracker, DType.INT32, Device.cpu());
             Tensor found = Torch.full(new long[] {1}, foundInf ? 1 : 0, DType.FLOAT32, Device.cpu());
             Grad.Mode g = Grad.noGrad()) {
            Dispatcher.callMutating(OptimizerOps.AMP_UPDATE_SCALE, List.of(), new Tensor[] {scaleT, tracker, found}, growthFactor,
                    backoffFactor, growthInterval);
            scale = (float) scaleT.item();
            growthTracker = (int) tracker.item();
        }
        perOptimizer.clear();
    }

    /** Sets the scale to {@code newScale} and readies the scaler for the next iteration (the growth tracker is kept, as PyTorch). */
    public void update(double newScale) {
        if (!enabled) return;
        scale = (float) newScale;
        perOptimizer.clear();
    }

    /** The current scale (1.0 when disabled). */
    public double getScale() {
        return enabled ? scale : 1.0;
    }

    public double getGrowthFactor() {
        return growthFactor;
    }

    public void setGrowthFactor(double growthFactor) {
        this.growthFactor = growthFactor;
    }

    public double getBackoffFactor() {
        return backoffFactor;
    }

    public void setBackoffFactor(double backoffFactor) {
        this.backoffFactor = backoffFactor;
    }

    public int getGrowthInterval() {
        return growthInterval;
    }

    public void setGrowthInterval(int growthInterval) {
        this.growthInterval = growthInterval;
    }

    /** Consecutive clean updates since the last growth or backoff. */
    public int getGrowthTracker() {
        return growthTracker;
    }

    /**
     * PyTorch's keys: {@code scale}, {@code growth_factor}, {@code backoff_factor}, {@code growth_interval},
     * {@code _growth_tracker}; empty when disabled.
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (!enabled) return m;
        m.put("scale", (double) scale);
        m.put("growth_factor", growthFactor);
        m.put("backoff_factor", backoffFactor);
        m.put("growth_interval", growthInterval);
        m.put("_growth_tracker", growthTracker);
        return m;
    }

    /**
     * Restores a {@link #stateDict()}.
     *
     * @throws IllegalArgumentException when {@code stateDict} is empty (saved from a disabled scaler), lacks
     *         a key or holds a value of the wrong kind or range (naming it); the scaler is then unchanged
     */
    public void loadStateDict(Map<String, Object> stateDict) {
        Arguments.nonNull("GradScaler.loadStateDict", "stateDict", stateDict);
        if (!enabled) return;
        StateReader r = new StateReader("GradScaler.loadStateDict", stateDict);
        if (stateDict.isEmpty()) {
            throw new IllegalArgumentException("GradScaler.loadStateDict: The source state dict is empty, possibly because it was saved from a"
                    + " disabled instance of GradScaler.");
        }
        double newScale = r.requireDouble("scale");
        double newGrowthFactor = r.requireDouble("growth_factor");
        double newBackoffFactor = r.requireDouble("backoff_factor");
        int newGrowthInterval = r.requireInt("growth_interval");
        int newGrowthTracker = r.requireInt("_growth_tracker");
        if (!(newGrowthFactor > 1.0)) throw r.error("growth_factor", "a number > 1.0", newGrowthFactor);
        if (!(newBackoffFactor < 1.0)) throw r.error("backoff_factor", "a number < 1.0", newBackoffFactor);
        if (newGrowthInterval <= 0) throw r.error("growth_interval", "a positive integer", newGrowthInterval);
        scale = (float) newScale;
        growthFactor = newGrowthFactor;
        backoffFactor = newBackoffFactor;
        growthInterval = newGrowthInterval;
        growthTracker = newGrowthTracker;
    }
}
