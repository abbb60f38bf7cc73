package io.graphlane.cluster;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
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
    private volatile Supplier<Optional<String>> serving = Optional::empty;

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
        Objects.requireNonNull(available, "available");
        this.serving = () -> available.getAsBoolean() ? Optional.empty() : Optional.of("what this node serves is unavailable");
    }

    /**
     * Makes readiness also require that {@code unavailableReason} is empty: on the serving node, why the pipeline
     * refuses requests (a stage without a host that can run it, its engine stopped, draining), read at every check, so
     * readiness turns false the moment the pipeline does and says why.
     */
    public void requireServing(Supplier<Optional<String>> unavailableReason) {
        this.serving = Objects.requireNonNull(unavailableReason, "unavailableReason");
    }

    /**
     * Whether the node's lanes are up, their weights bound, what it serves available, no fatal failure was recorded
     * and the node is not stopping.
     */
    public boolean isReady() {
        return whyNotReady().isEmpty();
    }

    /** Why the node is not ready, in words for whoever probes it; empty while it is ready. */
    public Optional<String> whyNotReady() {
        Throwable failure = fatal.get();
        if (failure != null) {
            return Optional.of("the node failed: " + failure.getMessage());
        }
        if (stopping.get()) {
            return Optional.of("the node is stopping");
        }
        if (!lanesUp.get()) {
            return Optional.of("the node's stage lanes are not up yet");
        }
        if (!weightsBound.get()) {
            return Optional.of("the weights of the node's stages are not bound yet");
        }
        return serving.get().map(why -> "the pipeline this node serves is unavailable: " + why);
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
