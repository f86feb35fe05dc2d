package org.jtorch.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.amp.Autocast;
import org.jtorch.memory.MemoryScope;
import org.jtorch.nn.F;
import org.jtorch.nn.Linear;
import org.jtorch.nn.ReLU;
import org.jtorch.nn.Sequential;
import org.jtorch.optim.SGD;
import org.jtorch.types.DType;
import org.jtorch.types.Device;

/**
 * Training-step measurements matching {@code python/bench_training.py}: the MLP 784-512-512-10 step
 * (batch 128, cross entropy, SGD with momentum; in f32 and with bf16 autocast) and a tiny graph of 10 small ops plus backward.
 */
final class TrainingBench {
    private TrainingBench() {}

    /** With {@code cpuTime}, the MLP steps in thread CPU time ({@code --cputime}, for {@code JTORCH_NUM_THREADS=1}). */
    static Map<String, Double> run(boolean quick, boolean cpuTime) {
        Map<String, Double> r = new LinkedHashMap<>();
        r.put("mlp_step_ms", mlpStepSeconds(quick, false, cpuTime) * 1e3);
        r.put("mlp_images_per_s", 128 / (r.get("mlp_step_ms") / 1e3));
        r.put("tiny_graph_us", tinyGraphSeconds(quick) * 1e6);
        r.put("mlp_step_bf16_autocast_ms", mlpStepSeconds(quick, true, cpuTime) * 1e3);
        return r;
    }

    /** Median time of one full training step, after enough steps for the JIT to compile the kernels. */
    static double mlpStepSeconds(boolean quick) {
        return mlpStepSeconds(quick, false, false);
    }

    /** With {@code amp}, the forward and loss run under CPU bf16 autocast (no GradScaler: bf16 needs none). */
    static double mlpStepSeconds(boolean quick, boolean amp, boolean cpuTime) {
        int warmup = quick ? 300 : 4000, reps = quick ? 50 : 300;
        return mlpSteps(amp, step -> cpuTime ? Timing.medianCpu(warmup, reps, step) : Timing.median(warmup, reps, step));
    }

    /** Each kernel's host time in an MLP step (f32, or with bf16 autocast), after a warm-up: {@code --profile}. */
    static String profileMlp(boolean amp, int steps) {
        return mlpSteps(amp, step -> Timing.kernelProfile(2000, steps, step));
    }

    /** Sets up the MLP step (784-512-512-10, batch 128, SGD with momentum), hands it to {@code body}, then frees it. */
    static <T> T mlpSteps(boolean amp, java.util.function.Function<Runnable, T> body) {
        Torch.manualSeed(0);
        Sequential model = new Sequential(new Linear(784, 512), new ReLU(), new Linear(512, 512), new ReLU(), new Linear(512, 10));
        SGD opt = new SGD(model.parameters(), SGD.options().lr(0.01).momentum(0.9));
        try (Tensor x = Torch.randn(128, 784); Tensor y = Torch.randint(0, 10, 128)) {
            return body.apply(() -> {
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

    /** {@code relu(tanh(exp(sin(2x + 1) * x) - 0.5) + x).sum()} and its backward, on 16 elements. */
    static double tinyGraphSeconds(boolean quick) {
        Torch.manualSeed(0);
        Tensor x = Torch.randn(16).requiresGrad_();
        Runnable step = () -> {
            try (MemoryScope scope = new MemoryScope()) {
                Tensor s = x.mul(2.0).add(1.0).sin().mul(x).exp().sub(0.5).tanh().add(x).relu().sum();
                Tensor old = x.grad();
                if (old != null) {
                    x.setGrad(null);
                    old.close();
                }
                s.backward();
            }
        };
        try (x) {
            return Timing.medianPerIteration(quick ? 20 : 60, 2000, step);
        }
    }
}
