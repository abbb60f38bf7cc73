package io.graphlane.cluster;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;

/**
 * Pekko Management liveness check (GET /alive): true until the node records a fatal failure
 * ({@link NodeReadiness#markFailed}). Registered by graphlane.cluster.profiles.common.
 */
public final class NodeLivenessCheck implements Supplier<CompletionStage<Boolean>> {
    private final NodeReadiness readiness;

    /** The check of {@code system}'s node; Pekko Management constructs it. */
    public NodeLivenessCheck(ActorSystem system) {
        this.readiness = NodeReadiness.get(system);
    }

    /** Completes at once with whether the node is alive. */
    @Override
    public CompletionStage<Boolean> get() {
        return CompletableFuture.completedFuture(readiness.isAlive());
    }
}
