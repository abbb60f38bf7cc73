package io.graphlane.scheduler.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
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
 * the engine never waits. Several micro-batches occupy different stages at the same time; a
 * request has at most one step in flight, so its tokens stay in order. The last stage's
 * {@code Finished} reply brings the sampled tokens back; the engine appends them, checks the
 * stop conditions and schedules the request's next step.
 */
public final class PipelineEngine<W, A> extends AbstractBehavior<PipelineEngine.Command> {

    /** What the engine accepts. */
    public sealed interface Command permits Admit, Cancel, Stop, LaneAnswer, DeadlineReached, GetStats {
    }

    /** Starts {@code request} (already counted by admission) as {@code requestId}. */
    public record Admit(long requestId, PipelineRequest request, TokenListener listener) implements Command {
    }

    /** Cancels a request: its queued steps are dropped, a step in flight finishes unobserved. */
    public record Cancel(long requestId) implements Command {
    }

    /** Fails every request with {@code cause} and stops the engine (the lanes are stopped by their owner). */
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

    /** One request's state. */
    private static final class Active {
        final long id;
        final PipelineRequest request;
        final TokenListener listener;
        int position;
        int[] nextInput;
        int generated;
        boolean started;
        boolean inFlight;
        boolean cancelled;
        boolean deadlinePassed;
        boolean reported;
        /** Runs its next step alone: a micro-batch it was part of failed, and only a step of its own tells whose failure it was. */
        boolean solo;

        Active(long id, PipelineRequest request, TokenListener listener) {
            this.id = id;
            this.request = request;
            this.listener = listener;
            this.nextInput = request.promptIds();
        }
    }

    /** One micro-batch in flight: its entries, every stage's handle, and the last stage's output. */
    private record InFlight<A>(MicroBatch batch, long laneRequestId, List<CompletionHandle> handles, SharedRelease<A> lastOutput) {
        CompletionHandle last() {
            return handles.get(handles.size() - 1);
        }
    }

    private final LaneRegistry registry;
    private final List<LaneId> stageLanes;
    private final List<ActorRef<LaneProtocol.Command>> lanes;
    private final StageProgram<W, A> program;
    private final PipelineSettings settings;
    private final AtomicInteger admitted;
    private final TimerScheduler<Command> timers;
    private final ActorRef<LaneProtocol.LaneReply> replies;
    private final Map<Long, Active> requests = new HashMap<>();
    private final ArrayDeque<Long> waiting = new ArrayDeque<>();
    private final ArrayDeque<Long> ready = new ArrayDeque<>();
    private final ArrayDeque<Long> readySolo = new ArrayDeque<>();
    /** Every stage handle of every step in flight, to its step. */
    private final Map<CompletionHandle, InFlight<A>> stepOfHandle = new HashMap<>();
    private final Map<Long, InFlight<A>> inFlight = new LinkedHashMap<>();
    private int activeCount;
    private long steps;
    private long tokens;

    private PipelineEngine(ActorContext<Command> context, TimerScheduler<Command> timers, LaneRegistry registry, List<LaneId> stageLanes,
                           StageProgram<W, A> program, PipelineSettings settings, AtomicInteger admitted) {
        super(context);
        this.timers = timers;
        this.registry = registry;
        this.stageLanes = List.copyOf(stageLanes);
        this.program = program;
        this.settings = settings;
        this.admitted = admitted;
        List<ActorRef<LaneProtocol.Command>> refs = new ArrayList<>();
        for (LaneId lane : stageLanes) {
            refs.add(registry.lane(lane));
        }
        this.lanes = List.copyOf(refs);
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
    }

    /**
     * The engine's behavior over the stage lanes {@code stageLanes} (stage k on lane k), found in
     * {@code registry}. {@code admitted} counts requests held (the caller increments it on admission;
     * the engine decrements it when a request ends).
     */
    public static <W, A> Behavior<Command> create(LaneRegistry registry, List<LaneId> stageLanes, StageProgram<W, A> program,
                                                  PipelineSettings settings, AtomicInteger admitted) {
        if (stageLanes.size() != program.stageCount()) {
            throw new IllegalArgumentException("the stage program has " + program.stageCount() + " stages but " + stageLanes.size()
                    + " stage lanes were given");
        }
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers ->
                new PipelineEngine<>(ctx, timers, registry, stageLanes, program, settings, admitted)));
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
                .build();
    }

    private Behavior<Command> onAdmit(Admit admit) {
        Active a = new Active(admit.requestId(), admit.request(), admit.listener());
        requests.put(a.id, a);
        waiting.add(a.id);
        long deadline = admit.request().deadlineNanos();
        if (deadline != Long.MAX_VALUE) {
            long delay = deadline - System.nanoTime();
            if (delay <= 0) {
                return onDeadline(new DeadlineReached(a.id));
            }
            timers.startSingleTimer(a.id, new DeadlineReached(a.id), Duration.ofNanos(delay));
        }
        pump();
        return this;
    }

    private Behavior<Command> onCancel(Cancel cancel) {
        Active a = requests.get(cancel.requestId());
        if (a != null && !a.cancelled) {
            a.cancelled = true;
            if (!a.inFlight) {
                end(a, null, new RequestCancelledException(a.id));
            } else {
                // The step in flight finishes unobserved (its work keeps what it retains until its exact
                // completion); the request's state is dropped when it does.
                a.reported = true;
                a.listener.onFailed(new RequestCancelledException(a.id));
            }
        }
        return this;
    }

    private Behavior<Command> onDeadline(DeadlineReached reached) {
        Active a = requests.get(reached.requestId());
        if (a != null && !a.cancelled) {
            if (a.inFlight) {
                a.deadlinePassed = true;
            } else {
                end(a, null, new RequestDeadlineExceededException(a.id, a.generated));
            }
        }
        return this;
    }

    private Behavior<Command> onGetStats(GetStats get) {
        get.replyTo().tell(new Stats(steps, tokens, activeCount, waiting.size(), inFlight.size()));
        return this;
    }

    private Behavior<Command> onStop(Stop stop) {
        for (Active a : List.copyOf(requests.values())) {
            if (!a.reported) {
                a.reported = true;
                a.listener.onFailed(stop.cause());
            }
            a.cancelled = true;
        }
        for (InFlight<A> f : inFlight.values()) {
            for (ActorRef<LaneProtocol.Command> lane : lanes) {
                lane.tell(new LaneProtocol.Cancel(f.laneRequestId()));
            }
        }
        stop.replyTo().tell(new Stopped());
        return Behaviors.stopped();
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        answer.reply().forEach(reply -> {
            if (reply instanceof LaneProtocol.Finished finished) {
                InFlight<A> f = stepOfHandle.get(finished.handle());
                if (f != null && f.last().equals(finished.handle())) {
                    forgetStep(f);
                    stepEnded(f, finished.outcome());
                }
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                InFlight<A> f = stepOfHandle.get(rejected.handle());
                if (f != null) {
                    // Nothing after the refused stage can run: drop the step's queued work everywhere.
                    forgetStep(f);
                    for (ActorRef<LaneProtocol.Command> lane : lanes) {
                        lane.tell(new LaneProtocol.Cancel(f.laneRequestId()));
                    }
                    stepEnded(f, Outcome.failure(rejected.toException()));
                }
            }
        });
        pump();
        return this;
    }

    private void forgetStep(InFlight<A> f) {
        inFlight.remove(f.laneRequestId());
        f.handles().forEach(stepOfHandle::remove);
    }

    private void stepEnded(InFlight<A> f, Outcome outcome) {
        int[] sampled = null;
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
            Active a = requests.get(entries.get(i).requestId());
            if (a == null) {
                continue;
            }
            a.inFlight = false;
            if (a.cancelled) {
                end(a, null, null);
                continue;
            }
            if (failure != null) {
                if (entries.size() > 1) {
                    // A failure local to one request must fail only that request: take back what the stages
                    // that ran added for each, and run each alone from where the step began.
                    program.rewind(a.id, a.position);
                    a.solo = true;
                    readySolo.add(a.id);
                } else {
                    end(a, null, failure);
                }
                continue;
            }
            a.solo = false;
            int token = sampled[i];
            a.position += entries.get(i).tokens().length;
            a.generated++;
            tokens++;
            a.listener.onToken(token);
            if (token == a.request.endOfSequenceToken()) {
                end(a, TokenListener.StopReason.END_OF_SEQUENCE, null);
            } else if (a.generated >= a.request.maxNewTokens()) {
                end(a, TokenListener.StopReason.LENGTH, null);
            } else if (a.deadlinePassed) {
                end(a, null, new RequestDeadlineExceededException(a.id, a.generated));
            } else {
                a.nextInput = new int[] {token};
                ready.add(a.id);
            }
        }
    }

    /** Ends a request: reports (unless already reported), drops its state, frees its admission slot. */
    private void end(Active a, TokenListener.StopReason reason, Throwable failure) {
        requests.remove(a.id);
        waiting.remove(a.id);
        ready.remove(a.id);
        readySolo.remove(a.id);
        timers.cancel(a.id);
        if (a.started) {
            activeCount--;
            program.forget(a.id);
        }
        admitted.decrementAndGet();
        if (a.reported) {
            return;
        }
        a.reported = true;
        if (reason != null) {
            a.listener.onFinished(reason);
        } else {
            a.listener.onFailed(failure != null ? failure : new RequestCancelledException(a.id));
        }
    }

    /** Starts waiting requests while active slots are free, then forms and submits steps while batch slots are free. */
    private void pump() {
        while (!waiting.isEmpty() && activeCount < settings.maxActiveRequests()) {
            Active a = requests.get(waiting.poll());
            a.started = true;
            activeCount++;
            ready.add(a.id);
        }
        while (!readySolo.isEmpty() && inFlight.size() < settings.maxInFlightBatches()) {
            Active a = requests.get(readySolo.poll());
            a.inFlight = true;
            submitStep(new MicroBatch(registry.newRequestId(), List.of(new MicroBatch.Entry(a.id, a.nextInput, a.position, a.request.sampling()))));
        }
        while (!ready.isEmpty() && inFlight.size() < settings.maxInFlightBatches()) {
            // Spread the active requests evenly over the micro-batches the pipeline holds: a decode step
            // reads every weight once whatever its size, so fewer, fuller steps share that read.
            int target = (activeCount + settings.maxInFlightBatches() - 1) / settings.maxInFlightBatches();
            int size = Math.max(1, Math.min(settings.maxBatchSize(), target));
            List<MicroBatch.Entry> entries = new ArrayList<>(size);
            while (entries.size() < size && !ready.isEmpty()) {
                Active a = requests.get(ready.poll());
                a.inFlight = true;
                entries.add(new MicroBatch.Entry(a.id, a.nextInput, a.position, a.request.sampling()));
            }
            submitStep(new MicroBatch(registry.newRequestId(), entries));
        }
    }

    /** Plans every stage of one step and sends each stage's submission to its lane, chained by handles. */
    private void submitStep(MicroBatch batch) {
        int stages = stageLanes.size();
        long firstSequence = registry.reserveSequences(stages);
        long laneRequestId = batch.id();
        List<CompletionHandle> handles = new ArrayList<>(stages);
        SharedRelease<A> previousOutput = null;
        steps++;
        for (int k = 0; k < stages; k++) {
            CompletionHandle handle = CompletionHandle.local(stageLanes.get(k), firstSequence + k);
            StageStep<W, A> step;
            try {
                step = program.plan(k, batch, previousOutput == null ? null : previousOutput.value());
            } catch (RuntimeException e) {
                // Stage k was never sent: the stages before it run and are abandoned, the step fails.
                for (int j = 0; j < k; j++) {
                    lanes.get(j).tell(new LaneProtocol.Cancel(laneRequestId));
                }
                stepEnded(new InFlight<>(batch, laneRequestId, handles, previousOutput), Outcome.failure(e));
                return;
            }
            // The output is held by this stage's work and by its reader (the next stage's work, or the
            // engine for the last stage); it is freed once, after both let go.
            SharedRelease<A> output = SharedRelease.of(step.output(), program, 2);
            List<Object> retain = new ArrayList<>(2);
            retain.add(output.asCloseable());
            if (previousOutput != null) {
                retain.add(previousOutput.asCloseable());
            }
            List<CompletionHandle> after = handles.isEmpty() ? List.of() : List.of(handles.get(handles.size() - 1));
            lanes.get(k).tell(new LaneProtocol.Submit<>(handle, step.work(), after, retain, laneRequestId, LaneProtocol.NO_DEADLINE,
                    k < stages - 1 ? 1 : 0, replies));
            handles.add(handle);
            previousOutput = output;
        }
        InFlight<A> f = new InFlight<>(batch, laneRequestId, List.copyOf(handles), previousOutput);
        inFlight.put(laneRequestId, f);
        handles.forEach(h -> stepOfHandle.put(h, f));
    }
}
