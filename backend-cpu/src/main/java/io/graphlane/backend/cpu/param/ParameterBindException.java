package io.graphlane.backend.cpu.param;

import io.graphlane.core.GraphlaneException;

/** A weight does not fit the parameter it was meant for; the message names the parameter, each field, expected and found. */
public final class ParameterBindException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public ParameterBindException(String message) {
        super(message);
    }
}
