package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.wire.ActivationFrame;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.tensor.Shape;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.Receptionist;

/**
 * The stage host of one node: owns the lanes of the stages its rank hosts and runs their steps for the engine on
 * the serving node. A {@link Run} of stage k submits the stage's forward on k's lane, then a copy-out ordered after
 * the forward's exact completion on the same lane; when the copy-out finishes, the activation travels to the host of
 * stage k+1 in an {@link ActivationFrame} naming the producing work (node, lane, sequence), or, on the last stage, the
 * logits go to the engine. The consumer submits its own forward only once the frame has arrived, so stages order
 * across nodes by message, with no global barrier. A failed forward poisons the stages after it: a {@link Poisoned}
 * travels down the rest of the route and the last stage reports the root failure to the engine. A step that cannot
 * be one (no tokens, an activation that is not rank 2, a negative start, positions past the model's maximum) fails
 * the same way before any work, naming the field; the host serves the next step as before.
 *
 * <p>A tensor-parallel stage is hosted here by its shard 0, with the {@link ShardHost}s of its other shards on other
 * nodes: each step (and each {@link Forget}) is told to them in this host's submission order, so every shard runs the
 * same steps in the same order and their collectives line up. Such a stage starts unformed and unregistered; the
 * node's {@link StageLead} forms it and hands it over in a {@link Formed} once every shard has joined the group, and
 * only then does this host register it (and it retires the previous generation's shard on the lane, after the steps
 * queued there). The host watches the shard hosts: once one is gone, it withdraws the stage from the Receptionist
 * (the serving node then reports the stage unavailable) and fails its steps at once, naming the lost shard, rather
 * than letting each one wait for the collective's timeout; the same happens when the lead starts a re-form
 * ({@link Reforming}), and when a step of the stage fails (a shard whose step fails leaves the group, so no later step
 * could run): then the host asks the lead to re-form the stage. A withdrawn stage is registered again by the next
 * {@link Formed}.
 */
public final class StageHost extends AbstractBehavior<StageHost.Command> {
    private static final int REMEMBERED_FORGOTTEN = 4096;

    /** What a stage host accepts. */
    public sealed interface Command permits Run, Poisoned, Forget, LaneAnswer, ShardLost, Formed, Reforming {
    }

    /**
     * Runs stage {@code stage} of step {@code step} of request {@code requestId} over positions
     * {@code startPosition, …} ({@code tokens} on stage 0, the activation in {@code input} after it); then hands on to
     * {@code downstream} (the hosts of the following stages, in order) or, on the last stage, to {@code engine}.
     */
    public record Run(long requestId, long step, int stage, int[] tokens, int startPosition, ActivationFrame input,
                      List<ActorRef<Command>> downstream, ActorRef<StageReply> engine) implements Command {
        /** Copies the route; refuses a missing input after stage 0. */
        public Run {
            Objects.requireNonNull(tokens, "tokens");
            downstream = List.copyOf(downstream);
            Objects.requireNonNull(engine, "engine");
            if (stage > 0 && input == null) {
                throw new IllegalArgumentException("stage " + stage + " of request " + requestId + " needs an activation frame");
            }
        }
    }

    /**
     * Stage {@code rootStage} on node {@code rootNode} failed for this step (its work is {@code producer}); the stage
     * this reaches does not run and passes the poison on down {@code downstream}, the last one to {@code engine}.
     */
    public record Poisoned(long requestId, long step, int rootStage, String rootNode, CompletionHandle producer,
                           Outcome.Failed failure, List<ActorRef<Command>> downstream, ActorRef<StageReply> engine)
            implements Command {
        /** Copies the route. */
        public Poisoned {
            downstream = List.copyOf(downstream);
        }
    }

    /** Drops the KV caches of {@code requestId} on every stage this node hosts (on each stage's lane). */
    public record Forget(long requestId) implements Command {
    }

    record LaneAnswer(LaneProtocol.LaneReply reply) implements Command {
    }

    /** The host of shard {@code shard} of stage {@code stage}, in group {@code group}, has stopped or its node has left. */
    record ShardLost(int stage, int shard, String host, String group) implements Command {
    }

    /**
     * Tensor-parallel stage {@code stage} has formed as {@code hosted} (every shard joined {@code hosted.group()}): run
     * its steps from now on and register it; {@code retirePrevious}, unless null, retires the lead's previous
     * generation and is submitted on the stage's lane after the steps already there; {@code lead} is told when a failed
     * step breaks the group. Local to the node.
     */
    record Formed(int stage, HostedStage hosted, CpuWork retirePrevious, ActorRef<StageLead.Command> lead) implements Command {
        Formed {
            Objects.requireNonNull(hosted, "hosted");
            Objects.requireNonNull(lead, "lead");
        }
    }

    /** Tensor-parallel stage {@code stage} is re-forming, for {@code why}: withdraw it until the next {@link Formed}. Local. */
    record Reforming(int stage, String why) implements Command {
        Reforming {
            Objects.requireNonNull(why, "why");
        }
    }

    /**
     * One hosted stage: what a step runs, whether it is the model's last stage, the model, the lane its work runs on,
     * and, for a tensor-parallel stage, the hosts of its shards 1, 2, … and the collective group they formed (no shard
     * hosts and an empty group otherwise).
     */
    public record HostedStage(StageForward<CpuTensor> forward, boolean last, LlamaConfig config, LaneId lane,
                              List<ActorRef<ShardHost.Command>> shards, String group) {
        /** Copies the shard hosts. */
        public HostedStage {
            Objects.requireNonNull(forward, "forward");
            Objects.requireNonNull(config, "config");
            Objects.requireNonNull(lane, "lane");
            shards = List.copyOf(shards);
            Objects.requireNonNull(group, "group");
        }

        /** A whole stage on one lane. */
        public HostedStage(LlamaStage<CpuTensor> llama, LaneId lane) {
            this(llama, llama.spec().isLast(), llama.config(), lane, List.of(), "");
        }
    }

    /** One step in flight on this node: the copy-out it waits for and what it fills. */
    private record InFlight(Run run, String group, CompletionHandle forward, AtomicReference<float[]> copied, int rows, int cols) {
    }

    private final Map<Integer, HostedStage> stages;
    private final LaneRegistry registry;
    private final String node;
    private final ActorRef<LaneProtocol.LaneReply> replies;
    private final Map<CompletionHandle, InFlight> waiting = new HashMap<>();
    /** The lead of each formed tensor-parallel stage, by stage. */
    private final Map<Integer, ActorRef<StageLead.Command>> leads = new HashMap<>();
    /** Why a tensor-parallel stage can no longer run, by stage. */
    private final Map<Integer, String> lost = new HashMap<>();
    /** Requests recently forgotten: a step of theirs still on its way is dropped rather than caching them again. */
    private final Set<Long> forgotten = Collections.newSetFromMap(new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
            return size() > REMEMBERED_FORGOTTEN;
        }
    });

    private StageHost(ActorContext<Command> context, Map<Integer, HostedStage> stages, Map<Integer, String> unformed,
                      LaneRegistry registry, String node) {
        super(context);
        this.stages = new HashMap<>(stages);
        this.lost.putAll(unformed);
        this.registry = registry;
        this.node = node;
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
        this.stages.forEach(this::watchShards);
    }

    /**
     * The host of {@code stages} (by stage index), whose lanes are found in {@code registry}; {@code node} is this
     * node's address, as handles and failures name it.
     */
    public static Behavior<Command> create(Map<Integer, HostedStage> stages, LaneRegistry registry, String node) {
        return create(stages, Map.of(), registry, node);
    }

    /**
     * Like {@link #create(Map, LaneRegistry, String)}, with tensor-parallel stages not formed yet: {@code unformed} says
     * why each one cannot run until its {@link Formed} arrives (its steps fail naming that).
     */
    public static Behavior<Command> create(Map<Integer, HostedStage> stages, Map<Integer, String> unformed, LaneRegistry registry,
                                           String node) {
        Map<Integer, String> waiting = Map.copyOf(unformed);
        return Behaviors.setup(ctx -> new StageHost(ctx, stages, waiting, registry, node));
    }

    private void watchShards(int stage, HostedStage hosted) {
        for (int i = 0; i < hosted.shards().size(); i++) {
            ActorRef<ShardHost.Command> shard = hosted.shards().get(i);
            getContext().watchWith(shard, new ShardLost(stage, i + 1, shard.path().address().toString(), hosted.group()));
        }
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(Run.class, this::onRun)
                .onMessage(Poisoned.class, this::onPoisoned)
                .onMessage(Forget.class, this::onForget)
                .onMessage(LaneAnswer.class, this::onLaneAnswer)
                .onMessage(ShardLost.class, this::onShardLost)
                .onMessage(Formed.class, this::onFormed)
                .onMessage(Reforming.class, this::onReforming)
                .build();
    }

    private Behavior<Command> onRun(Run run) {
        if (forgotten.contains(run.requestId())) {
            return this;
        }
        String gone = lost.get(run.stage());
        if (gone != null) {
            HostedStage withdrawn = stages.get(run.stage());
            LaneId lane = withdrawn == null ? new LaneId("stage-" + run.stage()) : withdrawn.lane();
            poisonDownstream(run, new CompletionHandle(node, lane, 0), new Outcome.Failed(new GraphlaneException(gone)));
            return this;
        }
        HostedStage hosted = stages.get(run.stage());
        if (hosted == null) {
            getContext().getLog().warn("node {} does not host stage {} (hosts {}); step {} of request {} refused", node,
                    run.stage(), stages.keySet(), run.step(), run.requestId());
            CompletionHandle none = new CompletionHandle(node, new LaneId("stage-" + run.stage()), 0);
            poisonDownstream(run, none, new Outcome.Failed(new IllegalStateException("node " + node + " does not host stage "
                    + run.stage() + "; it hosts " + stages.keySet())));
            return this;
        }
        String malformed = malformed(run, hosted);
        if (malformed != null) {
            // A peer's bad step fails that step only: this host runs the next one as before.
            getContext().getLog().warn("node {} refused step {} of request {} of stage {}: {}", node, run.step(), run.requestId(),
                    run.stage(), malformed);
            poisonDownstream(run, new CompletionHandle(node, hosted.lane(), 0), new Outcome.Failed(new GraphlaneException(
                    "stage " + run.stage() + " on " + node + " refused step " + run.step() + " of request " + run.requestId() + ": "
                            + malformed)));
            return this;
        }
        StageForward<CpuTensor> llama = hosted.forward();
        NeuralOps<CpuTensor> ops = llama.ops();
        int rows = run.stage() == 0 ? run.tokens().length : (int) run.input().activation().shape().dims()[0];
        List<Segment> segments = List.of(new Segment(run.requestId(), run.startPosition(), rows));
        float[] activation = run.stage() == 0 ? null : run.input().activation().toFloats();
        int inCols = run.stage() == 0 ? 0 : (int) run.input().activation().shape().dims()[1];
        AtomicReference<StageOutput<CpuTensor>> produced = new AtomicReference<>();
        AtomicReference<float[]> copied = new AtomicReference<>();
        CpuWork forward = () -> {
            if (activation == null) {
                produced.set(llama.forward(new StageInput.Tokens<>(segments, run.tokens())));
                return;
            }
            // The arrived activation lives on this lane only while the forward reads it.
            CpuTensor in = ops.fromHost(activation, rows, inCols);
            try {
                produced.set(llama.forward(new StageInput.Hidden<>(segments, in)));
            } finally {
                ops.release(in);
            }
        };
        boolean last = hosted.last();
        int outRows = last ? 1 : rows;
        int outCols = last ? hosted.config().vocabSize() : hosted.config().hiddenSize();
        CpuWork copyOut = () -> {
            StageOutput<CpuTensor> out = produced.getAndSet(null);
            try {
                float[] values = new float[outRows * outCols];
                ops.toHost(out.tensor(), values);
                copied.set(values);
            } finally {
                ops.release(out.tensor());
            }
        };
        long first = registry.reserveSequences(2);
        CompletionHandle forwardHandle = CompletionHandle.local(hosted.lane(), first);
        CompletionHandle copyHandle = CompletionHandle.local(hosted.lane(), first + 1);
        ActorRef<LaneProtocol.Command> lane = registry.lane(hosted.lane());
        ShardHost.Step shardStep = new ShardHost.Step(hosted.group(), run.requestId(), run.step(), run.startPosition(), rows);
        hosted.shards().forEach(shard -> shard.tell(shardStep));
        lane.tell(LaneProtocol.Submit.of(forwardHandle, forward, replies).inRequest(run.requestId()).consumedBy(1));
        lane.tell(LaneProtocol.Submit.of(copyHandle, copyOut, replies).after(forwardHandle).inRequest(run.requestId()));
        waiting.put(copyHandle, new InFlight(run, hosted.group(), new CompletionHandle(node, hosted.lane(), first), copied, outRows,
                outCols));
        return this;
    }

    /**
     * Why {@code run}, as it came from a peer, cannot be a step of {@code hosted}, naming the field, the expected and the
     * found value; null if it can. The forward checks the rest (the activation's width, the positions the request's KV
     * cache holds) and fails the step as work.
     */
    private static String malformed(Run run, HostedStage hosted) {
        int rows;
        if (run.stage() == 0) {
            rows = run.tokens().length;
            if (rows < 1) {
                return "tokens: expected at least one token id, found none";
            }
        } else {
            long[] dims = run.input().activation().shape().dims();
            if (dims.length != 2) {
                return "activation: expected a rank-2 tensor (rows x " + hosted.config().hiddenSize() + "), found shape "
                        + Arrays.toString(dims);
            }
            if (dims[0] < 1 || dims[0] > Integer.MAX_VALUE) {
                return "activation: expected 1 to " + Integer.MAX_VALUE + " rows, found " + dims[0];
            }
            rows = (int) dims[0];
        }
        if (run.startPosition() < 0) {
            return "start position: expected >= 0, found " + run.startPosition();
        }
        long end = (long) run.startPosition() + rows;
        if (end > hosted.config().maxPositions()) {
            return "start position: " + run.startPosition() + " + " + rows + " rows = " + end + " positions, past the model's maximum of "
                    + hosted.config().maxPositions() + " (max_position_embeddings)";
        }
        return null;
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        answer.reply().forEach(reply -> {
            if (reply instanceof LaneProtocol.Finished finished) {
                InFlight f = waiting.remove(finished.handle());
                if (f != null) {
                    stepEnded(f, finished.outcome());
                }
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                InFlight f = waiting.remove(rejected.handle());
                if (f != null) {
                    stepEnded(f, Outcome.failure(rejected.toException()));
                }
            }
        });
        return this;
    }

    private void stepEnded(InFlight f, Outcome outcome) {
        Run run = f.run();
        if (outcome instanceof Outcome.Failed failed) {
            Throwable root = failed.cause() instanceof PoisonedPreconditionException p ? p.rootCause() : failed.cause();
            getContext().getLog().warn("stage {} on node {} failed step {} of request {}: {}", run.stage(), node, run.step(),
                    run.requestId(), root.toString());
            groupBroken(run.stage(), f.group(), "step " + run.step() + " of request " + run.requestId() + " failed: " + root);
            poisonDownstream(run, f.forward(), new Outcome.Failed(root));
            return;
        }
        WireTensor values = WireTensor.ofFloats(Shape.of(f.rows(), f.cols()), f.copied().get());
        if (run.downstream().isEmpty()) {
            run.engine().tell(new StageReply.StepDone(run.requestId(), run.step(), values));
            return;
        }
        ActivationFrame frame = new ActivationFrame(f.forward(), run.requestId(), (int) Math.min(Integer.MAX_VALUE, run.step()), values);
        run.downstream().get(0).tell(new Run(run.requestId(), run.step(), run.stage() + 1, run.tokens(),
                run.startPosition(), frame, run.downstream().subList(1, run.downstream().size()), run.engine()));
    }

    private void poisonDownstream(Run run, CompletionHandle producer, Outcome.Failed failure) {
        Poisoned poison = new Poisoned(run.requestId(), run.step(), run.stage(), node, producer, failure, run.downstream(),
                run.engine());
        if (run.downstream().isEmpty()) {
            report(poison);
        } else {
            run.downstream().get(0).tell(poison);
        }
    }

    private Behavior<Command> onPoisoned(Poisoned poisoned) {
        getContext().getLog().debug("step {} of request {} poisoned on node {} by stage {} on {}", poisoned.step(),
                poisoned.requestId(), node, poisoned.rootStage(), poisoned.rootNode());
        if (poisoned.downstream().isEmpty()) {
            report(poisoned);
        } else {
            List<ActorRef<Command>> rest = poisoned.downstream().subList(1, poisoned.downstream().size());
            poisoned.downstream().get(0).tell(new Poisoned(poisoned.requestId(), poisoned.step(), poisoned.rootStage(),
                    poisoned.rootNode(), poisoned.producer(), poisoned.failure(), rest, poisoned.engine()));
        }
        return this;
    }

    private void report(Poisoned poisoned) {
        poisoned.engine().tell(new StageReply.StepFailed(poisoned.requestId(), poisoned.step(), poisoned.rootStage(),
                poisoned.rootNode(), poisoned.failure()));
    }

    private Behavior<Command> onForget(Forget forget) {
        forgotten.add(forget.requestId());
        for (HostedStage hosted : stages.values()) {
            CompletionHandle handle = CompletionHandle.local(hosted.lane(), registry.reserveSequences(1));
            CpuWork drop = () -> hosted.forward().endRequest(forget.requestId());
            registry.lane(hosted.lane()).tell(LaneProtocol.Submit.of(handle, drop, replies));
            hosted.shards().forEach(shard -> shard.tell(new ShardHost.Forget(forget.requestId())));
        }
        return this;
    }

    private Behavior<Command> onShardLost(ShardLost shardLost) {
        HostedStage hosted = stages.get(shardLost.stage());
        if (hosted == null || !hosted.group().equals(shardLost.group())) {
            return this;
        }
        withdraw(shardLost.stage(), "shard " + shardLost.shard() + " of tensor-parallel stage " + shardLost.stage() + " (on "
                + shardLost.host() + ") is gone; the stage hosted on " + node + " cannot run until a node for that shard joins"
                + " and the stage re-forms");
        return this;
    }

    /**
     * A failed step of a tensor-parallel stage has left its group poisoned (a shard whose step fails leaves the group):
     * the stage is withdrawn and its lead re-forms it, with the same shard hosts, into a fresh group. A step of an
     * earlier group changes nothing.
     */
    private void groupBroken(int stage, String group, String why) {
        HostedStage hosted = stages.get(stage);
        ActorRef<StageLead.Command> lead = leads.get(stage);
        if (group.isEmpty() || hosted == null || lead == null || !hosted.group().equals(group) || lost.containsKey(stage)) {
            return;
        }
        withdraw(stage, "tensor-parallel stage " + stage + " hosted on " + node + " re-forms: group " + group + " is broken ("
                + why + ")");
        lead.tell(new StageLead.GroupBroken(group, why));
    }

    private Behavior<Command> onReforming(Reforming reforming) {
        withdraw(reforming.stage(), "tensor-parallel stage " + reforming.stage() + " hosted on " + node + " is re-forming: "
                + reforming.why());
        return this;
    }

    private void withdraw(int stage, String why) {
        if (lost.containsKey(stage)) {
            return;
        }
        lost.put(stage, why);
        getContext().getLog().warn(why);
        getContext().getSystem().receptionist().tell(Receptionist.deregister(StageHostKeys.stage(stage), getContext().getSelf()));
    }

    private Behavior<Command> onFormed(Formed formed) {
        int stage = formed.stage();
        HostedStage previous = stages.put(stage, formed.hosted());
        if (previous != null) {
            previous.shards().forEach(getContext()::unwatch);
        }
        watchShards(stage, formed.hosted());
        leads.put(stage, formed.lead());
        if (formed.retirePrevious() != null) {
            // After the steps of the previous group already on the lane.
            CompletionHandle handle = CompletionHandle.local(formed.hosted().lane(), registry.reserveSequences(1));
            registry.lane(formed.hosted().lane()).tell(LaneProtocol.Submit.of(handle, formed.retirePrevious(), replies));
        }
        lost.remove(stage);
        getContext().getLog().info("tensor-parallel stage {} on {} runs as group {} with shard hosts {}", stage, node,
                formed.hosted().group(), formed.hosted().shards());
        getContext().getSystem().receptionist().tell(Receptionist.register(StageHostKeys.stage(stage), getContext().getSelf()));
        return this;
    }
}
