package io.graphlane.actors.lane;

/**
 * How much work one lane holds, published by its {@link LaneActor} as it changes so that a reader
 * on any thread (a metrics scrape) sees it without asking the actor. Only the lane actor writes;
 * the two counts are read separately, so a reader may see one of them a message newer than the other.
 */
public final class LaneLoad {
    private volatile int queued;
    private volatile int inFlight;

    /** Accepted submissions not yet handed to the executor (waiting for a producer or an in-flight slot). */
    public int queued() {
        return queued;
    }

    /** Submissions handed to the executor whose completion has not been observed yet. */
    public int inFlight() {
        return inFlight;
    }

    /** Called by the lane actor only. */
    void publish(int queuedNow, int inFlightNow) {
        queued = queuedNow;
        inFlight = inFlightNow;
    }
}
