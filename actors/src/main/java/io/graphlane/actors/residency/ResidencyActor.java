package io.graphlane.actors.residency;

import io.graphlane.core.backend.TransferBackend;
import io.graphlane.core.completion.Outcome;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serializes promotions, demotions and the {@link ResidencyLedger} of one device. It owns the host
 * copies registered with it and the device copies it made: a device copy is published (and handed
 * out by {@link Acquire}) only after its promotion's exact completion succeeded; a demotion keeps
 * the device copy until the host copy completed and keeps it resident if the copy failed; a stale
 * late result is ignored and its destination closed. Completions come back as messages.
 *
 * @param <E> the executor transfers run on
 * @param <W> the device weight
 * @param <H> the host buffer
 */
public final class ResidencyActor<E, W, H> extends AbstractBehavior<ResidencyActor.Command<W, H>> {
    private static final Logger LOG = LoggerFactory.getLogger(ResidencyActor.class);

    /** What the residency actor is told. */
    public sealed interface Command<W, H> permits Register, Promote, Demote, Pin, Unpin, Acquire, Release, Evict,
            AbandonPromotion, GetState, PromotionEnded, DemotionEnded { }

    /** What it answers. */
    public sealed interface Reply<W, H> permits Done, Refused, Promoted, PromotionFailed, Demoted, DemotionFailed,
            Acquired, State { }

    /** Registers the host copy {@code host} of unit {@code name}, of {@code bytes} bytes; the actor owns it from now on. */
    public record Register<W, H>(String name, H host, long bytes, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** Makes every unit of {@code names} resident, admitted all or nothing against the device budget. */
    public record Promote<W, H>(List<String> names, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> {
        public Promote {
            names = List.copyOf(names);
        }
    }

    /** Copies the device copy of {@code name} to the host, then frees the device copy. */
    public record Demote<W, H>(String name, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** Pins {@code name}: its device copy is never evicted while pinned. */
    public record Pin<W, H>(String name) implements Command<W, H> { }

    /** Drops one pin of {@code name}. */
    public record Unpin<W, H>(String name) implements Command<W, H> { }

    /** Leases the published device copy of {@code name} to running work; answer {@link Acquired} or {@link Refused}. */
    public record Acquire<W, H>(String name, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** Ends one lease of {@code name}, once the work that used it has completed. */
    public record Release<W, H>(String name) implements Command<W, H> { }

    /** Drops the device copy of {@code name} now (refused if pinned, leased, in flight or without a host copy). */
    public record Evict<W, H>(String name, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** Gives up on the in-flight promotion of {@code name}; its late result will be ignored. */
    public record AbandonPromotion<W, H>(String name, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** Asks for the state of {@code name}. */
    public record GetState<W, H>(String name, ActorRef<Reply<W, H>> replyTo) implements Command<W, H> { }

    /** The exact completion of the promotion of {@code name} under {@code generation} ended. */
    record PromotionEnded<W, H>(String name, long generation, Outcome outcome) implements Command<W, H> { }

    /** The exact completion of the demotion of {@code name} under {@code generation} ended. */
    record DemotionEnded<W, H>(String name, long generation, Outcome outcome) implements Command<W, H> { }

    /** The request was carried out. */
    public record Done<W, H>(String what) implements Reply<W, H> { }

    /** The request was refused; nothing changed. {@code blockers} names what stands in the way. */
    public record Refused<W, H>(String message, List<String> blockers) implements Reply<W, H> { }

    /** Every unit of the batch is resident; {@code evicted} lost their device copy to make room. */
    public record Promoted<W, H>(List<String> names, List<String> evicted) implements Reply<W, H> { }

    /** Some promotions of the batch failed (the others are resident); {@code causes} per unit. */
    public record PromotionFailed<W, H>(List<String> names, Map<String, Throwable> causes) implements Reply<W, H> { }

    /** The host copy of {@code name} completed and the device copy was freed. */
    public record Demoted<W, H>(String name, H host) implements Reply<W, H> { }

    /** The host copy failed: the device copy of {@code name} stays resident. */
    public record DemotionFailed<W, H>(String name, Throwable cause) implements Reply<W, H> { }

    /** The published device copy of {@code name}, leased until {@link Release}. */
    public record Acquired<W, H>(String name, W weight) implements Reply<W, H> { }

    /** The state of {@code name} and of the device budget. */
    public record State<W, H>(String name, ResidencyLedger.DeviceState state, long generation, long reservedBytes,
                              long budgetBytes) implements Reply<W, H> { }

    /** A batch waiting for its promotions: unit name → the generation it waits for. */
    private final class Batch {
        final Promote<W, H> request;
        final List<String> evicted;
        final Map<String, Long> waiting = new LinkedHashMap<>();
        final Map<String, Throwable> failures = new LinkedHashMap<>();

        Batch(Promote<W, H> request, List<String> evicted) {
            this.request = request;
            this.evicted = evicted;
        }
    }

    private final TransferBackend<E, W, H> backend;
    private final E executor;
    private final ResidencyLedger ledger;
    private final Map<String, H> hosts = new HashMap<>();
    private final Map<String, W> devices = new HashMap<>();
    private final Map<Long, TransferBackend.Transfer<W>> promotions = new HashMap<>();
    private final Map<Long, TransferBackend.Transfer<H>> demotions = new HashMap<>();
    private final Map<Long, Demote<W, H>> demoteRequests = new HashMap<>();
    private final List<Batch> batches = new ArrayList<>();

    /** A residency actor running transfers of {@code backend} on {@code executor} under {@code ledger}. */
    public static <E, W, H> Behavior<Command<W, H>> create(TransferBackend<E, W, H> backend, E executor, ResidencyLedger ledger) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(executor, "executor");
        Objects.requireNonNull(ledger, "ledger");
        return Behaviors.setup(ctx -> new ResidencyActor<>(ctx, backend, executor, ledger));
    }

    private ResidencyActor(ActorContext<Command<W, H>> context, TransferBackend<E, W, H> backend, E executor, ResidencyLedger ledger) {
        super(context);
        this.backend = backend;
        this.executor = executor;
        this.ledger = ledger;
    }

    @SuppressWarnings("unchecked")
    private static <T> Class<T> typed(Class<?> messageClass) {
        return (Class<T>) messageClass;
    }

    @Override
    public Receive<Command<W, H>> createReceive() {
        return newReceiveBuilder()
                .onMessage(ResidencyActor.<Register<W, H>>typed(Register.class), this::onRegister)
                .onMessage(ResidencyActor.<Promote<W, H>>typed(Promote.class), this::onPromote)
                .onMessage(ResidencyActor.<PromotionEnded<W, H>>typed(PromotionEnded.class), this::onPromotionEnded)
                .onMessage(ResidencyActor.<Demote<W, H>>typed(Demote.class), this::onDemote)
                .onMessage(ResidencyActor.<DemotionEnded<W, H>>typed(DemotionEnded.class), this::onDemotionEnded)
                .onMessage(ResidencyActor.<Pin<W, H>>typed(Pin.class), m -> guarded(() -> ledger.pin(m.name())))
                .onMessage(ResidencyActor.<Unpin<W, H>>typed(Unpin.class), m -> guarded(() -> ledger.unpin(m.name())))
                .onMessage(ResidencyActor.<Acquire<W, H>>typed(Acquire.class), this::onAcquire)
                .onMessage(ResidencyActor.<Release<W, H>>typed(Release.class), m -> guarded(() -> ledger.unlease(m.name())))
                .onMessage(ResidencyActor.<Evict<W, H>>typed(Evict.class), this::onEvict)
                .onMessage(ResidencyActor.<AbandonPromotion<W, H>>typed(AbandonPromotion.class), this::onAbandon)
                .onMessage(ResidencyActor.<GetState<W, H>>typed(GetState.class), this::onGetState)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    private Behavior<Command<W, H>> guarded(Runnable change) {
        try {
            change.run();
        } catch (ResidencyException e) {
            LOG.warn("{}", e.getMessage());
        }
        return this;
    }

    private Behavior<Command<W, H>> onRegister(Register<W, H> m) {
        try {
            ledger.register(m.name(), m.bytes());
            hosts.put(m.name(), m.host());
            m.replyTo().tell(new Done<>("registered " + m.name()));
        } catch (ResidencyException | IllegalArgumentException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of()));
        }
        return this;
    }

    private Behavior<Command<W, H>> onPromote(Promote<W, H> m) {
        ResidencyLedger.Admission admission;
        try {
            admission = ledger.admit(m.names());
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of()));
            return this;
        }
        if (admission instanceof ResidencyLedger.Refused refused) {
            m.replyTo().tell(new Refused<>(refused.message(), refused.blockers()));
            return this;
        }
        ResidencyLedger.Admitted admitted = (ResidencyLedger.Admitted) admission;
        for (String name : admitted.evicted()) {
            close(devices.remove(name), name);
        }
        Batch batch = new Batch(m, admitted.evicted());
        for (String name : admitted.alreadyThere()) {
            if (ledger.state(name) == ResidencyLedger.DeviceState.PROMOTING) {
                batch.waiting.put(name, ledger.generation(name));
            }
        }
        ActorRef<Command<W, H>> self = getContext().getSelf();
        for (ResidencyLedger.Ticket ticket : admitted.promotions()) {
            batch.waiting.put(ticket.name(), ticket.generation());
            TransferBackend.Transfer<W> transfer;
            try {
                transfer = backend.promote(executor, hosts.get(ticket.name()));
            } catch (RuntimeException e) {
                ledger.completePromotion(ticket.name(), ticket.generation(), false);
                batch.waiting.remove(ticket.name());
                batch.failures.put(ticket.name(), e);
                continue;
            }
            promotions.put(ticket.generation(), transfer);
            transfer.completion().whenDone(o -> self.tell(new PromotionEnded<>(ticket.name(), ticket.generation(), o)));
        }
        batches.add(batch);
        answerSettledBatches();
        return this;
    }

    private Behavior<Command<W, H>> onPromotionEnded(PromotionEnded<W, H> m) {
        TransferBackend.Transfer<W> transfer = promotions.remove(m.generation());
        ResidencyLedger.Result result = ledger.completePromotion(m.name(), m.generation(), m.outcome().isSuccess());
        Throwable cause = m.outcome() instanceof Outcome.Failed f ? f.cause() : null;
        if (result == ResidencyLedger.Result.APPLIED) {
            devices.put(m.name(), transfer.destination());
        } else {
            close(transfer == null ? null : transfer.destination(), m.name());
            if (result == ResidencyLedger.Result.STALE) {
                cause = new ResidencyException("the promotion of " + m.name() + " (generation " + m.generation()
                        + ") was abandoned; its late result was ignored");
            }
        }
        for (Batch b : batches) {
            Long waited = b.waiting.get(m.name());
            if (waited != null && waited == m.generation()) {
                b.waiting.remove(m.name());
                if (result != ResidencyLedger.Result.APPLIED) {
                    b.failures.put(m.name(), cause);
                }
            }
        }
        answerSettledBatches();
        return this;
    }

    private void answerSettledBatches() {
        for (Iterator<Batch> it = batches.iterator(); it.hasNext(); ) {
            Batch b = it.next();
            if (b.waiting.isEmpty()) {
                it.remove();
                if (b.failures.isEmpty()) {
                    b.request.replyTo().tell(new Promoted<>(b.request.names(), b.evicted));
                } else {
                    b.request.replyTo().tell(new PromotionFailed<>(b.request.names(), Map.copyOf(b.failures)));
                }
            }
        }
    }

    private Behavior<Command<W, H>> onDemote(Demote<W, H> m) {
        ResidencyLedger.Ticket ticket;
        try {
            ticket = ledger.beginDemotion(m.name());
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of(m.name())));
            return this;
        }
        TransferBackend.Transfer<H> transfer;
        try {
            transfer = backend.demote(executor, devices.get(m.name()));
        } catch (RuntimeException e) {
            ledger.completeDemotion(m.name(), ticket.generation(), false);
            m.replyTo().tell(new DemotionFailed<>(m.name(), e));
            return this;
        }
        demotions.put(ticket.generation(), transfer);
        demoteRequests.put(ticket.generation(), m);
        ActorRef<Command<W, H>> self = getContext().getSelf();
        transfer.completion().whenDone(o -> self.tell(new DemotionEnded<>(m.name(), ticket.generation(), o)));
        return this;
    }

    private Behavior<Command<W, H>> onDemotionEnded(DemotionEnded<W, H> m) {
        TransferBackend.Transfer<H> transfer = demotions.remove(m.generation());
        Demote<W, H> request = demoteRequests.remove(m.generation());
        ResidencyLedger.Result result = ledger.completeDemotion(m.name(), m.generation(), m.outcome().isSuccess());
        if (result == ResidencyLedger.Result.APPLIED) {
            H previous = hosts.put(m.name(), transfer.destination());
            if (previous != transfer.destination()) {
                close(previous, m.name());
            }
            close(devices.remove(m.name()), m.name());
            request.replyTo().tell(new Demoted<>(m.name(), transfer.destination()));
        } else {
            close(transfer == null ? null : transfer.destination(), m.name());
            Throwable cause = m.outcome() instanceof Outcome.Failed f ? f.cause()
                    : new ResidencyException("the demotion of " + m.name() + " (generation " + m.generation() + ") is stale");
            if (request != null) {
                request.replyTo().tell(new DemotionFailed<>(m.name(), cause));
            }
        }
        return this;
    }

    private Behavior<Command<W, H>> onAcquire(Acquire<W, H> m) {
        try {
            ledger.lease(m.name());
            m.replyTo().tell(new Acquired<>(m.name(), devices.get(m.name())));
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of(m.name())));
        }
        return this;
    }

    private Behavior<Command<W, H>> onEvict(Evict<W, H> m) {
        try {
            ledger.evict(m.name());
            close(devices.remove(m.name()), m.name());
            m.replyTo().tell(new Done<>("evicted " + m.name()));
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of(m.name())));
        }
        return this;
    }

    private Behavior<Command<W, H>> onAbandon(AbandonPromotion<W, H> m) {
        try {
            long generation = ledger.abandonPromotion(m.name());
            m.replyTo().tell(new Done<>("abandoned the promotion of " + m.name() + " (generation " + generation + ")"));
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of(m.name())));
        }
        return this;
    }

    private Behavior<Command<W, H>> onGetState(GetState<W, H> m) {
        try {
            m.replyTo().tell(new State<>(m.name(), ledger.state(m.name()), ledger.generation(m.name()),
                    ledger.reservedBytes(), ledger.budgetBytes()));
        } catch (ResidencyException e) {
            m.replyTo().tell(new Refused<>(e.getMessage(), List.of(m.name())));
        }
        return this;
    }

    /**
     * Lets go of every copy the actor owns. Handles only: a transfer still in flight keeps its own
     * hold on its source and destination until its exact completion, so nothing is freed under it.
     */
    private Behavior<Command<W, H>> onPostStop() {
        devices.forEach((name, copy) -> close(copy, name));
        hosts.forEach((name, copy) -> close(copy, name));
        promotions.values().forEach(t -> close(t.destination(), "an in-flight promotion"));
        demotions.values().forEach(t -> close(t.destination(), "an in-flight demotion"));
        devices.clear();
        hosts.clear();
        promotions.clear();
        demotions.clear();
        return this;
    }

    private static void close(Object copy, String name) {
        if (copy instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                LOG.error("closing a copy of {} failed", name, e);
            }
        }
    }
}
