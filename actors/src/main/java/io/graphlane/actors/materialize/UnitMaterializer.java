package io.graphlane.actors.materialize;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.Materialization;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The worker of one atomic unit, a child of the {@link MaterializationSupervisor}: it starts each
 * materialization on the loading context, learns of each exact completion by message, finishes it
 * (which releases its leases), then validates the whole unit and binds all of it or none of it, and
 * reports the outcome to its supervisor. Every ownership change goes through the unit's
 * {@link UnitLedger}, which the supervisor takes back if this worker crashes.
 *
 * <p>If the unit has not settled within the unit timeout, the worker reports it failed at once
 * (nothing bound, finished weights discarded) and stays to drain: each materialization still in
 * flight is finished, releasing its leases, when its exact completion ends; then the worker stops.
 */
final class UnitMaterializer<X, P, W, M extends Materialization<W>> extends AbstractBehavior<UnitMaterializer.Command> {

    /** What the worker is told: only the completions of its own materializations. */
    sealed interface Command permits MaterializationEnded, TimedOut { }

    /** The exact completion of entry {@code index}'s materialization ended. */
    record MaterializationEnded(int index, Outcome outcome) implements Command { }

    /** The unit timeout passed. */
    enum TimedOut implements Command { INSTANCE }

    private final long unitId;
    private final UnitLedger<X, P, W, M> ledger;
    private final ActorRef<MaterializationSupervisor.Command<P>> supervisor;
    private final List<UnitFailure> failures = new ArrayList<>();
    private final Duration timeout;
    private int running;
    /** Reported failed by the timeout: only finishing what is in flight is left. */
    private boolean draining;

    static <X, P, W, M extends Materialization<W>> Behavior<Command> create(long unitId, UnitLedger<X, P, W, M> ledger, X context,
                                                                         ActorRef<MaterializationSupervisor.Command<P>> supervisor,
                                                                         Duration timeout) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> new UnitMaterializer<>(ctx, timers, unitId, ledger, context, supervisor, timeout)));
    }

    private UnitMaterializer(ActorContext<Command> context, TimerScheduler<Command> timers, long unitId, UnitLedger<X, P, W, M> ledger,
                             X loadingContext, ActorRef<MaterializationSupervisor.Command<P>> supervisor, Duration timeout) {
        super(context);
        this.unitId = unitId;
        this.ledger = ledger;
        this.supervisor = supervisor;
        this.timeout = timeout;
        ActorRef<Command> self = context.getSelf();
        for (int i = 0; i < ledger.size() && failures.isEmpty(); i++) {
            Completion completion = ledger.start(i, loadingContext, failures);
            if (completion != null) {
                running++;
                int index = i;
                completion.whenDone(outcome -> self.tell(new MaterializationEnded(index, outcome)));
            }
        }
        if (!failures.isEmpty()) {
            ledger.releaseUnstarted(); // nothing of them is in flight: no completion to wait for
        }
        if (running == 0) {
            settle();
        } else {
            timers.startSingleTimer(TimedOut.INSTANCE, timeout);
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(MaterializationEnded.class, this::onMaterializationEnded)
                .onMessage(TimedOut.class, t -> onTimedOut())
                .build();
    }

    private Behavior<Command> onMaterializationEnded(MaterializationEnded ended) {
        if (draining) {
            ledger.finish(ended.index(), new ArrayList<>()); // already answered: a late failure changes nothing
            ledger.discardUnbound();
            running--;
            return running == 0 ? Behaviors.stopped() : this;
        }
        ledger.finish(ended.index(), failures);
        running--;
        if (running == 0) {
            settle();
        }
        return this;
    }

    private Behavior<Command> onTimedOut() {
        if (running == 0 || draining) {
            return this; // settled already: the supervisor is stopping this worker
        }
        draining = true;
        List<String> still = new ArrayList<>();
        for (UnitLedger.InFlight f : ledger.inFlight()) {
            still.add(ledger.request(f.index()).name());
        }
        failures.add(new UnitFailure(ledger.unit(), UnitFailure.Phase.TIMEOUT, new GraphlaneException("unit " + ledger.unit()
                + " did not finish within the unit timeout of " + timeout + " (graphlane.materialization.unit-timeout); still materializing: "
                + still + "; their leases are released as they complete")));
        ledger.releaseUnstarted();
        ledger.discardUnbound();
        supervisor.tell(new MaterializationSupervisor.UnitSettled<>(unitId, new UnitReply.Failed(ledger.unit(), failures), true));
        return this;
    }

    private void settle() {
        if (failures.isEmpty()) {
            failures.addAll(ledger.validateAll());
        }
        UnitReply reply;
        if (failures.isEmpty()) {
            ledger.bindAll();
            reply = new UnitReply.Bound(ledger.unit(), ledger.names());
        } else {
            ledger.discardUnbound();
            reply = new UnitReply.Failed(ledger.unit(), failures);
        }
        supervisor.tell(new MaterializationSupervisor.UnitSettled<>(unitId, reply, false));
    }
}
