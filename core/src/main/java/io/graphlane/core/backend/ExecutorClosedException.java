package io.graphlane.core.backend;

import io.graphlane.core.GraphlaneException;

/** A call on an executor (or a backend) that has been shut down; nothing was queued. */
public final class ExecutorClosedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public ExecutorClosedException(String executor, String operation) {
        super(operation + " refused: executor " + executor + " is shut down; submit to a running lane or start a new backend");
    }
}
