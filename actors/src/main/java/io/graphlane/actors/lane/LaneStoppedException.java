package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.LaneId;

/** Work or a subscription that a lane could not serve because the lane stopped (or its actor is gone). */
public final class LaneStoppedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public LaneStoppedException(LaneId lane, String what) {
        super(what + ": lane " + lane + " stopped before it could be served");
    }
}
