package io.graphlane.cluster.pipeline;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.cluster.collective.ClusterCollectiveTransport;
import io.graphlane.inference.tensorparallel.CollectiveShard;
import java.util.Objects;

/** One shard in one collective group: its member's transport and a shard over the node's weights, planned over the group's collectives. */
record ShardGroup(String group, CollectiveShard<CpuTensor> shard, ClusterCollectiveTransport transport) {
    ShardGroup {
        Objects.requireNonNull(group, "group");
        Objects.requireNonNull(shard, "shard");
        Objects.requireNonNull(transport, "transport");
    }
}
