package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/** The failure reported to a request's listener when it was cancelled. */
public final class RequestCancelledException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public RequestCancelledException(long requestId) {
        super("request " + requestId + " was cancelled");
    }
}
