package io.graphlane.scheduler.pipeline;

/**
 * The engine's request counts, published by the {@link PipelineEngine} after every message it handles
 * so that a reader on any thread (a metrics scrape) sees them without asking the actor. Only the engine
 * writes; each value is read on its own, so two of them may be a message apart.
 */
public final class PipelineLoad {
    private volatile int running;
    private volatile int waiting;
    private volatile long steps;
    private volatile long tokens;

    /** Requests holding an active slot: their steps are being formed or run. */
    public int running() {
        return running;
    }

    /** Admitted requests waiting for an active slot. */
    public int waiting() {
        return waiting;
    }

    /** Steps (micro-batches) submitted so far. */
    public long steps() {
        return steps;
    }

    /** Tokens sampled so far. */
    public long tokens() {
        return tokens;
    }

    /** Called by the engine only. */
    void publish(int runningNow, int waitingNow, long stepsNow, long tokensNow) {
        running = runningNow;
        waiting = waitingNow;
        steps = stepsNow;
        tokens = tokensNow;
    }
}
