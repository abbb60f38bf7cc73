package io.graphlane.inference.api;

/**
 * How the next token is chosen: temperature 0 is greedy (argmax); otherwise softmax at
 * {@code temperature}, restricted to the smallest set of tokens whose probability reaches
 * {@code topP}, drawn from a generator seeded with {@code seed} so a run is reproducible.
 */
public record SamplingParams(double temperature, double topP, long seed) {
    /** Argmax decoding. */
    public static final SamplingParams GREEDY = new SamplingParams(0.0, 1.0, 0L);

    public SamplingParams {
        if (!(temperature >= 0.0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be a finite number >= 0, got " + temperature);
        }
        if (!(topP > 0.0 && topP <= 1.0)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
        }
    }

    public boolean isGreedy() {
        return temperature == 0.0;
    }
}
