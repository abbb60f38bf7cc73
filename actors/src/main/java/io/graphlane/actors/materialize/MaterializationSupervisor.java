package io.graphlane.actors.materialize;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.param.Materialization;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.ChildFailed;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * Materializes atomic units of parameters: each unit's weights are realized on the loading
 * context, every lease is held until the exact completion of the materialization that reads it
 * (learned by message, never by waiting), then the whole unit is validated and bound completely or
 * not at all. A unit that fails anywhere binds nothing, releases each of its leases exactly once and
 * is answered with every cause.
 *
 * <p>Each unit runs in its own child ({@link UnitMaterializer}); the unit's {@link UnitLedger} is
 * owned here. If a child crashes, this supervisor takes the ledger back, releases what is not in
 * flight, waits (by message) for the exact completion of what is, releases that, and answers the
 * unit as failed: a crash neither leaks nor double-releases a lease. A unit not settled within the
 * unit timeout is answered as failed at once, with nothing bound; its worker stays to finish each
 * materialization still in flight when its exact completion ends (releasing the leases late, never
 * early) and then stops, and its slot goes to the next unit. Generic over the
 * {@link ParameterBackend}, so any backend reuses it.
 *
 * @param <X> the loading context (a loading lane)
 * @param <P> the parameter slot
 * @param <W> the weight
 * @param <M> the in-flight materialization
 */
public final class MaterializationSupervisor<X, P, W, M extends Materialization<W>>
        extends AbstractBehavior<MaterializationSupervisor.Command<P>> {

    /** What the supervisor is told. */
    public sealed interface Command<P> permits MaterializeUnit, Stop, UnitSettled, CleanupEnded { }

    /**
     * Materialize and bind {@code requests} as one atomic unit and answer {@code replyTo} once. From
     * receipt on, the supervisor owns every lease in the requests, also when it refuses the unit.
     */
    public record MaterializeUnit<P>(String unit, List<WeightRequest<P>> requests, ActorRef<UnitReply> replyTo)
            implements Command<P> {
        public MaterializeUnit {
            Objects.requireNonNull(unit, "unit");
            requests = List.copyOf(requests);
            Objects.requireNonNull(replyTo, "replyTo");
        }
    }

    /**
     * Stop: units still queued are refused, units in progress are answered as failed, and their leases
     * are released as their materializations complete (see {@link UnitReply.Failed}). Weights already
     * bound stay with their parameter slots.
     */
    public record Stop<P>() implements Command<P> { }

    /**
     * A unit's worker finished with {@code reply}; if {@code draining}, it timed out and still finishes the
     * materializations in flight (it stops itself once they have).
     */
    record UnitSettled<P>(long unitId, UnitReply reply, boolean draining) implements Command<P> { }

    /** After a worker crashed: the exact completion of entry {@code index} of unit {@code unitId} ended. */
    record CleanupEnded<P>(long unitId, int index) implements Command<P> { }

    /** One unit in progress. */
    private final class ActiveUnit {
        final long id;
        final MaterializeUnit<P> request;
        final UnitLedger<X, P, W, M> ledger;
        final ActorRef<UnitMaterializer.Command> worker;
        final List<UnitFailure> cleanupFailures = new ArrayList<>();
        int cleanupPending = -1; // >= 0 once the supervisor took the ledger back after a crash
        boolean answered; // its reply went out (it timed out); only its in-flight materializations are left

        ActiveUnit(long id, MaterializeUnit<P> request, UnitLedger<X, P, W, M> ledger, ActorRef<UnitMaterializer.Command> worker) {
            this.id = id;
            this.request = request;
            this.ledger = ledger;
            this.worker = worker;
        }
    }

    private final ParameterBackend<X, P, W, M> backend;
    private final X loadingContext;
    private final MaterializationSettings settings;
    private final Map<Long, ActiveUnit> active = new LinkedHashMap<>();
    /** Units answered after their timeout whose workers still finish materializations in flight. */
    private final Map<Long, ActiveUnit> draining = new HashMap<>();
    private final Map<ActorRef<UnitMaterializer.Command>, Long> workers = new HashMap<>();
    private final ArrayDeque<MaterializeUnit<P>> queued = new ArrayDeque<>();
    private final Set<String> unitNames = new HashSet<>();
    private long nextUnitId;

    /** A supervisor that realizes weights with {@code backend} on {@code loadingContext}, within {@code settings}. */
    public static <X, P, W, M extends Materialization<W>> Behavior<Command<P>> create(
            ParameterBackend<X, P, W, M> backend, X loadingContext, MaterializationSettings settings) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(loadingContext, "loadingContext");
        Objects.requireNonNull(settings, "settings");
        return Behaviors.setup(ctx -> new MaterializationSupervisor<>(ctx, backend, loadingContext, settings));
    }

    private MaterializationSupervisor(ActorContext<Command<P>> context, ParameterBackend<X, P, W, M> backend,
                                      X loadingContext, MaterializationSettings settings) {
        super(context);
        this.backend = backend;
        this.loadingContext = loadingContext;
        this.settings = settings;
    }

    @Override
    public Receive<Command<P>> createReceive() {
        return newReceiveBuilder()
                .onMessage(MaterializationSupervisor.<MaterializeUnit<P>>typed(MaterializeUnit.class), this::onMaterializeUnit)
                .onMessage(MaterializationSupervisor.<Stop<P>>typed(Stop.class), stop -> Behaviors.stopped())
                .onMessage(MaterializationSupervisor.<UnitSettled<P>>typed(UnitSettled.class), this::onUnitSettled)
                .onMessage(MaterializationSupervisor.<CleanupEnded<P>>typed(CleanupEnded.class), this::onCleanupEnded)
                .onSignal(ChildFailed.class, this::onChildFailed)
                .onSignal(Terminated.class, this::onChildStopped)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    /** The class of a generic message record, typed with its parameter (erased at run time, so the match is exact). */
    @SuppressWarnings("unchecked")
    private static <T> Class<T> typed(Class<?> messageClass) {
        return (Class<T>) messageClass;
    }

    private Behavior<Command<P>> onMaterializeUnit(MaterializeUnit<P> m) {
        String refusal = admissionProblem(m);
        if (refusal != null) {
            refuse(m, refusal);
        } else if (active.size() < settings.maxActiveUnits()) {
            unitNames.add(m.unit());
            start(m);
        } else if (queued.size() < settings.maxQueuedUnits()) {
            unitNames.add(m.unit());
            queued.add(m);
        } else {
            refuse(m, "the supervisor is overloaded: " + active.size() + " units active (max-active-units "
                    + settings.maxActiveUnits() + ") and " + queued.size() + " queued (max-queued-units "
                    + settings.maxQueuedUnits() + ")");
        }
        return this;
    }

    private String admissionProblem(MaterializeUnit<P> m) {
        if (m.requests().isEmpty()) {
            return "unit " + m.unit() + " has no parameters";
        }
        if (unitNames.contains(m.unit())) {
            return "a unit named " + m.unit() + " is already being materialized";
        }
        Set<String> seen = new HashSet<>();
        for (WeightRequest<P> r : m.requests()) {
            if (!seen.add(r.name())) {
                return "unit " + m.unit() + " names parameter " + r.name() + " twice";
            }
        }
        return null;
    }

    /** Refuses a unit: its leases were handed over with it, so they are released here, each once. */
    private void refuse(MaterializeUnit<P> m, String reason) {
        UnitLedger<X, P, W, M> ledger = new UnitLedger<>(m.unit(), m.requests(), backend);
        ledger.releaseUnstarted();
        m.replyTo().tell(new UnitReply.Failed(m.unit(),
                List.of(new UnitFailure(m.unit(), UnitFailure.Phase.ADMISSION, new GraphlaneException(reason)))));
    }

    private void start(MaterializeUnit<P> m) {
        long id = nextUnitId++;
        UnitLedger<X, P, W, M> ledger = new UnitLedger<>(m.unit(), m.requests(), backend);
        ActorRef<UnitMaterializer.Command> worker = getContext().spawn(
                UnitMaterializer.create(id, ledger, loadingContext, getContext().getSelf(), settings.unitTimeout()), "unit-" + id);
        getContext().watch(worker);
        active.put(id, new ActiveUnit(id, m, ledger, worker));
        workers.put(worker, id);
    }

    private Behavior<Command<P>> onUnitSettled(UnitSettled<P> settled) {
        ActiveUnit unit = active.get(settled.unitId());
        if (unit == null || unit.cleanupPending >= 0) {
            return this; // a late report of a worker already cleaned up after: its ledger is ours now
        }
        if (settled.draining()) {
            unit.answered = true;
            draining.put(unit.id, unit);
            complete(unit, settled.reply()); // the worker stays, watched, until its materializations in flight end
            return this;
        }
        getContext().unwatch(unit.worker);
        getContext().stop(unit.worker);
        workers.remove(unit.worker);
        complete(unit, settled.reply());
        return this;
    }

    private Behavior<Command<P>> onChildFailed(ChildFailed failed) {
        takeBack(failed.getRef(), failed.getCause());
        return this;
    }

    private Behavior<Command<P>> onChildStopped(Terminated terminated) {
        Long id = workers.get(terminated.getRef());
        ActiveUnit unit = id == null ? null : draining.get(id);
        if (unit != null && unit.cleanupPending < 0) {
            workers.remove(terminated.getRef()); // a timed-out unit's worker finished its last materialization in flight
            draining.remove(id);
            return this;
        }
        takeBack(terminated.getRef(), new IllegalStateException("the unit's worker stopped without reporting"));
        return this;
    }

    /** A worker died before reporting: its ledger is the supervisor's now. */
    private void takeBack(ActorRef<?> ref, Throwable cause) {
        Long id = workers.remove(ref);
        ActiveUnit unit = id == null ? null : unit(id);
        if (unit == null) {
            return;
        }
        getContext().getLog().error("worker of unit {} crashed; releasing what it owned", unit.request.unit(), cause);
        unit.cleanupFailures.add(new UnitFailure(unit.request.unit(), UnitFailure.Phase.CRASH, cause));
        unit.ledger.releaseUnstarted();
        unit.ledger.discardUnbound();
        List<UnitLedger.InFlight> inFlight = unit.ledger.inFlight();
        unit.cleanupPending = inFlight.size();
        ActorRef<Command<P>> self = getContext().getSelf();
        for (UnitLedger.InFlight f : inFlight) {
            f.completion().whenDone(outcome -> self.tell(new CleanupEnded<>(unit.id, f.index())));
        }
        if (unit.cleanupPending == 0) {
            complete(unit, new UnitReply.Failed(unit.request.unit(), unit.cleanupFailures));
        }
    }

    private Behavior<Command<P>> onCleanupEnded(CleanupEnded<P> ended) {
        ActiveUnit unit = unit(ended.unitId());
        if (unit == null || unit.cleanupPending <= 0) {
            return this;
        }
        unit.ledger.finish(ended.index(), unit.cleanupFailures);
        unit.ledger.discardUnbound();
        unit.cleanupPending--;
        if (unit.cleanupPending == 0) {
            complete(unit, new UnitReply.Failed(unit.request.unit(), unit.cleanupFailures));
        }
        return this;
    }

    /** The unit {@code id}, active or draining after its timeout, or null. */
    private ActiveUnit unit(long id) {
        ActiveUnit unit = active.get(id);
        return unit != null ? unit : draining.get(id);
    }

    private void complete(ActiveUnit unit, UnitReply reply) {
        if (unit.answered && !active.containsKey(unit.id)) {
            draining.remove(unit.id); // cleaned up after its worker crashed while draining: answered already
            return;
        }
        active.remove(unit.id);
        unitNames.remove(unit.request.unit());
        unit.request.replyTo().tell(reply);
        while (active.size() < settings.maxActiveUnits() && !queued.isEmpty()) {
            start(queued.poll());
        }
    }

    private Behavior<Command<P>> onPostStop() {
        // The workers have stopped by now, so each ledger is final.
        for (ActiveUnit unit : draining.values()) {
            unit.ledger.abandon();
        }
        for (ActiveUnit unit : active.values()) {
            if (allBound(unit.ledger)) {
                // its worker bound it and reported so, but the report came after the stop: it is bound all the same
                unit.request.replyTo().tell(new UnitReply.Bound(unit.request.unit(), unit.ledger.names()));
                continue;
            }
            unit.ledger.abandon();
            unit.request.replyTo().tell(new UnitReply.Failed(unit.request.unit(), List.of(new UnitFailure(
                    unit.request.unit(), UnitFailure.Phase.ADMISSION,
                    new GraphlaneException("the materialization supervisor stopped before unit " + unit.request.unit()
                            + " was bound; its leases are released as their materializations complete")))));
        }
        for (MaterializeUnit<P> m : queued) {
            refuse(m, "the materialization supervisor stopped before unit " + m.unit() + " started");
        }
        active.clear();
        draining.clear();
        queued.clear();
        return this;
    }

    private static boolean allBound(UnitLedger<?, ?, ?, ?> ledger) {
        for (int i = 0; i < ledger.size(); i++) {
            if (ledger.state(i) != UnitLedger.State.BOUND) {
                return false;
            }
        }
        return ledger.size() > 0;
    }
}
