package io.graphlane.core;

/**
 * Base of every error graphlane reports to its users. Messages name the thing at
 * fault (file, tensor, lane, rank, option), the expected and the found value, and
 * what to do; callers may show {@link #getMessage()} without a stack trace.
 */
public class GraphlaneException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public GraphlaneException(String message) {
        super(message);
    }

    public GraphlaneException(String message, Throwable cause) {
        super(message, cause);
    }
}
