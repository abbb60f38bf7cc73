package io.graphlane.cluster;

import java.util.List;

/**
 * Who a node is in its cluster once it has taken its rank.
 *
 * @param rank the node's rank in {@code [0, nodes)}
 * @param nodes the cluster's member count
 * @param stages the stages the node hosts, ascending
 * @param address the node's cluster address
 */
public record NodeIdentity(int rank, int nodes, List<Integer> stages, String address) {
    /** Copies the stage list. */
    public NodeIdentity {
        stages = List.copyOf(stages);
    }
}
