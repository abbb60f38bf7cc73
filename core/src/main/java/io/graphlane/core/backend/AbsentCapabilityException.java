package io.graphlane.core.backend;

import io.graphlane.core.GraphlaneException;

/** The backend does not implement the requested operation at all (rather than failing at it). */
public final class AbsentCapabilityException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public AbsentCapabilityException(String backend, String capability) {
        super("absent capability: backend " + backend + " does not support " + capability);
    }
}
