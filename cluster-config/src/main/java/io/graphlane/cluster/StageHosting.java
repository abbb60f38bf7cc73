package io.graphlane.cluster;

import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;

/** Starts the stage lanes a node hosts once its rank is known, and stops them when the node stops. */
public interface StageHosting {
    /**
     * Starts one lane per stage in {@code stages} (possibly none) for {@code rank}; completes when every lane is
     * up, with their weights binding in {@link HostedStages#weightsBound()}. Never blocks the caller.
     */
    CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages);

    /**
     * Stops what {@link #host} started for {@code hosted}: its lanes refuse new work and stop once their in-flight
     * work has finished, then the stages' weights, caches and backends are released, each once. Completes when all
     * is released; never blocks the caller. The node calls it once, as it stops (its coordinated shutdown), and
     * waits for it up to {@code graphlane.node.shutdown-grace}. A hosting that holds more than {@code hosted} does
     * (a backend of its own, a loader) releases that too.
     */
    default CompletionStage<Void> stop(HostedStages hosted) {
        return hosted.stop().get();
    }
}
