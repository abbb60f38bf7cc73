package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/**
 * A request refused at admission because it cannot run now (every active slot is taken, or its KV-cache reservation
 * does not fit what the running requests leave) and the queue of waiting requests is full. Its message says what is
 * full in numbers a caller can act on (retry later), and names no setting.
 */
public final class PipelineOverloadedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** Refused while {@code active} requests run, {@code queued} wait (the queue's bound) and {@code reservedBytes} of the KV budget are held. */
    public PipelineOverloadedException(int active, int queued, long reservedBytes, KvBudget budget) {
        super("the server is at capacity: " + requests(active) + (active == 1 ? " is" : " are") + " generating"
                + memory(reservedBytes, budget) + " and " + queued + " more " + (queued == 1 ? "is" : "are")
                + " waiting, as many as it queues; retry in a moment");
    }

    private static String requests(int n) {
        return n + (n == 1 ? " request" : " requests");
    }

    private static String memory(long reservedBytes, KvBudget budget) {
        if (budget.bytesPerPosition() == 0 || budget.bytes() == Long.MAX_VALUE) {
            return "";
        }
        return " (holding " + reservedBytes / budget.bytesPerPosition() + " of the " + budget.positions()
                + " positions its KV-cache memory holds)";
    }
}
