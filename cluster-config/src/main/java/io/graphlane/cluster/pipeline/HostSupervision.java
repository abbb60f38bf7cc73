package io.graphlane.cluster.pipeline;

import io.graphlane.cluster.NodeReadiness;
import io.graphlane.scheduler.pipeline.ActorTermination;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a node runs its stage and shard hosts: supervised, so that an exception of a host's own (never a step's failure,
 * which it reports to the step's sender) stops it with the failure logged; and watched, so that a host stopping while
 * the node is not shutting down is logged naming it and records a fatal failure in the node's {@link NodeReadiness}
 * ({@code /ready} and {@code /alive} turn false): a node never stays up, reported alive, with a dead host.
 */
final class HostSupervision {
    private static final Logger LOG = LoggerFactory.getLogger(HostSupervision.class);

    private HostSupervision() {
    }

    /** Spawns {@code host} as system actor {@code name} of {@code system}, supervised and watched; {@code what} names it in logs. */
    static <T> ActorRef<T> spawn(ActorSystem<?> system, Behavior<T> host, String name, String what) {
        ActorRef<T> ref = system.systemActorOf(Behaviors.supervise(host).onFailure(SupervisorStrategy.stop().withLoggingEnabled(true)),
                name, Props.empty());
        ActorTermination.of(system, ref, name + "-watch").thenRun(() -> {
            if (CoordinatedShutdown.get(system).getShutdownReason().isPresent()) {
                return; // the node is stopping: every host stops with it
            }
            IllegalStateException why = new IllegalStateException(what + " stopped after a failure of its own (logged above);"
                    + " the node no longer runs it and reports itself not ready and not alive");
            LOG.error(why.getMessage());
            NodeReadiness.get(system).markFailed(why);
        });
        return ref;
    }
}
