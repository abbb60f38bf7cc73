package io.graphlane.scheduler.graph;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.lane.UnknownLaneException;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;

/**
 * Runs lane graphs over lane actors. Each node goes to its lane's actor after the handles of
 * its producers; the caller gets a {@link GraphRun} whose result holds every node's outcome. A
 * failed node poisons exactly its dependents (their failure names the root node); independent
 * branches finish. Thread-safe: any thread may start runs.
 *
 * @param <W> backend-native work
 */
public final class GraphRunner<W> {
    private final ActorSystem<?> system;
    private final LaneRegistry registry;
    private final GraphRunnerSettings settings;
    private final ConcurrentHashMap<Long, Boolean> active = new ConcurrentHashMap<>();

    /** A runner over the lanes of {@code registry}, with {@code settings}' limits. */
    public GraphRunner(ActorSystem<?> system, LaneRegistry registry, GraphRunnerSettings settings) {
        this.system = Objects.requireNonNull(system, "system");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.settings = Objects.requireNonNull(settings, "settings");
    }

    /** A runner over {@code lanes}, with the limits of the system's {@code graphlane.scheduler.graph}. */
    public GraphRunner(LaneGroup<?, ?, W> lanes) {
        this(lanes.system(), lanes.registry(), GraphRunnerSettings.fromConfig(lanes.system().settings().config()));
    }

    /** Runs {@code graph} with default options and returns its result; see {@link #start(CompiledGraph, RunOptions)}. */
    public CompletionStage<GraphResult> run(LaneGraph<W> graph) {
        return start(CompiledGraph.of(graph), RunOptions.defaults()).result();
    }

    /** Starts {@code graph}; see {@link #start(CompiledGraph, RunOptions)}. */
    public GraphRun start(LaneGraph<W> graph, RunOptions options) {
        return start(CompiledGraph.of(graph), options);
    }

    /**
     * Starts {@code graph}: admits it whole or refuses it before anything is sent.
     *
     * @throws GraphRefusedException if the graph has more nodes than {@code max-nodes-per-request}, names a lane
     *     the registry lacks, uses a request id already active on this runner, or would exceed
     *     {@code max-active-requests}
     */
    public GraphRun start(CompiledGraph<W> graph, RunOptions options) {
        Objects.requireNonNull(graph, "graph");
        Objects.requireNonNull(options, "options");
        if (graph.size() > settings.maxNodesPerRequest()) {
            throw new GraphRefusedException("graph refused: it has " + graph.size() + " nodes, more than "
                    + "graphlane.scheduler.graph.max-nodes-per-request = " + settings.maxNodesPerRequest());
        }
        for (LaneId lane : graph.lanes()) {
            try {
                registry.lane(lane);
            } catch (UnknownLaneException e) {
                throw new GraphRefusedException("graph refused: " + e.getMessage(), e);
            }
        }
        long requestId = options.requestId() == LaneProtocol.NO_SCOPE ? registry.newScope() : options.requestId();
        synchronized (active) {
            if (active.size() >= settings.maxActiveRequests()) {
                throw new GraphRefusedException("graph refused: " + active.size() + " requests are active, the most "
                        + "graphlane.scheduler.graph.max-active-requests allows");
            }
            if (active.putIfAbsent(requestId, Boolean.TRUE) != null) {
                throw new GraphRefusedException("graph refused: request id " + requestId + " is already active on this runner");
            }
        }
        long deadline = options.deadline() == null ? LaneProtocol.NO_DEADLINE : System.nanoTime() + options.deadline().toNanos();
        CompletableFuture<GraphResult> result = new CompletableFuture<>();
        ActorRef<GraphRunActor.Command> actor = system.systemActorOf(
                GraphRunActor.create(graph, registry, requestId, deadline, settings.maxInFlightPerLane(), result,
                        () -> active.remove(requestId)),
                "graphlane-run-" + requestId + "-" + System.identityHashCode(result),
                settings.dispatcher().isEmpty() ? Props.empty() : DispatcherSelector.fromConfig(settings.dispatcher()));
        return new GraphRun(requestId, result.minimalCompletionStage(), actor);
    }

    /** How many runs are active now. */
    public int activeRequests() {
        return active.size();
    }
}
