package org.jtorch.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The figures {@code jtorch bench examples} reports from a run's step times (bench_examples.py computes the same). */
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
    void theSteadyStepIsTheMedianOfTheLastFortyPercent() {
        // 10 steps: the last 4 are 0.1, 0.1, 0.3, 0.1 -> median 0.1 s.
        Map<String, Double> r = summarise(1.0, 5, 1, 1, 1, 1, 1, 0.1, 0.1, 0.3, 0.1);
        assertEquals(100.0, r.get("p_step_ms"), 1e-9);
        assertEquals(6.0, r.get("p_first_step_s"), 1e-9);
    }

    @Test
    void theSteadyStateStartsWithTheFirstFiveStepsAtNinetyPercentOfItsThroughput() {
        // Steady 0.1 s; the window from step 3 (0.2, 0.1, 0.1, 0.1, 0.1: mean 0.12) is too slow, the one from
        // step 4 (mean 0.1) is not: it starts at 1 + 2 + 1 + 0.5 + 0.2 = 4.7 s after the launch.
        Map<String, Double> r = summarise(1.0, 2, 1, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
        assertEquals(4.7, r.get("p_steady_s"), 1e-9);
    }

    @Test
    void aSlowFirstStepIsNotHiddenByAWindowMedian() {
        // One 6 s step among fast ones: the window containing it has a mean of 1.08 s, far from steady.
        Map<String, Double> r = summarise(0.5, 6, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1);
        assertEquals(6.5, r.get("p_steady_s"), 1e-9);
    }

    @Test
    void aRunThatNeverSettlesReportsNaN() {
        // Steps that keep getting faster: no five-step window reaches 90% of the last steps' throughput.
        Map<String, Double> r = summarise(0, 8, 7, 6, 5, 4, 3, 2, 1);
        assertTrue(Double.isNaN(r.get("p_steady_s")), "steady: " + r.get("p_steady_s"));
    }
}
