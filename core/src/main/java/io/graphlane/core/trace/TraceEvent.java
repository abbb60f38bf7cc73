package io.graphlane.core.trace;

import java.util.Objects;

/**
 * One thing a lane did, with {@link System#nanoTime()} timestamps of this JVM.
 *
 * @param kind what happened
 * @param lane the lane (track) it happened on
 * @param handle the completion handle of the work concerned, as text
 * @param related for {@link Kind#WAIT}: the producer's handle the work waited for; otherwise empty
 * @param startNanos when it began (for instants: when it happened)
 * @param endNanos when it ended; equal to {@code startNanos} for instants
 * @param ok for {@link Kind#WORK}: whether the work succeeded; otherwise true
 */
public record TraceEvent(Kind kind, String lane, String handle, String related, long startNanos, long endNanos, boolean ok) {

    /** The kinds of events a lane records. */
    public enum Kind {
        /** The lane handed the work to its backend executor (an instant). */
        SUBMIT,
        /** The work ran on the executor, from its start to its exact completion. */
        WORK,
        /** Accepted work waited in the lane for a producer on another lane to be resolved. */
        WAIT,
        /** Work ended without running (poisoned, cancelled, refused by a deadline): an instant. */
        DROP
    }

    public TraceEvent {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(lane, "lane");
        Objects.requireNonNull(handle, "handle");
        Objects.requireNonNull(related, "related");
        if (endNanos < startNanos) {
            throw new IllegalArgumentException("trace event " + kind + " of " + handle + " ends (" + endNanos
                    + ") before it starts (" + startNanos + ")");
        }
    }

    /** An instant event of {@code kind} at {@code atNanos}. */
    public static TraceEvent instant(Kind kind, String lane, String handle, long atNanos) {
        return new TraceEvent(kind, lane, handle, "", atNanos, atNanos, true);
    }

    /** The work of {@code handle} ran on {@code lane} from {@code startNanos} to {@code endNanos}. */
    public static TraceEvent work(String lane, String handle, long startNanos, long endNanos, boolean ok) {
        return new TraceEvent(Kind.WORK, lane, handle, "", startNanos, endNanos, ok);
    }

    /** Work {@code handle} on {@code lane} waited for {@code producer} from {@code fromNanos} to {@code toNanos}. */
    public static TraceEvent waited(String lane, String handle, String producer, long fromNanos, long toNanos) {
        return new TraceEvent(Kind.WAIT, lane, handle, producer, fromNanos, toNanos, true);
    }
}
