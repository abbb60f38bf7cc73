package io.graphlane.scheduler.graph;

import io.graphlane.actors.lane.WorkCancelledException;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Deque;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The result of one graph run: the request's final state and every node's outcome. Per-node
 * results are built on demand, so a run of millions of nodes costs nothing here until asked.
 */
public final class GraphResult {
    private final long requestId;
    private final RequestState state;
    private final CompiledGraph<?> graph;
    private final WorkState[] states;
    private final Throwable[] causes;
    private final String[] labels;
    private final long baseSequence;
    private final Map<WorkState, Integer> counts;

    GraphResult(long requestId, RequestState state, CompiledGraph<?> graph, WorkState[] states, Throwable[] causes, String[] labels,
                long baseSequence) {
        this.requestId = requestId;
        this.state = state;
        this.graph = graph;
        this.states = states;
        this.causes = causes;
        this.labels = labels;
        this.baseSequence = baseSequence;
        Map<WorkState, Integer> c = new EnumMap<>(WorkState.class);
        for (WorkState s : states) {
            c.merge(s, 1, Integer::sum);
        }
        this.counts = c;
    }

    /** The request id the run used on every lane. */
    public long requestId() {
        return requestId;
    }

    /** The request's final state. */
    public RequestState state() {
        return state;
    }

    /** True if every node committed. */
    public boolean succeeded() {
        return state == RequestState.FINISHED;
    }

    /** How many nodes ended in {@code s}. */
    public int count(WorkState s) {
        return counts.getOrDefault(s, 0);
    }

    /**
     * The result of node {@code id}.
     *
     * @throws IllegalArgumentException if the graph has no such node
     */
    public NodeResult node(String id) {
        int i = graph.indexOf(id);
        if (i < 0) {
            throw new IllegalArgumentException("no node '" + id + "' in the graph of request " + requestId);
        }
        return result(i);
    }

    /** Every node's result, in topological order. */
    public List<NodeResult> nodes() {
        List<NodeResult> out = new ArrayList<>(states.length);
        for (int i = 0; i < states.length; i++) {
            out.add(result(i));
        }
        return out;
    }

    /** The ids of the nodes in state {@code s}, in topological order. */
    public List<String> nodesIn(WorkState s) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < states.length; i++) {
            if (states[i] == s) {
                out.add(graph.node(i).id());
            }
        }
        return out;
    }

    private NodeResult result(int i) {
        Throwable cause = causes[i];
        String root = null;
        if (cause instanceof PoisonedPreconditionException poisoned) {
            root = rootOf(i, poisoned.rootProducer());
        }
        return new NodeResult(graph.node(i).id(), graph.node(i).lane(), states[i], Optional.ofNullable(cause),
                Optional.ofNullable(root));
    }

    /** The ancestor of {@code i} whose completion label or handle is {@code label}. */
    private String rootOf(int i, String label) {
        BitSet seen = new BitSet(states.length);
        Deque<Integer> todo = new ArrayDeque<>();
        for (int p : graph.producers[i]) {
            todo.add(p);
        }
        while (!todo.isEmpty()) {
            int p = todo.poll();
            if (seen.get(p)) {
                continue;
            }
            seen.set(p);
            String handle = CompletionHandle.local(graph.node(p).lane(), baseSequence + p).toString();
            if (label.equals(labels[p]) || label.equals(handle)) {
                return graph.node(p).id();
            }
            for (int q : graph.producers[p]) {
                todo.add(q);
            }
        }
        return null;
    }

    /** Whether {@code cause} means the work was dropped or abandoned by a cancel, directly or through a poisoned producer. */
    static boolean isCancellation(Throwable cause) {
        Throwable root = cause instanceof PoisonedPreconditionException p ? p.rootCause() : cause;
        return root instanceof WorkCancelledException;
    }

    @Override
    public String toString() {
        return "request " + requestId + " " + state + " " + counts;
    }
}
