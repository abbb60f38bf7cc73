package io.graphlane.cluster;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;

/**
 * Pekko Management readiness check (GET /ready): true only when the node's stage lanes are up and their
 * weights are bound ({@link NodeReadiness}). Registered by graphlane.cluster.profiles.common.
 */
public final class NodeReadinessCheck implements Supplier<CompletionStage<Boolean>> {
    private final NodeReadiness readiness;

    /** The check of {@code system}'s node; Pekko Management constructs it. */
    public NodeReadinessCheck(ActorSystem system) {
        this.readiness = NodeReadiness.get(system);
    }

    /** Completes at once with whether the node is ready. */
    @Override
    public CompletionStage<Boolean> get() {
        return CompletableFuture.completedFuture(readiness.isReady());
    }
}
