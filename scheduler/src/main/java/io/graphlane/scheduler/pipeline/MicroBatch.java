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

    /** One request's part of a step; {@code sampling} is the request's sampling state (null for a program that does not sample from logits). */
    public record Entry(long requestId, int[] tokens, int startPosition, TokenSampler sampling) {
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
