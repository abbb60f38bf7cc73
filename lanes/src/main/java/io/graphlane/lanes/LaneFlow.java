package io.graphlane.lanes;

import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRun;
import io.graphlane.scheduler.graph.NodeResult;
import io.graphlane.scheduler.graph.RunOptions;
import io.graphlane.scheduler.graph.WorkState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * One lane graph over the lanes of a {@link Lanes} runtime: nodes placed on its lanes by name, each run after the nodes
 * it names, receiving their values ({@link Inputs}) and returning its own. Built with {@link #node}, optionally
 * {@link #retain}, then {@link #run()} (or {@link #start()}); a flow runs once. Not thread-safe while it is built.
 */
public final class LaneFlow {
    private final Lanes lanes;
    private final List<Spec> specs = new ArrayList<>();
    private final Map<String, List<Object>> retained = new LinkedHashMap<>();
    private Duration deadline;
    private boolean started;

    private record Spec(String id, String lane, Work<?> work, List<String> after) {
    }

    LaneFlow(Lanes lanes) {
        this.lanes = lanes;
    }

    /**
     * Adds node {@code id} on lane {@code lane} of the runtime, run after every node in {@code after}, whose values
     * {@code work} receives. Lanes, ids and producers are checked when the flow starts.
     */
    public LaneFlow node(String id, String lane, Work<?> work, String... after) {
        checkNotStarted();
        specs.add(new Spec(Objects.requireNonNull(id, "node id"), Objects.requireNonNull(lane, "lane of node " + id),
                Objects.requireNonNull(work, "work of node " + id), List.of(after)));
        return this;
    }

    /**
     * Keeps {@code values} alive until the exact completion of node {@code node}'s work, then releases each once
     * (closing it when it is {@link AutoCloseable}); a node that never runs releases them at once. Use it for a buffer
     * the work reads or a device keeps using after the work's body returned.
     */
    public LaneFlow retain(String node, Object... values) {
        checkNotStarted();
        List<Object> list = retained.computeIfAbsent(Objects.requireNonNull(node, "node"), k -> new ArrayList<>());
        for (Object v : values) {
            list.add(Objects.requireNonNull(v, "a retained value of node " + node));
        }
        return this;
    }

    /** Fails every node not yet submitted to its lane {@code deadline} after the flow starts. */
    public LaneFlow deadline(Duration deadline) {
        checkNotStarted();
        this.deadline = Objects.requireNonNull(deadline, "deadline");
        return this;
    }

    /**
     * Runs the flow and waits for it: every node's value when all committed.
     *
     * @throws LaneFlowException naming each node that did not commit, with its lane and why
     * @throws io.graphlane.core.graph.GraphValidationException if a node names a lane the runtime lacks, a node it
     *     does not know, or itself, ids repeat, or the nodes form a cycle (nothing runs then)
     */
    public Results run() throws InterruptedException {
        try {
            return start().toCompletableFuture().get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof LaneFlowException failed) {
                throw new LaneFlowException(failed.reasons(), failed.getCause()); // thrown here, with this thread's stack
            }
            throw new IllegalStateException("lane graph run ended abnormally: " + cause, cause);
        }
    }

    /**
     * Starts the flow: the stage completes with every node's value, or exceptionally with a {@link LaneFlowException}.
     *
     * @throws io.graphlane.core.graph.GraphValidationException as {@link #run()}
     */
    public CompletionStage<Results> start() {
        checkNotStarted();
        started = true;
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < specs.size(); i++) {
            index.putIfAbsent(specs.get(i).id(), i);
        }
        List<String> problems = new ArrayList<>();
        for (String node : retained.keySet()) {
            if (!index.containsKey(node)) {
                problems.add("retain names node '" + node + "', which is not in the graph");
            }
        }
        if (!problems.isEmpty()) {
            throw new io.graphlane.core.graph.GraphValidationException(problems);
        }
        AtomicReferenceArray<Object> values = new AtomicReferenceArray<>(specs.size());
        LaneGraph.Builder<CpuWork> builder = LaneGraph.builder();
        lanes.laneNames().forEach(builder::lane);
        for (int i = 0; i < specs.size(); i++) {
            Spec s = specs.get(i);
            int slot = i;
            Inputs in = new Inputs(s.id(), s.lane(), s.after(), index, values);
            CpuWork work = () -> {
                Object value;
                try {
                    value = s.work().run(in);
                } catch (Exception e) {
                    throw new NodeFailedException(s.id(), s.lane(), e);
                }
                values.set(slot, value);
            };
            builder.node(new GraphNode<>(s.id(), LaneId.of(s.lane()), work, s.after(),
                    retained.getOrDefault(s.id(), List.of())));
        }
        LaneGraph<CpuWork> graph = builder.build();
        RunOptions options = deadline == null ? RunOptions.defaults() : RunOptions.defaults().withDeadline(deadline);
        GraphRun run = lanes.runner().start(graph, options);
        return run.result().thenApply(result -> results(result, values));
    }

    private Results results(GraphResult result, AtomicReferenceArray<Object> values) {
        Map<String, String> reasons = new LinkedHashMap<>();
        Throwable first = null;
        Map<String, Object> byName = new LinkedHashMap<>();
        for (int i = 0; i < specs.size(); i++) {
            Spec s = specs.get(i);
            NodeResult r = result.node(s.id());
            byName.put(s.id(), values.get(i));
            if (r.state() == WorkState.COMMITTED) {
                continue;
            }
            String where = "node '" + s.id() + "' on lane '" + s.lane() + "'";
            if (r.rootNode().isPresent()) {
                String root = r.rootNode().get();
                reasons.put(s.id(), where + " did not run because node '" + root + "' on lane '" + laneOf(root) + "' failed");
                continue;
            }
            Throwable cause = r.failure().map(LaneFlow::unwrap).orElse(null);
            if (first == null && cause != null) {
                first = cause;
            }
            if (cause instanceof NodeFailedException own) {
                reasons.put(s.id(), own.getMessage());
            } else if (r.state() == WorkState.ABANDONED) {
                reasons.put(s.id(), where + " did not run: the run was " + result.state().name().toLowerCase().replace('_', ' '));
            } else {
                reasons.put(s.id(), where + " failed: " + (cause == null ? result.state() : cause));
            }
        }
        if (!reasons.isEmpty()) {
            throw new LaneFlowException(reasons, first);
        }
        return new Results(byName, result);
    }

    private String laneOf(String node) {
        for (Spec s : specs) {
            if (s.id().equals(node)) {
                return s.lane();
            }
        }
        return "?";
    }

    private static Throwable unwrap(Throwable t) {
        Throwable c = t;
        while (c != null) {
            if (c instanceof NodeFailedException) {
                return c;
            }
            c = c.getCause();
        }
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    private void checkNotStarted() {
        if (started) {
            throw new IllegalStateException("this lane flow has started already; take a new one from Lanes.flow()");
        }
    }
}
