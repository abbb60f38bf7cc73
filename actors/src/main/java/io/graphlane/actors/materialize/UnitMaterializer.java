package io.graphlane.actors.materialize;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.Materialization;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * The worker of one atomic unit, a child of the {@link MaterializationSupervisor}: it starts each
 * materialization on the loading context, learns of each exact completion by message, finishes it
 * (which releases its leases), then validates the whole unit and binds all of it or none of it, and
 * reports the outcome to its supervisor. Every ownership change goes through the unit's
 * {@link UnitLedger}, which the supervisor takes back if this worker crashes.
 */
final class UnitMaterializer<X, P, W, M extends Materialization<W>> extends AbstractBehavior<UnitMaterializer.Command> {

    /** What the worker is told: only the completions of its own materializations. */
    sealed interface Command permits MaterializationEnded { }

    /** The exact completion of entry {@code index}'s materialization ended. */
    record MaterializationEnded(int index, Outcome outcome) implements Command { }

    private final long unitId;
    private final UnitLedger<X, P, W, M> ledger;
    private final ActorRef<MaterializationSupervisor.Command<P>> supervisor;
    private final List<UnitFailure> failures = new ArrayList<>();
    private int running;

    static <X, P, W, M extends Materialization<W>> Behavior<Command> create(long unitId, UnitLedger<X, P, W, M> ledger, X context,
                                                                         ActorRef<MaterializationSupervisor.Command<P>> supervisor) {
        return Behaviors.setup(ctx -> new UnitMaterializer<>(ctx, unitId, ledger, context, supervisor));
    }

    private UnitMaterializer(ActorContext<Command> context, long unitId, UnitLedger<X, P, W, M> ledger, X loadingContext,
                             ActorRef<MaterializationSupervisor.Command<P>> supervisor) {
        super(context);
        this.unitId = unitId;
        this.ledger = ledger;
        this.supervisor = supervisor;
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
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(MaterializationEnded.class, this::onMaterializationEnded)
                .build();
    }

    private Behavior<Command> onMaterializationEnded(MaterializationEnded ended) {
        ledger.finish(ended.index(), failures);
        running--;
        if (running == 0) {
            settle();
        }
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
        supervisor.tell(new MaterializationSupervisor.UnitSettled<>(unitId, reply));
    }
}
