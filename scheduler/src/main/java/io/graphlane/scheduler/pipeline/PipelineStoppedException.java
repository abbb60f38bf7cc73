package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/** The failure of the requests an engine held when it stopped without being asked to (a fault in the engine itself). */
public final class PipelineStoppedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public PipelineStoppedException(String message) {
        super(message);
    }
}
