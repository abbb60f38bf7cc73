package io.graphlane.backend.cpu.param;

import io.graphlane.core.GraphlaneException;

/** A weight could not be materialized; the message names the weight, the tensor and what was expected and found. */
public final class MaterializationException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public MaterializationException(String message) {
        super(message);
    }

    public MaterializationException(String message, Throwable cause) {
        super(message, cause);
    }
}
