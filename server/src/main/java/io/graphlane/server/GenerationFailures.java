package io.graphlane.server;

import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.wire.RemoteFailureException;
import io.graphlane.backend.cpu.collective.MemberLostException;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.scheduler.pipeline.PipelineStoppedException;
import io.graphlane.scheduler.pipeline.RequestCancelledException;
import io.graphlane.scheduler.pipeline.RequestDeadlineExceededException;
import java.util.concurrent.TimeoutException;

/**
 * What a generation's failure means for its client, found in the failure however it is wrapped (completion and
 * execution exceptions, a poisoned step's root cause, a stage's failure on another node): the HTTP status and the
 * metrics outcome both follow it. The client's message is written here or taken from a {@link GenerationRefusedException},
 * whose messages are meant for clients; no other failure's message reaches a client, as it may name the server's
 * internals.
 */
final class GenerationFailures {
    /** How deep a cause chain is searched. */
    private static final int MAX_DEPTH = 32;

    /** What a failure means. */
    enum Kind {
        /** The request itself is wrong: 400. */
        INVALID,
        /** The engine is full: 429. */
        OVERLOADED,
        /** The model cannot serve now (a stage lost its host or a shard, the engine stopped, shutting down): 503. */
        UNAVAILABLE,
        /** The generation ran past its deadline: 504. */
        DEADLINE_EXCEEDED,
        /** The generation was cancelled (the client went away, a sibling choice failed): 503. */
        CANCELLED,
        /** Anything else: 500, with the cause in the server log. */
        INTERNAL
    }

    /** The kind of {@code failure}, and the client's message for it (null for {@link Kind#INTERNAL}). */
    record Meaning(Kind kind, String message, String field) {
    }

    private GenerationFailures() {
    }

    /** What {@code failure} means: the first cause along its chain, outermost first, that says. */
    static Meaning of(Throwable failure) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < MAX_DEPTH; depth++, t = t.getCause()) {
            Meaning m = own(t);
            if (m != null) {
                return m;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return new Meaning(Kind.INTERNAL, null, null);
    }

    private static Meaning own(Throwable t) {
        if (t instanceof GenerationRefusedException refused) {
            Kind kind = switch (refused.reason()) {
                case INVALID -> Kind.INVALID;
                case OVERLOADED -> Kind.OVERLOADED;
                case UNAVAILABLE -> Kind.UNAVAILABLE;
            };
            return new Meaning(kind, refused.getMessage(), refused.field().orElse(kind == Kind.INVALID ? "prompt" : null));
        }
        if (t instanceof RequestDeadlineExceededException || t instanceof TimeoutException) {
            return new Meaning(Kind.DEADLINE_EXCEEDED,
                    "the completion did not finish within the server's request timeout; use \"stream\": true for long ones", null);
        }
        if (t instanceof RequestCancelledException) {
            return new Meaning(Kind.CANCELLED, "the generation was cancelled", null);
        }
        if (memberLost(t)) {
            return new Meaning(Kind.UNAVAILABLE, "a node serving part of the model left while this request was generating; the"
                    + " model is unavailable until it is restored; retry in a few seconds", null);
        }
        if (t instanceof PipelineStoppedException || t instanceof LaneStoppedException) {
            return new Meaning(Kind.UNAVAILABLE, "the model stopped serving while this request was generating; retry on another"
                    + " instance", null);
        }
        return null;
    }

    /** A collective's member left (a shard's node died), here or, reported across nodes, on the node that ran the stage. */
    private static boolean memberLost(Throwable t) {
        return t instanceof MemberLostException
                || t instanceof RemoteFailureException remote && MemberLostException.class.getName().equals(remote.originalClass());
    }
}
