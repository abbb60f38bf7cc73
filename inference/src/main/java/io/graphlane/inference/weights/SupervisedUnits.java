package io.graphlane.inference.weights;

import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.UnitFailure;
import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.core.GraphlaneException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands one atomic unit of weight requests to a {@link MaterializationSupervisor} and waits for its one
 * answer, for the loaders that bind weights through it (whole stages, {@link SupervisedWeightsLoader}; and
 * tensor-parallel shards). The supervisor owns every lease of the unit from then on and releases each after
 * its materialization's exact completion; the parameters are closed here exactly once when the unit fails,
 * or, if the caller stopped waiting, when the late answer comes. A bound unit's parameters are held here
 * under the weights made over them ({@link #hold}) until {@link #release} or {@link #close} closes them, once.
 *
 * @param <P> the backend's parameter slot
 * @param <T> the backend tensor
 */
public final class SupervisedUnits<P, T> {
    private static final Logger LOG = LoggerFactory.getLogger(SupervisedUnits.class);
    /** How long after the caller stopped waiting a unit's answer is still awaited, so that late weights get closed. */
    private static final Duration LATE_ANSWER_GRACE = Duration.ofDays(1);

    private final ActorRef<MaterializationSupervisor.Command<P>> supervisor;
    private final Scheduler scheduler;
    private final Duration timeout;
    private final WeightSlots<P, T> slots;
    /** The parameters bound for each loaded unit's weights (a stage's, a shard's), by identity, until released. */
    private final Map<Object, List<P>> held = new IdentityHashMap<>();
    private boolean closed;

    /**
     * Units for {@code supervisor}, each awaited at most {@code timeout} ({@code scheduler} times the wait), their
     * parameters closed through {@code slots}.
     */
    public SupervisedUnits(ActorRef<MaterializationSupervisor.Command<P>> supervisor, Scheduler scheduler, Duration timeout,
                           WeightSlots<P, T> slots) {
        this.supervisor = Objects.requireNonNull(supervisor, "supervisor");
        this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.slots = Objects.requireNonNull(slots, "slots");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the stage load timeout must be positive, got " + timeout);
        }
    }

    /** The slots the units bind. */
    public WeightSlots<P, T> slots() {
        return slots;
    }

    /**
     * Materializes {@code requests} (bound to {@code parameters}) as the unit {@code unit}, of {@code what} (for errors);
     * returns once every parameter is bound.
     *
     * @throws GraphlaneException naming {@code what} and every tensor at fault when the unit failed (nothing bound, the
     *         parameters closed), or when no answer came within the timeout
     */
    public void bind(String unit, String what, List<WeightRequest<P>> requests, List<P> parameters) {
        CompletableFuture<UnitReply> reply = org.apache.pekko.actor.typed.javadsl.AskPattern
                .<MaterializationSupervisor.Command<P>, UnitReply>ask(supervisor,
                        replyTo -> new MaterializationSupervisor.MaterializeUnit<>(unit, requests, replyTo),
                        timeout.plus(LATE_ANSWER_GRACE), scheduler).toCompletableFuture();
        UnitReply answer;
        try {
            answer = reply.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply.whenComplete((late, error) -> closeAll(parameters));
            throw new GraphlaneException("interrupted while " + what + " was loading; its weights are closed when the supervisor answers", e);
        } catch (TimeoutException e) {
            reply.whenComplete((late, error) -> closeAll(parameters));
            throw new GraphlaneException(what + " was not loaded within " + timeout
                    + "; the supervisor keeps its leases until their materializations complete, and its weights are closed then", e);
        } catch (ExecutionException e) {
            closeAll(parameters);
            throw new GraphlaneException(what + ": the materialization supervisor did not answer: " + e.getCause(), e.getCause());
        }
        if (answer instanceof UnitReply.Failed failed) {
            GraphlaneException error = new GraphlaneException(what + " was not loaded (nothing of it is bound): "
                    + failed.failures().size() + " problem(s): "
                    + String.join("; ", failed.failures().stream().map(UnitFailure::toString).toList()));
            for (UnitFailure f : failed.failures()) {
                error.addSuppressed(f.cause());
            }
            throw error;
        }
    }

    /**
     * Refuses a load once {@link #close} ran.
     *
     * @throws IllegalStateException naming {@code what}
     */
    public synchronized void requireOpen(String what) {
        if (closed) {
            throw new IllegalStateException("this loader was closed; " + what + " cannot be loaded");
        }
    }

    /**
     * Holds {@code parameters}, bound for {@code weights}, until {@link #release}{@code (weights)} or {@link #close}.
     *
     * @throws IllegalStateException naming {@code what} if {@link #close} ran meanwhile (the caller closes them)
     */
    public synchronized void hold(Object weights, List<P> parameters, String what) {
        if (closed) {
            throw new IllegalStateException("this loader was closed while " + what + " loaded");
        }
        held.put(weights, parameters);
    }

    /** Closes the parameters held for {@code weights} exactly once; false if none are held (never held, or released already). */
    public boolean release(Object weights) {
        List<P> parameters;
        synchronized (this) {
            parameters = held.remove(weights);
        }
        if (parameters == null) {
            return false;
        }
        closeAll(parameters);
        return true;
    }

    /** The parameters held for {@code weights}, or null if none are. */
    public synchronized List<P> held(Object weights) {
        List<P> parameters = held.get(weights);
        return parameters == null ? null : List.copyOf(parameters);
    }

    /** How many loaded units' parameters are held. */
    public synchronized int heldCount() {
        return held.size();
    }

    /** Refuses further loads and closes the parameters of every unit still held, each exactly once; idempotent. */
    public void close() {
        List<List<P>> remaining;
        synchronized (this) {
            closed = true;
            remaining = new ArrayList<>(held.values());
            held.clear();
        }
        remaining.forEach(this::closeAll);
    }

    /** Closes every one of {@code parameters} once, logging (not throwing) a failed close. */
    public void closeAll(List<P> parameters) {
        for (P p : parameters) {
            try {
                slots.close(p);
            } catch (RuntimeException e) {
                LOG.error("closing the weight of parameter {} failed", p, e);
            }
        }
    }
}
