package io.graphlane.checkpoint;

import io.graphlane.core.GraphlaneException;

/**
 * A checkpoint that graphlane refuses, or a request on it that cannot be served. The message
 * names the file first, then the tensor or field, then the expected and the found value.
 */
public class CheckpointException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** An error whose message already names the file and the problem. */
    public CheckpointException(String message) {
        super(message);
    }

    /** An error whose message already names the file and the problem, keeping its cause for --debug. */
    public CheckpointException(String message, Throwable cause) {
        super(message, cause);
    }
}
