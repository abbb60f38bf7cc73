package io.graphlane.actors.residency;

import io.graphlane.core.GraphlaneException;

/** A residency request was refused; the message names the device, the unit, what was expected and what was found. */
public final class ResidencyException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public ResidencyException(String message) {
        super(message);
    }
}
