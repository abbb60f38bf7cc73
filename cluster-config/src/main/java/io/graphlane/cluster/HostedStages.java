package io.graphlane.cluster;

import io.graphlane.actors.lane.LaneProtocol;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The stage lanes a node has started.
 *
 * @param lanes the lane actor of each hosted stage, by stage index
 * @param weightsBound completes once the weights of every hosted stage are bound (at once when there are none)
 * @param stop stops the lanes (in-flight work finishes first); completes when they have stopped
 */
public record HostedStages(Map<Integer, ActorRef<LaneProtocol.Command>> lanes, CompletionStage<Void> weightsBound,
                           java.util.function.Supplier<CompletionStage<Void>> stop) {
    /** Copies the lane map. */
    public HostedStages {
        lanes = Map.copyOf(lanes);
    }
}
