package io.graphlane.actors.lane;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceRecorder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * Lane actors over one backend, spawned together: one executor forked per lane, one
 * {@link LaneActor} per executor, all registered in one {@link LocalLaneRegistry}.
 *
 * @param <E> the backend's executor type
 * @param <C> the backend's completion type
 * @param <W> the backend's work type
 */
public final class LaneGroup<E, C extends Completion, W> {
    private static final AtomicInteger GROUPS = new AtomicInteger();

    private final ActorSystem<?> system;
    private final SubmissionBackend<E, C, W> backend;
    private final LocalLaneRegistry registry;
    private final Map<LaneId, ActorRef<LaneProtocol.Command>> lanes;
    private final Map<LaneId, E> executors;
    private final Map<LaneId, LaneLoad> loads;
    private final LaneSettings settings;
    private final TraceRecorder trace;

    private LaneGroup(ActorSystem<?> system, SubmissionBackend<E, C, W> backend, LocalLaneRegistry registry,
                      Map<LaneId, ActorRef<LaneProtocol.Command>> lanes, Map<LaneId, E> executors, Map<LaneId, LaneLoad> loads,
                      LaneSettings settings, TraceRecorder trace) {
        this.system = system;
        this.backend = backend;
        this.registry = registry;
        this.lanes = Collections.unmodifiableMap(lanes);
        this.executors = Collections.unmodifiableMap(executors);
        this.loads = Collections.unmodifiableMap(loads);
        this.settings = settings;
        this.trace = trace;
    }

    /** Starts describing a group of lanes over {@code backend} in {@code system}. */
    public static <E, C extends Completion, W> Builder<E, C, W> builder(ActorSystem<?> system, SubmissionBackend<E, C, W> backend) {
        return new Builder<>(system, backend);
    }

    /** The registry every lane of this group is found through. */
    public LaneRegistry registry() {
        return registry;
    }

    /** The actor of {@code lane}; throws {@link UnknownLaneException} if the group has no such lane. */
    public ActorRef<LaneProtocol.Command> lane(LaneId lane) {
        return registry.lane(lane);
    }

    /** The actor of the lane named {@code name}. */
    public ActorRef<LaneProtocol.Command> lane(String name) {
        return lane(LaneId.of(name));
    }

    /**
     * The executor {@code lane}'s actor submits to, for code that must issue its operations on that lane
     * (per-lane neural ops, a CUDA stream's handles); only work submitted through the lane runs on it.
     *
     * @throws UnknownLaneException if the group has no such lane
     */
    public E executor(LaneId lane) {
        E executor = executors.get(lane);
        if (executor == null) {
            throw new UnknownLaneException(lane, lanes.keySet());
        }
        return executor;
    }

    /**
     * How much work {@code lane} holds now, as its actor last published it (readable from any thread, no message).
     *
     * @throws UnknownLaneException if the group has no such lane
     */
    public LaneLoad load(LaneId lane) {
        LaneLoad load = loads.get(lane);
        if (load == null) {
            throw new UnknownLaneException(lane, lanes.keySet());
        }
        return load;
    }

    /** The lanes in the order they were declared. */
    public List<LaneId> laneIds() {
        return List.copyOf(lanes.keySet());
    }

    /** The backend every lane's executor was forked from. */
    public SubmissionBackend<E, C, W> backend() {
        return backend;
    }

    /** The recorder the lanes trace into ({@link TraceRecorder#DISABLED} when not tracing). */
    public TraceRecorder trace() {
        return trace;
    }

    /** The actor system the lanes run in. */
    public ActorSystem<?> system() {
        return system;
    }

    /**
     * Stops every lane (each lets its in-flight work finish, then shuts its executor down). The
     * stage completes when all have stopped, or fails if one does not within the stop timeout.
     */
    public CompletionStage<Void> stop() {
        List<CompletableFuture<LaneProtocol.Stopped>> each = new ArrayList<>();
        for (ActorRef<LaneProtocol.Command> ref : lanes.values()) {
            each.add(AskPattern.<LaneProtocol.Command, LaneProtocol.Stopped>ask(ref, LaneProtocol.Stop::new,
                    settings.stopTimeout(), system.scheduler()).toCompletableFuture());
        }
        return CompletableFuture.allOf(each.toArray(CompletableFuture[]::new));
    }

    /** Collects what {@link #spawn()} needs. */
    public static final class Builder<E, C extends Completion, W> {
        private final ActorSystem<?> system;
        private final SubmissionBackend<E, C, W> backend;
        private final List<LaneId> lanes = new ArrayList<>();
        private LaneSettings settings;
        private TraceRecorder trace = TraceRecorder.DISABLED;
        private WorkTracing<W> workTracing = WorkTracing.none();

        private Builder(ActorSystem<?> system, SubmissionBackend<E, C, W> backend) {
            this.system = Objects.requireNonNull(system, "system");
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /** Adds lanes named {@code names}, in order. */
        public Builder<E, C, W> lanes(String... names) {
            for (String n : names) {
                lanes.add(LaneId.of(n));
            }
            return this;
        }

        /** Adds {@code ids}, in order. */
        public Builder<E, C, W> lanes(List<LaneId> ids) {
            lanes.addAll(ids);
            return this;
        }

        /** Bounds and dispatcher of every lane; by default read from the system's {@code graphlane.lane}. */
        public Builder<E, C, W> settings(LaneSettings laneSettings) {
            this.settings = Objects.requireNonNull(laneSettings, "settings");
            return this;
        }

        /** Records the lanes' events into {@code recorder}. */
        public Builder<E, C, W> trace(TraceRecorder recorder) {
            this.trace = Objects.requireNonNull(recorder, "trace");
            return this;
        }

        /** How work is instrumented to trace its real start on the executor. */
        public Builder<E, C, W> workTracing(WorkTracing<W> tracing) {
            this.workTracing = Objects.requireNonNull(tracing, "workTracing");
            return this;
        }

        /**
         * Forks one executor per lane from the backend's root executor and spawns the lane actors.
         *
         * @throws IllegalArgumentException if no lane was named or a name repeats
         */
        public LaneGroup<E, C, W> spawn() {
            if (lanes.isEmpty()) {
                throw new IllegalArgumentException("a lane group needs at least one lane");
            }
            if (lanes.stream().distinct().count() != lanes.size()) {
                throw new IllegalArgumentException("lane names repeat: " + lanes);
            }
            LaneSettings s = settings != null ? settings : LaneSettings.fromConfig(system.settings().config());
            List<E> executors = backend.forkExecutors(backend.rootExecutor(), lanes.size());
            LocalLaneRegistry registry = new LocalLaneRegistry();
            Props props = s.dispatcher().isEmpty() ? Props.empty() : DispatcherSelector.fromConfig(s.dispatcher());
            int group = GROUPS.incrementAndGet();
            Map<LaneId, ActorRef<LaneProtocol.Command>> refs = new LinkedHashMap<>();
            Map<LaneId, E> byLane = new LinkedHashMap<>();
            Map<LaneId, LaneLoad> loads = new LinkedHashMap<>();
            for (int i = 0; i < lanes.size(); i++) {
                LaneId id = lanes.get(i);
                byLane.put(id, executors.get(i));
                LaneLoad load = new LaneLoad();
                loads.put(id, load);
                LaneActor.Spec<E, C, W> spec = new LaneActor.Spec<>(id, backend, executors.get(i), registry, s, trace, workTracing, load);
                ActorRef<LaneProtocol.Command> ref = system.systemActorOf(LaneActor.create(spec),
                        "graphlane-lane-" + group + "-" + actorName(id), props);
                registry.register(id, ref);
                refs.put(id, ref);
            }
            return new LaneGroup<>(system, backend, registry, refs, byLane, loads, s, trace);
        }

        private static String actorName(LaneId id) {
            StringBuilder b = new StringBuilder();
            for (char c : id.name().toCharArray()) {
                b.append(Character.isLetterOrDigit(c) || c == '-' || c == '_' ? c : '_');
            }
            return b.toString();
        }
    }
}
