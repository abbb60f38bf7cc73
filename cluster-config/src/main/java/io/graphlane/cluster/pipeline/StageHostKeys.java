package io.graphlane.cluster.pipeline;

import io.graphlane.cluster.ClusterConfigException;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/** The Receptionist keys stage hosts are registered under: one per stage index, the same on every node. */
public final class StageHostKeys {
    /** The prefix of every key's id ({@code graphlane-stage-host-i}). */
    public static final String PREFIX = "graphlane-stage-host-";

    private StageHostKeys() {
    }

    /** The key of the host of stage {@code stage}. */
    public static ServiceKey<StageHost.Command> stage(int stage) {
        if (stage < 0) {
            throw new ClusterConfigException("stage index must be >= 0, got " + stage);
        }
        return ServiceKey.create(StageHost.Command.class, PREFIX + stage);
    }
}
