package io.graphlane.cluster;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.AbstractExtensionId;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Extension;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * The readiness state of one node (one per actor system), flipped by the node and read by
 * {@link NodeReadinessCheck} and {@link NodeLivenessCheck}: ready once the node's stage lanes are up and
 * their weights are bound, until the node starts to stop; alive until a fatal failure is recorded. Thread-safe.
 */
public final class NodeReadiness implements Extension {
    private static final Id ID = new Id();

    private final AtomicBoolean lanesUp = new AtomicBoolean();
    private final AtomicBoolean weightsBound = new AtomicBoolean();
    private final AtomicReference<Throwable> fatal = new AtomicReference<>();
    private final AtomicBoolean stopping = new AtomicBoolean();
    private volatile java.util.function.BooleanSupplier serving = () -> true;

    /** The readiness state of {@code system}. */
    public static NodeReadiness get(ActorSystem system) {
        return ID.get(system);
    }

    /** The readiness state of {@code system}. */
    public static NodeReadiness get(org.apache.pekko.actor.typed.ActorSystem<?> system) {
        return ID.get(Adapter.toClassic(system));
    }

    /** Records that every stage lane this node hosts is up and registered. */
    public void markLanesUp() {
        lanesUp.set(true);
    }

    /** Records that the weights of every hosted stage are bound. */
    public void markWeightsBound() {
        weightsBound.set(true);
    }

    /** Records that the node has started to stop: it turns not ready, for good (it stays alive while it drains). */
    public void markStopping() {
        stopping.set(true);
    }

    /** Whether the node has started to stop. */
    public boolean isStopping() {
        return stopping.get();
    }

    /** Records that the node can no longer serve: it turns not ready and not alive, for good. */
    public void markFailed(Throwable cause) {
        fatal.compareAndSet(null, cause);
    }

    /**
     * Makes readiness also require {@code available}: on the serving node, that every stage of the pipeline has a
     * reachable host, so a node reported ready answers requests rather than 503s.
     */
    public void requireServing(java.util.function.BooleanSupplier available) {
        this.serving = java.util.Objects.requireNonNull(available, "available");
    }

    /**
     * Whether the node's lanes are up, their weights bound, what it serves available, no fatal failure was recorded
     * and the node is not stopping.
     */
    public boolean isReady() {
        return lanesUp.get() && weightsBound.get() && fatal.get() == null && !stopping.get() && serving.getAsBoolean();
    }

    /** Whether no fatal failure was recorded. */
    public boolean isAlive() {
        return fatal.get() == null;
    }

    /** The fatal failure recorded, if any. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(fatal.get());
    }

    @Override
    public String toString() {
        return "NodeReadiness(lanesUp=" + lanesUp.get() + ", weightsBound=" + weightsBound.get() + ", stopping="
                + stopping.get() + ", failure=" + fatal.get() + ")";
    }

    private static final class Id extends AbstractExtensionId<NodeReadiness> {
        @Override
        public NodeReadiness createExtension(ExtendedActorSystem system) {
            return new NodeReadiness();
        }
    }
}
