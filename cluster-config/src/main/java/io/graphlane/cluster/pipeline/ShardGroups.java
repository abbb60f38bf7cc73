package io.graphlane.cluster.pipeline;

import java.util.concurrent.CompletionStage;

/**
 * How one tensor-parallel shard on its node joins its stage's collective groups and leaves them (one
 * {@link ShardGroup} per group): what the {@link ShardHost}s and the {@link StageLead} form their stage through
 * ({@link NodeShardGroups} on a node).
 */
interface ShardGroups {
    /** This shard's rank in its stage's groups. */
    int rank();

    /**
     * Joins {@code group} as this shard's rank and builds this shard's {@link ShardGroup} in it; completes once every rank of the
     * group has joined, or fails naming why. Never blocks.
     */
    CompletionStage<ShardGroup> form(String group);

    /**
     * Retires {@code shardGroup} (its KV caches and transport), once; completes when its transport has closed and never
     * fails. No work of that shard group may run any more.
     */
    CompletionStage<Void> retire(ShardGroup shardGroup);
}
