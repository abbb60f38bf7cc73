package io.graphlane.actors.wire;

import io.graphlane.core.GraphlaneException;

/** A message could not be framed, or a frame was refused: the message names the class or frame, expected and found. */
public final class WireFormatException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** An error whose message names the class or frame, the expected and the found value. */
    public WireFormatException(String message, Throwable cause) {
        super(message, cause);
    }

    /** An error whose message names the class or frame, the expected and the found value. */
    public WireFormatException(String message) {
        super(message);
    }
}
