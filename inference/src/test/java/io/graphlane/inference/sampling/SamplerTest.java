package io.graphlane.inference.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Greedy, temperature and top-p sampling: their choices, their statistics and their reproducibility. */
class SamplerTest {
    private static final float[] LOGITS = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.0f};

    @Test
    void greedyTakesTheFirstLargestLogit() {
        Sampler sampler = new Sampler(SamplingParams.GREEDY);
        for (int i = 0; i < 5; i++) {
            assertEquals(1, sampler.sample(LOGITS));
        }
    }

    @Test
    void theSameSeedGivesTheSameTokens() {
        SamplingParams params = new SamplingParams(1.0, 0.95, 1234);
        assertArrayEquals(draws(new Sampler(params), 200), draws(new Sampler(params), 200));
        assertFalse(java.util.Arrays.equals(draws(new Sampler(params), 200), draws(new Sampler(new SamplingParams(1.0, 0.95, 1235)), 200)),
                "another seed draws another sequence");
    }

    @Test
    void temperatureOneDrawsWithTheSoftmaxProbabilities() {
        Sampler sampler = new Sampler(new SamplingParams(1.0, 1.0, 7));
        int n = 60_000;
        int[] counts = new int[LOGITS.length];
        for (int i = 0; i < n; i++) {
            counts[sampler.sample(LOGITS)]++;
        }
        double norm = 0;
        for (float l : LOGITS) {
            norm += Math.exp(l);
        }
        for (int t = 0; t < LOGITS.length; t++) {
            double p = Math.exp(LOGITS[t]) / norm;
            double sigma = Math.sqrt(p * (1 - p) / n);
            assertEquals(p, counts[t] / (double) n, 5 * sigma + 1e-4, "token " + t);
        }
    }

    @Test
    void topPKeepsOnlyTheSmallestNucleusReachingP() {
        // probabilities at temperature 1: tokens 1 and 4 ≈ 0.34 each, token 2 ≈ 0.21; together 0.89
        Sampler sampler = new Sampler(new SamplingParams(1.0, 0.8, 3));
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 5_000; i++) {
            seen.add(sampler.sample(LOGITS));
        }
        assertEquals(Set.of(1, 2, 4), seen);
        Sampler tight = new Sampler(new SamplingParams(1.0, 0.3, 3));
        Set<Integer> top = new HashSet<>();
        for (int i = 0; i < 2_000; i++) {
            top.add(tight.sample(LOGITS));
        }
        assertEquals(Set.of(1), top, "the first of two equal logits ranks first and alone reaches 0.3");
    }

    @Test
    void aLowTemperatureApproachesGreedy() {
        Sampler sampler = new Sampler(new SamplingParams(0.01, 1.0, 5));
        for (int i = 0; i < 1_000; i++) {
            int token = sampler.sample(new float[] {0.5f, 2.0f, 1.9f});
            assertEquals(1, token);
        }
    }

    @Test
    void invalidParametersNameTheOption() {
        assertTrue(assertThrows(GraphlaneException.class, () -> new SamplingParams(-0.1, 1, 0)).getMessage().startsWith("temperature"));
        assertTrue(assertThrows(GraphlaneException.class, () -> new SamplingParams(1, 0, 0)).getMessage().startsWith("top-p"));
        assertTrue(assertThrows(GraphlaneException.class, () -> new SamplingParams(1, 1.5, 0)).getMessage().startsWith("top-p"));
    }

    private static int[] draws(Sampler sampler, int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = sampler.sample(LOGITS);
        }
        return out;
    }
}
