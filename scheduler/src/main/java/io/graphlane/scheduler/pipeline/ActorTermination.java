package io.graphlane.scheduler.pipeline;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/** When an actor stops, for whatever reason, seen from outside the actor system: a watcher actor completes a future. */
public final class ActorTermination {
    private ActorTermination() {
    }

    /**
     * Completes when {@code target} has stopped (asked to, or after a failure). {@code watcherName} must be unique in
     * {@code system}; the watcher stops with its target.
     */
    public static CompletionStage<Void> of(ActorSystem<?> system, ActorRef<?> target, String watcherName) {
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        system.systemActorOf(Behaviors.<Void>setup(ctx -> {
            ctx.watch(target);
            return Behaviors.receive(Void.class)
                    .onSignal(Terminated.class, t -> {
                        stopped.complete(null);
                        return Behaviors.stopped();
                    })
                    .build();
        }), watcherName, Props.empty());
        return stopped;
    }
}
