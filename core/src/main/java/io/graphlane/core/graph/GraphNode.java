package io.graphlane.core.graph;

import java.util.List;
import java.util.Objects;

/**
 * One operation of a lane graph: backend-native {@code work} placed on {@code lane}, run
 * after the nodes it depends on (its data producers), holding {@code retain} values until
 * its exact completion.
 *
 * @param <W> backend-native work
 */
public record GraphNode<W>(String id, LaneId lane, W work, List<String> dependsOn, List<Object> retain) {
    public GraphNode {
        Objects.requireNonNull(id, "node id");
        Objects.requireNonNull(lane, "lane of node " + id);
        Objects.requireNonNull(work, "work of node " + id);
        dependsOn = List.copyOf(dependsOn);
        retain = List.copyOf(retain);
    }
}
