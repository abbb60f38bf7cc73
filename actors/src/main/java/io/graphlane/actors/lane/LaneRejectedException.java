package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.CompletionHandle;

/** A submission a lane refused at once; {@link #reason()} says which bound or rule refused it. */
public final class LaneRejectedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final transient CompletionHandle handle;
    private final transient LaneProtocol.Rejection reason;

    public LaneRejectedException(CompletionHandle handle, LaneProtocol.Rejection reason) {
        super("submission " + handle + " refused: " + reason.message());
        this.handle = handle;
        this.reason = reason;
    }

    /** The refused submission's handle. */
    public CompletionHandle handle() {
        return handle;
    }

    /** Why it was refused. */
    public LaneProtocol.Rejection reason() {
        return reason;
    }
}
