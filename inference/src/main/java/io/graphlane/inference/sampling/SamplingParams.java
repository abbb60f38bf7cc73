package io.graphlane.inference.sampling;

import io.graphlane.core.GraphlaneException;

/**
 * How the next token is chosen: greedy at temperature 0, otherwise drawn from the softmax of
 * {@code logits / temperature} restricted to the smallest set of most likely tokens whose
 * probability reaches {@code topP}, with a seeded generator so a run is reproducible.
 *
 * @param temperature 0 for greedy, otherwise positive
 * @param topP        nucleus mass in (0, 1]; 1 keeps every token
 * @param seed        seeds the request's generator
 */
public record SamplingParams(double temperature, double topP, long seed) {

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
    }

    /** True when sampling is greedy. */
    public boolean isGreedy() {
        return temperature == 0;
    }
}
