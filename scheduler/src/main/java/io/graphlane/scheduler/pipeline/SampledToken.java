package io.graphlane.scheduler.pipeline;

import java.util.Arrays;

/**
 * One generated token, with its log-probability and the most likely alternatives when the request asked for them.
 * {@link #logprob()} is {@code NaN} and the arrays are empty when it did not: those are computed only on request.
 *
 * @param id          the token id
 * @param logprob     the token's natural-log probability under the distribution it was drawn from, or {@code NaN}
 * @param topIds      the most likely token ids, most likely first (lower id first on ties); empty when not asked for
 * @param topLogprobs their log-probabilities, same order and length as {@code topIds}
 */
public record SampledToken(int id, float logprob, int[] topIds, float[] topLogprobs) {
    private static final int[] NO_IDS = new int[0];
    private static final float[] NO_LOGPROBS = new float[0];

    public SampledToken {
        if (topIds.length != topLogprobs.length) {
            throw new IllegalArgumentException("top ids (" + topIds.length + ") and top logprobs (" + topLogprobs.length
                    + ") differ in length");
        }
    }

    /** A token without log-probabilities. */
    public static SampledToken of(int id) {
        return new SampledToken(id, Float.NaN, NO_IDS, NO_LOGPROBS);
    }

    /** Whether the log-probability was computed. */
    public boolean hasLogprob() {
        return !Float.isNaN(logprob);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SampledToken t && t.id == id && Float.compare(t.logprob, logprob) == 0
                && Arrays.equals(t.topIds, topIds) && Arrays.equals(t.topLogprobs, topLogprobs);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Integer.hashCode(id) + Float.hashCode(logprob)) + Arrays.hashCode(topIds);
    }

    @Override
    public String toString() {
        return hasLogprob() ? "SampledToken[" + id + ", " + logprob + ", top " + Arrays.toString(topIds) + "]" : "SampledToken[" + id + "]";
    }
}
