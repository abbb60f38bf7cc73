package io.graphlane.inference.api;

import io.graphlane.core.GraphlaneException;

/**
 * A generation that was not admitted, or that could not go on; {@link #reason()} tells a server which status to answer,
 * {@link #field()} which request field an INVALID refusal is about. The message is meant for the client: it names the
 * field and the numbers and what to do, never a setting or a class of the server.
 */
public final class GenerationRefusedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** Why a request was refused. */
    public enum Reason {
        /** The request itself is wrong (too long, a token out of the vocabulary): a 400. */
        INVALID,
        /** Admission limits are reached: try again later, a 429. */
        OVERLOADED,
        /** A stage is not hosted right now (lost node, a stage re-forming, shutting down): a 503. */
        UNAVAILABLE
    }

    private final Reason reason;
    private final String field;

    public GenerationRefusedException(Reason reason, String message) {
        this(reason, null, message);
    }

    /** A refusal about request field {@code field} (null for none). */
    public GenerationRefusedException(Reason reason, String field, String message) {
        super(message);
        this.reason = reason;
        this.field = field;
    }

    public Reason reason() {
        return reason;
    }

    /** The request field the refusal is about, if one is ({@code prompt}, {@code max_tokens}). */
    public java.util.Optional<String> field() {
        return java.util.Optional.ofNullable(field);
    }
}
