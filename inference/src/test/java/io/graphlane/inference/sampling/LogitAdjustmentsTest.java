package io.graphlane.inference.sampling;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The logit bias, the presence and frequency penalties, and the log-probabilities a sampler attaches to its tokens. */
class LogitAdjustmentsTest {
    private static final float[] LOGITS = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.0f};

    @Test
    void biasIsAddedBeforeTheGreedyChoice() {
        Sampler plain = new Sampler(SamplingParams.GREEDY);
        assertEquals(1, plain.sample(LOGITS));
        Sampler biased = new Sampler(SamplingParams.GREEDY.withLogitBias(Map.of(3, 4.5f, 1, -0.25f)));
        float[] adjusted = biased.adjust(LOGITS);
        assertArrayEquals(new float[] {1.0f, 2.75f, 2.5f, 3.5f, 3.0f, 0.0f}, adjusted);
        assertEquals(3, biased.sample(LOGITS), "token 3 at -1 + 4.5 = 3.5 beats 3.0");
        assertArrayEquals(new float[] {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.0f}, LOGITS, "the caller's logits are not changed");
    }

    @Test
    void penaltiesFollowOpenAisFormulaOverTheTokensGeneratedSoFar() {
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withPenalties(0.5, 0.25));
        // Nothing generated yet: no change.
        assertArrayEquals(LOGITS, sampler.adjust(LOGITS));
        assertEquals(1, sampler.sample(LOGITS), "first: token 1 (3.0, the first of the ties)");
        // Token 1 once: 3.0 - 1 * 0.25 - 0.5 = 2.25, so token 4 (3.0) wins.
        assertArrayEquals(new float[] {1.0f, 2.25f, 2.5f, -1.0f, 3.0f, 0.0f}, sampler.adjust(LOGITS));
        assertEquals(4, sampler.sample(LOGITS));
        // Tokens 1 and 4 once each: 2.25 both; token 2 (2.5) wins.
        assertEquals(2, sampler.sample(LOGITS));
        assertArrayEquals(new float[] {1.0f, 2.25f, 1.75f, -1.0f, 2.25f, 0.0f}, sampler.adjust(LOGITS));
        assertEquals(1, sampler.sample(LOGITS), "ties again: the first");
        // Token 1 twice: 3.0 - 2 * 0.25 - 0.5 = 2.0 (the presence penalty counts once).
        assertArrayEquals(new float[] {1.0f, 2.0f, 1.75f, -1.0f, 2.25f, 0.0f}, sampler.adjust(LOGITS));
    }

    @Test
    void negativePenaltiesFavourRepetition() {
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withPenalties(-1, -0.5));
        assertEquals(1, sampler.sample(LOGITS));
        assertArrayEquals(new float[] {1.0f, 4.5f, 2.5f, -1.0f, 3.0f, 0.0f}, sampler.adjust(LOGITS));
        assertEquals(1, sampler.sample(LOGITS));
    }

    @Test
    void logprobsAreTheLogSoftmaxOfTheAdjustedLogitsWithTheTopInOrder() {
        Sampler sampler = new Sampler(SamplingParams.GREEDY.withLogprobs(3));
        SampledToken t = sampler.next(LOGITS);
        double logSum = 0;
        for (float v : LOGITS) {
            logSum += Math.exp(v);
        }
        logSum = Math.log(logSum);
        assertEquals(1, t.id());
        assertEquals(3.0 - logSum, t.logprob(), 1e-6);
        assertArrayEquals(new int[] {1, 4, 2}, t.topIds(), "largest first, the lower id first on ties");
        assertEquals(3.0 - logSum, t.topLogprobs()[0], 1e-6);
        assertEquals(3.0 - logSum, t.topLogprobs()[1], 1e-6);
        assertEquals(2.5 - logSum, t.topLogprobs()[2], 1e-6);
        double total = 0;
        for (float v : LOGITS) {
            total += Math.exp(v - logSum);
        }
        assertEquals(1.0, total, 1e-9);

        Sampler biased = new Sampler(SamplingParams.GREEDY.withLogitBias(Map.of(5, 10f)).withLogprobs(2));
        SampledToken b = biased.next(LOGITS);
        assertEquals(5, b.id());
        assertArrayEquals(new int[] {5, 1}, b.topIds(), "the bias counts in the log-probabilities too");
        assertTrue(b.logprob() > -0.01 && b.logprob() < 0, "token 5 holds nearly all the mass: " + b.logprob());
    }

    @Test
    void aSampledTokensLogprobIsItsOwnEvenOutsideTheTop() {
        // Temperature 1 with a seed: whatever is drawn, its log-probability is its log-softmax value.
        Sampler sampler = new Sampler(new SamplingParams(1, 1, 7).withLogprobs(1));
        double logSum = Math.log(java.util.stream.IntStream.range(0, LOGITS.length).mapToDouble(i -> Math.exp(LOGITS[i])).sum());
        for (int i = 0; i < 50; i++) {
            SampledToken t = sampler.next(LOGITS);
            assertEquals(LOGITS[t.id()] - logSum, t.logprob(), 1e-6);
            assertArrayEquals(new int[] {1}, t.topIds());
        }
    }

    @Test
    void zeroAlternativesStillCarryTheTokensLogprob() {
        SampledToken t = new Sampler(SamplingParams.GREEDY.withLogprobs(0)).next(LOGITS);
        assertTrue(t.hasLogprob());
        assertEquals(0, t.topIds().length);
    }

    @Test
    void withoutAdjustmentsOrLogprobsTheTokenCarriesNothingMore() {
        Sampler sampler = new Sampler(new SamplingParams(0.8, 0.9, 3));
        SampledToken t = sampler.next(LOGITS);
        assertFalse(t.hasLogprob());
        assertEquals(0, t.topIds().length);
        assertFalse(new SamplingParams(0.8, 0.9, 3).adjustsLogits());
    }

    @Test
    void theSameSeedAndAdjustmentsGiveTheSameTokens() {
        SamplingParams p = new SamplingParams(1, 0.95, 42).withPenalties(0.3, 0.2).withLogitBias(Map.of(0, 1.5f));
        Sampler a = new Sampler(p);
        Sampler b = new Sampler(p);
        for (int i = 0; i < 30; i++) {
            assertEquals(a.sample(LOGITS), b.sample(LOGITS));
        }
    }

    @Test
    void outOfRangeAdjustmentsNameTheOption() {
        assertTrue(assertThrows(GraphlaneException.class, () -> SamplingParams.GREEDY.withPenalties(2.5, 0)).getMessage()
                .startsWith("presence penalty"));
        assertTrue(assertThrows(GraphlaneException.class, () -> SamplingParams.GREEDY.withPenalties(0, -2.01)).getMessage()
                .startsWith("frequency penalty"));
        assertTrue(assertThrows(GraphlaneException.class, () -> SamplingParams.GREEDY.withLogitBias(Map.of(3, 100.5f))).getMessage()
                .contains("logit bias of token 3"));
        assertTrue(assertThrows(GraphlaneException.class, () -> SamplingParams.GREEDY.withLogprobs(21)).getMessage()
                .startsWith("top logprobs"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> new Sampler(SamplingParams.GREEDY.withLogitBias(Map.of(6, 1f))).sample(LOGITS)).getMessage().contains("token 6"));
        assertSame(SamplingParams.GREEDY.logitBias().getClass(), Map.of().getClass());
    }
}
