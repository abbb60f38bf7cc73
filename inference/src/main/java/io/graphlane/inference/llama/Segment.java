package io.graphlane.inference.llama;

/**
 * One request's part of a stage step: {@code length} consecutive positions starting at
 * {@code startPosition} (a prefill has many, a decode step one).
 *
 * @param requestId     the request, unique among those the stage holds caches for
 * @param startPosition the first position, equal to the positions the stage has already seen for the request
 * @param length        positions in this step, at least one
 */
public record Segment(long requestId, int startPosition, int length) {

    /** Checks the positions are a non-empty range from a non-negative start. */
    public Segment {
        if (startPosition < 0 || length < 1) {
            throw new IllegalArgumentException("request " + requestId + ": a segment needs startPosition >= 0 and length >= 1, got "
                    + startPosition + " and " + length);
        }
    }
}
