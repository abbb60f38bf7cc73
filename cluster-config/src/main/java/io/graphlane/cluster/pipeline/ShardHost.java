package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.tensorparallel.LlamaShard;
import java.util.List;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * The host of one tensor-parallel shard (rank 1 and up) of a stage on its node. The stage's {@link StageHost} (which
 * holds shard 0) tells it, in its own submission order, each step it runs: a {@link Step} submits this shard's forward
 * over the same segments on the shard's lane, where it meets the other shards in the stage's collectives; the
 * activation and the output stay with shard 0. Every step is run, in the order it arrives, so that the shards'
 * collectives line up; a shard whose step fails leaves the collective group, and shard 0 fails the step naming it.
 * {@link Forget} drops a request's KV cache on the lane, after the steps before it.
 */
public final class ShardHost extends AbstractBehavior<ShardHost.Command> {

    /** What a shard host accepts. */
    public sealed interface Command permits Step, Forget, LaneAnswer {
    }

    /** Runs this shard over {@code rows} positions of {@code requestId} from {@code startPosition}, for step {@code step}. */
    public record Step(long requestId, long step, int startPosition, int rows) implements Command {
        /** Refuses an empty step. */
        public Step {
            if (rows < 1 || startPosition < 0) {
                throw new IllegalArgumentException("a shard step needs rows >= 1 and a start position >= 0, got " + rows + " rows at "
                        + startPosition);
            }
        }
    }

    /** Drops the KV cache of {@code requestId}. */
    public record Forget(long requestId) implements Command {
    }

    record LaneAnswer(LaneProtocol.LaneReply reply) implements Command {
    }

    private final LlamaShard<CpuTensor> shard;
    private final LaneId lane;
    private final LaneRegistry registry;
    private final String name;
    private final org.apache.pekko.actor.typed.ActorRef<LaneProtocol.LaneReply> replies;

    private ShardHost(ActorContext<Command> context, LlamaShard<CpuTensor> shard, LaneId lane, LaneRegistry registry, String name) {
        super(context);
        this.shard = shard;
        this.lane = lane;
        this.registry = registry;
        this.name = name;
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
    }

    /** The host of {@code shard}, whose work runs on {@code lane} (found in {@code registry}); {@code name} names it in logs. */
    public static Behavior<Command> create(LlamaShard<CpuTensor> shard, LaneId lane, LaneRegistry registry, String name) {
        return Behaviors.setup(ctx -> new ShardHost(ctx, shard, lane, registry, name));
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Step.class, this::onStep)
                .onMessage(Forget.class, this::onForget)
                .onMessage(LaneAnswer.class, this::onLaneAnswer)
                .build();
    }

    private Behavior<Command> onStep(Step step) {
        List<Segment> segments = List.of(new Segment(step.requestId(), step.startPosition(), step.rows()));
        CpuWork forward = () -> shard.forward(segments, null);
        submit(forward, step.requestId());
        return this;
    }

    private Behavior<Command> onForget(Forget forget) {
        CpuWork drop = () -> shard.endRequest(forget.requestId());
        submit(drop, forget.requestId());
        return this;
    }

    private void submit(CpuWork work, long requestId) {
        CompletionHandle handle = CompletionHandle.local(lane, registry.reserveSequences(1));
        registry.lane(lane).tell(LaneProtocol.Submit.of(handle, work, replies).inRequest(requestId));
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        answer.reply().forEach(reply -> {
            if (reply instanceof LaneProtocol.Finished finished && finished.outcome() instanceof Outcome.Failed failed) {
                getContext().getLog().warn("{}: work {} failed: {}", name, finished.handle(), failed.cause().toString());
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                getContext().getLog().warn("{}: work {} was refused: {}", name, rejected.handle(), rejected.toException().getMessage());
            }
        });
        return this;
    }
}
