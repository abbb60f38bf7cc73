package io.graphlane.actors.lane;

import io.graphlane.core.graph.LaneId;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * How lane actors and callers find the actor that owns a lane, and where handle sequences and
 * request ids come from so that callers sharing the lanes never collide.
 */
public interface LaneRegistry {

    /**
     * The actor that owns {@code lane}.
     *
     * @throws UnknownLaneException naming the lane and the lanes the registry holds
     */
    ActorRef<LaneProtocol.Command> lane(LaneId lane);

    /** Every lane the registry holds. */
    Set<LaneId> lanes();

    /** Reserves {@code count} consecutive handle sequences that no other reservation returns; returns the first. */
    long reserveSequences(int count);

    /** A scope id that no other call returns; never {@link LaneProtocol#NO_SCOPE}. */
    long newScope();
}
