package io.graphlane.scheduler.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.lane.Retained;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * The pipeline-parallel engine: one actor that owns the lifecycle of every request and keeps
 * micro-batches moving through the stage lanes. For each step it plans every stage's work at
 * once and sends stage k's submission to stage k's lane actor ordered after stage k−1's
 * completion handle (named before submission), so the stages hand off on the device side and
 * the engine never waits. A stage over several lanes (a tensor-parallel stage: one lane per shard)
 * plans several submissions with orders between them ({@link StageStep.Submission}); the engine names
 * each one's handle, sends it to its lane with its intra-stage {@code after} handles, and orders the
 * next stage's entry submissions after every exit of this one. Several micro-batches occupy different
 * stages at the same time; a request has at most one step in flight, so its tokens stay in order. The
 * {@code Finished} replies of the last stage's exits bring the sampled tokens back; the engine appends them, checks the
 * stop conditions and schedules the request's next step. The request states, their deadlines,
 * cancels and single ends are kept in a {@link RequestLedger}; this engine adds the admission
 * queue, the micro-batches and the stage lanes.
 *
 * <p>Admission ({@link Admission}, shared with the {@link Pipeline}) decides at submission whether a request starts or
 * waits; the engine starts waiting requests in order as active slots and KV-cache memory free. When a request that
 * reached the stages ends, the engine has the program forget it and sends the program's change works
 * ({@link StageProgram#planChanges}) to the stage lanes at once; the request's KV-cache reservation is given back when
 * every one of them has finished, so a reservation never outlives, nor ends before, the caches it covers. Only when the
 * engine stops (or a stage lane stopped, after which no request runs again) are the reservations of ended requests
 * given back at once, the caches being freed by whoever closes the program.
 *
 * <p>The engine runs supervised: a failure of its own (a listener's exception never is one, the ledger keeps those
 * to their request) stops it with the failure logged, and on stopping, for any reason, it fails every request it
 * still holds with a {@link PipelineStoppedException} (freeing their admission slots) and cancels the lane work of
 * its steps in flight. {@link Pipeline} watches it and refuses new requests once it stopped.
 */
public final class PipelineEngine<W, A> extends AbstractBehavior<PipelineEngine.Command> {

    /** What the engine accepts. */
    public sealed interface Command permits Admit, Cancel, Stop, LaneAnswer, DeadlineReached, GetStats {
    }

    /**
     * Starts {@code request} (already counted by admission) as {@code requestId}: at once when admission gave it an
     * active slot and its KV-cache reservation ({@code started}), else once they free, in order.
     */
    public record Admit(long requestId, PipelineRequest request, EngineListener listener, boolean started) implements Command {
    }

    /** Cancels a request: its queued steps are dropped, a step in flight finishes unobserved. */
    public record Cancel(long requestId) implements Command {
    }

    /**
     * Fails every request with {@code cause} and stops the engine (the lanes are stopped by their owner).
     * {@link Stopped} is told once every stage submission was answered by its lane, or its lane stopped and
     * the engine let go of what the submission held.
     */
    public record Stop(Throwable cause, ActorRef<Stopped> replyTo) implements Command {
    }

    /** The engine has stopped. */
    public record Stopped() {
    }

    /** Asks for counters. */
    public record GetStats(ActorRef<Stats> replyTo) implements Command {
    }

    /** What the engine has done so far. */
    public record Stats(long steps, long tokens, int activeRequests, int queuedRequests, int batchesInFlight) {
    }

    record LaneAnswer(LaneProtocol.LaneReply reply) implements Command {
    }

    record DeadlineReached(long requestId) implements Command {
    }

    /**
     * One micro-batch in flight: its entries, every submission's handle, the last stage's exits (the step ends once
     * each of them finished) and the last stage's output.
     */
    private static final class InFlight<A> {
        private final MicroBatch batch;
        private final long microBatchId;
        private final List<CompletionHandle> handles;
        private final Set<CompletionHandle> exits;
        private final SharedRelease<A> lastOutput;
        private int exitsLeft;
        private Outcome failed;

        InFlight(MicroBatch batch, long microBatchId, List<CompletionHandle> handles, Set<CompletionHandle> exits,
                 SharedRelease<A> lastOutput) {
            this.batch = batch;
            this.microBatchId = microBatchId;
            this.handles = handles;
            this.exits = exits;
            this.lastOutput = lastOutput;
            this.exitsLeft = exits.size();
        }

        MicroBatch batch() {
            return batch;
        }

        long microBatchId() {
            return microBatchId;
        }

        List<CompletionHandle> handles() {
            return handles;
        }

        SharedRelease<A> lastOutput() {
            return lastOutput;
        }

        /** Records that {@code handle} finished with {@code outcome}; true once it was the last exit of the step to finish. */
        boolean exitFinished(CompletionHandle handle, Outcome outcome) {
            if (!exits.contains(handle)) {
                return false;
            }
            if (outcome instanceof Outcome.Failed && failed == null) {
                failed = outcome;
            }
            return --exitsLeft == 0;
        }

        /** The step's outcome once every exit finished: the first failure among them, else {@code last}. */
        Outcome outcome(Outcome last) {
            return failed != null ? failed : last;
        }
    }

    private final LaneRegistry registry;
    /** Per stage, its lanes (one, or one per shard of a tensor-parallel stage). */
    private final List<List<LaneId>> stageLanes;
    /** Every lane of every stage, stage by stage; {@link #lanes} holds their actors in the same order. */
    private final List<LaneId> laneIds;
    private final List<ActorRef<LaneProtocol.Command>> lanes;
    private final StageProgram<W, A> program;
    private final PipelineSettings settings;
    private final ActorRef<LaneProtocol.LaneReply> replies;
    private final RequestLedger<Command> requests;
    private final Admission admission;
    private final PipelineLoad load;
    /** The KV-cache reservation of each running request, in bytes. */
    private final Map<Long, Long> reservations = new HashMap<>();
    /** Reservations of ended requests whose caches the program was told to forget, not yet covered by change works sent. */
    private final Map<Long, Long> unfreed = new HashMap<>();
    /** The change works sent and not yet finished, each to what it frees. */
    private final Map<CompletionHandle, ChangeRound> changeRoundOf = new HashMap<>();
    /**
     * Reservations of a round a lane refused a change work of (it was full): the stage's next change work applies
     * every change still waiting, so they ride with the next round rather than being sent again at once.
     */
    private final Map<Long, Long> stranded = new HashMap<>();
    /** Admitted requests waiting for an active slot; every other request held is active. */
    private final ArrayDeque<Long> waiting = new ArrayDeque<>();
    private final ArrayDeque<Long> ready = new ArrayDeque<>();
    /** Requests that run their next step alone: a micro-batch they were part of failed, and only a step of their own tells whose failure it was. */
    private final ArrayDeque<Long> readySolo = new ArrayDeque<>();
    /** Every stage handle of every step in flight, to its step. */
    private final Map<CompletionHandle, InFlight<A>> stepOfHandle = new HashMap<>();
    private final Map<Long, InFlight<A>> inFlight = new LinkedHashMap<>();
    private final CompletableFuture<Void> stopping;
    /**
     * Stage submissions sent and not yet answered by their lane, with the values each retains (the outputs
     * it holds, and what its stage program gave it to retain). A lane answers every submission it receives
     * before it stops; one still unanswered when the lane has stopped reached it too late and was lost, so
     * the engine lets go of what it held.
     */
    private final Map<CompletionHandle, List<Object>> unanswered = new HashMap<>();
    /** Set once the engine was told to stop: why every later request fails at once. */
    private Throwable stopCause;
    /** Who asked the engine to stop: told once it has let go of every stage output it held. */
    private final List<ActorRef<Stopped>> stopReplies = new ArrayList<>(1);
    /** Set once a stage lane stopped for good: why every request fails from then on. */
    private LaneStoppedException laneGone;
    private long steps;
    private long tokens;

    private PipelineEngine(ActorContext<Command> context, TimerScheduler<Command> timers, LaneRegistry registry, List<List<LaneId>> stageLanes,
                           StageProgram<W, A> program, PipelineSettings settings, Admission admission, AtomicInteger admitted,
                           PipelineLoad load, CompletableFuture<Void> stopping) {
        super(context);
        this.admission = admission;
        this.load = load;
        this.stopping = stopping;
        this.registry = registry;
        List<List<LaneId>> perStage = new ArrayList<>();
        List<LaneId> all = new ArrayList<>();
        for (List<LaneId> l : stageLanes) {
            perStage.add(List.copyOf(l));
            all.addAll(l);
        }
        this.stageLanes = List.copyOf(perStage);
        this.laneIds = List.copyOf(all);
        this.program = program;
        this.settings = settings;
        this.requests = new RequestLedger<>(timers, DeadlineReached::new, admitted, this::ended);
        List<ActorRef<LaneProtocol.Command>> refs = new ArrayList<>();
        for (LaneId lane : laneIds) {
            ActorRef<LaneProtocol.Command> ref = registry.lane(lane);
            refs.add(ref);
            // A stage lane that stops for good answers nothing sent to it afterwards: learn of it, or requests would wait forever.
            context.watch(ref);
        }
        this.lanes = List.copyOf(refs);
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
    }

    /**
     * The engine's behavior over stages that may each run on several lanes: {@code stageLanes.get(k)} are stage k's lanes,
     * as many as {@link StageProgram#laneCount} says, found in {@code registry}, and a submission of stage k on lane index
     * r goes to {@code stageLanes.get(k).get(r)}. {@code admission} is what the {@link Pipeline} admits against;
     * {@code admitted} counts requests held (the caller increments it on admission; the engine decrements it when a
     * request ends); the engine publishes its counts to {@code load} and completes {@code stopping} as it stops, before
     * it fails the requests it still holds, so that a caller who retries on their failure is refused at once.
     */
    static <W, A> Behavior<Command> createMultiLane(LaneRegistry registry, List<List<LaneId>> stageLanes, StageProgram<W, A> program,
                                                    PipelineSettings settings, Admission admission, AtomicInteger admitted,
                                                    PipelineLoad load, CompletableFuture<Void> stopping) {
        java.util.Objects.requireNonNull(load, "load");
        java.util.Objects.requireNonNull(admission, "admission");
        if (stageLanes.size() != program.stageCount()) {
            throw new IllegalArgumentException("the stage program has " + program.stageCount() + " stages but lanes for " + stageLanes.size()
                    + " stages were given");
        }
        for (int k = 0; k < stageLanes.size(); k++) {
            if (stageLanes.get(k).size() != program.laneCount(k)) {
                throw new IllegalArgumentException("stage " + k + " of the stage program runs on " + program.laneCount(k) + " lane(s) but "
                        + stageLanes.get(k).size() + " were given");
            }
        }
        return Behaviors.supervise(Behaviors.<Command>setup(ctx -> Behaviors.withTimers(timers ->
                new PipelineEngine<>(ctx, timers, registry, stageLanes, program, settings, admission, admitted, load, stopping))))
                .onFailure(SupervisorStrategy.stop().withLoggingEnabled(true));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Admit.class, this::onAdmit)
                .onMessage(LaneAnswer.class, this::onLaneAnswer)
                .onMessage(Cancel.class, this::onCancel)
                .onMessage(DeadlineReached.class, this::onDeadline)
                .onMessage(GetStats.class, this::onGetStats)
                .onMessage(Stop.class, this::onStop)
                .onSignal(PostStop.class, signal -> onPostStop())
                .onSignal(Terminated.class, this::onLaneTerminated)
                .build();
    }

    private Behavior<Command> onAdmit(Admit admit) {
        long id = admit.requestId();
        // Where it stands in admission first: a request whose deadline has passed ends inside admit() and gives its place back.
        if (admit.started()) {
            reservations.put(id, admission.budget().reservation(admit.request()));
        } else {
            waiting.add(id);
        }
        RequestLedger.Entry a = requests.admit(id, admit.request(), admit.listener());
        if (a != null) {
            if (stopCause != null || laneGone != null) {
                requests.fail(a, stopCause != null ? stopCause : laneGone);
            } else if (admit.started()) {
                ready.add(id);
            }
        }
        afterChange();
        return this;
    }

    /** A stage lane stopped: no step can run any more, so every request fails now, and every later one at once. */
    private Behavior<Command> onLaneTerminated(Terminated t) {
        int k = lanes.indexOf(t.getRef());
        if (k >= 0) {
            LaneId lane = laneIds.get(k);
            unanswered.entrySet().removeIf(e -> {
                if (!e.getKey().lane().equals(lane)) {
                    return false;
                }
                e.getValue().forEach(Retained::release);
                return true;
            });
            // Change works the lane never ran: nothing will run on it again.
            List.copyOf(changeRoundOf.keySet()).stream().filter(h -> h.lane().equals(lane)).forEach(this::changeWorkEnded);
            if (stopCause == null) {
                laneStopped(lane);
            }
        }
        return stopOnceAnswered();
    }

    private static CompletionHandle handleOf(LaneProtocol.LaneReply reply) {
        if (reply instanceof LaneProtocol.Finished f) {
            return f.handle();
        } else if (reply instanceof LaneProtocol.Submitted s) {
            return s.handle();
        } else if (reply instanceof LaneProtocol.Rejected r) {
            return r.handle();
        }
        return null;
    }

    private void laneStopped(LaneId lane) {
        if (laneGone == null) {
            laneGone = new LaneStoppedException(lane, stageOf(lane) + " of the pipeline");
            LaneStoppedException cause = laneGone;
            requests.failAll(id -> cause);
            abandonInFlight();
        }
    }

    /** Which stage {@code lane} serves, in words: {@code stage 1}, or {@code stage 1 (lane 0 of 2)} on a stage of several lanes. */
    private String stageOf(LaneId lane) {
        for (int k = 0; k < stageLanes.size(); k++) {
            int r = stageLanes.get(k).indexOf(lane);
            if (r >= 0) {
                int of = stageLanes.get(k).size();
                return of == 1 ? "stage " + k : "stage " + k + " (lane " + r + " of " + of + ")";
            }
        }
        return "lane " + lane;
    }

    private Behavior<Command> onCancel(Cancel cancel) {
        requests.cancel(cancel.requestId());
        afterChange();
        return this;
    }

    private Behavior<Command> onDeadline(DeadlineReached reached) {
        requests.deadlineReached(reached.requestId());
        afterChange();
        return this;
    }

    private Behavior<Command> onGetStats(GetStats get) {
        get.replyTo().tell(new Stats(steps, tokens, activeCount(), waiting.size(), inFlight.size()));
        return this;
    }

    private Behavior<Command> onStop(Stop stop) {
        if (stopCause == null) {
            stopCause = stop.cause();
        }
        requests.failAll(id -> stop.cause());
        abandonInFlight();
        releaseAllReservations();
        stopReplies.add(stop.replyTo());
        // Some stage submissions may not be answered yet: stay until each is, or its lane has stopped (then
        // what it held is let go here), so none is lost with the outputs it holds. Nothing new is started,
        // and Stopped is told only then: whoever frees what the stage program holds once the engine stopped
        // finds every output the engine held already let go.
        return stopOnceAnswered();
    }

    private Behavior<Command> stopOnceAnswered() {
        if (stopCause == null || !unanswered.isEmpty()) {
            return this;
        }
        publishLoad();
        Stopped stopped = new Stopped();
        stopReplies.forEach(r -> r.tell(stopped));
        return Behaviors.stopped();
    }

    /**
     * Gives up every step in flight: its queued stage work is dropped by the lanes, and the engine lets
     * go of each step's last output (its reader), which is then freed once the last stage's work has
     * ended (that work still holds it). The steps' replies are never read.
     */
    private void abandonInFlight() {
        for (InFlight<A> f : inFlight.values()) {
            for (ActorRef<LaneProtocol.Command> lane : lanes) {
                lane.tell(new LaneProtocol.Cancel(f.microBatchId()));
            }
            if (f.lastOutput() != null) {
                f.lastOutput().release();
            }
        }
        inFlight.clear();
        stepOfHandle.clear();
    }

    /** Runs whenever the engine stops: after a {@link Stop} nothing is held any more; after a failure, every request fails here. */
    private Behavior<Command> onPostStop() {
        stopping.complete(null);
        if (requests.size() > 0) {
            getContext().getLog().error("pipeline engine {} stopped with {} requests held; they fail and the pipeline refuses new ones",
                    getContext().getSelf().path().name(), requests.size());
            String why = "the pipeline engine " + getContext().getSelf().path().name() + " stopped after an internal failure";
            try {
                requests.failAll(id -> new PipelineStoppedException(why));
            } finally {
                abandonInFlight();
                releaseAllReservations();
                publishLoad();
            }
        }
        releaseAllReservations();
        return this;
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        if (stopCause != null) {
            answer.reply().forEach(reply -> unanswered.remove(handleOf(reply)));
            return stopOnceAnswered();
        }
        answer.reply().forEach(reply -> {
            unanswered.remove(handleOf(reply));
            if ((reply instanceof LaneProtocol.Finished || reply instanceof LaneProtocol.Rejected)
                    && changeRoundOf.containsKey(handleOf(reply))) {
                if (reply instanceof LaneProtocol.Rejected rejected) {
                    if (rejected.reason() instanceof LaneProtocol.LaneStopped stopped) {
                        laneStopped(stopped.lane());
                    } else {
                        changeRoundOf.get(rejected.handle()).refused = true;
                    }
                }
                changeWorkEnded(handleOf(reply));
                return;
            }
            if (reply instanceof LaneProtocol.Finished finished) {
                InFlight<A> f = stepOfHandle.get(finished.handle());
                if (f != null && f.exitFinished(finished.handle(), finished.outcome())) {
                    forgetStep(f);
                    stepEnded(f, f.outcome(finished.outcome()));
                }
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                if (rejected.reason() instanceof LaneProtocol.LaneStopped stopped) {
                    // The lane is going away: send it nothing more (what reaches it after it stopped would be lost).
                    laneStopped(stopped.lane());
                }
                InFlight<A> f = stepOfHandle.get(rejected.handle());
                if (f != null) {
                    // Nothing after the refused stage can run: drop the step's queued work everywhere.
                    forgetStep(f);
                    for (ActorRef<LaneProtocol.Command> lane : lanes) {
                        lane.tell(new LaneProtocol.Cancel(f.microBatchId()));
                    }
                    stepEnded(f, Outcome.failure(rejected.toException()));
                }
            }
        });
        afterChange();
        return this;
    }

    /** After any message that may have ended requests or freed room: free what ended, start what fits, publish. */
    private void afterChange() {
        sendChanges();
        pump();
        publishLoad();
    }

    private void publishLoad() {
        load.publish(activeCount(), waiting.size(), steps, tokens);
    }

    private void forgetStep(InFlight<A> f) {
        inFlight.remove(f.microBatchId());
        f.handles().forEach(stepOfHandle::remove);
    }

    private void stepEnded(InFlight<A> f, Outcome outcome) {
        SampledToken[] sampled = null;
        Throwable failure = null;
        if (outcome instanceof Outcome.Failed failed) {
            failure = failed.cause();
        } else {
            try {
                sampled = program.sampledTokens(f.batch(), f.lastOutput().value());
                int expected = f.batch().entries().size();
                if (sampled == null || sampled.length != expected) {
                    failure = new IllegalStateException("the stage program returned " + (sampled == null ? "no" : sampled.length)
                            + " sampled tokens for a micro-batch of " + expected + " requests");
                }
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        if (f.lastOutput() != null) {
            f.lastOutput().release();
        }
        List<MicroBatch.Entry> entries = f.batch().entries();
        for (int i = 0; i < entries.size(); i++) {
            RequestLedger.Entry a = requests.get(entries.get(i).requestId());
            if (a == null || !requests.stepReturned(a)) {
                continue; // ended already, or cancelled while the step ran (reported then, ended now)
            }
            if (failure != null) {
                if (entries.size() > 1) {
                    // A failure local to one request must fail only that request: take back what the stages
                    // that ran added for each, and run each alone from where the step began.
                    program.rewind(a.id(), a.position());
                    readySolo.add(a.id());
                } else {
                    requests.fail(a, failure);
                }
                continue;
            }
            tokens++;
            if (requests.tokenSampled(a, sampled[i])) {
                ready.add(a.id());
            }
        }
    }

    /**
     * What this engine drops when a request ends: its place in the queues, its admission (a queued place, or an active
     * slot) and, once no step of it runs, its stage state; its KV-cache reservation waits for the caches to be freed.
     */
    private void ended(RequestLedger.Entry a) {
        long id = a.id();
        ready.remove(id);
        readySolo.remove(id);
        if (waiting.remove(id)) {
            admission.queuedEnded();
            return;
        }
        long bytes = reservations.remove(id);
        admission.activeEnded();
        if (a.stepsSent() > 0 && !a.inFlight()) {
            unfreed.put(id, bytes); // before the program is asked: a fault of it still finds the reservation to give back
            program.forget(id);
        } else {
            // Nothing of it reached a stage; or the engine is stopping (or lost a lane) with its step in flight, and the
            // program's owner frees every cache once the lanes stopped, while no request runs any more.
            admission.release(bytes);
        }
    }

    /**
     * Frees at once what ended requests left on the stages: the program's change works for every stage are sent to
     * the lanes, and the reservations of those requests are given back once every one of them has finished (at once if
     * the program plans none: its forget freed them). While the engine stops, or after a lane stopped, nothing more is
     * sent and the reservations are given back now.
     */
    private void sendChanges() {
        if (unfreed.isEmpty()) {
            return;
        }
        Map<Long, Long> covered = new HashMap<>(unfreed);
        covered.putAll(stranded);
        ChangeRound round = new ChangeRound(covered);
        unfreed.clear();
        stranded.clear();
        if (stopCause != null || laneGone != null) {
            round.releaseTo(admission);
            return;
        }
        for (int k = 0; k < stageLanes.size(); k++) {
            List<ActorRef<LaneProtocol.Command>> refs = stageRefs(k);
            for (StageStep.Submission<W> s : program.planChanges(k)) {
                CompletionHandle handle = CompletionHandle.local(stageLanes.get(k).get(s.lane()), registry.reserveSequences(1));
                round.handles.add(handle);
                changeRoundOf.put(handle, round);
                unanswered.put(handle, List.copyOf(s.retain()));
                refs.get(s.lane()).tell(new LaneProtocol.Submit<>(handle, s.work(), List.of(), s.retain(), registry.newScope(),
                        LaneProtocol.NO_DEADLINE, 0, replies));
            }
        }
        if (round.handles.isEmpty()) {
            round.releaseTo(admission);
        }
    }

    /**
     * A change work finished (whatever its outcome: a failed one was a lost stage's or the program's fault), was refused
     * or its lane stopped: once every work of its round has, the round's reservations go back, unless a lane refused one
     * of them (the changes there are still waiting; the next round takes those reservations along).
     */
    private void changeWorkEnded(CompletionHandle handle) {
        ChangeRound round = changeRoundOf.remove(handle);
        if (round != null && round.handles.remove(handle) && round.handles.isEmpty()) {
            if (round.refused && stopCause == null && laneGone == null) {
                stranded.putAll(round.reservations);
            } else {
                round.releaseTo(admission);
            }
        }
    }

    /** The engine stops: every reservation it still tracks goes back once (no request will run on this engine again). */
    private void releaseAllReservations() {
        unfreed.values().forEach(admission::release);
        unfreed.clear();
        stranded.values().forEach(admission::release);
        stranded.clear();
        Set<ChangeRound> rounds = Collections.newSetFromMap(new IdentityHashMap<>());
        rounds.addAll(changeRoundOf.values());
        changeRoundOf.clear();
        rounds.forEach(r -> r.releaseTo(admission));
        reservations.values().forEach(admission::release);
        reservations.clear();
    }

    /** The change works sent for some ended requests, and the reservations they free once all have finished. */
    private static final class ChangeRound {
        private final Map<Long, Long> reservations;
        private final Set<CompletionHandle> handles = new HashSet<>();
        /** Whether a lane refused one of the round's works. */
        private boolean refused;
        private boolean released;

        ChangeRound(Map<Long, Long> reservations) {
            this.reservations = reservations;
        }

        void releaseTo(Admission admission) {
            if (!released) {
                released = true;
                reservations.values().forEach(admission::release);
            }
        }
    }

    /** Requests holding an active slot: every request held but those waiting for one. */
    private int activeCount() {
        return requests.size() - waiting.size();
    }

    /** Starts waiting requests, in order, while admission has a slot and room for them; then forms and submits steps while batch slots are free. */
    private void pump() {
        if (stopCause != null) {
            return;
        }
        while (!waiting.isEmpty()) {
            long id = waiting.peek();
            long bytes = admission.budget().reservation(requests.get(id).request());
            if (!admission.startQueued(bytes)) {
                break;
            }
            waiting.poll();
            reservations.put(id, bytes);
            ready.add(id);
        }
        while (!readySolo.isEmpty() && inFlight.size() < settings.maxInFlightBatches()) {
            submitStep(new MicroBatch(registry.newScope(), List.of(stepOf(requests.get(readySolo.poll())))));
        }
        while (!ready.isEmpty() && inFlight.size() < settings.maxInFlightBatches()) {
            // Spread the active requests evenly over the micro-batches the pipeline holds: a decode step
            // reads every weight once whatever its size, so fewer, fuller steps share that read.
            int target = (activeCount() + settings.maxInFlightBatches() - 1) / settings.maxInFlightBatches();
            int size = Math.max(1, Math.min(settings.maxBatchSize(), target));
            List<MicroBatch.Entry> entries = new ArrayList<>(size);
            while (entries.size() < size && !ready.isEmpty()) {
                entries.add(stepOf(requests.get(ready.poll())));
            }
            submitStep(new MicroBatch(registry.newScope(), entries));
        }
    }

    /** Marks {@code a}'s next step as sent and returns its part of the micro-batch. */
    private MicroBatch.Entry stepOf(RequestLedger.Entry a) {
        requests.stepSent(a);
        return new MicroBatch.Entry(a.id(), a.nextInput(), a.position(), a.request().sampling(),
                (int) Math.min(Integer.MAX_VALUE, a.request().kvPositions()));
    }

    /**
     * Plans every stage of one step, then sends each stage's submissions to its lanes, chained by handles: a stage's
     * entries after the previous stage's exits, its other submissions after the earlier ones of the stage they name.
     */
    private void submitStep(MicroBatch batch) {
        int stages = stageLanes.size();
        long microBatchId = batch.id();
        steps++;
        List<StageStep<W, A>> planned = new ArrayList<>(stages);
        A previous = null;
        try {
            for (int k = 0; k < stages; k++) {
                StageStep<W, A> step = program.plan(k, batch, previous);
                planned.add(step);
                checkLanes(k, step);
                previous = step.output();
            }
        } catch (RuntimeException e) {
            // Nothing of the step was sent: let go of what the planned stages hold, and the step fails.
            for (StageStep<W, A> step : planned) {
                step.submissions().forEach(s -> s.retain().forEach(Retained::release));
                program.release(step.output());
            }
            stepEnded(new InFlight<>(batch, microBatchId, List.of(), Set.of(), null), Outcome.failure(e));
            return;
        }
        List<CompletionHandle> handles = new ArrayList<>();
        List<CompletionHandle> previousExits = List.of();
        SharedRelease<A> previousOutput = null;
        for (int k = 0; k < stages; k++) {
            StageStep<W, A> step = planned.get(k);
            List<StageStep.Submission<W>> subs = step.submissions();
            int n = subs.size();
            int[] consumersWithin = new int[n];
            for (StageStep.Submission<W> s : subs) {
                s.after().forEach(j -> consumersWithin[j]++);
            }
            int nextEntries = k < stages - 1 ? entryCount(planned.get(k + 1)) : 0;
            // The output is held by every submission of this stage and by each of its readers (the next stage's
            // entries, or the engine after the last stage); it is freed once, after all of them let go.
            SharedRelease<A> output = SharedRelease.of(step.output(), program, n + (k < stages - 1 ? nextEntries : 1));
            long firstSequence = registry.reserveSequences(n);
            CompletionHandle[] stageHandles = new CompletionHandle[n];
            List<CompletionHandle> exits = new ArrayList<>(1);
            List<ActorRef<LaneProtocol.Command>> refs = stageRefs(k);
            for (int i = 0; i < n; i++) {
                StageStep.Submission<W> s = subs.get(i);
                CompletionHandle handle = CompletionHandle.local(stageLanes.get(k).get(s.lane()), firstSequence + i);
                stageHandles[i] = handle;
                boolean entry = s.after().isEmpty();
                List<CompletionHandle> after;
                if (entry) {
                    after = previousExits;
                } else {
                    after = new ArrayList<>(s.after().size());
                    for (int j : s.after()) {
                        after.add(stageHandles[j]);
                    }
                }
                List<Object> retain = new ArrayList<>(s.retain().size() + 2);
                retain.addAll(s.retain());
                retain.add(output.asCloseable());
                if (entry && previousOutput != null) {
                    retain.add(previousOutput.asCloseable());
                }
                boolean exit = consumersWithin[i] == 0;
                int consumers = consumersWithin[i] + (exit ? nextEntries : 0);
                refs.get(s.lane()).tell(new LaneProtocol.Submit<>(handle, s.work(), after, retain, microBatchId,
                        LaneProtocol.NO_DEADLINE, consumers, replies));
                unanswered.put(handle, retain);
                handles.add(handle);
                if (exit) {
                    exits.add(handle);
                }
            }
            previousExits = List.copyOf(exits);
            previousOutput = output;
        }
        InFlight<A> f = new InFlight<>(batch, microBatchId, List.copyOf(handles), Set.copyOf(previousExits), previousOutput);
        inFlight.put(microBatchId, f);
        handles.forEach(h -> stepOfHandle.put(h, f));
    }

    /** Refuses a planned step that names a lane stage {@code k} does not have. */
    private void checkLanes(int k, StageStep<W, A> step) {
        int have = stageLanes.get(k).size();
        for (StageStep.Submission<W> s : step.submissions()) {
            if (s.lane() >= have) {
                throw new IllegalStateException("the stage program planned work on lane " + s.lane() + " of stage " + k + ", which has "
                        + have + " lane(s)");
            }
        }
    }

    private static int entryCount(StageStep<?, ?> step) {
        int n = 0;
        for (int i = 0; i < step.submissions().size(); i++) {
            if (step.isEntry(i)) {
                n++;
            }
        }
        return n;
    }

    private List<ActorRef<LaneProtocol.Command>> stageRefs(int k) {
        int from = 0;
        for (int j = 0; j < k; j++) {
            from += stageLanes.get(j).size();
        }
        return lanes.subList(from, from + stageLanes.get(k).size());
    }
}
