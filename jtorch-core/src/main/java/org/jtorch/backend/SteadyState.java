package org.jtorch.backend;

import java.util.Arrays;

/**
 * A run's warm-up and steady state, from the wall time of each of its steps: what C2's compilation and the caches'
 * filling cost at the start, and how fast the run goes after. The steady step is the median of the last 40% of the
 * steps; the warm-up ends where the first five consecutive steps average at least 90% of the steady throughput.
 * Used by {@code jtorch train} (its images per second) and {@code jtorch bench examples}.
 *
 * @param steadyStepSeconds the median step of the last 40% of the steps
 * @param warmupSteps the steps before the steady state; {@code -1} when the run never reached it
 */
public record SteadyState(double steadyStepSeconds, int warmupSteps) {
    /** Steps per window that must average 90% of the steady throughput. */
    public static final int WINDOW = 5;

    /** The steady state of steps that took {@code stepSeconds} each, in order (at least one). */
    public static SteadyState of(double[] stepSeconds) {
        int n = stepSeconds.length;
        if (n == 0) throw new IllegalArgumentException("SteadyState: no steps");
        int tail = Math.min(n, Math.max(3, n * 2 / 5));
        double[] last = Arrays.copyOfRange(stepSeconds, n - tail, n);
        Arrays.sort(last);
        double steady = last[tail / 2];
        int warmup = -1;
        for (int k = 0; k + Math.min(WINDOW, n) <= n; k++) {
            int w = Math.min(WINDOW, n);
            double sum = 0;
            for (int i = k; i < k + w; i++) sum += stepSeconds[i];
            if (sum / w <= steady / 0.9) {
                warmup = k;
                break;
            }
        }
        return new SteadyState(steady, warmup);
    }

    /** Whether the run reached its steady state. */
    public boolean reached() {
        return warmupSteps >= 0;
    }
}
