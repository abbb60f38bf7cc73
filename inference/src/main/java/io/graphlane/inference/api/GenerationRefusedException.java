package io.graphlane.inference.api;

import io.graphlane.core.GraphlaneException;

/** A generation that was not admitted; {@link #reason()} tells a server which status to answer. */
public final class GenerationRefusedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** Why a request was refused. */
    public enum Reason {
        /** The request itself is wrong (too long, a token out of the vocabulary): a 400. */
        INVALID,
        /** Admission limits are reached: try again later, a 429. */
        OVERLOADED,
        /** A stage is not hosted right now (lost node, shutting down): a 503. */
        UNAVAILABLE
    }

    private final Reason reason;

    public GenerationRefusedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
