package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.jtorch.bench.WarmupTimeline.Compile;
import org.jtorch.bench.WarmupTimeline.Frame;
import org.jtorch.bench.WarmupTimeline.Sample;
import org.jtorch.bench.WarmupTimeline.Tier;
import org.junit.jupiter.api.Test;

/** What {@code jtorch bench warmup} derives from a run's step times and its JFR events (reduced to plain records). */
class WarmupBenchTest {
    private static final String KERNEL = "org.jtorch.backend.cpu.Gemm.kernelStore()V";
    private static final String VECTOR_OP = "jdk.incubator.vector.FloatVector.lanewiseTemplate()V";

    /** The kernel compiled by C1 at 0.5 s and by C2 at 2 s. */
    private static final List<Compile> COMPILES = List.of(new Compile(KERNEL, 3, false, 0.5, 0.01), new Compile(KERNEL, 4, false, 2.0, 0.3));
    private static final WarmupTimeline TIMELINE = new WarmupTimeline(COMPILES, List.of(), List.of());

    private static Sample inKernel(double seconds, String topType) {
        return new Sample(seconds, List.of(new Frame(VECTOR_OP, topType), new Frame(KERNEL, "JIT compiled")));
    }

    @Test
    void aCompiledSampleTakesTheTierOfItsMethodsLatestCompilationBeforeIt() {
        assertEquals(Tier.UNKNOWN, TIMELINE.classify(inKernel(0.2, "Inlined")).tier());
        assertEquals(Tier.C1, TIMELINE.classify(inKernel(1.0, "Inlined")).tier());
        assertEquals(Tier.C2, TIMELINE.classify(inKernel(2.5, "Inlined")).tier());
        assertEquals(Tier.INTERPRETER, TIMELINE.classify(inKernel(2.5, "Interpreted")).tier());
    }

    @Test
    void vectorApiCodeOutsideC2IsTheJavaFallback() {
        assertTrue(TIMELINE.classify(inKernel(1.0, "Inlined")).vectorFallback());
        assertTrue(TIMELINE.classify(inKernel(2.5, "Interpreted")).vectorFallback());
        assertFalse(TIMELINE.classify(inKernel(2.5, "Inlined")).vectorFallback(), "C2 intrinsifies the vector ops");
        assertEquals(0.5, new WarmupTimeline(COMPILES, List.of(inKernel(1.0, "Inlined"), inKernel(2.5, "Inlined")),
                List.of()).vectorFallbackShare(0, 3), 1e-12);
    }

    @Test
    void theCurveTimesTheSteadyStateFromTheFirstStep() {
        // Steady 0.1 s (median of the last 40%); five steps averaging at most 0.1/0.9 s start at step 3, after 2 + 1 + 0.5 s.
        var c = WarmupBench.Curve.of(new double[] {2, 1, 0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
        assertEquals(0.1, c.steady().steadyStepSeconds(), 1e-12);
        assertEquals(3, c.steady().warmupSteps());
        assertEquals(3.5, c.steadySeconds(), 1e-12);
        assertEquals(4.4, c.totalSeconds(), 1e-12);
    }

    @Test
    void aMeasuredRunReportsItsStepsAndTheCompilationsJfrRecorded() throws java.io.IOException {
        // A workload this JVM has not run before: its lambda and loop are compiled while it runs.
        float[] data = new float[1 << 14];
        double[] sink = new double[1];
        var w = new WarmupBench.Workload("probe", loop -> loop.apply(() -> {
            double s = 0;
            for (int i = 0; i < data.length; i++) s += data[i] * 1.0001f + i;
            sink[0] += s;
        }), 0.3, 200, new WarmupBench.Target(2, Integer.MAX_VALUE));
        Map<String, Double> r = WarmupBench.measure(w, System.currentTimeMillis() * 1000, null, 0.3, false);
        assertTrue(r.get("probe_step_ms") > 0, "step: " + r);
        assertTrue(r.get("probe_first_step_s") >= 0, "first step: " + r);
        assertTrue(r.get("probe_compilations") > 0, "JFR's jdk.Compilation events were read: " + r);
        assertTrue(sink[0] != 0);
    }

    @Test
    void theHotMethodsOfAWindowCountOnlyItsSamples() {
        String other = "org.jtorch.backend.cpu.ConvDirectF32.tile8x32()V";
        var timeline = new WarmupTimeline(COMPILES, List.of(inKernel(0.5, "Interpreted"), inKernel(1.5, "Interpreted"),
                new Sample(2.5, List.of(new Frame(other, "JIT compiled")))), List.of());
        String firstSteps = timeline.hotMethods(0, 2, 5), after = timeline.hotMethods(2, 5);
        assertTrue(firstSteps.contains("100.0%") && firstSteps.contains("lanewiseTemplate") && !firstSteps.contains("tile8x32"),
                firstSteps);
        assertTrue(after.contains("100.0%") && after.contains("tile8x32") && !after.contains("lanewiseTemplate"), after);
    }

    @Test
    void anExamplesProgramIsAWorkloadToo() {
        assertEquals("mnist", WarmupBench.workload("mnist").name());
        assertEquals("mlp", WarmupBench.workload("mlp").name());
        assertEquals(null, WarmupBench.workload("no-such-program"));
    }

    @Test
    void theTargetsAreSecondsForTheMlpAndStepsForResNet() {
        var mlp = new WarmupBench.Target(2, Integer.MAX_VALUE);
        var resnet = new WarmupBench.Target(Double.POSITIVE_INFINITY, 10);
        assertTrue(mlp.met(1.9, 400));
        assertFalse(mlp.met(2.1, 10));
        assertTrue(resnet.met(30, 10));
        assertFalse(resnet.met(3, 11));
        assertFalse(resnet.met(Double.NaN, -1), "a run that never settled misses its target");
    }
}
