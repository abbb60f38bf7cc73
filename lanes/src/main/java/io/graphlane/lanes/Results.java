package io.graphlane.lanes;

import io.graphlane.scheduler.graph.GraphResult;
import java.util.Map;

/** The values the nodes of a successful {@link LaneFlow} run returned, by node name. */
public final class Results {
    private final Map<String, Object> values;
    private final GraphResult raw;

    Results(Map<String, Object> values, GraphResult raw) {
        this.values = values;
        this.raw = raw;
    }

    /**
     * The value node {@code node} returned (null when it returned none), typed as the caller reads it.
     *
     * @throws IllegalArgumentException if the graph has no such node
     */
    @SuppressWarnings("unchecked")
    public <T> T get(String node) {
        if (!values.containsKey(node)) {
            throw new IllegalArgumentException("no node '" + node + "' in this graph (nodes: " + String.join(", ", values.keySet()) + ")");
        }
        return (T) values.get(node);
    }

    /** The run as the layer underneath reports it: every node's state, lane and request id. */
    public GraphResult graphResult() {
        return raw;
    }
}
