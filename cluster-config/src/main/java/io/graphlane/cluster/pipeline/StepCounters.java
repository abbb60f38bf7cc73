package io.graphlane.cluster.pipeline;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What a node's stage host has run: steps, the segments (request rows) they carried, and the most segments one step
 * carried; how much the serving node's engine batched across requests. Readable from any thread.
 */
public final class StepCounters {
    private final AtomicLong steps = new AtomicLong();
    private final AtomicLong segments = new AtomicLong();
    private final AtomicLong widest = new AtomicLong();

    void stepRan(int segmentCount) {
        steps.incrementAndGet();
        segments.addAndGet(segmentCount);
        widest.accumulateAndGet(segmentCount, Math::max);
    }

    /** Steps run. */
    public long steps() {
        return steps.get();
    }

    /** Segments run over all steps: one per request per step. */
    public long segments() {
        return segments.get();
    }

    /** The most segments one step carried. */
    public long widestStep() {
        return widest.get();
    }
}
