package org.jtorch.optim.lr;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntToDoubleFunction;
import java.util.stream.Stream;
import org.jtorch.Tensor;
import org.jtorch.Torch;
import org.jtorch.optim.Adam;
import org.jtorch.optim.Optimizer;
import org.jtorch.optim.ParamGroup;
import org.jtorch.optim.SGD;
import org.jtorch.testing.Fixtures;
import org.jtorch.testing.Fixtures.Case;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Learning-rate sequences against PyTorch 1.13 ({@code tools/fixtures/gen_optim.py}, op
 * {@code lr_scheduler}): two parameter groups, the rates after construction and after each of 30+
 * steps (optimizer step, then scheduler step; CosineAnnealingWarmRestarts also at fractional epochs),
 * to 1e-9 relative; OneCycleLR and CyclicLR also check the cycled momentum or beta1. Each case also runs resumed: the scheduler's state dict after 10 steps is
 * loaded into a new scheduler over a fresh optimizer carrying the saved optimizer options, which
 * then continues to the same sequence.
 */
class LRSchedulerConformanceTest {
    /** The named lambdas the fixture uses. */
    static final Map<String, IntToDoubleFunction> LAMBDAS = Map.of(
            "pow095", e -> Math.pow(0.95, e),
            "warmup5", e -> Math.min(1.0, (e + 1) / 5.0),
            "every3_09", e -> e % 3 == 0 ? 0.9 : 1.0);

    @TestFactory
    Stream<DynamicTest> lrSequencesMatchPyTorch() {
        List<Case> cases = Fixtures.load("optim").stream().filter(c -> c.op().equals("lr_scheduler")).toList();
        return cases.stream().flatMap(c -> Stream.of(
                DynamicTest.dynamicTest("lr_scheduler/" + c.name(), () -> run(c, false)),
                DynamicTest.dynamicTest("lr_scheduler/" + c.name() + "[resumed]", () -> run(c, true))));
    }

    /** A scheduler of either kind, stepped uniformly. */
    interface Stepper {
        void step(int i);
        List<Double> lastLr();
        Map<String, Object> stateDict();
        void load(Map<String, Object> sd);
    }

    private static void run(Case c, boolean resumed) {
        JsonObject args = c.args();
        JsonObject exp = c.expected().getAsJsonObject();
        JsonArray lrs = exp.getAsJsonArray("lrs");
        JsonArray moms = exp.getAsJsonArray("momentums");
        int steps = args.get("steps").getAsInt();
        Tensor[] params = new Tensor[2];
        Optimizer opt = optimizer(args.getAsJsonObject("optimizer"), params);
        Stepper s = stepper(opt, args);
        check(c, opt, s, lrs, moms, 0, cyclesMomentum(c));
        for (int i = 0; i < steps; i++) {
            if (resumed && i == 10) {
                Map<String, Object> sd = s.stateDict();
                Map<String, Object> osd = opt.stateDict();
                Tensor[] fresh = new Tensor[2];
                Optimizer opt2 = optimizer(args.getAsJsonObject("optimizer"), fresh);
                // Building a scheduler changes the groups' options; loading both states restores the schedule.
                Stepper s2 = stepper(opt2, args);
                opt2.loadStateDict(osd);
                Optimizer.closeStateDict(osd);
                s2.load(sd);
                opt.close();
                for (Tensor p : params) p.close();
                opt = opt2;
                params = fresh;
                s = s2;
            }
            opt.step();
            s.step(i);
            check(c, opt, s, lrs, moms, i + 1, cyclesMomentum(c));
        }
        opt.close();
        for (Tensor p : params) p.close();
    }

    private static boolean cyclesMomentum(Case c) {
        return (c.name().startsWith("OneCycleLR") || c.name().startsWith("CyclicLR")) && !c.name().contains("no_momentum");
    }

    private static void check(Case c, Optimizer opt, Stepper s, JsonArray lrs, JsonArray moms, int step, boolean momentum) {
        JsonArray e = lrs.get(step).getAsJsonArray();
        List<ParamGroup> groups = opt.paramGroups();
        for (int g = 0; g < groups.size(); g++) {
            double expected = e.get(g).getAsDouble();
            assertClose(expected, groups.get(g).lr(), c + " step " + step + " group " + g + " lr");
            assertClose(expected, s.lastLr().get(g), c + " step " + step + " group " + g + " getLastLr");
            if (momentum) {
                double m = groups.get(g).has("betas") ? groups.get(g).beta(0) : groups.get(g).getDouble("momentum");
                assertClose(moms.get(step).getAsJsonArray().get(g).getAsDouble(), m, c + " step " + step + " group " + g + " momentum");
            }
        }
    }

    private static void assertClose(double expected, double actual, String what) {
        assertEquals(expected, actual, 1e-9 * Math.abs(expected) + 1e-15, what);
    }

    private static Optimizer optimizer(JsonObject spec, Tensor[] params) {
        JsonArray lrs = spec.getAsJsonArray("lrs");
        List<ParamGroup> groups = new ArrayList<>();
        boolean sgd = spec.get("type").getAsString().equals("SGD");
        for (int i = 0; i < lrs.size(); i++) {
            params[i] = Torch.zeros(2).requiresGrad_(true);
            groups.add(ParamGroup.of(List.of(params[i]), sgd ? SGD.options().lr(lrs.get(i).getAsDouble())
                    : Adam.options().lr(lrs.get(i).getAsDouble())));
        }
        if (sgd) {
            double momentum = spec.has("momentum") ? spec.get("momentum").getAsDouble() : 0;
            return new SGD(groups, SGD.options().lr(0.1).momentum(momentum));
        }
        return new Adam(groups, Adam.options().lr(0.1));
    }

    private static Stepper stepper(Optimizer opt, JsonObject args) {
        JsonObject spec = args.getAsJsonObject("scheduler");
        if (spec.get("type").getAsString().equals("ReduceLROnPlateau")) {
            ReduceLROnPlateau r = plateau(opt, spec);
            JsonArray metrics = args.getAsJsonArray("metrics");
            return new Stepper() {
                public void step(int i) { r.step(metrics.get(i).getAsDouble()); }
                public List<Double> lastLr() { return r.getLastLr(); }
                public Map<String, Object> stateDict() { return r.stateDict(); }
                public void load(Map<String, Object> sd) { r.loadStateDict(sd); }
            };
        }
        LRScheduler s = scheduler(opt, spec);
        JsonArray epochs = args.getAsJsonArray("epochs");
        return new Stepper() {
            public void step(int i) {
                if (epochs == null) s.step();
                else ((CosineAnnealingWarmRestarts) s).step(epochs.get(i).getAsDouble());
            }
            public List<Double> lastLr() { return s.getLastLr(); }
            public Map<String, Object> stateDict() { return s.stateDict(); }
            public void load(Map<String, Object> sd) { s.loadStateDict(sd); }
        };
    }

    private static ReduceLROnPlateau plateau(Optimizer opt, JsonObject spec) {
        ReduceLROnPlateau.Options o = ReduceLROnPlateau.options();
        if (spec.has("mode")) o.mode(spec.get("mode").getAsString());
        if (spec.has("factor")) o.factor(spec.get("factor").getAsDouble());
        if (spec.has("patience")) o.patience(spec.get("patience").getAsInt());
        if (spec.has("threshold")) o.threshold(spec.get("threshold").getAsDouble());
        if (spec.has("threshold_mode")) o.thresholdMode(spec.get("threshold_mode").getAsString());
        if (spec.has("cooldown")) o.cooldown(spec.get("cooldown").getAsInt());
        if (spec.has("min_lr")) o.minLr(doubles(spec.get("min_lr")));
        if (spec.has("eps")) o.eps(spec.get("eps").getAsDouble());
        return new ReduceLROnPlateau(opt, o);
    }

    /** The scheduler a fixture spec describes (keyword names are PyTorch's). */
    static LRScheduler scheduler(Optimizer opt, JsonObject spec) {
        String type = spec.get("type").getAsString();
        return switch (type) {
            case "StepLR" -> new StepLR(opt, spec.get("step_size").getAsInt(), spec.get("gamma").getAsDouble());
            case "MultiStepLR" -> new MultiStepLR(opt, ints(spec.get("milestones")), spec.get("gamma").getAsDouble());
            case "ExponentialLR" -> new ExponentialLR(opt, spec.get("gamma").getAsDouble());
            case "CosineAnnealingLR" -> new CosineAnnealingLR(opt, spec.get("T_max").getAsInt(),
                    spec.has("eta_min") ? spec.get("eta_min").getAsDouble() : 0);
            case "LinearLR" -> new LinearLR(opt, spec.has("start_factor") ? spec.get("start_factor").getAsDouble() : 1.0 / 3,
                    spec.has("end_factor") ? spec.get("end_factor").getAsDouble() : 1.0,
                    spec.has("total_iters") ? spec.get("total_iters").getAsInt() : 5);
            case "LambdaLR", "MultiplicativeLR" -> {
                JsonElement f = spec.get("lr_lambda");
                List<IntToDoubleFunction> fs = new ArrayList<>();
                if (f.isJsonArray()) {
                    for (JsonElement x : f.getAsJsonArray()) fs.add(LAMBDAS.get(x.getAsString()));
                } else {
                    for (int i = 0; i < opt.paramGroups().size(); i++) fs.add(LAMBDAS.get(f.getAsString()));
                }
                yield type.equals("LambdaLR") ? new LambdaLR(opt, fs) : new MultiplicativeLR(opt, fs);
            }
            case "ConstantLR" -> new ConstantLR(opt, spec.has("factor") ? spec.get("factor").getAsDouble() : 1.0 / 3,
                    spec.has("total_iters") ? spec.get("total_iters").getAsInt() : 5);
            case "PolynomialLR" -> new PolynomialLR(opt, spec.has("total_iters") ? spec.get("total_iters").getAsInt() : 5,
                    spec.has("power") ? spec.get("power").getAsDouble() : 1.0);
            case "CosineAnnealingWarmRestarts" -> new CosineAnnealingWarmRestarts(opt, spec.get("T_0").getAsInt(),
                    spec.has("T_mult") ? spec.get("T_mult").getAsInt() : 1, spec.has("eta_min") ? spec.get("eta_min").getAsDouble() : 0);
            case "CyclicLR" -> {
                CyclicLR.Options o = CyclicLR.options(doubles(spec.get("base_lr")), doubles(spec.get("max_lr")));
                if (spec.has("step_size_up")) o.stepSizeUp(spec.get("step_size_up").getAsDouble());
                if (spec.has("step_size_down")) o.stepSizeDown(spec.get("step_size_down").getAsDouble());
                if (spec.has("mode")) o.mode(spec.get("mode").getAsString());
                if (spec.has("gamma")) o.gamma(spec.get("gamma").getAsDouble());
                if (spec.has("cycle_momentum")) o.cycleMomentum(spec.get("cycle_momentum").getAsBoolean());
                if (spec.has("base_momentum")) o.baseMomentum(doubles(spec.get("base_momentum")));
                if (spec.has("max_momentum")) o.maxMomentum(doubles(spec.get("max_momentum")));
                yield new CyclicLR(opt, o);
            }
            case "ChainedScheduler" -> {
                List<LRScheduler> subs = new ArrayList<>();
                for (JsonElement s : spec.getAsJsonArray("schedulers")) subs.add(scheduler(opt, s.getAsJsonObject()));
                yield new ChainedScheduler(subs);
            }
            case "OneCycleLR" -> {
                OneCycleLR.Options o = OneCycleLR.options(doubles(spec.get("max_lr")));
                if (spec.has("total_steps")) o.totalSteps(spec.get("total_steps").getAsInt());
                if (spec.has("epochs")) o.epochs(spec.get("epochs").getAsInt());
                if (spec.has("steps_per_epoch")) o.stepsPerEpoch(spec.get("steps_per_epoch").getAsInt());
                if (spec.has("pct_start")) o.pctStart(spec.get("pct_start").getAsDouble());
                if (spec.has("anneal_strategy")) o.annealStrategy(spec.get("anneal_strategy").getAsString());
                if (spec.has("cycle_momentum")) o.cycleMomentum(spec.get("cycle_momentum").getAsBoolean());
                if (spec.has("base_momentum")) o.baseMomentum(doubles(spec.get("base_momentum")));
                if (spec.has("max_momentum")) o.maxMomentum(doubles(spec.get("max_momentum")));
                if (spec.has("div_factor")) o.divFactor(spec.get("div_factor").getAsDouble());
                if (spec.has("final_div_factor")) o.finalDivFactor(spec.get("final_div_factor").getAsDouble());
                if (spec.has("three_phase")) o.threePhase(spec.get("three_phase").getAsBoolean());
                yield new OneCycleLR(opt, o);
            }
            case "SequentialLR" -> {
                List<LRScheduler> subs = new ArrayList<>();
                for (JsonElement s : spec.getAsJsonArray("schedulers")) subs.add(scheduler(opt, s.getAsJsonObject()));
                yield new SequentialLR(opt, subs, ints(spec.get("milestones")));
            }
            default -> throw new IllegalArgumentException("unknown scheduler " + type);
        };
    }

    private static double[] doubles(JsonElement e) {
        if (!e.isJsonArray()) return new double[] {e.getAsDouble()};
        JsonArray a = e.getAsJsonArray();
        double[] r = new double[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsDouble();
        return r;
    }

    private static int[] ints(JsonElement e) {
        JsonArray a = e.getAsJsonArray();
        int[] r = new int[a.size()];
        for (int i = 0; i < r.length; i++) r[i] = a.get(i).getAsInt();
        return r;
    }
}
