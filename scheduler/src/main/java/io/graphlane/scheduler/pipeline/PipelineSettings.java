package io.graphlane.scheduler.pipeline;

/**
 * The bounds of one pipeline engine; every count is positive.
 *
 * @param maxActiveRequests requests generating at once (each holds KV caches on every stage)
 * @param maxQueuedRequests admitted requests waiting for an active slot; beyond both, submission is refused
 * @param maxBatchSize most requests in one micro-batch step
 * @param maxInFlightBatches micro-batches moving through the stages at once; at least the number of
 *     stages to keep every stage busy, and at most what a stage lane accepts (its max-in-flight plus max-queued)
 */
public record PipelineSettings(int maxActiveRequests, int maxQueuedRequests, int maxBatchSize, int maxInFlightBatches) {
    public PipelineSettings {
        positive("max-active-requests", maxActiveRequests);
        positive("max-queued-requests", maxQueuedRequests);
        positive("max-batch-size", maxBatchSize);
        positive("max-in-flight-microbatches", maxInFlightBatches);
    }

    /**
     * Defaults for {@code stages} stages: 64 active, 256 queued, batches of up to 8, as many batches in
     * flight as stages (each stage busy with one while the active requests are spread over the fewest steps).
     */
    public static PipelineSettings defaults(int stages) {
        return new PipelineSettings(64, 256, 8, Math.max(1, stages));
    }

    public PipelineSettings withMaxBatchSize(int size) {
        return new PipelineSettings(maxActiveRequests, maxQueuedRequests, size, maxInFlightBatches);
    }

    public PipelineSettings withMaxInFlightBatches(int batches) {
        return new PipelineSettings(maxActiveRequests, maxQueuedRequests, maxBatchSize, batches);
    }

    public PipelineSettings withRequestLimits(int active, int queued) {
        return new PipelineSettings(active, queued, maxBatchSize, maxInFlightBatches);
    }

    private static void positive(String key, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException("graphlane.pipeline." + key + " must be > 0, got " + value);
        }
    }
}
