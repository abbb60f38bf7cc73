package io.graphlane.actors.lane;

import io.graphlane.core.GraphlaneException;

/** Work refused before submission because its request's deadline had passed; nothing of it ran. */
public final class DeadlineExceededException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public DeadlineExceededException(String work, long lateByNanos) {
        super("work " + work + " was not submitted: its deadline passed " + (lateByNanos / 1000) + " us before submission");
    }
}
