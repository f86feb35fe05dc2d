package org.jtorch.fuzz;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.jtorch.Tensor;
import org.jtorch.optim.Adadelta;
import org.jtorch.optim.Adagrad;
import org.jtorch.optim.Adam;
import org.jtorch.optim.AdamW;
import org.jtorch.optim.Adamax;
import org.jtorch.optim.NAdam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.OptimizerOptions;
import org.jtorch.optim.RAdam;
import org.jtorch.optim.RMSprop;
import org.jtorch.optim.SGD;
import org.jtorch.optim.SparseAdam;
import org.jtorch.types.DType;

/**
 * Optimizer calls: an optimizer built over random parameters with random option values (negative, NaN, betas
 * outside [0, 1)), gradients assigned (sometimes of the wrong shape or dtype), one {@code step()}. PyTorch 1.13's
 * verdicts: {@code torch.optim}'s constructors reject an empty parameter list, a non-leaf parameter and the option
 * values their {@code "Invalid ..."} checks name ({@code not 0.0 <= lr}, so NaN too; SparseAdam's {@code not 0.0 < lr}
 * and {@code not 0.0 < eps}); assigning a gradient of another
 * shape or dtype raises.
 */
final class Optimizers {
    private Optimizers() {}

    private static final double[] VALUES = {0.1, 0.01, 0.0, 0.5, 0.9, 1.0, -0.1, Double.NaN, Double.POSITIVE_INFINITY, 2.0};

    static ApiFuzzer.Call call(ArgumentGenerator g) {
        Random r = g.random();
        int kind = r.nextInt(10);
        String name = new String[] {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "NAdam", "RAdam", "Adamax", "SparseAdam"}[kind];
        List<String> optionNames = switch (kind) {
            case 0 -> List.of("lr", "momentum", "weight_decay");
            case 1, 2, 7, 8 -> List.of("lr", "eps", "weight_decay", "betas");
            case 6 -> List.of("lr", "eps", "weight_decay", "betas", "momentum_decay");
            case 9 -> List.of("lr", "eps", "betas");
            case 3 -> List.of("lr", "eps", "weight_decay", "momentum", "alpha");
            case 4 -> List.of("lr", "eps", "weight_decay", "lr_decay", "initial_accumulator_value");
            default -> List.of("lr", "eps", "weight_decay", "rho");
        };
        OptimizerOptions<?> options = switch (kind) {
            case 0 -> SGD.options().lr(0.1);
            case 1 -> Adam.options();
            case 2 -> AdamW.options();
            case 3 -> RMSprop.options();
            case 4 -> Adagrad.options();
            case 5 -> Adadelta.options();
            case 6 -> NAdam.options();
            case 7 -> RAdam.options();
            case 8 -> Adamax.options();
            default -> SparseAdam.options();
        };
        String expected = null;
        StringBuilder d = new StringBuilder(name).append(".options()");
        for (String option : optionNames) {
            if (r.nextInt(3) != 0) continue;
            Object value = option.equals("betas") ? List.of(pickValue(r), pickValue(r)) : pickValue(r);
            options.set(option, value);
            d.append('.').append(option).append('(').append(value).append(')');
            if (expected == null) expected = invalidOption(option, value, kind == 0, kind == 9);
        }
        List<Tensor> params = new ArrayList<>();
        int count = r.nextInt(8) == 0 ? 0 : 1 + r.nextInt(2);
        if (count == 0) expected = "an empty parameter list";
        List<Tensor> grads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Tensor p = g.tensor(DType.FLOAT32, g.anyShape(), false);
            if (p.isClosed()) continue;
            p.requiresGrad_(true);
            if (r.nextInt(10) == 0) {
                p = p.mul(2.0);
                g.created.add(p);
                if (expected == null) expected = "a non-leaf parameter";
            }
            params.add(p);
            long[] shape = r.nextInt(8) == 0 ? g.anyShape() : p.shape();
            DType dtype = r.nextInt(8) == 0 ? DType.FLOAT64 : DType.FLOAT32;
            grads.add(g.tensor(dtype, shape, true));
            if (expected == null && !Arrays.equals(shape, p.shape())) expected = "a gradient of another shape";
            if (expected == null && dtype != DType.FLOAT32) expected = "a gradient of another dtype";
        }
        d.append(" over ").append(params.stream().map(g::describe).toList()).append(" with grads ")
                .append(grads.stream().map(g::describe).toList()).append(", step()");
        String why = expected;
        return new ApiFuzzer.Call(name + ".step", d.toString(), () -> {
            try (Optimizer opt = switch (kind) {
                case 0 -> new SGD(params, (SGD.Options) options);
                case 1 -> new Adam(params, (Adam.Options) options);
                case 2 -> new AdamW(params, (AdamW.Options) options);
                case 3 -> new RMSprop(params, (RMSprop.Options) options);
                case 4 -> new Adagrad(params, (Adagrad.Options) options);
                case 5 -> new Adadelta(params, (Adadelta.Options) options);
                case 6 -> new NAdam(params, (NAdam.Options) options);
                case 7 -> new RAdam(params, (RAdam.Options) options);
                case 8 -> new Adamax(params, (Adamax.Options) options);
                default -> new SparseAdam(params, (SparseAdam.Options) options);
            }) {
                for (int i = 0; i < params.size(); i++) params.get(i).setGrad(grads.get(i));
                opt.step();
                opt.zeroGrad();
                return Map.of();
            }
        }, why, null);
    }

    private static double pickValue(Random r) {
        return VALUES[r.nextInt(VALUES.length)];
    }

    /**
     * PyTorch's "Invalid ..." checks: {@code not 0.0 <= v}, so NaN fails, except SGD's {@code v < 0.0}, which NaN passes,
     * and SparseAdam's {@code not 0.0 < v} for lr and eps.
     */
    private static String invalidOption(String option, Object value, boolean sgd, boolean strictlyPositive) {
        if (value instanceof List<?> betas) {
            for (Object b : betas) {
                double v = (Double) b;
                if (!(v >= 0 && v < 1)) return "invalid beta " + v;
            }
            return null;
        }
        double v = (Double) value;
        if (strictlyPositive && !(v > 0)) return "invalid " + option + " " + v;
        if (option.equals("rho") && !(v >= 0 && v <= 1)) return "invalid rho " + v;
        return v >= 0 || sgd && Double.isNaN(v) ? null : "invalid " + option + " " + v;
    }
}
