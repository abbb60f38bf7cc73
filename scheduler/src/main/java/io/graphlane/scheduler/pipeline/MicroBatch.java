package io.graphlane.scheduler.pipeline;

import java.util.List;

/**
 * The requests that travel through the stages together in one step. Each entry feeds
 * {@code tokens} at positions {@code startPosition, startPosition + 1, …}: the whole prompt in
 * a request's first step (prefill), the last sampled token afterwards (decode).
 */
public record MicroBatch(long id, List<Entry> entries) {
    public MicroBatch {
        entries = List.copyOf(entries);
        if (entries.isEmpty()) {
            throw new IllegalArgumentException("a micro-batch needs at least one entry");
        }
    }

    /**
     * One request's part of a step; {@code sampling} is the request's sampling state (null for a program that does not
     * sample from logits); {@code reservedPositions} the most positions the request's KV caches may reach, as admission
     * reserved them (its prompt plus its maximum of new tokens), so a stage allocates no more.
     */
    public record Entry(long requestId, int[] tokens, int startPosition, TokenSampler sampling, int reservedPositions) {
        public Entry {
            if (reservedPositions < 1) {
                throw new IllegalArgumentException("request " + requestId + ": reserved positions must be >= 1, got " + reservedPositions);
            }
        }

        /** An entry whose request reserved no bound of positions (a stage grows its caches up to the model's maximum). */
        public Entry(long requestId, int[] tokens, int startPosition, TokenSampler sampling) {
            this(requestId, tokens, startPosition, sampling, Integer.MAX_VALUE);
        }
    }

    /** The total number of positions this step computes. */
    public int positionCount() {
        int n = 0;
        for (Entry e : entries) {
            n += e.tokens().length;
        }
        return n;
    }
}
