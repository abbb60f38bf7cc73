package io.graphlane.scheduler.graph;

import io.graphlane.core.graph.LaneId;
import java.util.Optional;

/**
 * How one node of a run ended.
 *
 * @param node the node id
 * @param lane its lane
 * @param state its final work state
 * @param failure why it did not commit; empty when committed
 * @param rootNode for a node poisoned by a failed producer: the node whose own failure came first
 */
public record NodeResult(String node, LaneId lane, WorkState state, Optional<Throwable> failure, Optional<String> rootNode) {
}
