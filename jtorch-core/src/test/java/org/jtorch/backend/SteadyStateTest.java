package org.jtorch.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The warm-up and steady state of a run from its step times (the definition is SteadyState's Javadoc). */
class SteadyStateTest {
    @Test
    void theSteadyStepIsTheMedianOfTheLastFortyPercent() {
        // 10 steps: the last 4 are 0.1, 0.1, 0.3, 0.1: median 0.1.
        assertEquals(0.1, SteadyState.of(new double[] {5, 1, 1, 1, 1, 1, 0.1, 0.1, 0.3, 0.1}).steadyStepSeconds(), 0);
    }

    @Test
    void theWarmUpEndsAtTheFirstFiveStepsAveragingNinetyPercentOfTheSteadyThroughput() {
        // Steady 0.1; from step 3 the window (0.2, 0.1, 0.1, 0.1, 0.1) averages 0.12 > 0.1 / 0.9, from step 4 it is 0.1.
        assertEquals(4, SteadyState.of(new double[] {2, 1, 0.5, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}).warmupSteps());
    }

    @Test
    void oneSlowFirstStepIsWarmUpThoughAWindowMedianWouldHideIt() {
        assertEquals(1, SteadyState.of(new double[] {6, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}).warmupSteps());
    }

    @Test
    void aRunThatKeepsGettingFasterNeverReachesIt() {
        SteadyState s = SteadyState.of(new double[] {8, 7, 6, 5, 4, 3, 2, 1});
        assertFalse(s.reached());
        assertEquals(-1, s.warmupSteps());
    }

    @Test
    void aRunShorterThanTheWindowIsJudgedOnAllItsSteps() {
        assertEquals(0, SteadyState.of(new double[] {0.1, 0.1}).warmupSteps());
        assertThrows(IllegalArgumentException.class, () -> SteadyState.of(new double[0]));
    }
}
