package org.jtorch.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

/** The check every example's CI variant makes: the mean loss of the last steps is clearly below that of the first. */
public final class LossCurve {
    private LossCurve() {}

    /** Asserts mean(last {@code window}) < {@code ratio} x mean(first {@code window}), printing the curve on failure. */
    public static void assertFalls(String example, double[] losses, int window, double ratio) {
        double first = Arrays.stream(losses, 0, window).average().orElseThrow();
        double last = Arrays.stream(losses, losses.length - window, losses.length).average().orElseThrow();
        assertTrue(Double.isFinite(last) && last < ratio * first,
                example + ": the mean loss of the last " + window + " steps (" + last + ") is not below " + ratio
                        + " x that of the first " + window + " (" + first + "); losses " + Arrays.toString(losses));
    }
}
