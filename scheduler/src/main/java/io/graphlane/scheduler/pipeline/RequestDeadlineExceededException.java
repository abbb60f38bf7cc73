package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/** A request whose deadline passed before its next step could be submitted. */
public final class RequestDeadlineExceededException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public RequestDeadlineExceededException(long requestId, int generated) {
        super("request " + requestId + " passed its deadline after " + generated + " generated token(s); no further step was submitted");
    }
}
