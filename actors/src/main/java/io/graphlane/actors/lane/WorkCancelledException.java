package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.CompletionHandle;

/**
 * Work of a cancelled request: either dropped before submission ({@code abandoned() == false}) or
 * abandoned after it ({@code abandoned() == true}: it ran to its exact completion, which held its
 * retained values, and its own outcome is not published).
 */
public final class WorkCancelledException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final long requestId;
    private final boolean abandoned;

    public WorkCancelledException(CompletionHandle handle, long requestId, boolean abandoned) {
        super((abandoned ? "work " + handle + " was abandoned: request " + requestId
                + " was cancelled after submission; it ran to its exact completion and its result is not published"
                : "work " + handle + " was dropped before submission: request " + requestId + " was cancelled"));
        this.requestId = requestId;
        this.abandoned = abandoned;
    }

    /** The cancelled request. */
    public long requestId() {
        return requestId;
    }

    /** True if the work had been submitted (and ran to its exact completion); false if it was dropped while queued. */
    public boolean abandoned() {
        return abandoned;
    }
}
