package io.graphlane.cluster;

import java.util.List;

/**
 * Who a node is in its cluster once it has taken its rank.
 *
 * @param rank the node's rank in {@code [0, nodes)}
 * @param nodes the cluster's member count
 * @param stages the stages the node hosts (or, with tensor parallelism, holds a shard of), ascending
 * @param address the node's cluster address
 * @param shard the tensor-parallel shard of its stage the node holds (0 without tensor parallelism)
 */
public record NodeIdentity(int rank, int nodes, List<Integer> stages, String address, int shard) {
    /** Copies the stage list. */
    public NodeIdentity {
        stages = List.copyOf(stages);
    }

    /** The identity of a node without tensor parallelism. */
    public NodeIdentity(int rank, int nodes, List<Integer> stages, String address) {
        this(rank, nodes, stages, address, 0);
    }
}
