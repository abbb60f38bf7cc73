package io.graphlane.inference.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** top-k, min-p and the repetition penalty (vLLM's extensions): the candidate set, the distribution, the bounds. */
class SamplingFiltersTest {
    /** Probabilities at temperature 1 ∝ e^logit: ids 1 and 4 tie at the top, then 2, 0, 5, 3. */
    private static final float[] LOGITS = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.0f};

    private static Set<Integer> candidates(SamplingParams params, float[] logits, int draws) {
        Sampler sampler = new Sampler(params);
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < draws; i++) {
            seen.add(sampler.sample(logits));
        }
        return seen;
    }

    private static double[] frequencies(SamplingParams params, float[] logits, int draws) {
        Sampler sampler = new Sampler(params);
        double[] f = new double[logits.length];
        for (int i = 0; i < draws; i++) {
            f[sampler.sample(logits)] += 1.0 / draws;
        }
        return f;
    }

    @Test
    void topKKeepsExactlyTheKMostLikelyTokens() {
        SamplingParams base = new SamplingParams(1.0, 1.0, 11);
        assertEquals(Set.of(1), candidates(base.withTopKMinP(1, 0), LOGITS, 2_000), "ties rank the lower id first");
        assertEquals(Set.of(1, 4), candidates(base.withTopKMinP(2, 0), LOGITS, 2_000));
        assertEquals(Set.of(1, 2, 4), candidates(base.withTopKMinP(3, 0), LOGITS, 4_000));
        assertEquals(Set.of(0, 1, 2, 3, 4, 5), candidates(base.withTopKMinP(100, 0), LOGITS, 20_000), "k past the vocabulary keeps all");
    }

    @Test
    void topKOffValuesKeepEveryToken() {
        for (int off : new int[] {-1, 0}) {
            SamplingParams p = new SamplingParams(1.0, 1.0, 5).withTopKMinP(off, 0);
            assertArrayEquals(draws(new SamplingParams(1.0, 1.0, 5), 500), draws(p, 500), "top_k " + off + " is off");
        }
    }

    @Test
    void topKDrawsFromTheRenormalizedTopK() {
        // k = 3 keeps 1, 4 (e^3 each) and 2 (e^2.5): renormalized, 2 has e^2.5 / (2e^3 + e^2.5)
        int n = 40_000;
        double[] f = frequencies(new SamplingParams(1.0, 1.0, 9).withTopKMinP(3, 0), LOGITS, n);
        double z = 2 * Math.exp(3) + Math.exp(2.5);
        double[] expected = {0, Math.exp(3) / z, Math.exp(2.5) / z, 0, Math.exp(3) / z, 0};
        for (int t = 0; t < LOGITS.length; t++) {
            double sigma = Math.sqrt(expected[t] * (1 - expected[t]) / n);
            assertEquals(expected[t], f[t], 5 * sigma + 1e-9, "token " + t);
        }
    }

    @Test
    void topKThenTopPOnTheRenormalizedSet() {
        // k = 3: masses 0.384, 0.384, 0.233 after renormalizing; top-p 0.74 then needs the two largest only
        assertEquals(Set.of(1, 4), candidates(new SamplingParams(1.0, 0.74, 3).withTopKMinP(3, 0), LOGITS, 4_000));
        // without top-k the same top-p over all six (0.356 + 0.356 = 0.712 < 0.74) needs token 2 too
        assertEquals(Set.of(1, 2, 4), candidates(new SamplingParams(1.0, 0.74, 3), LOGITS, 4_000));
    }

    @Test
    void minPDropsTokensBelowTheFractionOfTheLargest() {
        // relative to the largest (e^3): id 2 is e^-0.5 ≈ 0.607, id 0 e^-2 ≈ 0.135, id 5 e^-3 ≈ 0.050, id 3 e^-4 ≈ 0.018
        SamplingParams base = new SamplingParams(1.0, 1.0, 21);
        assertEquals(Set.of(1, 2, 4), candidates(base.withTopKMinP(0, 0.5), LOGITS, 4_000));
        assertEquals(Set.of(0, 1, 2, 4), candidates(base.withTopKMinP(0, 0.1), LOGITS, 10_000));
        assertEquals(Set.of(1, 4), candidates(base.withTopKMinP(0, 1.0), LOGITS, 2_000), "min_p 1 keeps only the largest");
    }

    @Test
    void minPFollowsTheTemperature() {
        // at temperature 0.5 the ratio of id 2 to the largest is e^-1 ≈ 0.37: min_p 0.5 drops it
        assertEquals(Set.of(1, 4), candidates(new SamplingParams(0.5, 1.0, 2).withTopKMinP(0, 0.5), LOGITS, 3_000));
    }

    @Test
    void minPDrawsFromTheRenormalizedRest() {
        int n = 40_000;
        double[] f = frequencies(new SamplingParams(1.0, 1.0, 13).withTopKMinP(0, 0.5), LOGITS, n);
        double z = 2 * Math.exp(3) + Math.exp(2.5);
        assertEquals(Math.exp(2.5) / z, f[2], 5 * Math.sqrt(0.23 * 0.77 / n));
        assertEquals(1.0, f[1] + f[2] + f[4], 1e-9);
    }

    @Test
    void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogitsOfPromptTokens() {
        SamplingParams p = SamplingParams.GREEDY.withRepetitionPenalty(2.0);
        Sampler sampler = new Sampler(p, new int[] {1, 3});
        float[] adjusted = sampler.adjust(LOGITS);
        assertArrayEquals(new float[] {1.0f, 1.5f, 2.5f, -2.0f, 3.0f, 0.0f}, adjusted);
    }

    @Test
    void repetitionPenaltyCountsGeneratedTokensAndChangesGreedy() {
        // greedy takes 1 (first of the tie); penalised it drops to 1.5 / 1.3 and 4 wins next, then 2
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withRepetitionPenalty(1.3), new int[0]);
        assertEquals(1, sampler.sample(LOGITS));
        assertEquals(4, sampler.sample(LOGITS));
        assertEquals(2, sampler.sample(LOGITS));
        Sampler fromPrompt = new Sampler(SamplingParams.GREEDY.withRepetitionPenalty(1.3), new int[] {1, 4, 4});
        assertEquals(2, fromPrompt.sample(LOGITS), "tokens of the prompt are penalised once, however often they occur");
    }

    @Test
    void repetitionPenaltyBelowOneFavoursSeenTokens() {
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withRepetitionPenalty(0.5), new int[] {2});
        assertEquals(2, sampler.sample(LOGITS), "2.5 / 0.5 = 5 beats 3");
    }

    @Test
    void repetitionPenaltyComesBeforeThePresencePenalty() {
        // vLLM: divide first, subtract after: (3 / 2) − 1 = 0.5, not (3 − 1) / 2 = 1
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withRepetitionPenalty(2.0).withPenalties(1.0, 0), new int[0]);
        float[] logits = {3.0f, 0.7f};
        assertEquals(0, sampler.sample(logits));
        assertEquals(1, sampler.sample(logits), "token 0 now scores 0.5 < 0.7");
    }

    @Test
    void boundsNameTheOption() {
        SamplingParams p = new SamplingParams(1.0, 1.0, 1);
        assertTrue(assertThrows(GraphlaneException.class, () -> p.withTopKMinP(-2, 0)).getMessage().contains("top-k"));
        assertTrue(assertThrows(GraphlaneException.class, () -> p.withTopKMinP(0, 1.5)).getMessage().contains("min-p"));
        assertTrue(assertThrows(GraphlaneException.class, () -> p.withTopKMinP(0, -0.1)).getMessage().contains("min-p"));
        assertTrue(assertThrows(GraphlaneException.class, () -> p.withRepetitionPenalty(0)).getMessage().contains("repetition penalty"));
        assertTrue(assertThrows(GraphlaneException.class, () -> p.withRepetitionPenalty(Double.NaN)).getMessage()
                .contains("repetition penalty"));
    }

    private static int[] draws(SamplingParams params, int n) {
        Sampler sampler = new Sampler(params);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = sampler.sample(LOGITS);
        }
        return out;
    }
}
