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
 * <p>Before either, the logits are adjusted, in vLLM's order: {@code logitBias} is added per token id (OpenAI's
 * definition); then every token of the prompt or generated so far has its logit divided by
 * {@code repetitionPenalty} when positive and multiplied by it otherwise (the CTRL rule as Hugging Face's and vLLM's
 * {@code repetition_penalty}); then for every token generated so far, {@code count · frequencyPenalty +
 * presencePenalty} is subtracted from its logit (the presence penalty once, for a token generated at least once).
 * The adjustments apply to greedy decoding too.
 *
 * <p>A sampled draw (temperature above 0) then filters the softmax of {@code logits / temperature} in vLLM's order:
 * {@code minP} drops every token whose probability is below {@code minP} times the largest; {@code topK} keeps the
 * {@code topK} most likely of the rest; {@code topP} keeps the smallest most-likely set whose renormalized mass
 * reaches it; the token is drawn from what is left, renormalized. Equal probabilities rank the lower id first.
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
 * @param topK             -1 or 0: off; otherwise the most likely tokens a draw keeps (vLLM's {@code top_k})
 * @param minP             in [0, 1]; 0 off; a draw keeps the tokens at least this fraction as likely as the most
 *                         likely one (vLLM's {@code min_p})
 * @param repetitionPenalty finite and > 0; 1 off; divides the positive logits, multiplies the others, of every token
 *                         in the prompt or generated so far (Hugging Face's and vLLM's {@code repetition_penalty})
 */
public record SamplingParams(double temperature, double topP, long seed, double presencePenalty, double frequencyPenalty,
                             Map<Integer, Float> logitBias, int topLogprobs, int topK, double minP, double repetitionPenalty) {

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
        if (topK < -1) {
            throw new GraphlaneException("top-k must be -1 or 0 (off) or at least 1, got " + topK);
        }
        if (!(minP >= 0 && minP <= 1)) {
            throw new GraphlaneException("min-p must be in [0, 1], got " + minP);
        }
        if (!(repetitionPenalty > 0) || Double.isInfinite(repetitionPenalty)) {
            throw new GraphlaneException("repetition penalty must be a finite number > 0, got " + repetitionPenalty);
        }
    }

    /** Temperature, top-p and seed; no adjustments, no other filter, no log-probabilities. */
    public SamplingParams(double temperature, double topP, long seed) {
        this(temperature, topP, seed, 0, 0, Map.of(), -1, 0, 0, 1);
    }

    /** True when sampling is greedy. */
    public boolean isGreedy() {
        return temperature == 0;
    }

    /** True when a penalty or a bias changes the logits before the choice. */
    public boolean adjustsLogits() {
        return presencePenalty != 0 || frequencyPenalty != 0 || repetitionPenalty != 1 || !logitBias.isEmpty();
    }

    /** True when a draw keeps fewer than all tokens by top-k or min-p (top-p aside). */
    public boolean filtersByRank() {
        return topK > 0 || minP > 0;
    }

    /** True when tokens carry log-probabilities. */
    public boolean wantsLogprobs() {
        return topLogprobs >= 0;
    }

    /** These parameters with another seed. */
    public SamplingParams withSeed(long newSeed) {
        return new SamplingParams(temperature, topP, newSeed, presencePenalty, frequencyPenalty, logitBias, topLogprobs, topK, minP,
                repetitionPenalty);
    }

    /** These parameters with presence and frequency penalties. */
    public SamplingParams withPenalties(double presence, double frequency) {
        return new SamplingParams(temperature, topP, seed, presence, frequency, logitBias, topLogprobs, topK, minP, repetitionPenalty);
    }

    /** These parameters with a logit bias per token id. */
    public SamplingParams withLogitBias(Map<Integer, Float> bias) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, bias, topLogprobs, topK, minP,
                repetitionPenalty);
    }

    /** These parameters with log-probabilities and {@code top} alternatives per token (-1: none). */
    public SamplingParams withLogprobs(int top) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, logitBias, top, topK, minP,
                repetitionPenalty);
    }

    /** These parameters with top-k ({@code -1} or 0: off) and min-p (0: off). */
    public SamplingParams withTopKMinP(int k, double p) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, logitBias, topLogprobs, k, p,
                repetitionPenalty);
    }

    /** These parameters with a repetition penalty (1: off). */
    public SamplingParams withRepetitionPenalty(double penalty) {
        return new SamplingParams(temperature, topP, seed, presencePenalty, frequencyPenalty, logitBias, topLogprobs, topK, minP,
                penalty);
    }

    /** The largest token id the bias names, or -1 without a bias. */
    public int largestBiasedId() {
        return logitBias.isEmpty() ? -1 : new TreeMap<>(logitBias).lastKey();
    }
}
