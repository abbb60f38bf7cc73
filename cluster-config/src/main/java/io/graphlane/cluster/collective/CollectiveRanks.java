package io.graphlane.cluster.collective;

import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.InvalidActorNameException;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The parent of every rank actor of one actor system, {@code /system/graphlane-collectives}: its children's paths
 * ({@code /system/graphlane-collectives/*}) are what Artery's large-message-destinations names, so payload chunks
 * travel on the large-message stream and never hold up the cluster's own messages.
 */
final class CollectiveRanks implements Extension {
    /** The parent's name under /system. */
    static final String PARENT = "graphlane-collectives";
    /** The large-message destination pattern every rank actor matches (reference.conf lists it). */
    static final String DESTINATIONS = "/system/" + PARENT + "/*";

    /** The extension's id: one parent per actor system. */
    static final ExtensionId<CollectiveRanks> ID = new ExtensionId<>() {
        @Override
        public CollectiveRanks createExtension(ActorSystem<?> system) {
            return new CollectiveRanks(system);
        }
    };

    /** Spawns a rank actor named {@code name}; {@code spawned} fails if one of that name (group and rank) runs already. */
    record Spawn(CollectiveRankActor.Setup setup, String name, CompletableFuture<ActorRef<CollectiveRankActor.Command>> spawned) {
    }

    private final ActorRef<Spawn> parent;

    private CollectiveRanks(ActorSystem<?> system) {
        parent = system.systemActorOf(Behaviors.<Spawn>receive((context, spawn) -> {
            try {
                spawn.spawned().complete(context.spawn(CollectiveRankActor.create(spawn.setup()), spawn.name()));
            } catch (InvalidActorNameException e) {
                spawn.spawned().completeExceptionally(new ClusterCollectiveException("collective group " + spawn.setup().group()
                        + ", rank " + spawn.setup().rank() + ": this node has joined that group as that rank already (" + e.getMessage() + ")"));
            }
            return Behaviors.same();
        }), PARENT, Props.empty());
    }

    /** Asks the parent to spawn a rank actor. */
    void spawn(Spawn spawn) {
        parent.tell(spawn);
    }
}
