package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.tensorparallel.CollectiveShard;
import io.graphlane.inference.tensorparallel.ShardLanes;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * The host of one tensor-parallel shard (rank 1 and up) of a stage on its node. It holds the shard's weights
 * ({@link NodeShardGroups}) but joins no collective group on its own: the stage's lead (the {@link StageLead} on the
 * node of shard 0) tells it to {@link Reform} into a named group, at startup and whenever the stage's shard hosts
 * changed. A re-form joins the new group without blocking (the join completes asynchronously), builds a fresh shard
 * over the same weights (KV caches empty), retires the previous shard group on the shard's compute lane once every work
 * of it has ended on both lanes, and answers {@link Reformed} (or {@link ReformFailed} naming why). It accepts a re-form from any lead, since a
 * replaced lead is a new actor; of several re-forms in flight, only the latest is installed.
 *
 * <p>The stage's {@link StageHost} tells it, in its own submission order, each step it runs (with the step's cache
 * changes, {@link Forget} and {@link Rewind}, before it): a {@link Step} of the
 * installed group submits this shard's works over the same segments ({@link CollectiveShard#plan}): its collectives on
 * the shard's collective lane, where it meets the other shards, and its layers' works on its compute lane, each ordered
 * after the other lane's work before it by completion handle; the activation and the output stay with shard 0. Every
 * step is submitted, in the order it arrives, through the group's {@link ShardLanes.Chain}, which keeps that order on
 * both lanes, so that the shards' collectives line up; a step of another group than the installed one is dropped (its
 * lead fails it when the collective does not meet). {@link Forget} and {@link Rewind} change a request's KV cache on
 * the compute lane, after the steps before them.
 */
public final class ShardHost extends AbstractBehavior<ShardHost.Command> {

    /** What a shard host accepts. */
    public sealed interface Command permits Step, Forget, Rewind, Reform, LaneAnswer, Joined {
    }

    /** What a shard host answers a {@link Reform}. */
    public sealed interface ReformReply permits Reformed, ReformFailed {
        /** The group the re-form named. */
        String group();
    }

    /**
     * Runs this shard of group {@code group} for step {@code stepId} over the same segments as shard 0: segment i is
     * {@code lengths[i]} positions of request {@code requestIds[i]} from {@code starts[i]}, whose caches may reach
     * {@code reserved[i]} positions.
     */
    public record Step(String group, long stepId, long[] requestIds, int[] starts, int[] lengths, int[] reserved) implements Command {
        /** Refuses an empty step or segments that do not line up. */
        public Step {
            Objects.requireNonNull(group, "group");
            int n = requestIds.length;
            if (n < 1 || starts.length != n || lengths.length != n || reserved.length != n) {
                throw new IllegalArgumentException("a shard step needs one start, one length and one reserved count per request id, got "
                        + n + " ids, " + starts.length + " starts, " + lengths.length + " lengths, " + reserved.length + " reserved counts");
            }
            for (int i = 0; i < n; i++) {
                if (lengths[i] < 1 || starts[i] < 0 || reserved[i] < 1) {
                    throw new IllegalArgumentException("a shard step needs rows >= 1, a start position >= 0 and reserved positions"
                            + " >= 1, got " + lengths[i] + " rows at " + starts[i] + " of " + reserved[i]);
                }
            }
        }
    }

    /** Takes back the KV cache of {@code requestId} to its first {@code position} positions. */
    public record Rewind(long requestId, int position) implements Command {
    }

    /** Drops the KV cache of {@code requestId}. */
    public record Forget(long requestId) implements Command {
    }

    /** Joins collective group {@code group} as this shard's rank and answers {@code replyTo} once installed (or failed). */
    public record Reform(String group, ActorRef<ReformReply> replyTo) implements Command {
        /** Refuses an empty group name. */
        public Reform {
            Objects.requireNonNull(group, "group");
            Objects.requireNonNull(replyTo, "replyTo");
            if (group.isEmpty()) {
                throw new IllegalArgumentException("a re-form needs a group name");
            }
        }
    }

    /** Shard {@code shard} has joined {@code group} and runs its steps from now on. */
    public record Reformed(String group, int shard) implements ReformReply {
    }

    /** Shard {@code shard} could not join {@code group}, for {@code reason}. */
    public record ReformFailed(String group, int shard, String reason) implements ReformReply {
        /** Requires a reason. */
        public ReformFailed {
            Objects.requireNonNull(reason, "reason");
        }
    }

    record LaneAnswer(LaneProtocol.LaneReply reply) implements Command {
    }

    /** A join of {@code reform}'s group ended: {@code shardGroup} on success, else {@code error}. */
    record Joined(Reform reform, ShardGroup shardGroup, Throwable error) implements Command {
    }

    private final ShardGroups groups;
    private final LaneId lane;
    private final LaneRegistry registry;
    private final String name;
    private final ActorRef<LaneProtocol.LaneReply> replies;
    private final ShardLanes<CpuWork> lanes;
    /** The shard group whose steps this host runs; null until the first re-form. */
    private ShardGroup installed;
    /** The submission chain of the installed group; null until the first re-form. */
    private ShardLanes<CpuWork>.Chain chain;
    /** Chains of groups given up, each with its shard group, retired once the chain has drained. */
    private final ShardLanes.Retiring<ShardGroup> retiring = new ShardLanes.Retiring<>(this::retire);
    /** The group of the latest re-form asked for; a join of an earlier one is retired when it completes. */
    private String wanted;

    private ShardHost(ActorContext<Command> context, ShardGroups groups, LaneId lane, LaneId collectiveLane, LaneRegistry registry,
                      String name) {
        super(context);
        this.groups = groups;
        this.lane = lane;
        this.registry = registry;
        this.name = name;
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
        this.lanes = new ShardLanes<>(registry, lane, collectiveLane, body -> body::run, replies);
    }

    /**
     * The host of the shard whose shard groups are {@code groups}, whose work runs on its compute lane {@code lane} and
     * its collectives on {@code collectiveLane} (both found in {@code registry}); {@code name} names it in logs and answers.
     */
    static Behavior<Command> create(ShardGroups groups, LaneId lane, LaneId collectiveLane, LaneRegistry registry, String name) {
        return Behaviors.setup(ctx -> new ShardHost(ctx, groups, lane, collectiveLane, registry, name));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Step.class, this::onStep)
                .onMessage(Forget.class, this::onForget)
                .onMessage(Rewind.class, this::onRewind)
                .onMessage(Reform.class, this::onReform)
                .onMessage(Joined.class, this::onJoined)
                .onMessage(LaneAnswer.class, this::onLaneAnswer)
                .build();
    }

    private Behavior<Command> onStep(Step step) {
        ShardGroup current = installed;
        if (current == null || !current.group().equals(step.group())) {
            getContext().getLog().warn("{}: step {} is for group {}, but this shard runs {}; dropped", name, step.stepId(),
                    step.group(), current == null ? "none yet" : current.group());
            return this;
        }
        List<Segment> segments = new ArrayList<>(step.requestIds().length);
        for (int i = 0; i < step.requestIds().length; i++) {
            segments.add(new Segment(step.requestIds()[i], step.starts()[i], step.lengths()[i], step.reserved()[i]));
        }
        chain.submitStep(current.shard().plan(segments, null, null));
        return this;
    }

    private Behavior<Command> onRewind(Rewind rewind) {
        ShardGroup current = installed;
        if (current != null) {
            chain.submitCompute(() -> current.shard().rewind(rewind.requestId(), rewind.position()));
        }
        return this;
    }

    private Behavior<Command> onForget(Forget forget) {
        ShardGroup current = installed;
        if (current != null) {
            chain.submitCompute(() -> current.shard().endRequest(forget.requestId()));
        }
        return this;
    }

    private Behavior<Command> onReform(Reform reform) {
        if (installed != null && installed.group().equals(reform.group())) {
            reform.replyTo().tell(new Reformed(reform.group(), groups.rank()));
            return this;
        }
        getContext().getLog().info("{}: re-forming into group {} for {}", name, reform.group(), reform.replyTo().path());
        wanted = reform.group();
        getContext().pipeToSelf(groups.form(reform.group()), (shardGroup, error) -> new Joined(reform, shardGroup, error));
        return this;
    }

    private Behavior<Command> onJoined(Joined joined) {
        Reform reform = joined.reform();
        if (joined.error() != null) {
            String reason = joined.error().getMessage() == null ? joined.error().toString() : joined.error().getMessage();
            getContext().getLog().warn("{}: joining group {} failed: {}", name, reform.group(), reason);
            reform.replyTo().tell(new ReformFailed(reform.group(), groups.rank(), name + ": " + reason));
            return this;
        }
        if (!reform.group().equals(wanted)) {
            // A later re-form superseded this one: its group is already abandoned.
            groups.retire(joined.shardGroup());
            reform.replyTo().tell(new ReformFailed(reform.group(), groups.rank(), name + ": superseded by a re-form into " + wanted));
            return this;
        }
        ShardGroup previous = installed;
        ShardLanes<CpuWork>.Chain previousChain = chain;
        installed = joined.shardGroup();
        chain = lanes.chain();
        if (previous != null) {
            // Retired on the lane once every work of the previous group has ended, on either lane.
            retiring.add(previousChain, previous);
        }
        getContext().getLog().info("{}: runs group {}", name, reform.group());
        reform.replyTo().tell(new Reformed(reform.group(), groups.rank()));
        return this;
    }

    /** Submits the retirement of {@code shardGroup} on the compute lane (every work of {@code done} has ended), and forgets the chain. */
    private void retire(ShardLanes<?>.Chain done, ShardGroup shardGroup) {
        CpuWork retire = () -> groups.retire(shardGroup);
        CompletionHandle handle = CompletionHandle.local(lane, registry.reserveSequences(1));
        registry.lane(lane).tell(LaneProtocol.Submit.of(handle, retire, replies));
        done.close();
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        answer.reply().forEach(reply -> {
            if (reply instanceof LaneProtocol.Finished finished) {
                ended(finished.handle());
                if (finished.outcome() instanceof Outcome.Failed failed
                        && !(failed.cause() instanceof io.graphlane.core.completion.PoisonedPreconditionException)) {
                    getContext().getLog().warn("{}: work {} failed: {}", name, finished.handle(), failed.cause().toString());
                }
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                ended(rejected.handle());
                getContext().getLog().warn("{}: work {} was refused: {}", name, rejected.handle(), rejected.toException().getMessage());
            }
        });
        return this;
    }

    private void ended(CompletionHandle handle) {
        if (chain == null || !chain.ended(handle)) {
            retiring.ended(handle);
        }
    }
}
