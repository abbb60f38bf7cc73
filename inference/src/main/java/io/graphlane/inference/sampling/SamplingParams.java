package io.graphlane.inference.sampling;

import io.graphlane.core.GraphlaneException;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * How the next token is chosen: greedy at temperature 0, otherwise drawn from the softmax of
 * {@code logits / temperature} restricted to the smallest set of most likely tokens whose
 * probability reaches {@code topP}, with a seeded generator so a run is reproducible.
 *
 * <p>Before either, the logits are adjusted (OpenAI's definitions): {@code logitBias} is added per token id, and
 * for every token generated so far by the request, {@code count · frequencyPenalty + presencePenalty} is subtracted
 * from its logit (the presence penalty once, for a token generated at least once). The adjustments apply to greedy
 * decoding too.
 *
 * @param temperature      0 for greedy, otherwise positive
 * @param topP             nucleus mass in (0, 1]; 1 keeps every token
 * @param seed             seeds the request's generator
 * @param presencePenalty  in [-2, 2]; subtracted once from the logit of every token already generated
 * @param frequencyPenalty in [-2, 2]; subtracted from a token's logit once per time it was generated
 * @param logitBias        token id to a bias in [-100, 100] added to its logit; ids are not checked here (the
 *                         vocabulary is the model's): an engine refuses ids outside it at admission
 * @param topLogprobs      -1: no log-probabilities; 0..{@value #MAX_TOP_LOGPROBS}: each token carries its
 *                         log-probability and that many most likely alternatives
 */
public record SamplingParams(double temperature, double topP, long seed, double presencePenalty, double frequencyPenalty,
                             Map<Integer, Float> logitBias, int topLogprobs) {

    /** The most alternatives a token may carry. */
    public static final int MAX_TOP_LOGPROBS = 20;
    /** The penalties' bound (both signs), as OpenAI's API. */
    public static final double MAX_PENALTY = 2;
    /** The bias bound (both signs), as OpenAI's API. */
    public static final double MAX_BIAS = 100;

    /** Greedy decoding: always the most likely token (the first on ties). */
    public static final SamplingParams GREEDY = new SamplingParams(0, 1, 0);

    /** Validates the ranges, naming the option at fault. */
    public SamplingParams {
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new GraphlaneException("temperature must be a finite number >= 0, got " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new GraphlaneException("top-p must be in (0, 1], got " + topP);
        }
        if (!(Math.abs(presencePenalty) <= MAX_PENALTY)) {
            throw new GraphlaneException("presence penalty must be in [-2, 2], got " + presencePenalty);
        }
        if (!(Math.abs(frequencyPenalty) <= MAX_PENALTY)) {
            throw new GraphlaneException("frequency penalty must be in [-2, 2], got " + frequencyPenalty);
        }
        Objects.requireNonNull(logitBias, "logitBias");
        for (Map.Entry<Integer, Float> e : logitBias.entrySet()) {
            if (e.getKey() == null || e.getKey() < 0) {
                throw new GraphlaneException("a logit bias names token id " + e.getKey() + "; ids are >= 0");
            }
            if (e.getValue() == null || !(Math.abs(e.getValue()) <= MAX_BIAS)) {
                throw new GraphlaneException("the logit bias of token " + e.getKey() + " must be in [-100, 100], got " + e.getValue());
            }
        }
        logitBias = Map.copyOf(logitBias);
        if (topLogprobs < -1 || topLogprobs > MAX_TOP_LOGPROBS) {
            throw new GraphlaneException("top logprobs must be -1 (none) or in [0, " + MAX_TOP_LOGPROBS + "], got " + topLogprobs);
        }
    }

    /** Temperature, top-p and seed; no adjustments, no log-probabilities. */
    public SamplingParams(double temperature, double topP, long seed) {
        this(temperature, topP, seed, 0, 0, Map.of(), -1);
    }

    /** True when sampling is greedy. */
    public boolean isGreedy() {
        return temperature == 0;
    }

    /** True when a penalty or a bias changes the logits before the choice. */
    public boolean adjustsLogits() {
        return presencePenalty != 0 || frequencyPenalty != 0 || !logitBias.isEmpty();
    }

    /** True when tokens carry log-probabilities. */
    public boolean wantsLogprobs() {
        return topLogprobs >= 0;
    }

    /** These parameters with another seed. */
    public SamplingParams withSeed(long newSeed) {
        return new SamplingParams(temperature, topP, newSeed, presencePenalty, frequencyPenalty, logitBias, topLogprobs);
    }

    /** These parameters with presence and frequency penalties. */
    public SamplingParams withPenalties(double presence, double frequency) {
        return new SamplingParams(temperature, topP, seed, presence, frequency, logitBias, topLogprobs);
    }

    /** These parameters with a logit bias per token id. */
    public SamplingParams withLogitBias(Map<Integer, Float> bias) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, bias, topLogprobs);
    }

    /** These parameters with log-probabilities and {@code top} alternatives per token (-1: none). */
    public SamplingParams withLogprobs(int top) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, logitBias, top);
    }

    /** The largest token id the bias names, or -1 without a bias. */
    public int largestBiasedId() {
        return logitBias.isEmpty() ? -1 : new TreeMap<>(logitBias).lastKey();
    }
}
