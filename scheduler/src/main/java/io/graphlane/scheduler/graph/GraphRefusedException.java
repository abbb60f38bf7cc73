package io.graphlane.scheduler.graph;

import io.graphlane.core.GraphlaneException;

/** A graph run refused before anything was sent to a lane: the message names the limit, lane or id at fault. */
public final class GraphRefusedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public GraphRefusedException(String message) {
        super(message);
    }

    public GraphRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
