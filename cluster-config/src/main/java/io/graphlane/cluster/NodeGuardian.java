package io.graphlane.cluster;

import io.graphlane.cluster.pipeline.StageKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * The guardian of a graphlane node: waits for membership, takes the node's rank (given, or derived from the
 * Up members once all {@code nodes} are Up), starts the lanes of the stages that rank hosts, registers each
 * with the Receptionist under {@link StageKeys#lane}, and flips {@link NodeReadiness} as lanes come up and
 * weights are bound. A node that cannot take a rank, or whose cluster does not form in time, records a fatal
 * failure (not ready, not alive) instead of stopping. Told {@link StopStages} as the node stops, it turns readiness
 * false, takes no rank any more and stops the hosted stages through {@link StageHosting#stop}.
 */
public final class NodeGuardian extends AbstractBehavior<NodeGuardian.Command> {

    /** What the guardian is told. */
    public sealed interface Command permits MembershipChanged, FormationTimedOut, StagesHosted, HostingFailed, WeightsBound,
            WeightsFailed, StopStages, StagesStopped {
    }

    /**
     * The node is stopping: take no rank any more, and stop the hosted stages through {@link StageHosting#stop}
     * (their in-flight work finishes first); {@code replyTo} hears once they are stopped and released (at once if
     * none were hosted, and after the stages being started are up, then stopped).
     */
    public record StopStages(ActorRef<Done> replyTo) implements Command {
    }

    /** The hosted stages have stopped; {@code failure} is null unless stopping them failed. */
    record StagesStopped(Throwable failure) implements Command {
    }

    /** A member event of this node's cluster. */
    record MembershipChanged(ClusterEvent.MemberEvent event) implements Command {
    }

    /** The formation timeout passed before the node took its rank. */
    record FormationTimedOut() implements Command {
    }

    /** The stage lanes are up. */
    record StagesHosted(NodeIdentity identity, HostedStages stages) implements Command {
    }

    /** Starting the stage lanes failed. */
    record HostingFailed(Throwable cause) implements Command {
    }

    /** The weights of every hosted stage are bound. */
    record WeightsBound() implements Command {
    }

    /** Binding the weights failed. */
    record WeightsFailed(Throwable cause) implements Command {
    }

    private final int nodes;
    private final OptionalInt givenRank;
    private final ParallelLayout layout;
    private final StageHosting hosting;
    private final CompletableFuture<NodeIdentity> hosted;
    private final NodeReadiness readiness;
    private final Cluster cluster;
    private final TimerScheduler<Command> timers;
    /** The Up members as this node's member events tell them (the cluster's state snapshot may lag behind). */
    private final Map<UniqueAddress, Member> up = new HashMap<>();
    private boolean rankTaken;
    /** Between taking the rank and the hosting's answer. */
    private boolean hostingInFlight;
    private HostedStages running;
    private boolean stopRequested;
    private boolean stagesStopped;
    private final List<ActorRef<Done>> stopReplies = new ArrayList<>(1);

    private NodeGuardian(ActorContext<Command> context, TimerScheduler<Command> timers, OptionalInt givenRank,
                         ParallelLayout layout, StageHosting hosting, Duration formationTimeout,
                         CompletableFuture<NodeIdentity> hosted) {
        super(context);
        this.timers = timers;
        this.nodes = layout.nodes();
        this.givenRank = givenRank;
        this.layout = layout;
        this.hosting = hosting;
        this.hosted = hosted;
        this.readiness = NodeReadiness.get(context.getSystem());
        this.cluster = Cluster.get(context.getSystem());
        cluster.subscriptions().tell(Subscribe.create(
                context.messageAdapter(ClusterEvent.MemberEvent.class, MembershipChanged::new), ClusterEvent.MemberEvent.class));
        timers.startSingleTimer(new FormationTimedOut(), formationTimeout);
    }

    /**
     * The guardian of a node of {@code layout.nodes()} members hosting its share of the layout's stages through
     * {@code hosting}; {@code hosted} completes with the node's identity once its lanes are up and registered.
     */
    public static Behavior<Command> create(OptionalInt givenRank, ParallelLayout layout, StageHosting hosting,
                                           Duration formationTimeout, CompletableFuture<NodeIdentity> hosted) {
        return Behaviors.setup(ctx -> Behaviors.withTimers(timers ->
                new NodeGuardian(ctx, timers, givenRank, layout, hosting, formationTimeout, hosted)));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(MembershipChanged.class, this::onMembershipChanged)
                .onMessage(FormationTimedOut.class, this::onFormationTimedOut)
                .onMessage(StagesHosted.class, this::onStagesHosted)
                .onMessage(HostingFailed.class, this::onHostingFailed)
                .onMessage(WeightsBound.class, this::onWeightsBound)
                .onMessage(WeightsFailed.class, this::onWeightsFailed)
                .onMessage(StopStages.class, this::onStopStages)
                .onMessage(StagesStopped.class, this::onStagesStopped)
                .build();
    }

    private Behavior<Command> onMembershipChanged(MembershipChanged changed) {
        Member member = changed.event().member();
        if (changed.event() instanceof ClusterEvent.MemberUp) {
            up.put(member.uniqueAddress(), member);
        } else if (!(changed.event() instanceof ClusterEvent.MemberJoined)
                && !(changed.event() instanceof ClusterEvent.MemberWeaklyUp)) {
            up.remove(member.uniqueAddress());
        }
        if (rankTaken || stopRequested || !up.containsKey(cluster.selfMember().uniqueAddress())) {
            return this;
        }
        if (givenRank.isPresent()) {
            takeRank(givenRank.getAsInt());
        } else if (up.size() >= nodes) {
            try {
                takeRank(derivedRank(List.copyOf(up.values())));
            } catch (ClusterConfigException e) {
                fail("cannot derive this node's rank", e);
            }
        }
        return this;
    }

    private int derivedRank(List<Member> up) {
        List<RankAssignment.Candidate> candidates = new ArrayList<>();
        for (Member m : up) {
            candidates.add(new RankAssignment.Candidate(m.address().getHost().orElse(""), m.address().getPort().orElse(0),
                    claimedRank(m)));
        }
        Map<String, Integer> ranks = RankAssignment.assign(candidates, nodes);
        org.apache.pekko.actor.Address self = cluster.selfMember().address();
        return ranks.get(self.getHost().orElse("") + ":" + self.getPort().orElse(0));
    }

    private static OptionalInt claimedRank(Member m) {
        for (String role : m.getRoles()) {
            if (role.startsWith(NodeConfig.RANK_ROLE_PREFIX)) {
                return OptionalInt.of(Integer.parseInt(role.substring(NodeConfig.RANK_ROLE_PREFIX.length())));
            }
        }
        return OptionalInt.empty();
    }

    private void takeRank(int rank) {
        rankTaken = true;
        hostingInFlight = true;
        timers.cancel(new FormationTimedOut());
        List<Integer> mine = layout.stagesOf(rank);
        NodeIdentity identity = new NodeIdentity(rank, nodes, mine, cluster.selfMember().address().toString(),
                layout.shardOf(rank));
        if (layout.tensorParallel() > 1) {
            getContext().getLog().info("node {} takes rank {} of {} and holds shard {} of {} of stage {} of {}", identity.address(),
                    rank, nodes, identity.shard(), layout.tensorParallel(), mine, layout.stages());
        } else {
            getContext().getLog().info("node {} takes rank {} of {} and hosts stages {} of {}", identity.address(), rank, nodes,
                    mine, layout.stages());
        }
        getContext().pipeToSelf(hosting.host(getContext().getSystem(), rank, mine),
                (stagesUp, error) -> error == null ? new StagesHosted(identity, stagesUp) : new HostingFailed(error));
    }

    private Behavior<Command> onFormationTimedOut(FormationTimedOut timeout) {
        if (!rankTaken && !stopRequested) {
            fail("the cluster did not form", new ClusterConfigException("node " + cluster.selfMember().address()
                    + " saw no " + nodes + " members Up before graphlane.cluster.formation-timeout (self is "
                    + cluster.selfMember().status() + ", members " + cluster.state().getMembers() + ")"));
        }
        return this;
    }

    private Behavior<Command> onStagesHosted(StagesHosted up) {
        hostingInFlight = false;
        running = up.stages();
        if (stopRequested) {
            // Up after the node began to stop: never registered nor reported, stopped at once.
            hosted.completeExceptionally(new ClusterConfigException("node " + cluster.selfMember().address()
                    + " stopped before its stage lanes were up"));
            stopRunning();
            return this;
        }
        up.stages().lanes().forEach((stage, lane) ->
                getContext().getSystem().receptionist().tell(Receptionist.register(StageKeys.lane(stage), lane)));
        readiness.markLanesUp();
        hosted.complete(up.identity());
        getContext().pipeToSelf(up.stages().weightsBound(),
                (ok, error) -> error == null ? new WeightsBound() : new WeightsFailed(error));
        return this;
    }

    private Behavior<Command> onHostingFailed(HostingFailed failed) {
        hostingInFlight = false;
        if (stopRequested) {
            getContext().getLog().info("graphlane node {}: starting the stage lanes failed while stopping: {}",
                    cluster.selfMember().address(), failed.cause().getMessage());
            hosted.completeExceptionally(failed.cause());
            stagesStopped(null);
            return this;
        }
        fail("starting the stage lanes failed", failed.cause());
        return this;
    }

    private Behavior<Command> onStopStages(StopStages stop) {
        stopReplies.add(stop.replyTo());
        if (stagesStopped) {
            stop.replyTo().tell(Done.getInstance());
            stopReplies.clear();
            return this;
        }
        if (stopRequested) {
            return this;
        }
        stopRequested = true;
        readiness.markStopping();
        timers.cancel(new FormationTimedOut());
        if (running != null) {
            stopRunning();
        } else if (!hostingInFlight) {
            stagesStopped(null);
        }
        return this;
    }

    private void stopRunning() {
        CompletionStage<Void> stopped;
        try {
            stopped = hosting.stop(running);
        } catch (RuntimeException e) {
            stopped = CompletableFuture.failedFuture(e);
        }
        getContext().pipeToSelf(stopped, (ok, error) -> new StagesStopped(error));
    }

    private Behavior<Command> onStagesStopped(StagesStopped stopped) {
        stagesStopped(stopped.failure());
        return this;
    }

    private void stagesStopped(Throwable failure) {
        if (failure != null) {
            getContext().getLog().error("graphlane node {}: stopping the hosted stages failed: {}", cluster.selfMember().address(),
                    failure.getMessage(), failure);
        } else if (running != null) {
            getContext().getLog().info("graphlane node {}: stages {} stopped and released", cluster.selfMember().address(),
                    running.lanes().keySet());
        }
        stagesStopped = true;
        stopReplies.forEach(r -> r.tell(Done.getInstance()));
        stopReplies.clear();
    }

    private Behavior<Command> onWeightsBound(WeightsBound bound) {
        if (stopRequested) {
            return this;
        }
        readiness.markWeightsBound();
        getContext().getLog().info("node {} is ready: lanes of stages {} up, weights bound", cluster.selfMember().address(),
                running.lanes().keySet());
        return this;
    }

    private Behavior<Command> onWeightsFailed(WeightsFailed failed) {
        fail("binding the stage weights failed", failed.cause());
        return this;
    }

    private void fail(String what, Throwable cause) {
        getContext().getLog().error("graphlane node {}: {}: {}", cluster.selfMember().address(), what, cause.getMessage(), cause);
        readiness.markFailed(cause);
        hosted.completeExceptionally(cause);
    }
}
