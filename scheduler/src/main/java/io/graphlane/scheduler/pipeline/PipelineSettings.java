package io.graphlane.scheduler.pipeline;

/**
 * The bounds of one pipeline engine; every count and the budget are positive.
 *
 * @param maxActiveRequests requests generating at once (each holds KV caches on every stage)
 * @param maxQueuedRequests admitted requests waiting for an active slot or for KV-cache room; beyond both, submission
 *     is refused
 * @param maxBatchSize most requests in one micro-batch step
 * @param maxInFlightBatches micro-batches moving through the stages at once; at least the number of
 *     stages to keep every stage busy, and at most what a stage lane accepts (its max-in-flight plus max-queued)
 * @param kvBudgetBytes the KV-cache memory the running requests may reserve together, each its prompt plus its maximum
 *     of new tokens times what one position takes ({@link StageProgram#kvBytesPerPosition()}); {@link Long#MAX_VALUE}
 *     for no bound
 */
public record PipelineSettings(int maxActiveRequests, int maxQueuedRequests, int maxBatchSize, int maxInFlightBatches,
                               long kvBudgetBytes) {
    public PipelineSettings {
        positive("max-active-requests", maxActiveRequests);
        positive("max-queued-requests", maxQueuedRequests);
        positive("max-batch-size", maxBatchSize);
        positive("max-in-flight-microbatches", maxInFlightBatches);
        if (kvBudgetBytes <= 0) {
            throw new IllegalArgumentException("the KV-cache budget must be > 0 bytes, got " + kvBudgetBytes);
        }
    }

    /** Bounds without a KV-cache budget. */
    public PipelineSettings(int maxActiveRequests, int maxQueuedRequests, int maxBatchSize, int maxInFlightBatches) {
        this(maxActiveRequests, maxQueuedRequests, maxBatchSize, maxInFlightBatches, Long.MAX_VALUE);
    }

    /**
     * Defaults for {@code stages} stages: 64 active, 256 queued, batches of up to 8, as many batches in
     * flight as stages (each stage busy with one while the active requests are spread over the fewest steps), no
     * KV-cache budget (the embedded pipeline sets one from the memory its caches live in).
     */
    public static PipelineSettings defaults(int stages) {
        return new PipelineSettings(64, 256, 8, Math.max(1, stages));
    }

    public PipelineSettings withMaxBatchSize(int size) {
        return new PipelineSettings(maxActiveRequests, maxQueuedRequests, size, maxInFlightBatches, kvBudgetBytes);
    }

    public PipelineSettings withMaxInFlightBatches(int batches) {
        return new PipelineSettings(maxActiveRequests, maxQueuedRequests, maxBatchSize, batches, kvBudgetBytes);
    }

    public PipelineSettings withRequestLimits(int active, int queued) {
        return new PipelineSettings(active, queued, maxBatchSize, maxInFlightBatches, kvBudgetBytes);
    }

    /** These bounds with a KV-cache budget of {@code bytes}. */
    public PipelineSettings withKvBudget(long bytes) {
        return new PipelineSettings(maxActiveRequests, maxQueuedRequests, maxBatchSize, maxInFlightBatches, bytes);
    }

    /** Whether a KV-cache budget is set. */
    public boolean hasKvBudget() {
        return kvBudgetBytes != Long.MAX_VALUE;
    }

    private static void positive(String key, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(key + " must be > 0, got " + value);
        }
    }
}
