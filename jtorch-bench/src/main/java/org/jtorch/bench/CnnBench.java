package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.backend.KernelProfiler;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Module;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;
import org.jtorch.vision.models.Models;

/**
 * Convolutional training steps matching {@code python/bench_cnn.py}: ResNet-20 (CIFAR shape, batch 128)
 * and LeNet-5 (MNIST shape, batch 64), cross entropy and SGD with momentum and weight decay.
 */
final class CnnBench {
    private CnnBench() {}

    /** With {@code amp}, also the ResNet-20 step with its forward and loss under CPU bf16 autocast. */
    static Map<String, Double> run(boolean quick, boolean amp) {
        Map<String, Double> r = new LinkedHashMap<>();
        // C2 keeps compiling and re-compiling the kernels for the first 20-30 ResNet-20 steps (the first
        // takes seconds); 40 warm-up steps measure the steady state a training run spends its time in.
        double resnet = stepSeconds("resnet20", 3, 32, 128, quick ? 5 : 40, quick ? 5 : 15);
        r.put("resnet20_step_ms", resnet * 1e3);
        r.put("resnet20_images_per_s", 128 / resnet);
        if (amp) {
            r.put("resnet20_step_bf16_autocast_ms",
                    steps("resnet20", 3, 32, 128, true, (model, step) -> Timing.median(quick ? 5 : 40, quick ? 5 : 15, step)) * 1e3);
        }
        double lenet = stepSeconds("lenet5", 1, 28, 64, quick ? 100 : 400, quick ? 50 : 200);
        r.put("lenet_step_ms", lenet * 1e3);
        r.put("lenet_images_per_s", 64 / lenet);
        return r;
    }

    /** Median seconds of one training step; the warm-up lets C2 compile the kernels first. */
    static double stepSeconds(String name, int channels, int size, int batch, int warmup, int reps) {
        return steps(name, channels, size, batch, false, (model, step) -> Timing.median(warmup, reps, step));
    }

    /**
     * For {@code jtorch bench cnn --profile}: the host time of each kernel in a ResNet-20 step (ms and calls
     * per step, {@link KernelProfiler}), over {@code steps} steps after 40 warm-up steps.
     */
    static String profileResnet20(int steps) {
        return steps("resnet20", 3, 32, 128, false, (model, step) -> Timing.kernelProfile(40, steps, step));
    }

    /**
     * Runs {@code body} with a model and one training step (forward, cross entropy, backward, SGD with momentum) of it;
     * with {@code amp}, the forward and the loss run under CPU bf16 autocast.
     */
    private static <T> T steps(String name, int channels, int size, int batch, boolean amp,
                               java.util.function.BiFunction<Module, Runnable, T> body) {
        Torch.manualSeed(0);
        Module model = Models.create(name, 10, channels);
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.05).momentum(0.9).weightDecay(5e-4));
        try (Tensor x = Torch.randn(batch, channels, size, size); Tensor y = Torch.randint(0, 10, batch)) {
            return body.apply(model, () -> {
                try (MemoryScope scope = new MemoryScope()) {
                    Tensor loss;
                    try (Autocast ac = Autocast.scope(Device.cpu(), DType.BFLOAT16, amp, true)) {
                        loss = F.crossEntropy(model.forward(x), y);
                    }
                    opt.zeroGrad();
                    loss.backward();
                    opt.step();
                }
            });
        } finally {
            model.close();
        }
    }
}
