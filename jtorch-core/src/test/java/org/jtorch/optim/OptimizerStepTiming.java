package org.jtorch.optim;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.jtorch.DType;
import org.jtorch.Device;
import org.jtorch.Generator;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A quick measurement, not a benchmark: the median time of one optimizer step over the parameters
 * of an MLP 784-512-512-10 (669,706 float32 values) for fused SGD with momentum and Adam.
 * Runs only with {@code -Djtorch.timing=true}; prints the numbers.
 */
@EnabledIfSystemProperty(named = "jtorch.timing", matches = "true")
class OptimizerStepTiming {
    private static final long[][] MLP = {{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};

    @Test
    void medianStepTimes() {
        report("SGD momentum 0.9", ps -> new SGD(ps, SGD.options().lr(0.01).momentum(0.9)));
        report("Adam", ps -> new Adam(ps, Adam.options().lr(1e-3)));
        report("SGD momentum 0.9 (composed ops)", ps -> {
            SGD o = new SGD(ps, SGD.options().lr(0.01).momentum(0.9));
            o.useFusedKernels(false);
            return o;
        });
        report("Adam (composed ops)", ps -> {
            Adam o = new Adam(ps, Adam.options().lr(1e-3));
            o.useFusedKernels(false);
            return o;
        });
    }

    private static void report(String what, Function<List<Tensor>, Optimizer> make) {
        Generator gen = Torch.manualSeed(0);
        List<Tensor> params = new ArrayList<>();
        long count = 0;
        for (long[] shape : MLP) {
            Tensor p = Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen).requiresGrad_(true);
            p.setGrad(Torch.randn(shape, DType.FLOAT32, Device.cpu(), gen));
            params.add(p);
            count += p.numel();
        }
        Optimizer opt = make.apply(params);
        for (int i = 0; i < 50; i++) opt.step();
        long[] times = new long[20];
        for (int i = 0; i < times.length; i++) {
            long t0 = System.nanoTime();
            opt.step();
            times[i] = System.nanoTime() - t0;
        }
        Arrays.sort(times);
        System.out.printf("%s over %,d parameters: median %.3f ms (min %.3f, max %.3f)%n", what, count,
                times[times.length / 2] / 1e6, times[0] / 1e6, times[times.length - 1] / 1e6);
        opt.zeroGrad();
        opt.close();
        for (Tensor p : params) p.close();
    }
}
