package io.graphlane.cluster;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;
import org.apache.pekko.cluster.typed.Unsubscribe;

/**
 * Waits, without blocking any thread, until a node sees a given number of members Up: a short-lived actor subscribes to
 * the node's member events (the members already Up arrive first, as events) and completes once it has counted enough,
 * or fails at the deadline naming how many it saw.
 */
public final class MembersUp {
    private static final AtomicLong WATCHERS = new AtomicLong();

    private MembersUp() {
    }

    /** The signals of the watcher: a member event or the deadline. */
    private sealed interface Signal {
    }

    private record Event(ClusterEvent.MemberEvent event) implements Signal {
    }

    private record Deadline() implements Signal {
    }

    /**
     * Completes once the node of {@code system} sees at least {@code members} members Up; fails with a
     * {@link ClusterConfigException} if it has not after {@code timeout}.
     */
    public static CompletionStage<Void> await(ActorSystem<?> system, int members, Duration timeout) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        system.systemActorOf(watcher(members, timeout, done), "members-up-" + WATCHERS.incrementAndGet(), Props.empty());
        return done;
    }

    private static Behavior<Signal> watcher(int members, Duration timeout, CompletableFuture<Void> done) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
            var events = ctx.messageAdapter(ClusterEvent.MemberEvent.class, Event::new);
            Cluster.get(ctx.getSystem()).subscriptions().tell(Subscribe.create(events, ClusterEvent.MemberEvent.class));
            timers.startSingleTimer(new Deadline(), timeout);
            Set<UniqueAddress> up = new HashSet<>();
            return Behaviors.receive(Signal.class)
                    .onMessage(Event.class, e -> {
                        if (e.event() instanceof ClusterEvent.MemberUp) {
                            up.add(e.event().member().uniqueAddress());
                        } else if (!(e.event() instanceof ClusterEvent.MemberJoined) && !(e.event() instanceof ClusterEvent.MemberWeaklyUp)) {
                            up.remove(e.event().member().uniqueAddress());
                        }
                        if (up.size() < members) {
                            return Behaviors.same();
                        }
                        Cluster.get(ctx.getSystem()).subscriptions().tell(new Unsubscribe<>(events));
                        done.complete(null);
                        return Behaviors.stopped();
                    })
                    .onMessage(Deadline.class, d -> {
                        done.completeExceptionally(new ClusterConfigException("node " + Cluster.get(ctx.getSystem()).selfMember().address()
                                + " saw " + up.size() + " of " + members + " members Up within " + timeout));
                        return Behaviors.stopped();
                    })
                    .build();
        }));
    }
}
