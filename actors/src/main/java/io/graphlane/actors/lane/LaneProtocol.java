package io.graphlane.actors.lane;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Everything a {@link LaneActor} can be told ({@link Command}) and everything it answers
 * ({@link LaneReply}, {@link Resolved}). Handles are named by the caller before submission, so a
 * whole graph can be sent to every lane at once without waiting for any reply.
 */
public final class LaneProtocol {
    /** The deadline of work that has none. */
    public static final long NO_DEADLINE = Long.MAX_VALUE;
    /** The scope of work that belongs to no scope (cancel and forget never match it). */
    public static final long NO_SCOPE = 0L;

    private LaneProtocol() {
    }

    /** The messages a lane actor accepts. */
    public sealed interface Command permits Submit, SubmitBatch, Subscribe, Resolved, Cancel, ForgetScope, Stop, GetStatus,
            LaneActor.Internal {
    }

    /**
     * Submit {@code work} on this lane as {@code handle}, after the work of every handle in {@code after}
     * (on this lane or another), keeping every {@code retain} value until the exact completion.
     * Ownership of the retain values passes to the lane with this message: the lane releases each
     * exactly once (closing it if it is {@link AutoCloseable}), after the exact completion if the work
     * was submitted, at once if it never was (rejected, poisoned, cancelled while queued, past its
     * deadline). {@code replyTo} gets {@link Submitted} or {@link Rejected}, then {@link Finished}.
     *
     * @param scope the scope this work belongs to: the id {@link Cancel} and {@link ForgetScope} match, or
     *     {@link #NO_SCOPE}. A scope is whatever its submitter cancels and forgets as one: a graph run for the
     *     graph runner, one micro-batch (its micro-batch id) for the pipeline engine, one request for a shard host
     * @param deadlineNanos a {@link System#nanoTime()} value checked just before the backend submission;
     *     {@link #NO_DEADLINE} for none
     * @param expectedConsumers how many submissions (on any lane) will name this handle in their
     *     {@code after}: the lane keeps the handle's resolution after completion until that many have
     *     asked for it, or until its scope is forgotten or cancelled. With 0 the lane forgets the
     *     handle as soon as its work has ended.
     */
    public record Submit<W>(CompletionHandle handle, W work, List<CompletionHandle> after, List<Object> retain, long scope,
                            long deadlineNanos, int expectedConsumers, ActorRef<LaneReply> replyTo) implements Command {
        public Submit {
            // Constant messages: this runs for every submission, so no string is built unless a check fails.
            Objects.requireNonNull(handle, "handle");
            Objects.requireNonNull(work, "work");
            after = List.copyOf(after);
            retain = List.copyOf(retain);
            Objects.requireNonNull(replyTo, "replyTo");
            if (expectedConsumers < 0) {
                throw new IllegalArgumentException("expectedConsumers of " + handle + " must be >= 0, got " + expectedConsumers);
            }
        }

        /** Work with no preconditions, retained values, request or deadline. */
        public static <W> Submit<W> of(CompletionHandle handle, W work, ActorRef<LaneReply> replyTo) {
            return new Submit<>(handle, work, List.of(), List.of(), NO_SCOPE, NO_DEADLINE, 0, replyTo);
        }

        /** This submission ordered after {@code producers}. */
        public Submit<W> after(CompletionHandle... producers) {
            return new Submit<>(handle, work, List.of(producers), retain, scope, deadlineNanos, expectedConsumers, replyTo);
        }

        /** This submission retaining {@code values} until its exact completion. */
        public Submit<W> retaining(Object... values) {
            return new Submit<>(handle, work, after, List.of(values), scope, deadlineNanos, expectedConsumers, replyTo);
        }

        /** This submission as part of scope {@code id}. */
        public Submit<W> inScope(long id) {
            return new Submit<>(handle, work, after, retain, id, deadlineNanos, expectedConsumers, replyTo);
        }

        /** This submission with {@code count} expected consumers (see the record's documentation). */
        public Submit<W> consumedBy(int count) {
            return new Submit<>(handle, work, after, retain, scope, deadlineNanos, count, replyTo);
        }

        /** This submission refused once {@link System#nanoTime()} passes {@code nanos}. */
        public Submit<W> deadline(long nanos) {
            return new Submit<>(handle, work, after, retain, scope, nanos, expectedConsumers, replyTo);
        }
    }

    /** Several submissions admitted all together or refused all together when the lane lacks room for all of them. */
    public record SubmitBatch<W>(List<Submit<W>> submits) implements Command {
        public SubmitBatch {
            submits = List.copyOf(submits);
        }
    }

    /**
     * Ask to be told {@link Resolved} for {@code handle} of this lane: at once if its work has been
     * submitted or has ended, otherwise as soon as that happens. Each subscription is counted against
     * the handle's {@code expectedConsumers}.
     */
    public record Subscribe(CompletionHandle handle, long scope, ActorRef<Resolved> subscriber) implements Command {
        public Subscribe {
            Objects.requireNonNull(handle, "handle");
            Objects.requireNonNull(subscriber, "subscriber");
        }
    }

    /** {@code handle} is resolved: its work was submitted (a completion to order after) or ended without one. */
    public record Resolved(CompletionHandle handle, Resolution resolution) implements Command {
        public Resolved {
            Objects.requireNonNull(handle, "handle");
            Objects.requireNonNull(resolution, "resolution");
        }
    }

    /** How a handle was resolved. */
    public sealed interface Resolution permits OnDevice, Ended {
        /** The label naming the resolved work in errors: the backend completion's label once submitted, else the handle. */
        String label();
    }

    /**
     * The work was submitted on {@code device}; {@code completion} is its exact completion, possibly
     * still running. Only meaningful inside one JVM; across nodes a lane sends {@link Ended}.
     */
    public record OnDevice(SubmissionBackend<?, ?, ?> device, Completion completion) implements Resolution {
        @Override
        public String label() {
            return completion.label();
        }
    }

    /** The work has ended with {@code outcome} (or never ran: then the outcome is the failure that stopped it). */
    public record Ended(Outcome outcome, String label) implements Resolution {
    }

    /**
     * Drop the queued work of scope {@code scope} (its handles end as cancelled) and abandon its
     * submitted work: kept until its exact completion, its outcome never published. Later submissions
     * in the scope are refused.
     */
    public record Cancel(long scope) implements Command {
    }

    /** Forget the resolutions of scope {@code scope} that the lane still keeps for consumers that never came. */
    public record ForgetScope(long scope) implements Command {
    }

    /**
     * Stop accepting work; queued work ends failed with {@link LaneStoppedException}; submitted work
     * finishes; then the executor is shut down, {@code replyTo} is told {@link Stopped} and the actor stops.
     */
    public record Stop(ActorRef<Stopped> replyTo) implements Command {
    }

    /** Ask for a {@link LaneStatus} snapshot. */
    public record GetStatus(ActorRef<LaneStatus> replyTo) implements Command {
    }

    /** What a lane holds right now: every count here is bounded by the lane's settings. */
    public record LaneStatus(LaneId lane, int inFlight, int queued, int knownHandles, int pendingSubscriptions,
                             int waitingOnOtherLanes, boolean stopping) {
    }

    /** What a lane tells the {@code replyTo} of a submission. */
    public sealed interface LaneReply permits Submitted, Rejected, Finished, Batch {
        /** Calls {@code action} with this reply, or with each reply of a batch in order. */
        default void forEach(Consumer<LaneReply> action) {
            if (this instanceof Batch batch) {
                batch.replies().forEach(action);
            } else {
                action.accept(this);
            }
        }
    }

    /** The work of {@code handle} was handed to the backend; {@code label} names its completion. */
    public record Submitted(CompletionHandle handle, String label) implements LaneReply {
    }

    /** The submission was refused at once; nothing of it was queued and its retained values were released. */
    public record Rejected(CompletionHandle handle, Rejection reason) implements LaneReply {
        /** The refusal as an exception a caller can throw or fail with. */
        public LaneRejectedException toException() {
            return new LaneRejectedException(handle, reason);
        }
    }

    /**
     * The work of {@code handle} has ended. {@code outcome} is its own outcome, or, if it never ran, the
     * failure that stopped it ({@link io.graphlane.core.completion.PoisonedPreconditionException},
     * {@link WorkCancelledException}, {@link DeadlineExceededException}, {@link LaneStoppedException}). Work
     * abandoned by a cancel reports {@link WorkCancelledException} with {@code abandoned() == true}, never
     * its own outcome. Sent only after the exact completion of submitted work.
     */
    public record Finished(CompletionHandle handle, String label, Outcome outcome) implements LaneReply {
    }

    /** Several replies to the same receiver, produced by one step of the lane, in order. */
    public record Batch(List<LaneReply> replies) implements LaneReply {
    }

    /** The lane has shut its executor down and stopped. */
    public record Stopped(LaneId lane) {
    }

    /** Why a submission was refused. */
    public sealed interface Rejection permits LaneOverloaded, LaneStopped, DuplicateHandle, WrongLane, SelfDependency,
            ScopeCancelled {
        /** A sentence naming the lane, the handle or scope, the limit and the value found. */
        String message();
    }

    /** Admitting {@code requested} more would exceed the lane's bounds. */
    public record LaneOverloaded(LaneId lane, int requested, int inFlight, int queued, int maxInFlight, int maxQueued)
            implements Rejection {
        @Override
        public String message() {
            return "lane " + lane + " is overloaded: " + requested + " more submission(s) do not fit (in flight " + inFlight
                    + " of max-in-flight " + maxInFlight + ", queued " + queued + " of max-queued " + maxQueued
                    + "); retry after some work finishes or raise graphlane.lane.max-queued";
        }
    }

    /** The lane has been told to stop. */
    public record LaneStopped(LaneId lane) implements Rejection {
        @Override
        public String message() {
            return "lane " + lane + " is stopping and accepts no more work";
        }
    }

    /** The lane already knows a submission with this handle. */
    public record DuplicateHandle(CompletionHandle handle) implements Rejection {
        @Override
        public String message() {
            return "duplicate handle " + handle + ": lane " + handle.lane() + " already holds a submission with it";
        }
    }

    /** The handle names another lane than the one it was sent to. */
    public record WrongLane(CompletionHandle handle, LaneId lane) implements Rejection {
        @Override
        public String message() {
            return "handle " + handle + " belongs to lane " + handle.lane() + " but was submitted to lane " + lane;
        }
    }

    /** The submission names its own handle among the handles it must follow: it could never start. */
    public record SelfDependency(CompletionHandle handle) implements Rejection {
        @Override
        public String message() {
            return "submission " + handle + " is ordered after itself; remove its own handle from 'after'";
        }
    }

    /** The submission's scope was cancelled before it arrived. */
    public record ScopeCancelled(long scope) implements Rejection {
        @Override
        public String message() {
            return "scope " + scope + " was cancelled; its later submissions are refused";
        }
    }
}
