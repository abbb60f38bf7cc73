package io.graphlane.cluster;

import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;

/** Starts the stage lanes a node hosts once its rank is known. */
public interface StageHosting {
    /**
     * Starts one lane per stage in {@code stages} (possibly none) for {@code rank}; completes when every lane is
     * up, with their weights binding in {@link HostedStages#weightsBound()}. Never blocks the caller.
     */
    CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages);
}
