package io.graphlane.scheduler.pipeline;

/**
 * The KV-cache memory an engine admits requests against: {@code bytes} in all, of which each request reserves
 * {@code bytesPerPosition} for every position it may reach (its prompt plus its maximum of new tokens) while it runs.
 * {@code bytesPerPosition} is what one position of one request takes in the caches of every stage (and shard) together,
 * as the stage program allocates them ({@link StageProgram#kvBytesPerPosition()}); 0 for a program that keeps no cache,
 * whose requests then reserve nothing.
 *
 * @param bytes            the budget, positive
 * @param bytesPerPosition bytes one position of one request takes, not negative
 */
public record KvBudget(long bytes, long bytesPerPosition) {
    /** No bound: every reservation fits. */
    public static final KvBudget UNBOUNDED = new KvBudget(Long.MAX_VALUE, 0);

    public KvBudget {
        if (bytes <= 0) {
            throw new IllegalArgumentException("a KV-cache budget must be positive, got " + bytes + " bytes");
        }
        if (bytesPerPosition < 0) {
            throw new IllegalArgumentException("KV-cache bytes per position must be >= 0, got " + bytesPerPosition);
        }
    }

    /** What {@code positions} positions of one request reserve; saturates at {@link Long#MAX_VALUE}, never wraps. */
    public long reservation(long positions) {
        if (bytesPerPosition == 0 || positions <= 0) {
            return 0;
        }
        return positions > Long.MAX_VALUE / bytesPerPosition ? Long.MAX_VALUE : positions * bytesPerPosition;
    }

    /** What {@code request} reserves while it runs: its prompt plus its maximum of new tokens, in positions. */
    public long reservation(PipelineRequest request) {
        return reservation(request.kvPositions());
    }

    /** The most positions the budget holds at once over every request ({@link Long#MAX_VALUE} when a position costs nothing). */
    public long positions() {
        return bytesPerPosition == 0 ? Long.MAX_VALUE : bytes / bytesPerPosition;
    }

    /** Whether one request of {@code positions} positions fits the budget on its own; one that does not can never run. */
    public boolean fits(long positions) {
        return reservation(positions) <= bytes;
    }
}
