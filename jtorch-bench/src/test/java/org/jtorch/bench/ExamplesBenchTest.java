package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The figures {@code jtorch bench examples} reports from a run's step times (SteadyState defines the steady state; bench_examples.py computes the same). */
class ExamplesBenchTest {
    /** Step times in seconds, each ending {@code launch} plus the sum so far after the launch. */
    private static Map<String, Double> summarise(double launch, double... steps) {
        List<Double> s = new ArrayList<>(), e = new ArrayList<>();
        double t = launch;
        for (double x : steps) {
            t += x;
            s.add(x);
            e.add(t);
        }
        return ExamplesBench.summary("p", s, e);
    }

    @Test
    void theFiguresAreTheSteadyStepAndTheLaunchRelativeTimesOfTheFirstStepAndTheSteadyState() {
        // Steady 0.1 s; the steady state starts with step 4, 1 + 2 + 1 + 0.5 + 0.2 = 4.7 s after the launch.
        Map<String, Double> r = summarise(1.0, 2, 1, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
        assertEquals(100.0, r.get("p_step_ms"), 1e-9);
        assertEquals(3.0, r.get("p_first_step_s"), 1e-9);
        assertEquals(4.7, r.get("p_steady_s"), 1e-9);
    }

    @Test
    void theCpuFiguresAreTheMainThreadsAndTheProcesssCpuAtTheEndOfTheFirstStepAndTheStartOfTheSteadyState() {
        // Steps of 2, 1, 0.5, 0.2, then 0.1 s of CPU after 1.5 s of set-up; the process spends 3 s more per step.
        List<Double> steps = List.of(2.0, 1.0, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
        List<Double> start = new ArrayList<>(), process = new ArrayList<>();
        double cpu = 1.5;
        for (double x : steps) {
            start.add(cpu);
            process.add(4 * cpu);
            cpu += x;
        }
        Map<String, Double> r = ExamplesBench.cpuSummary("p", steps, start, process);
        assertEquals(3.5, r.get("p_first_step_cpu_s"), 1e-9);
        assertEquals(14.0, r.get("p_process_cpu_first_step_s"), 1e-9);
        assertEquals(5.2, r.get("p_steady_cpu_s"), 1e-9);
        assertEquals(20.8, r.get("p_process_cpu_steady_s"), 1e-9);
    }

    @Test
    void aRunThatNeverSettlesReportsNaN() {
        Map<String, Double> r = summarise(0, 8, 7, 6, 5, 4, 3, 2, 1);
        assertTrue(Double.isNaN(r.get("p_steady_s")), "steady: " + r.get("p_steady_s"));
    }
}
