package io.graphlane.cluster.pipeline;

import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.LlamaConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * Forms and re-forms one tensor-parallel stage from the node of its shard 0. Startup and recovery are one mechanism:
 * the lead subscribes to the Receptionist for the {@link ShardHost}s of shards 1.., and whenever it sees a complete set
 * of reachable shard hosts that is not the set its stage runs with, it picks a fresh collective group
 * ({@code tp-stage-<stage>-<this node's uid>-<counter>}, so no rank of a stale group can ever be taken for one of it),
 * withdraws the stage from its {@link StageHost} if one was running, tells every shard host to {@link ShardHost.Reform}
 * into the group and joins it itself as rank 0. Once every shard host answered that it runs the group and the lead's
 * own join completed, it hands the formed stage to the {@link StageHost} ({@link StageHost.Formed}), which registers it.
 *
 * <p>Guarantees: a stage is registered only when all its shards run the same group; nothing blocks this actor (joins
 * complete asynchronously); an attempt that fails (a join timing out, a shard host refusing) is logged with its reason
 * and tried again on the next change of the shard hosts, or after {@code retryAfter} if none comes; an attempt
 * superseded by a newer set of shard hosts is abandoned and its lead shard group retired. The lead watches the shard
 * hosts of the running group: one that stops (or whose node leaves the cluster) breaks the group, and the stage
 * re-forms once a host for that shard is listed again. A host that is only unreachable for a while keeps its group,
 * unless another host for its shard is listed meanwhile. A failed step leaves the group poisoned: the stage host
 * withdraws the stage and tells the lead ({@link GroupBroken}), which re-forms it with the same shard hosts.
 */
public final class StageLead extends AbstractBehavior<StageLead.Command> {

    /** What the lead accepts; all its messages are its own. */
    public sealed interface Command permits Listed, Answered, LeadJoined, Retry, ShardGone, GroupBroken {
    }

    record Listed(int shard, Receptionist.Listing listing) implements Command {
    }

    record Answered(ShardHost.ReformReply reply) implements Command {
    }

    record LeadJoined(String group, ShardGroup shardGroup, Throwable error) implements Command {
    }

    record Retry() implements Command {
    }

    /** A step of {@code group} failed, for {@code why}: the group is poisoned and the stage must re-form. */
    record GroupBroken(String group, String why) implements Command {
    }

    /** A shard host of the running group stopped, or its node left the cluster. */
    record ShardGone(ActorRef<ShardHost.Command> shard) implements Command {
    }

    /** What the formed stage is, besides its shards: the model, whether the stage is the last, and shard 0's two lanes. */
    record StageShape(int stage, int tensorParallel, LlamaConfig config, boolean last, LaneId lane, LaneId collectiveLane) {
        StageShape {
            Objects.requireNonNull(config, "config");
            Objects.requireNonNull(lane, "lane");
            Objects.requireNonNull(collectiveLane, "collectiveLane");
            if (tensorParallel < 2) {
                throw new IllegalArgumentException("a stage lead needs tensor parallelism >= 2, got " + tensorParallel);
            }
        }
    }

    /** One attempt to form the stage as {@code group} with {@code shards}. */
    private static final class Attempt {
        final String group;
        final List<ActorRef<ShardHost.Command>> shards;
        final Set<Integer> confirmed = new TreeSet<>();
        ShardGroup lead;

        Attempt(String group, List<ActorRef<ShardHost.Command>> shards) {
            this.group = group;
            this.shards = shards;
        }
    }

    private final StageShape shape;
    private final ShardGroups groups;
    private final ActorRef<StageHost.Command> host;
    private final String uid;
    private final Duration retryAfter;
    private final TimerScheduler<Command> timers;
    private final ActorRef<ShardHost.ReformReply> answers;
    /** The reachable shard hosts listed, by shard. */
    private final Map<Integer, Set<ActorRef<ShardHost.Command>>> listed = new HashMap<>();
    /** The shard hosts the running group was formed with; null while none runs (broken, given up or not formed yet). */
    private List<ActorRef<ShardHost.Command>> current;
    /** The lead's shard group of the running group; null while none runs. */
    private ShardGroup installed;
    private Attempt attempt;
    private long counter;

    private StageLead(ActorContext<Command> context, TimerScheduler<Command> timers, StageShape shape, ShardGroups groups,
                      ActorRef<StageHost.Command> host, String uid, Duration retryAfter) {
        super(context);
        this.timers = timers;
        this.shape = shape;
        this.groups = groups;
        this.host = host;
        this.uid = uid;
        this.retryAfter = retryAfter;
        this.answers = context.messageAdapter(ShardHost.ReformReply.class, Answered::new);
        for (int t = 1; t < shape.tensorParallel(); t++) {
            int shard = t;
            listed.put(shard, Set.of());
            ActorRef<Receptionist.Listing> adapter = context.messageAdapter(Receptionist.Listing.class, l -> new Listed(shard, l));
            context.getSystem().receptionist().tell(Receptionist.subscribe(StageKeys.shardHost(shape.stage(), shard), adapter));
        }
    }

    /**
     * The lead of the stage {@code shape} describes, forming it over {@code groups} (shard 0's) and handing it to
     * {@code host}; {@code uid} (this node's unique id) makes its group names unique, {@code retryAfter} paces retries
     * of a failed attempt when no shard host changes.
     */
    static Behavior<Command> create(StageShape shape, ShardGroups groups, ActorRef<StageHost.Command> host, String uid,
                                    Duration retryAfter) {
        return Behaviors.withTimers(timers -> Behaviors.setup(ctx -> new StageLead(ctx, timers, shape, groups, host, uid,
                retryAfter)));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Listed.class, this::onListed)
                .onMessage(Answered.class, this::onAnswered)
                .onMessage(LeadJoined.class, this::onLeadJoined)
                .onMessage(ShardGone.class, this::onShardGone)
                .onMessage(GroupBroken.class, this::onGroupBroken)
                .onMessage(Retry.class, r -> {
                    maybeForm();
                    return this;
                })
                .build();
    }

    private Behavior<Command> onListed(Listed l) {
        ServiceKey<ShardHost.Command> key = StageKeys.shardHost(shape.stage(), l.shard());
        listed.put(l.shard(), l.listing().getServiceInstances(key));
        maybeForm();
        return this;
    }

    private Behavior<Command> onShardGone(ShardGone gone) {
        if (current != null && current.contains(gone.shard())) {
            // The group lost a member: it cannot run again, whoever hosts that shard next.
            getContext().getLog().info("stage {}: shard host {} is gone; group {} is broken", shape.stage(), gone.shard().path(),
                    installed.group());
            current = null;
            maybeForm();
        }
        return this;
    }

    private Behavior<Command> onGroupBroken(GroupBroken broken) {
        if (current != null && installed != null && installed.group().equals(broken.group())) {
            getContext().getLog().warn("stage {}: group {} is broken ({}); re-forming with the same shard hosts", shape.stage(),
                    broken.group(), broken.why());
            current.forEach(getContext()::unwatch);
            current = null;
            maybeForm();
        }
        return this;
    }

    /** Starts an attempt when a complete set of shard hosts differs from the running one and from the one being tried. */
    private void maybeForm() {
        Optional<List<ActorRef<ShardHost.Command>>> candidate = candidate();
        if (candidate.isEmpty()) {
            if (attempt == null && current == null) {
                List<Integer> missing = listed.entrySet().stream().filter(e -> e.getValue().isEmpty()).map(Map.Entry::getKey).sorted().toList();
                getContext().getLog().info("stage {}: waiting for the hosts of shards {} to form the stage", shape.stage(), missing);
            }
            return;
        }
        List<ActorRef<ShardHost.Command>> shards = candidate.get();
        if (shards.equals(current) || (attempt != null && shards.equals(attempt.shards))) {
            return;
        }
        if (attempt != null) {
            getContext().getLog().info("stage {}: abandoning group {}, the shard hosts changed", shape.stage(), attempt.group);
            abandon(attempt);
        }
        timers.cancel(Retry.class);
        if (current != null) {
            // The running group is given up from here on: the stage host withdraws it below.
            current.forEach(getContext()::unwatch);
            current = null;
        }
        counter++;
        String group = "tp-stage-" + shape.stage() + "-" + uid + "-" + counter;
        if (installed != null) {
            host.tell(new StageHost.Reforming(shape.stage(), "its shards form group " + group));
        }
        attempt = new Attempt(group, shards);
        getContext().getLog().info("stage {}: forming group {} with shard hosts {}", shape.stage(), group, shards);
        for (ActorRef<ShardHost.Command> shard : shards) {
            shard.tell(new ShardHost.Reform(group, answers));
        }
        getContext().pipeToSelf(groups.form(group), (shardGroup, error) -> new LeadJoined(group, shardGroup, error));
    }

    /**
     * One reachable host per shard, preferring the one the running group has; empty while a shard has none. A running
     * group's host that is unreachable for a while stays chosen (the group may still run once it is back) unless
     * another host of its shard is reachable: then that one replaces it.
     */
    private Optional<List<ActorRef<ShardHost.Command>>> candidate() {
        List<ActorRef<ShardHost.Command>> shards = new ArrayList<>();
        for (int t = 1; t < shape.tensorParallel(); t++) {
            Set<ActorRef<ShardHost.Command>> instances = listed.get(t);
            ActorRef<ShardHost.Command> kept = current == null ? null : current.get(t - 1);
            if (kept != null && (instances.isEmpty() || instances.contains(kept))) {
                shards.add(kept);
            } else if (instances.isEmpty()) {
                return Optional.empty();
            } else {
                shards.add(instances.stream().min(Comparator.comparing(ref -> ref.path().toString())).orElseThrow());
            }
        }
        return Optional.of(List.copyOf(shards));
    }

    private Behavior<Command> onAnswered(Answered answered) {
        ShardHost.ReformReply reply = answered.reply();
        if (attempt == null || !attempt.group.equals(reply.group())) {
            return this;
        }
        if (reply instanceof ShardHost.ReformFailed failed) {
            fail("shard " + failed.shard() + " could not join: " + failed.reason());
        } else if (reply instanceof ShardHost.Reformed reformed) {
            attempt.confirmed.add(reformed.shard());
            completeIfFormed();
        }
        return this;
    }

    private Behavior<Command> onLeadJoined(LeadJoined joined) {
        if (attempt == null || !attempt.group.equals(joined.group())) {
            if (joined.shardGroup() != null) {
                groups.retire(joined.shardGroup());
            }
            return this;
        }
        if (joined.error() != null) {
            Throwable e = joined.error();
            fail("shard 0 could not join: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
            return this;
        }
        attempt.lead = joined.shardGroup();
        completeIfFormed();
        return this;
    }

    private void completeIfFormed() {
        if (attempt.lead == null || attempt.confirmed.size() < shape.tensorParallel() - 1) {
            return;
        }
        Attempt formed = attempt;
        attempt = null;
        ShardGroup previous = installed;
        installed = formed.lead;
        if (current != null) {
            current.forEach(getContext()::unwatch);
        }
        current = formed.shards;
        current.forEach(shard -> getContext().watchWith(shard, new ShardGone(shard)));
        CpuWork retire = previous == null ? null : () -> groups.retire(previous);
        StageHost.HostedStage hosted = StageHost.HostedStage.sharded(formed.lead.shard(), shape.last(), shape.config(), shape.lane(),
                shape.collectiveLane(), formed.shards, formed.group);
        getContext().getLog().info("stage {}: formed group {} ({} shards)", shape.stage(), formed.group, shape.tensorParallel());
        host.tell(new StageHost.Formed(shape.stage(), hosted, retire, getContext().getSelf()));
    }

    private void fail(String why) {
        Attempt failed = attempt;
        attempt = null;
        abandon(failed);
        getContext().getLog().warn("stage {}: forming group {} failed: {}; trying again when the shard hosts change or in {} ms",
                shape.stage(), failed.group, why, retryAfter.toMillis());
        timers.startSingleTimer(Retry.class, new Retry(), retryAfter);
    }

    /** Retires what an abandoned attempt formed on this node; its shard hosts retire theirs on their next re-form. */
    private void abandon(Attempt abandoned) {
        if (abandoned.lead != null) {
            groups.retire(abandoned.lead);
        }
    }
}
