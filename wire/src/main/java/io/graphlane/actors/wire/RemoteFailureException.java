package io.graphlane.actors.wire;

import io.graphlane.core.GraphlaneException;

/**
 * A failure that happened on another node, as it arrives over the wire: the original exception's class name and
 * message (its stack trace stays on the node where it happened).
 */
public final class RemoteFailureException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final String originalClass;
    private final String originalMessage;

    /** The failure {@code originalClass} with {@code originalMessage} (may be null) from another node. */
    public RemoteFailureException(String originalClass, String originalMessage) {
        super(originalClass + (originalMessage == null ? "" : ": " + originalMessage));
        this.originalClass = originalClass;
        this.originalMessage = originalMessage;
    }

    /** The fully qualified class name of the exception on the node where it happened. */
    public String originalClass() {
        return originalClass;
    }

    /** The exception's message on the node where it happened, or null. */
    public String originalMessage() {
        return originalMessage;
    }
}
