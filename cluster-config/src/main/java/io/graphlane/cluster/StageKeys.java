package io.graphlane.cluster;

import io.graphlane.actors.lane.LaneProtocol;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/** The Receptionist keys stage lanes are registered under: one key per stage index, the same on every node. */
public final class StageKeys {
    /** The prefix of every stage key's id ({@code graphlane-stage-i}). */
    public static final String PREFIX = "graphlane-stage-";

    private StageKeys() {
    }

    /** The key the lane of stage {@code stage} is registered under. */
    public static ServiceKey<LaneProtocol.Command> stage(int stage) {
        if (stage < 0) {
            throw new ClusterConfigException("stage index must be >= 0, got " + stage);
        }
        return ServiceKey.create(LaneProtocol.Command.class, PREFIX + stage);
    }
}
