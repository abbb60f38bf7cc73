package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.cluster.ClusterConfigException;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Every Receptionist key a stage is registered under, the same on every node: the lane of each stage index (a node's
 * stage lanes), the {@link StageHost} of each stage index, and, with tensor parallelism, the {@link ShardHost} of each
 * shard 1 and up of a stage. The key ids cross nodes: they never change.
 */
public final class StageKeys {
    /** The prefix of every stage lane key's id ({@code graphlane-stage-i}). */
    public static final String LANE_PREFIX = "graphlane-stage-";
    /** The prefix of every stage host key's id ({@code graphlane-stage-host-i}). */
    public static final String HOST_PREFIX = "graphlane-stage-host-";
    /** The prefix of every shard host key's id ({@code graphlane-shard-host-i-t}). */
    public static final String SHARD_HOST_PREFIX = "graphlane-shard-host-";

    private StageKeys() {
    }

    /** The key the lane of stage {@code stage} is registered under. */
    public static ServiceKey<LaneProtocol.Command> lane(int stage) {
        checkStage(stage);
        return ServiceKey.create(LaneProtocol.Command.class, LANE_PREFIX + stage);
    }

    /** The key of the host of stage {@code stage}. */
    public static ServiceKey<StageHost.Command> host(int stage) {
        checkStage(stage);
        return ServiceKey.create(StageHost.Command.class, HOST_PREFIX + stage);
    }

    /** The key of the host of shard {@code shard} (1 and up) of stage {@code stage}. */
    public static ServiceKey<ShardHost.Command> shardHost(int stage, int shard) {
        if (stage < 0 || shard < 1) {
            throw new ClusterConfigException("a shard host key needs stage >= 0 and shard >= 1, got stage " + stage + ", shard "
                    + shard);
        }
        return ServiceKey.create(ShardHost.Command.class, SHARD_HOST_PREFIX + stage + "-" + shard);
    }

    private static void checkStage(int stage) {
        if (stage < 0) {
            throw new ClusterConfigException("stage index must be >= 0, got " + stage);
        }
    }
}
