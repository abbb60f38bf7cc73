package io.graphlane.scheduler.pipeline;

import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.core.graph.LaneId;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * A running pipeline engine seen from outside the actor system: thread-safe admission and cancellation. Tokens go to
 * each request's {@link EngineListener}.
 *
 * <p>Admission is by KV-cache memory as well as by count: each request reserves its prompt plus its maximum of new
 * tokens, in positions, times what one position takes in the caches of every stage ({@link KvBudget}), against the
 * settings' budget. {@link #submit} decides at once: a request starts when an active slot is free, its reservation fits
 * what the running requests leave and no request waits before it; otherwise it waits in the queue (started, in order,
 * as slots and memory free) while the queue has room, and is refused beyond that. A request whose reservation is larger
 * than the whole budget is refused, since it could never run. A reservation is given back once, after its request
 * ended and the stages freed its caches.
 */
public final class Pipeline<W, A> {
    private final ActorSystem<?> system;
    private final ActorRef<PipelineEngine.Command> engine;
    private final LaneRegistry registry;
    private final PipelineSettings settings;
    private final Admission admission;
    private final AtomicInteger held = new AtomicInteger();
    private final CompletionStage<Void> stopped;
    private volatile boolean stopRequested;
    private final PipelineLoad load = new PipelineLoad();

    private Pipeline(ActorSystem<?> system, LaneRegistry registry, List<List<LaneId>> stageLanes, StageProgram<W, A> program,
                     PipelineSettings settings, String name) {
        this.system = system;
        this.registry = registry;
        this.settings = settings;
        this.admission = new Admission(settings, settings.hasKvBudget()
                ? new KvBudget(settings.kvBudgetBytes(), program.kvBytesPerPosition()) : KvBudget.UNBOUNDED);
        CompletableFuture<Void> stopping = new CompletableFuture<>();
        this.engine = system.systemActorOf(PipelineEngine.createMultiLane(registry, stageLanes, program, settings, admission, held, load,
                stopping), name, Props.empty());
        // The engine says so itself as it stops; the watch covers a stop that skipped its own signal.
        ActorTermination.of(system, engine, name + "-watch").thenRun(() -> stopping.complete(null));
        this.stopped = stopping;
    }

    /**
     * Starts an engine in {@code system} over the stage lanes {@code stageLanes} (stage k on lane k,
     * found in {@code registry}). {@code name} must be unique in the system.
     */
    public static <W, A> Pipeline<W, A> start(ActorSystem<?> system, LaneRegistry registry, List<LaneId> stageLanes,
                                              StageProgram<W, A> program, PipelineSettings settings, String name) {
        Objects.requireNonNull(program, "program");
        if (stageLanes.size() != program.stageCount()) {
            throw new IllegalArgumentException("the stage program has " + program.stageCount() + " stages but " + stageLanes.size()
                    + " stage lanes were given");
        }
        return new Pipeline<>(system, registry, stageLanes.stream().map(List::of).toList(), program, settings, name);
    }

    /**
     * Starts an engine over stages that may each run on several lanes ({@code stageLanes.get(k)} are stage k's lanes,
     * as many as the program's {@link StageProgram#laneCount}); see {@link #start}.
     */
    public static <W, A> Pipeline<W, A> startMultiLane(ActorSystem<?> system, LaneRegistry registry, List<List<LaneId>> stageLanes,
                                                       StageProgram<W, A> program, PipelineSettings settings, String name) {
        Objects.requireNonNull(program, "program");
        return new Pipeline<>(system, registry, stageLanes, program, settings, name);
    }

    /**
     * Admits {@code request}: it starts at once or waits in the queue (see the class comment); its tokens go to
     * {@code listener}. Returns the request id.
     *
     * @throws KvBudgetExceededException at once if its KV-cache reservation is larger than the whole budget
     * @throws PipelineOverloadedException at once if it cannot start now and the queue is full
     * @throws PipelineStoppedException at once if the engine has stopped
     */
    public long submit(PipelineRequest request, EngineListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (isStopped()) {
            throw new PipelineStoppedException("the pipeline has stopped and admits no new requests");
        }
        Admission.Decision decision = admission.admit(request);
        held.incrementAndGet();
        long id = registry.newScope(); // from the lanes' scope counter: a request id is never a micro-batch's scope
        engine.tell(new PipelineEngine.Admit(id, request, listener, decision == Admission.Decision.START));
        return id;
    }

    /** Cancels request {@code id}: it ends with a {@link RequestCancelledException}; unknown or ended ids are ignored. */
    public void cancel(long id) {
        engine.tell(new PipelineEngine.Cancel(id));
    }

    /** Requests held now (active and queued), as admission counts them. */
    public int heldRequests() {
        return held.get();
    }

    /** The most requests admission holds at once (active plus queued); a larger batch can never be admitted whole. */
    public int maxHeldRequests() {
        return settings.maxActiveRequests() + settings.maxQueuedRequests();
    }

    /** The KV-cache memory admission reserves against ({@link KvBudget#UNBOUNDED} when the settings set none). */
    public KvBudget kvBudget() {
        return admission.budget();
    }

    /** What admission holds, for tests of this package. */
    Admission admission() {
        return admission;
    }

    /** Bytes of the KV-cache budget reserved now: by running requests, and by ended ones whose caches are not freed yet. */
    public long kvReservedBytes() {
        return admission.reservedBytes();
    }

    /** Whether the engine has stopped (asked to, or after a failure of its own): every later submission is refused. */
    public boolean isStopped() {
        return stopped.toCompletableFuture().isDone();
    }

    /** Completes when the engine has stopped, for whatever reason. */
    public CompletionStage<Void> whenStopped() {
        return stopped;
    }

    /** Whether the engine stopped without {@link #stop} being called: a fault, logged by its supervision. */
    public boolean stoppedUnexpectedly() {
        return isStopped() && !stopRequested;
    }

    /** The engine's request counts as it last published them: a volatile read, no message to the engine. */
    public PipelineLoad load() {
        return load;
    }

    /** The engine's counters. */
    public CompletionStage<PipelineEngine.Stats> stats() {
        return AskPattern.ask(engine, PipelineEngine.GetStats::new, Duration.ofSeconds(10), system.scheduler());
    }

    /**
     * Fails every request still held with {@code cause} and stops the engine; the lanes belong to the caller.
     * Completes once the engine let go of every stage output it held: each stage submission it sent was answered
     * by its lane, or the lane stopped (the engine then frees what the submission held), so the lanes should be
     * left running, or stopping, until it completes.
     */
    public CompletionStage<PipelineEngine.Stopped> stop(Throwable cause) {
        stopRequested = true;
        return AskPattern.ask(engine, replyTo -> new PipelineEngine.Stop(cause, replyTo), Duration.ofSeconds(30), system.scheduler());
    }
}
