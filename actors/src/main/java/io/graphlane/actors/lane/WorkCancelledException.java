package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.CompletionHandle;

/**
 * Work of a cancelled scope (see {@link LaneProtocol.Submit#scope}): either dropped before submission ({@code abandoned() == false}) or
 * abandoned after it ({@code abandoned() == true}: it ran to its exact completion, which held its
 * retained values, and its own outcome is not published).
 */
public final class WorkCancelledException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final long scope;
    private final boolean abandoned;

    public WorkCancelledException(CompletionHandle handle, long scope, boolean abandoned) {
        super((abandoned ? "work " + handle + " was abandoned: its scope " + scope
                + " was cancelled after submission; it ran to its exact completion and its result is not published"
                : "work " + handle + " was dropped before submission: its scope " + scope + " was cancelled"));
        this.scope = scope;
        this.abandoned = abandoned;
    }

    /** The cancelled scope. */
    public long scope() {
        return scope;
    }

    /** True if the work had been submitted (and ran to its exact completion); false if it was dropped while queued. */
    public boolean abandoned() {
        return abandoned;
    }
}
