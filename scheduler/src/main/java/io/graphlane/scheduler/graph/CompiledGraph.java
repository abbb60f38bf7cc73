package io.graphlane.scheduler.graph;

import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A validated lane graph indexed for running: nodes by position in topological order, their
 * lanes, distinct producers and consumer counts as int arrays, and each lane's nodes in order.
 * Immutable; compile once and run it any number of times.
 *
 * @param <W> backend-native work
 */
public final class CompiledGraph<W> {
    private final LaneGraph<W> graph;
    private final List<GraphNode<W>> nodes;
    private final List<LaneId> lanes;
    private final Map<String, Integer> index;
    final int[] laneOf;
    final int[][] producers;
    final int[] consumerCount;
    final int[][] laneOrder;

    private CompiledGraph(LaneGraph<W> graph) {
        this.graph = graph;
        this.nodes = graph.nodes();
        this.lanes = graph.lanes();
        int n = nodes.size();
        Map<LaneId, Integer> laneIndex = new HashMap<>();
        for (LaneId l : lanes) {
            laneIndex.put(l, laneIndex.size());
        }
        this.index = new HashMap<>(Math.max(16, (int) (n / 0.75f) + 1));
        this.laneOf = new int[n];
        this.producers = new int[n][];
        this.consumerCount = new int[n];
        int[] perLane = new int[lanes.size()];
        for (int i = 0; i < n; i++) {
            GraphNode<W> node = nodes.get(i);
            index.put(node.id(), i);
            int lane = laneIndex.get(node.lane());
            laneOf[i] = lane;
            perLane[lane]++;
            List<String> deps = node.dependsOn();
            if (deps.isEmpty()) {
                producers[i] = new int[0];
            } else {
                Set<Integer> distinct = new LinkedHashSet<>();
                for (String d : deps) {
                    distinct.add(index.get(d)); // topological order: every producer is indexed already
                }
                int[] ps = new int[distinct.size()];
                int k = 0;
                for (int p : distinct) {
                    ps[k++] = p;
                    consumerCount[p]++;
                }
                producers[i] = ps;
            }
        }
        this.laneOrder = new int[lanes.size()][];
        for (int l = 0; l < lanes.size(); l++) {
            laneOrder[l] = new int[perLane[l]];
        }
        int[] fill = new int[lanes.size()];
        for (int i = 0; i < n; i++) {
            laneOrder[laneOf[i]][fill[laneOf[i]]++] = i;
        }
    }

    /** Indexes {@code graph} (already validated by {@link LaneGraph.Builder#build()}). */
    public static <W> CompiledGraph<W> of(LaneGraph<W> graph) {
        return new CompiledGraph<>(graph);
    }

    /** The graph this was compiled from. */
    public LaneGraph<W> graph() {
        return graph;
    }

    /** How many nodes. */
    public int size() {
        return nodes.size();
    }

    /** The lanes, in declaration order. */
    public List<LaneId> lanes() {
        return lanes;
    }

    /** The node at position {@code i} of the topological order. */
    public GraphNode<W> node(int i) {
        return nodes.get(i);
    }

    /** The position of node {@code id}, or -1 if the graph has no such node. */
    public int indexOf(String id) {
        Integer i = index.get(id);
        return i == null ? -1 : i;
    }
}
