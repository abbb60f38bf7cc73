package io.graphlane.checkpoint;

import java.util.List;

/** Every slot of the bounded mapping cache is pinned by open leases, so another shard cannot be opened. */
public final class MappingCacheExhaustedException extends CheckpointException {
    private static final long serialVersionUID = 1L;

    private final List<String> pinnedShards;

    /** {@code pinnedShards} describes each pinned shard and its lease count. */
    public MappingCacheExhaustedException(String shard, int capacity, List<String> pinnedShards) {
        super("cannot open shard " + shard + ": all " + capacity + " mapping slots are pinned by open leases ("
                + String.join(", ", pinnedShards) + "); release leases first or raise max-open-shards");
        this.pinnedShards = List.copyOf(pinnedShards);
    }

    /** The pinned shards, each with its open lease count. */
    public List<String> pinnedShards() {
        return pinnedShards;
    }
}
