package io.graphlane.cluster.pipeline;

import io.graphlane.cluster.ClusterConfigException;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * The Receptionist keys stage hosts are registered under: one per stage index, the same on every node; and, with
 * tensor parallelism, one per shard of a stage for the {@link ShardHost}s of shards 1 and up.
 */
public final class StageHostKeys {
    /** The prefix of every key's id ({@code graphlane-stage-host-i}). */
    public static final String PREFIX = "graphlane-stage-host-";
    /** The prefix of every shard host key's id ({@code graphlane-shard-host-i-t}). */
    public static final String SHARD_PREFIX = "graphlane-shard-host-";

    private StageHostKeys() {
    }

    /** The key of the host of stage {@code stage}. */
    public static ServiceKey<StageHost.Command> stage(int stage) {
        if (stage < 0) {
            throw new ClusterConfigException("stage index must be >= 0, got " + stage);
        }
        return ServiceKey.create(StageHost.Command.class, PREFIX + stage);
    }

    /** The key of the host of shard {@code shard} (1 and up) of stage {@code stage}. */
    public static ServiceKey<ShardHost.Command> shard(int stage, int shard) {
        if (stage < 0 || shard < 1) {
            throw new ClusterConfigException("a shard host key needs stage >= 0 and shard >= 1, got stage " + stage + ", shard "
                    + shard);
        }
        return ServiceKey.create(ShardHost.Command.class, SHARD_PREFIX + stage + "-" + shard);
    }
}
