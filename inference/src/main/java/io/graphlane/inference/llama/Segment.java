package io.graphlane.inference.llama;

/**
 * One request's part of a stage step: {@code length} consecutive positions starting at
 * {@code startPosition} (a prefill has many, a decode step one).
 *
 * @param requestId         the request, unique among those the stage holds caches for
 * @param startPosition     the first position, equal to the positions the stage has already seen for the request
 * @param length            positions in this step, at least one
 * @param reservedPositions the most positions the request's caches may reach, as admission reserved them (its
 *                          prompt plus its maximum of new tokens): a stage allocates no more for it
 */
public record Segment(long requestId, int startPosition, int length, int reservedPositions) {

    /** Checks the positions are a non-empty range from a non-negative start, and the reservation positive. */
    public Segment {
        if (startPosition < 0 || length < 1) {
            throw new IllegalArgumentException("request " + requestId + ": a segment needs startPosition >= 0 and length >= 1, got "
                    + startPosition + " and " + length);
        }
        if (reservedPositions < 1) {
            throw new IllegalArgumentException("request " + requestId + ": a segment needs reservedPositions >= 1, got " + reservedPositions);
        }
    }

    /** A segment of a request with no reservation of its own: its caches may grow up to the model's maximum. */
    public Segment(long requestId, int startPosition, int length) {
        this(requestId, startPosition, length, Integer.MAX_VALUE);
    }
}
