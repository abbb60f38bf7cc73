package io.graphlane.actors.lane;

import io.graphlane.actors.lane.LaneProtocol.Cancel;
import io.graphlane.actors.lane.LaneProtocol.Command;
import io.graphlane.actors.lane.LaneProtocol.Ended;
import io.graphlane.actors.lane.LaneProtocol.Finished;
import io.graphlane.actors.lane.LaneProtocol.ForgetScope;
import io.graphlane.actors.lane.LaneProtocol.GetStatus;
import io.graphlane.actors.lane.LaneProtocol.LaneReply;
import io.graphlane.actors.lane.LaneProtocol.LaneStatus;
import io.graphlane.actors.lane.LaneProtocol.OnDevice;
import io.graphlane.actors.lane.LaneProtocol.Rejected;
import io.graphlane.actors.lane.LaneProtocol.Rejection;
import io.graphlane.actors.lane.LaneProtocol.Resolution;
import io.graphlane.actors.lane.LaneProtocol.Resolved;
import io.graphlane.actors.lane.LaneProtocol.Stop;
import io.graphlane.actors.lane.LaneProtocol.Stopped;
import io.graphlane.actors.lane.LaneProtocol.Submit;
import io.graphlane.actors.lane.LaneProtocol.SubmitBatch;
import io.graphlane.actors.lane.LaneProtocol.Submitted;
import io.graphlane.actors.lane.LaneProtocol.Subscribe;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceEvent;
import io.graphlane.core.trace.TraceRecorder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * One lane: owns one forked executor of a {@link SubmissionBackend} and is the only caller of
 * {@code submit}, {@code orderAfter} and {@code retainUntilComplete} on it. The protocol is
 * {@link LaneProtocol}.
 *
 * <p>A submission waits in the lane until every handle it must follow is resolved: a producer on
 * this lane once it is submitted (its completion is ordered after, so a failure still poisons),
 * a producer on another lane once that lane answers the subscription this lane sends it. A
 * producer that already failed poisons the consumer without submitting it. Ready work is handed
 * to the executor while fewer than {@code max-in-flight} submissions are running. Completions
 * come back as one coalesced {@code Drain} message per burst; the actor never blocks.
 *
 * @param <E> the backend's executor type
 * @param <C> the backend's completion type
 * @param <W> the backend's work type
 */
public final class LaneActor<E, C extends Completion, W> extends AbstractBehavior<Command> {

    /** Messages the actor sends itself. */
    sealed interface Internal extends Command permits Drain, ExecutorStopped {
    }

    /** Completions have been queued by executor callbacks. */
    enum Drain implements Internal { INSTANCE }

    /** The executor has shut down. */
    enum ExecutorStopped implements Internal { INSTANCE }

    /** What the actor is built from. */
    public record Spec<E, C extends Completion, W>(LaneId lane, SubmissionBackend<E, C, W> backend, E executor,
                                                   LaneRegistry registry, LaneSettings settings, TraceRecorder trace,
                                                   WorkTracing<W> workTracing, LaneLoad load) {
        public Spec {
            Objects.requireNonNull(lane, "lane");
            Objects.requireNonNull(backend, "backend of lane " + lane);
            Objects.requireNonNull(executor, "executor of lane " + lane);
            Objects.requireNonNull(registry, "registry of lane " + lane);
            Objects.requireNonNull(settings, "settings of lane " + lane);
            trace = trace == null ? TraceRecorder.DISABLED : trace;
            workTracing = workTracing == null ? WorkTracing.none() : workTracing;
            load = load == null ? new LaneLoad() : load;
        }

        /** A spec whose load is published to a fresh {@link LaneLoad} nobody else reads. */
        public Spec(LaneId lane, SubmissionBackend<E, C, W> backend, E executor, LaneRegistry registry, LaneSettings settings,
                    TraceRecorder trace, WorkTracing<W> workTracing) {
            this(lane, backend, executor, registry, settings, trace, workTracing, null);
        }
    }

    /** The behavior of a lane actor over {@code spec}'s executor. */
    public static <E, C extends Completion, W> Behavior<Command> create(Spec<E, C, W> spec) {
        return Behaviors.setup(ctx -> new LaneActor<>(ctx, spec));
    }

    private static final byte WAITING = 0;
    private static final byte READY = 1;
    private static final byte SUBMITTED = 2;
    private static final byte ENDED = 3;
    private static final byte DROPPING = 4;

    private final LaneId lane;
    private final String laneName;
    private final SubmissionBackend<E, C, W> backend;
    private final E executor;
    private final LaneRegistry registry;
    private final LaneSettings settings;
    private final TraceRecorder trace;
    private final boolean tracing;
    private final WorkTracing<W> workTracing;
    private final LaneLoad load;
    private final ActorRef<Resolved> selfResolved;
    private final ActorRef<Command> self;

    /**
     * Every submission the lane holds, from acceptance until it has ended and its consumers have asked, and who waits
     * for handles of this lane that have not arrived yet.
     */
    private final HandleTable<Entry> handles = new HandleTable<>();
    /** Accepted work waiting for a producer on another lane, by the producer's handle. */
    private final HashMap<CompletionHandle, ArrayList<Entry>> remoteWaits = new HashMap<>();
    private final ArrayDeque<Entry> ready = new ArrayDeque<>();
    private final ConcurrentLinkedQueue<Entry> finished = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Map<Long, Boolean> cancelledScopes;
    private final Map<ActorRef<Command>, LaneId> watched = new HashMap<>();
    private final ReplyBatcher replies = new ReplyBatcher();
    private final List<ActorRef<Stopped>> stopRequesters = new ArrayList<>(1);

    private int inFlight;
    private int queued;
    private boolean stopping;
    private boolean executorShutdown;
    /** Set once the actor has stopped: completions are answered from the executor's callback then. */
    private volatile boolean gone;

    private LaneActor(ActorContext<Command> context, Spec<E, C, W> spec) {
        super(context);
        this.lane = spec.lane();
        this.laneName = lane.name();
        this.backend = spec.backend();
        this.executor = spec.executor();
        this.registry = spec.registry();
        this.settings = spec.settings();
        this.trace = spec.trace();
        this.tracing = trace.enabled();
        this.workTracing = spec.workTracing();
        this.load = spec.load();
        this.self = context.getSelf();
        this.selfResolved = self.narrow();
        int remembered = settings.rememberedCancelledRequests();
        this.cancelledScopes = new LinkedHashMap<>(16, 0.75f, false) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
                return size() > remembered;
            }
        };
    }

    @Override
    @SuppressWarnings("unchecked")
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Submit.class, m -> onSubmit((Submit<W>) m))
                .onMessage(SubmitBatch.class, m -> onSubmitBatch((SubmitBatch<W>) m))
                .onMessage(Subscribe.class, this::onSubscribe)
                .onMessage(Resolved.class, this::onResolved)
                .onMessageEquals(Drain.INSTANCE, this::onDrain)
                .onMessage(Cancel.class, this::onCancel)
                .onMessage(ForgetScope.class, this::onForget)
                .onMessage(Stop.class, this::onStop)
                .onMessage(GetStatus.class, this::onGetStatus)
                .onMessageEquals(ExecutorStopped.INSTANCE, this::onExecutorStopped)
                .onSignal(Terminated.class, this::onLaneTerminated)
                .onSignal(PostStop.class, s -> onPostStop())
                .build();
    }

    // ---------------------------------------------------------------- handlers

    private Behavior<Command> onSubmit(Submit<W> submit) {
        Rejection refusal = admission(1);
        if (refusal == null) {
            accept(submit);
        } else {
            reject(submit, refusal);
        }
        pump();
        replies.flush();
        return this;
    }

    private Behavior<Command> onSubmitBatch(SubmitBatch<W> batch) {
        List<Submit<W>> submits = batch.submits();
        Rejection refusal = admission(submits.size());
        for (Submit<W> s : submits) {
            if (refusal == null) {
                accept(s);
            } else {
                reject(s, refusal);
            }
        }
        pump();
        replies.flush();
        return this;
    }

    private Behavior<Command> onSubscribe(Subscribe s) {
        Entry producer = handles.get(s.handle());
        if (producer == null) {
            Outcome refusal = refuseSubscription(s);
            if (refusal != null) {
                s.subscriber().tell(new Resolved(s.handle(), new Ended(refusal, s.handle().toString())));
            } else {
                handles.subscribeEarly(s);
            }
        } else if (producer.state == SUBMITTED) {
            s.subscriber().tell(new Resolved(s.handle(), new OnDevice(backend, producer.completion)));
            handles.served(producer);
        } else if (producer.state == ENDED) {
            s.subscriber().tell(new Resolved(s.handle(), new Ended(producer.outcome, producer.label)));
            handles.served(producer);
        } else {
            producer.subscribe(s);
        }
        return this;
    }

    private Behavior<Command> onResolved(Resolved r) {
        ArrayList<Entry> waiting = remoteWaits.remove(r.handle());
        if (waiting != null) {
            Resolution resolution = r.resolution();
            if (resolution instanceof OnDevice onDevice && onDevice.device() != backend && !onDevice.completion().isDone()) {
                // Another device: its completion cannot be ordered after here, so wait for its outcome by message.
                remoteWaits.put(r.handle(), waiting);
                onDevice.completion().whenDone(o -> self.tell(new Resolved(r.handle(), new Ended(o, onDevice.label()))));
                return this;
            }
            for (Entry consumer : waiting) {
                applyResolution(consumer, resolution);
            }
            pump();
            replies.flush();
        }
        return this;
    }

    private Behavior<Command> onDrain() {
        drainScheduled.set(false);
        Entry e;
        while ((e = finished.poll()) != null) {
            inFlight--;
            e.state = ENDED;
            if (e.abandoned) {
                e.outcome = Outcome.failure(new WorkCancelledException(e.submit.handle(), e.submit.scope(), true));
            }
            replies.add(e.submit.replyTo(), new Finished(e.submit.handle(), e.label, e.outcome));
            handles.forgetIfDone(e);
        }
        load.publish(queued, inFlight);
        pump();
        replies.flush();
        maybeShutdownExecutor();
        return this;
    }

    private Behavior<Command> onCancel(Cancel c) {
        long scope = c.scope();
        if (scope == LaneProtocol.NO_SCOPE) {
            return this;
        }
        cancelledScopes.put(scope, Boolean.TRUE);
        List<Entry> dropped = new ArrayList<>();
        for (Iterator<Entry> it = handles.entries().iterator(); it.hasNext(); ) {
            Entry e = it.next();
            if (e.submit.scope() != scope) {
                continue;
            }
            switch (e.state) {
                case WAITING, READY -> {
                    e.state = DROPPING;
                    dropped.add(e);
                }
                case SUBMITTED -> e.abandoned = true;
                case ENDED -> it.remove();
                default -> { }
            }
        }
        if (!dropped.isEmpty()) {
            ready.removeIf(e -> e.state == DROPPING);
            for (Entry e : dropped) {
                endUnsubmitted(e, Outcome.failure(new WorkCancelledException(e.submit.handle(), scope, false)));
            }
        }
        handles.answerEarly(sub -> sub.scope() == scope,
                h -> Outcome.failure(new WorkCancelledException(h, scope, false)));
        pruneWaiters();
        pump();
        replies.flush();
        return this;
    }

    private Behavior<Command> onForget(ForgetScope f) {
        long scope = f.scope();
        if (scope != LaneProtocol.NO_SCOPE) {
            handles.forgetScope(scope);
            handles.answerEarly(sub -> sub.scope() == scope,
                    h -> Outcome.failure(new LaneStoppedException(lane, "subscription to " + h + " of forgotten scope " + scope)));
        }
        return this;
    }

    private Behavior<Command> onStop(Stop s) {
        stopRequesters.add(s.replyTo());
        if (!stopping) {
            stopping = true;
            List<Entry> dropped = new ArrayList<>();
            for (Entry e : handles.entries()) {
                if (e.state == WAITING || e.state == READY) {
                    e.state = DROPPING;
                    dropped.add(e);
                }
            }
            ready.clear();
            for (Entry e : dropped) {
                endUnsubmitted(e, Outcome.failure(new LaneStoppedException(lane, "work " + e.submit.handle())));
            }
            handles.answerEarly(sub -> true, h -> Outcome.failure(new LaneStoppedException(lane, "subscription to " + h)));
            pruneWaiters();
            replies.flush();
        }
        maybeShutdownExecutor();
        return this;
    }

    private Behavior<Command> onGetStatus(GetStatus g) {
        int waitingRemote = 0;
        for (ArrayList<Entry> l : remoteWaits.values()) {
            waitingRemote += l.size();
        }
        g.replyTo().tell(new LaneStatus(lane, inFlight, queued, handles.size(), handles.pendingSubscriptions(), waitingRemote,
                stopping));
        return this;
    }

    private Behavior<Command> onExecutorStopped() {
        Stopped stopped = new Stopped(lane);
        for (ActorRef<Stopped> r : stopRequesters) {
            r.tell(stopped);
        }
        stopRequesters.clear();
        return Behaviors.stopped();
    }

    /**
     * The actor stopped for any reason (a {@link Stop} that ran its course, a crash, its parent or the
     * system stopping): work never submitted ends failed and its values are released now; submitted
     * work keeps its values with the backend until its exact completion, and its submitter is still
     * answered then; every waiting subscriber is told the handle ended; the executor is shut down.
     */
    private Behavior<Command> onPostStop() {
        gone = true;
        List<Entry> unsubmitted = new ArrayList<>();
        for (Entry e : handles.entries()) {
            if (e.state == WAITING || e.state == READY || e.state == DROPPING) {
                e.state = DROPPING;
                unsubmitted.add(e);
            }
        }
        ready.clear();
        for (Entry e : unsubmitted) {
            try {
                endUnsubmitted(e, Outcome.failure(new LaneStoppedException(lane, "work " + e.submit.handle())));
            } catch (RuntimeException failed) {
                getContext().getLog().error("lane {}: ending unsubmitted work {} as the lane stopped failed", lane, e.submit.handle(), failed);
            }
        }
        handles.answerEarly(sub -> true, h -> Outcome.failure(new LaneStoppedException(lane, "subscription to " + h)));
        handles.pruneEarly(e -> true);
        remoteWaits.clear();
        replies.flush();
        answerFinishedAfterStop();
        if (!executorShutdown || !stopRequesters.isEmpty()) {
            executorShutdown = true;
            List<ActorRef<Stopped>> requesters = List.copyOf(stopRequesters);
            stopRequesters.clear();
            try {
                Completion stopped = backend.shutdownExecutor(executor);
                if (!requesters.isEmpty()) {
                    stopped.whenDone(o -> requesters.forEach(r -> r.tell(new Stopped(lane))));
                }
            } catch (RuntimeException failed) {
                getContext().getLog().error("lane {}: shutting its executor down as the lane stopped failed", lane, failed);
            }
        }
        return this;
    }

    /** After the actor stopped: answers the submitters of work whose completion has been queued. */
    private void answerFinishedAfterStop() {
        Entry e;
        while ((e = finished.poll()) != null) {
            Outcome outcome = e.abandoned
                    ? Outcome.failure(new WorkCancelledException(e.submit.handle(), e.submit.scope(), true))
                    : e.outcome;
            e.submit.replyTo().tell(new Finished(e.submit.handle(), e.label, outcome));
        }
    }

    private Behavior<Command> onLaneTerminated(Terminated t) {
        LaneId gone = watched.remove(t.getRef());
        if (gone != null) {
            List<CompletionHandle> lost = new ArrayList<>();
            for (CompletionHandle h : remoteWaits.keySet()) {
                if (h.lane().equals(gone)) {
                    lost.add(h);
                }
            }
            for (CompletionHandle h : lost) {
                Outcome failure = Outcome.failure(new LaneStoppedException(gone, "producer " + h));
                for (Entry consumer : remoteWaits.remove(h)) {
                    applyResolution(consumer, new Ended(failure, h.toString()));
                }
            }
            pump();
            replies.flush();
        }
        return this;
    }

    // ---------------------------------------------------------------- admission

    /** Why {@code count} more submissions cannot be admitted now, or null if they fit. */
    private Rejection admission(int count) {
        if (stopping) {
            return new LaneProtocol.LaneStopped(lane);
        }
        if ((long) inFlight + queued + count > (long) settings.maxInFlight() + settings.maxQueued()) {
            return overloaded(count);
        }
        return null;
    }

    private LaneProtocol.LaneOverloaded overloaded(int requested) {
        return new LaneProtocol.LaneOverloaded(lane, requested, inFlight, queued, settings.maxInFlight(), settings.maxQueued());
    }

    private void reject(Submit<W> s, Rejection reason) {
        release(s.retain());
        replies.add(s.replyTo(), new Rejected(s.handle(), reason));
    }

    private void accept(Submit<W> s) {
        CompletionHandle handle = s.handle();
        Rejection refusal = null;
        if (stopping) {
            refusal = new LaneProtocol.LaneStopped(lane);
        } else if (!handle.lane().equals(lane)) {
            refusal = new LaneProtocol.WrongLane(handle, lane);
        } else if (handles.contains(handle)) {
            refusal = new LaneProtocol.DuplicateHandle(handle);
        } else if (s.after().contains(handle)) {
            refusal = new LaneProtocol.SelfDependency(handle);
        } else if (s.scope() != LaneProtocol.NO_SCOPE && !cancelledScopes.isEmpty()
                && cancelledScopes.containsKey(s.scope())) {
            refusal = new LaneProtocol.ScopeCancelled(s.scope());
        }
        if (refusal != null) {
            reject(s, refusal);
            return;
        }
        Entry e = new Entry(s);
        HandleTable.Early<Entry> early = handles.accept(e);
        queued++;
        load.publish(queued, inFlight);
        if (tracing) {
            e.acceptedAt = System.nanoTime();
        }
        if (early != null) {
            e.localWaiters = early.localWaiters().isEmpty() ? null : early.localWaiters();
            e.subscribers = early.subscribers().isEmpty() ? null : early.subscribers();
        }
        List<CompletionHandle> after = s.after();
        int n = after.size();
        if (n == 0) {
            markReady(e);
            return;
        }
        e.unresolved = n;
        for (int i = 0; i < n; i++) {
            CompletionHandle p = after.get(i);
            if (e.state != WAITING) {
                break; // poisoned by an earlier precondition
            }
            if (p.lane().equals(lane)) {
                followLocal(e, p);
            } else {
                followRemote(e, p);
            }
        }
    }

    private void followLocal(Entry consumer, CompletionHandle p) {
        Entry producer = handles.get(p);
        if (producer == null) {
            handles.waitLocally(p, consumer);
        } else if (producer.state == SUBMITTED) {
            handles.served(producer);
            consumer.orderAfter(producer.completion);
            resolvedOne(consumer);
        } else if (producer.state == ENDED) {
            applyEnded(consumer, producer.outcome, producer.label);
            handles.served(producer);
        } else {
            producer.addLocalWaiter(consumer);
        }
    }

    private void followRemote(Entry consumer, CompletionHandle p) {
        ActorRef<Command> owner;
        try {
            owner = registry.lane(p.lane());
        } catch (UnknownLaneException unknown) {
            poison(consumer, p.toString(), unknown);
            return;
        }
        if (!watched.containsKey(owner)) {
            watched.put(owner, p.lane());
            getContext().watch(owner);
        }
        remoteWaits.computeIfAbsent(p, h -> new ArrayList<>(2)).add(consumer);
        owner.tell(new Subscribe(p, consumer.submit.scope(), selfResolved));
    }

    // ---------------------------------------------------------------- resolution

    @SuppressWarnings("unchecked")
    private void applyResolution(Entry consumer, Resolution resolution) {
        if (consumer.state != WAITING) {
            return;
        }
        if (resolution instanceof OnDevice onDevice) {
            Completion c = onDevice.completion();
            if (c.isDone()) {
                applyEnded(consumer, c.outcome().orElseThrow(), c.label());
            } else {
                // Same device (checked by the caller for pending completions): ordered on the device side.
                consumer.orderAfter((C) c);
                resolvedOne(consumer);
            }
        } else if (resolution instanceof Ended ended) {
            applyEnded(consumer, ended.outcome(), ended.label());
        }
    }

    private void applyEnded(Entry consumer, Outcome outcome, String producerLabel) {
        if (consumer.state != WAITING) {
            return;
        }
        if (outcome instanceof Outcome.Failed failed) {
            poison(consumer, producerLabel, failed.cause());
        } else {
            resolvedOne(consumer);
        }
    }

    private void resolvedOne(Entry consumer) {
        if (consumer.state == WAITING && --consumer.unresolved == 0) {
            markReady(consumer);
        }
    }

    private void markReady(Entry e) {
        e.state = READY;
        if (tracing) {
            long now = System.nanoTime();
            for (CompletionHandle p : e.submit.after()) {
                if (!p.lane().equals(lane)) {
                    trace.record(TraceEvent.waited(laneName, e.submit.handle().toString(), p.toString(), e.acceptedAt, now));
                }
            }
        }
        ready.add(e);
    }

    private void poison(Entry consumer, String producerLabel, Throwable cause) {
        if (consumer.state != WAITING) {
            return;
        }
        consumer.state = DROPPING;
        endUnsubmitted(consumer, Outcome.failure(
                PoisonedPreconditionException.of(consumer.submit.handle().toString(), producerLabel, cause)));
    }

    // ---------------------------------------------------------------- submission

    /** Hands ready work to the executor while in-flight slots are free. */
    private void pump() {
        int max = settings.maxInFlight();
        while (inFlight < max) {
            Entry e = ready.poll();
            if (e == null) {
                return;
            }
            if (e.state == READY) {
                submitNow(e);
            }
        }
    }

    private void submitNow(Entry e) {
        Submit<W> s = e.submit;
        long deadline = s.deadlineNanos();
        if (deadline != LaneProtocol.NO_DEADLINE) {
            long late = System.nanoTime() - deadline;
            if (late >= 0) {
                e.state = DROPPING;
                endUnsubmitted(e, Outcome.failure(new DeadlineExceededException(s.handle().toString(), late)));
                return;
            }
        }
        W work = s.work();
        if (tracing) {
            work = workTracing.instrument(work, e);
        }
        C c;
        try {
            ArrayList<C> producers = e.orderAfter;
            if (producers != null) {
                for (int i = 0, n = producers.size(); i < n; i++) {
                    backend.orderAfter(producers.get(i), executor);
                }
            }
            c = backend.submit(executor, work);
        } catch (RuntimeException refused) {
            e.state = DROPPING;
            endUnsubmitted(e, Outcome.failure(refused));
            return;
        }
        e.orderAfter = null;
        e.completion = c;
        e.label = c.label();
        e.state = SUBMITTED;
        queued--;
        inFlight++;
        load.publish(queued, inFlight);
        List<Object> retain = s.retain();
        for (int i = 0, n = retain.size(); i < n; i++) {
            Object value = retain.get(i);
            try {
                backend.retainUntilComplete(executor, c, value);
            } catch (RuntimeException refused) {
                getContext().getLog().warn("lane {}: backend refused to retain a value of {}; holding it until the exact completion here",
                        lane, s.handle(), refused);
                c.whenDone(o -> Retained.release(value));
            }
        }
        if (tracing) {
            e.submittedAt = System.nanoTime();
            trace.record(TraceEvent.instant(TraceEvent.Kind.SUBMIT, laneName, s.handle().toString(), e.submittedAt));
        }
        replies.add(s.replyTo(), new Submitted(s.handle(), e.label));
        ArrayList<Entry> waiters = e.localWaiters;
        if (waiters != null) {
            e.localWaiters = null;
            for (Entry w : waiters) {
                handles.served(e);
                if (w.state == WAITING) {
                    w.orderAfter(c);
                    resolvedOne(w);
                }
            }
        }
        ArrayList<Subscribe> subs = e.subscribers;
        if (subs != null) {
            e.subscribers = null;
            OnDevice onDevice = new OnDevice(backend, c);
            for (Subscribe sub : subs) {
                handles.served(e);
                sub.subscriber().tell(new Resolved(s.handle(), onDevice));
            }
        }
        c.whenDone(e);
    }

    /** Ends work that was never submitted: releases its values, publishes {@code outcome}, resolves its waiters. */
    private void endUnsubmitted(Entry e, Outcome outcome) {
        Submit<W> s = e.submit;
        e.state = ENDED;
        e.outcome = outcome;
        e.label = s.handle().toString();
        queued--;
        load.publish(queued, inFlight);
        release(s.retain());
        if (tracing) {
            trace.record(TraceEvent.instant(TraceEvent.Kind.DROP, laneName, e.label, System.nanoTime()));
        }
        replies.add(s.replyTo(), new Finished(s.handle(), e.label, outcome));
        ArrayList<Entry> waiters = e.localWaiters;
        if (waiters != null) {
            e.localWaiters = null;
            for (Entry w : waiters) {
                applyEnded(w, outcome, e.label);
                handles.served(e);
            }
        }
        ArrayList<Subscribe> subs = e.subscribers;
        if (subs != null) {
            e.subscribers = null;
            Ended ended = new Ended(outcome, e.label);
            for (Subscribe sub : subs) {
                sub.subscriber().tell(new Resolved(s.handle(), ended));
                handles.served(e);
            }
        }
        handles.forgetIfDone(e);
    }

    private void maybeShutdownExecutor() {
        if (stopping && inFlight == 0 && !executorShutdown) {
            executorShutdown = true;
            Completion stopped = backend.shutdownExecutor(executor);
            stopped.whenDone(o -> self.tell(ExecutorStopped.INSTANCE));
        }
    }

    // ---------------------------------------------------------------- housekeeping

    private Outcome refuseSubscription(Subscribe s) {
        CompletionHandle h = s.handle();
        if (!h.lane().equals(lane)) {
            return Outcome.failure(new UnknownLaneException(h.lane(), List.of(lane)));
        }
        if (stopping) {
            return Outcome.failure(new LaneStoppedException(lane, "subscription to " + h));
        }
        if (s.scope() != LaneProtocol.NO_SCOPE && cancelledScopes.containsKey(s.scope())) {
            return Outcome.failure(new WorkCancelledException(h, s.scope(), false));
        }
        if (handles.pendingSubscriptions() >= settings.maxPendingSubscriptions()) {
            return Outcome.failure(new LaneRejectedException(h, new LaneProtocol.LaneOverloaded(lane, 1, inFlight, queued,
                    settings.maxInFlight(), settings.maxQueued())));
        }
        return null;
    }

    /** Drops waiters that have ended and waiting structures left empty. */
    private void pruneWaiters() {
        handles.pruneEarly(w -> w.state == ENDED);
        for (Iterator<ArrayList<Entry>> it = remoteWaits.values().iterator(); it.hasNext(); ) {
            ArrayList<Entry> l = it.next();
            l.removeIf(w -> w.state == ENDED);
            if (l.isEmpty()) {
                it.remove();
            }
        }
    }

    private void release(List<Object> values) {
        for (int i = 0, n = values.size(); i < n; i++) {
            Retained.release(values.get(i));
        }
    }

    private void signalFinished(Entry e) {
        finished.offer(e);
        if (gone) {
            answerFinishedAfterStop(); // offered before reading the flag: this call or the actor's last one answers it
            return;
        }
        if (!drainScheduled.get() && drainScheduled.compareAndSet(false, true)) {
            self.tell(Drain.INSTANCE);
        }
    }

    /**
     * One accepted submission. Also the callback of its own completion (runs on the executor's
     * thread: it only stores the outcome, records the trace and queues itself for the actor).
     */
    private final class Entry extends HandleTable.Produced implements Consumer<Outcome>, LongConsumer {
        Submit<W> submit;
        byte state = WAITING;
        int unresolved;
        ArrayList<C> orderAfter;
        ArrayList<Entry> localWaiters;
        ArrayList<Subscribe> subscribers;
        C completion;
        String label;
        Outcome outcome;
        boolean abandoned;
        long acceptedAt;
        long submittedAt;
        long startedAt;

        Entry(Submit<W> submit) {
            this.submit = submit;
        }

        @Override
        CompletionHandle handle() {
            return submit.handle();
        }

        @Override
        long scope() {
            return submit.scope();
        }

        @Override
        int expectedConsumers() {
            return submit.expectedConsumers();
        }

        @Override
        boolean hasEnded() {
            return state == ENDED;
        }

        void orderAfter(C producer) {
            if (orderAfter == null) {
                orderAfter = new ArrayList<>(2);
            }
            orderAfter.add(producer);
        }

        void addLocalWaiter(Entry e) {
            if (localWaiters == null) {
                localWaiters = new ArrayList<>(2);
            }
            localWaiters.add(e);
        }

        void subscribe(Subscribe s) {
            if (subscribers == null) {
                subscribers = new ArrayList<>(2);
            }
            subscribers.add(s);
        }

        /** The work started on the executor (called by instrumented work, on the executor's thread). */
        @Override
        public void accept(long nanos) {
            startedAt = nanos;
        }

        /** The exact completion: called once, on the thread that recorded it. */
        @Override
        public void accept(Outcome o) {
            if (tracing) {
                long end = System.nanoTime();
                long start = startedAt != 0 ? startedAt : submittedAt;
                trace.record(TraceEvent.work(laneName, submit.handle().toString(), Math.min(start, end), end, o.isSuccess()));
            }
            outcome = o;
            signalFinished(this);
        }
    }
}
