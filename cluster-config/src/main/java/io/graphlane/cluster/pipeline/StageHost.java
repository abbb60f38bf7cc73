package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
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
import io.graphlane.inference.tensorparallel.CollectiveShard;
import io.graphlane.inference.tensorparallel.ShardLanes;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.actor.typed.receptionist.Receptionist;

/**
 * The stage host of one node: owns the lanes of the stages its rank hosts and runs their batched steps for the pipeline
 * engine on the serving node. A {@link Step} of stage k carries one micro-batch's segments (several requests' rows),
 * the token ids on stage 0 or the activation stage k−1 produced after it, and the changes to the requests' KV caches the
 * engine asked for since the previous step sent here (requests to forget, positions to rewind to). The host submits one
 * work on k's lane that applies those changes, runs the stage's forward over the segments and copies the output out;
 * when it finishes, the activation (or, on the last stage, the logits at each segment's last position) goes back to the
 * step's sender in a {@link StageReply.StepDone}, or a {@link StageReply.StepFailed} naming the stage and this node.
 * Steps run in the order they arrive, so the changes apply before the step that carries them. A step of no segments
 * (and no tokens nor activation) carries only changes: the host applies them on the stage's lane after the work there
 * and answers an empty {@link StageReply.StepDone} once they ran, so the serving node knows the caches are freed. Each
 * segment carries the positions reserved for its request at admission, and its caches grow no further. A step that
 * cannot be one (segments that do not line up, tokens or an activation without segments or not matching them, a
 * negative start, positions past the model's maximum) is refused before any work, naming the field; its changes still
 * apply, and the host serves the next step as before.
 *
 * <p>A tensor-parallel stage is hosted here by its shard 0, with the {@link ShardHost}s of its other shards on other
 * nodes: each step's changes and segments are told to them in this host's submission order, so every shard runs the
 * same steps in the same order and their collectives line up. Shard 0's step is not one work but the works of
 * {@link CollectiveShard#plan} on its compute lane and its collective lane, submitted through the group's
 * {@link ShardLanes.Chain} after a compute work applying the step's changes; the host answers the step when the last of
 * them, which copies the output out, has ended (a failure before it poisons it, and the answer names the first failure).
 * A previous group's shard 0 is retired once every work of its chain has ended. Such a stage starts unformed and unregistered; the
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

    /** What a stage host accepts. */
    public sealed interface Command permits Step, LaneAnswer, ShardLost, Formed, Reforming {
    }

    /**
     * Runs stage {@code stage} over one micro-batch for the serving node, which numbered it {@code stepId}: segment i is
     * {@code lengths[i]} positions of request {@code requestIds[i]} from {@code starts[i]}, whose caches may reach
     * {@code reserved[i]} positions (what admission reserved for the request); the input is {@code tokens} on stage 0
     * (every segment's, concatenated) and {@code activation} ({@code positions × hidden}, where a model that restarts its
     * cache counts a restarting segment's positions from 0: see {@code LlamaConfig#restarted}) after it. Before the step, the
     * KV caches of {@code forget} are dropped and those of {@code rewindIds[i]} rewound to {@code rewindPositions[i]}. A
     * step of no segments only applies those changes. The answer goes to {@code replyTo}.
     */
    public record Step(long stepId, int stage, long[] requestIds, int[] starts, int[] lengths, int[] reserved, int[] tokens,
                       WireTensor activation, long[] forget, long[] rewindIds, int[] rewindPositions, ActorRef<StageReply> replyTo)
            implements Command {
        /** Refuses missing parts (a malformed shape is refused by the host, naming the field). */
        public Step {
            Objects.requireNonNull(requestIds, "requestIds");
            Objects.requireNonNull(starts, "starts");
            Objects.requireNonNull(lengths, "lengths");
            Objects.requireNonNull(reserved, "reserved");
            Objects.requireNonNull(tokens, "tokens");
            Objects.requireNonNull(forget, "forget");
            Objects.requireNonNull(rewindIds, "rewindIds");
            Objects.requireNonNull(rewindPositions, "rewindPositions");
            Objects.requireNonNull(replyTo, "replyTo");
        }

        /** A step whose requests reserved no bound of positions: their caches may grow up to the model's maximum. */
        public Step(long stepId, int stage, long[] requestIds, int[] starts, int[] lengths, int[] tokens, WireTensor activation,
                    long[] forget, long[] rewindIds, int[] rewindPositions, ActorRef<StageReply> replyTo) {
            this(stepId, stage, requestIds, starts, lengths, unbounded(requestIds.length), tokens, activation, forget, rewindIds,
                    rewindPositions, replyTo);
        }

        /** A step that carries only cache changes, to apply now. */
        public static Step changes(long stepId, int stage, long[] forget, long[] rewindIds, int[] rewindPositions,
                                   ActorRef<StageReply> replyTo) {
            return new Step(stepId, stage, new long[0], new int[0], new int[0], new int[0], new int[0], null, forget, rewindIds,
                    rewindPositions, replyTo);
        }

        /** Whether the step carries only cache changes. */
        public boolean changesOnly() {
            return requestIds.length == 0;
        }

        private static int[] unbounded(int n) {
            int[] all = new int[n];
            Arrays.fill(all, Integer.MAX_VALUE);
            return all;
        }

        /** The positions the step computes: the sum of the segments' lengths. */
        public long positions() {
            long n = 0;
            for (int l : lengths) {
                n += l;
            }
            return n;
        }
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
     * One hosted stage: what a step runs (a whole stage's {@code forward}, or for a tensor-parallel stage its shard 0,
     * {@code shard}, exactly one of them), whether it is the model's last stage, the model, the lane its work runs on
     * (the compute lane of a shard), and, for a tensor-parallel stage, shard 0's collective lane, the hosts of its shards
     * 1, 2, … and the collective group they formed (null, no shard hosts and an empty group otherwise).
     */
    public record HostedStage(StageForward<CpuTensor> forward, CollectiveShard<CpuTensor> shard, boolean last, LlamaConfig config,
                              LaneId lane, LaneId collectiveLane, List<ActorRef<ShardHost.Command>> shards, String group) {
        /** Copies the shard hosts. */
        public HostedStage {
            if ((forward == null) == (shard == null)) {
                throw new IllegalArgumentException("a hosted stage runs either a whole stage or a shard of one");
            }
            Objects.requireNonNull(config, "config");
            Objects.requireNonNull(lane, "lane");
            if (shard != null) {
                Objects.requireNonNull(collectiveLane, "collectiveLane");
            }
            shards = List.copyOf(shards);
            Objects.requireNonNull(group, "group");
        }

        /** A stage run by {@code forward} as one work on {@code lane}. */
        public HostedStage(StageForward<CpuTensor> forward, boolean last, LlamaConfig config, LaneId lane,
                           List<ActorRef<ShardHost.Command>> shards, String group) {
            this(forward, null, last, config, lane, null, shards, group);
        }

        /** A whole stage on one lane. */
        public HostedStage(LlamaStage<CpuTensor> llama, LaneId lane) {
            this(llama, llama.spec().isLast(), llama.config(), lane, List.of(), "");
        }

        /** Tensor-parallel stage led by {@code shard} (rank 0) on its {@code compute} and {@code collective} lanes. */
        static HostedStage sharded(CollectiveShard<CpuTensor> shard, boolean last, LlamaConfig config, LaneId compute, LaneId collective,
                                   List<ActorRef<ShardHost.Command>> shards, String group) {
            return new HostedStage(null, shard, last, config, compute, collective, shards, group);
        }

        NeuralOps<CpuTensor> ops() {
            return forward != null ? forward.ops() : shard.ops();
        }

        void endRequest(long requestId) {
            if (forward != null) {
                forward.endRequest(requestId);
            } else {
                shard.endRequest(requestId);
            }
        }

        void rewind(long requestId, int position) {
            if (forward != null) {
                forward.rewind(requestId, position);
            } else {
                shard.rewind(requestId, position);
            }
        }
    }

    /** The retirement of a group's shard 0, submitted on {@code lane} once every work of its chain has ended. */
    private record Retirement(LaneId lane, CpuWork retire) {
    }

    /** One step in flight on this node: the work it waits for and what that work fills. */
    private record InFlight(Step step, String group, AtomicReference<float[]> copied, int rows, int cols) {
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
    /** The submission chain of each formed tensor-parallel stage's current group, by stage. */
    private final Map<Integer, ShardLanes<CpuWork>.Chain> chains = new HashMap<>();
    /** Chains of groups given up, each with the retirement of its shard group, submitted once the chain has drained. */
    private final ShardLanes.Retiring<Retirement> retiring = new ShardLanes.Retiring<>(this::retire);
    /** Steps run and the most segments (requests) one of them carried: how much the serving node batched. */
    private final StepCounters counters;

    private StageHost(ActorContext<Command> context, Map<Integer, HostedStage> stages, Map<Integer, String> unformed,
                      LaneRegistry registry, String node, StepCounters counters) {
        super(context);
        this.stages = new HashMap<>(stages);
        this.lost.putAll(unformed);
        this.registry = registry;
        this.node = node;
        this.counters = counters;
        this.replies = context.messageAdapter(LaneProtocol.LaneReply.class, LaneAnswer::new);
        this.stages.forEach(this::watchShards);
    }

    /**
     * The host of {@code stages} (by stage index), whose lanes are found in {@code registry}; {@code node} is this
     * node's address, as failures name it.
     */
    public static Behavior<Command> create(Map<Integer, HostedStage> stages, LaneRegistry registry, String node) {
        return create(stages, Map.of(), registry, node, new StepCounters());
    }

    /**
     * Like {@link #create(Map, LaneRegistry, String)}, with tensor-parallel stages not formed yet: {@code unformed} says
     * why each one cannot run until its {@link Formed} arrives (its steps fail naming that); the host counts the steps
     * it runs in {@code counters}.
     */
    public static Behavior<Command> create(Map<Integer, HostedStage> stages, Map<Integer, String> unformed, LaneRegistry registry,
                                           String node, StepCounters counters) {
        Map<Integer, String> waiting = Map.copyOf(unformed);
        return Behaviors.setup(ctx -> new StageHost(ctx, stages, waiting, registry, node, counters));
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
                .onMessage(Step.class, this::onStep)
                .onMessage(LaneAnswer.class, this::onLaneAnswer)
                .onMessage(ShardLost.class, this::onShardLost)
                .onMessage(Formed.class, this::onFormed)
                .onMessage(Reforming.class, this::onReforming)
                .build();
    }

    private Behavior<Command> onStep(Step step) {
        HostedStage hosted = stages.get(step.stage());
        if (hosted == null) {
            getContext().getLog().warn("node {} does not host stage {} (hosts {}); step {} refused", node, step.stage(),
                    stages.keySet(), step.stepId());
            refuse(step, new IllegalStateException("node " + node + " does not host stage " + step.stage() + "; it hosts "
                    + stages.keySet()));
            return this;
        }
        String gone = lost.get(step.stage());
        if (gone != null) {
            refuse(step, new StageUnavailableException(step.stage(), gone));
            return this;
        }
        String malformed = malformed(step, hosted);
        if (malformed != null) {
            // A peer's bad step fails that step only: its cache changes still apply, and this host runs the next one as before.
            getContext().getLog().warn("node {} refused step {} of stage {}: {}", node, step.stepId(), step.stage(), malformed);
            Runnable changes = changesOf(step, hosted);
            submitChanges(step.stage(), hosted, changes);
            refuse(step, new GraphlaneException("stage " + step.stage() + " on " + node + " refused step " + step.stepId() + ": "
                    + malformed));
            return this;
        }
        if (step.changesOnly()) {
            CompletionHandle applied = submitChanges(step.stage(), hosted, changesOf(step, hosted));
            waiting.put(applied, new InFlight(step, hosted.group(), new AtomicReference<>(new float[0]), 0, 0));
            return this;
        }
        counters.stepRan(step.requestIds().length);
        NeuralOps<CpuTensor> ops = hosted.ops();
        // a model that restarts its cache runs some segments from position 0: its activations have the expanded rows
        int rows = (int) runRows(step, hosted.config());
        List<Segment> segments = new ArrayList<>(step.requestIds().length);
        for (int i = 0; i < step.requestIds().length; i++) {
            segments.add(new Segment(step.requestIds()[i], step.starts()[i], step.lengths()[i], step.reserved()[i]));
        }
        float[] activation = step.stage() == 0 ? null : step.activation().toFloats();
        int inCols = step.stage() == 0 ? 0 : (int) step.activation().shape().dims()[1];
        boolean last = hosted.last();
        int outRows = last ? segments.size() : rows;
        int outCols = last ? hosted.config().vocabSize() : hosted.config().hiddenSize();
        AtomicReference<float[]> copied = new AtomicReference<>();
        Runnable changes = changesOf(step, hosted);
        if (hosted.shard() != null) {
            ShardHost.Step shardStep = new ShardHost.Step(hosted.group(), step.stepId(), step.requestIds(), step.starts(), step.lengths(),
                    step.reserved());
            hosted.shards().forEach(shard -> shard.tell(shardStep));
            CompletionHandle lastWork = submitSharded(step.stage(), hosted, segments, changes, step.tokens(), activation, rows, inCols, outRows,
                    outCols, copied);
            waiting.put(lastWork, new InFlight(step, hosted.group(), copied, outRows, outCols));
            return this;
        }
        StageForward<CpuTensor> llama = hosted.forward();
        CpuWork work = () -> {
            changes.run();
            StageOutput<CpuTensor> out;
            if (activation == null) {
                out = llama.forward(new StageInput.Tokens<>(segments, step.tokens()));
            } else {
                // The arrived activation lives on this lane only while the forward reads it.
                CpuTensor in = ops.fromHost(activation, rows, inCols);
                try {
                    out = llama.forward(new StageInput.Hidden<>(segments, in));
                } finally {
                    ops.release(in);
                }
            }
            copyOut(ops, out, outRows, outCols, copied);
        };
        CompletionHandle handle = submit(hosted, work);
        waiting.put(handle, new InFlight(step, hosted.group(), copied, outRows, outCols));
        return this;
    }

    /** Copies the stage's {@code out} ({@code rows x cols}) into {@code copied} and frees it. */
    private static void copyOut(NeuralOps<CpuTensor> ops, StageOutput<CpuTensor> out, int rows, int cols, AtomicReference<float[]> copied) {
        try {
            float[] values = new float[rows * cols];
            ops.toHost(out.tensor(), values);
            copied.set(values);
        } finally {
            ops.release(out.tensor());
        }
    }

    /**
     * The step's changes to the KV caches, applied on the stage's lane before its forward; told to the stage's other
     * shards now, before its step, so they apply them in the same order.
     */
    private static Runnable changesOf(Step step, HostedStage hosted) {
        for (ActorRef<ShardHost.Command> shard : hosted.shards()) {
            for (long id : step.forget()) {
                shard.tell(new ShardHost.Forget(id));
            }
            for (int i = 0; i < step.rewindIds().length; i++) {
                shard.tell(new ShardHost.Rewind(step.rewindIds()[i], step.rewindPositions()[i]));
            }
        }
        long[] forget = step.forget().clone();
        long[] rewindIds = step.rewindIds().clone();
        int[] rewindTo = step.rewindPositions().clone();
        return () -> {
            for (long id : forget) {
                hosted.endRequest(id);
            }
            for (int i = 0; i < rewindIds.length; i++) {
                hosted.rewind(rewindIds[i], rewindTo[i]);
            }
        };
    }

    /**
     * Applies {@code changes} on the stage's lane: after the work there already, for a tensor-parallel stage by its chain.
     * Returns the handle of the work that applies them.
     */
    private CompletionHandle submitChanges(int stage, HostedStage hosted, Runnable changes) {
        ShardLanes<CpuWork>.Chain chain = chains.get(stage);
        if (hosted.shard() != null && chain != null) {
            return chain.submitCompute(changes);
        }
        return submit(hosted, changes::run);
    }

    /**
     * Submits a step of tensor-parallel stage {@code stage} as shard 0's works on its compute and collective lanes (see
     * {@link CollectiveShard#plan}), after the step's cache changes; the arrived activation, if any, lives while the
     * all-gather reads it. Returns the handle of the step's last work, which copies the output out.
     */
    private CompletionHandle submitSharded(int stage, HostedStage hosted, List<Segment> segments, Runnable changes, int[] tokens,
                                           float[] activation, int rows, int inCols, int outRows, int outCols, AtomicReference<float[]> copied) {
        ShardLanes<CpuWork>.Chain chain = chains.get(stage);
        NeuralOps<CpuTensor> ops = hosted.ops();
        chain.submitCompute(changes);
        AtomicReference<CpuTensor> arrived = new AtomicReference<>();
        AutoCloseable freeArrived = () -> {
            CpuTensor t = arrived.getAndSet(null);
            if (t != null) {
                ops.release(t);
            }
        };
        Supplier<StageInput<CpuTensor>> input = () -> {
            if (activation == null) {
                return new StageInput.Tokens<>(segments, tokens.clone());
            }
            CpuTensor in = ops.fromHost(activation, rows, inCols);
            arrived.set(in);
            return new StageInput.Hidden<>(segments, in);
        };
        Consumer<StageOutput<CpuTensor>> output = out -> copyOut(ops, out, outRows, outCols, copied);
        List<StageStep.Submission<Runnable>> works = new ArrayList<>(hosted.shard().plan(segments, input, output));
        StageStep.Submission<Runnable> gather = works.get(0);
        List<Object> retain = new ArrayList<>(gather.retain());
        retain.add(freeArrived);
        works.set(0, new StageStep.Submission<>(gather.lane(), gather.work(), gather.after(), retain));
        List<CompletionHandle> handles = chain.submitStep(works);
        return handles.get(handles.size() - 1);
    }

    private CompletionHandle submit(HostedStage hosted, CpuWork work) {
        CompletionHandle handle = CompletionHandle.local(hosted.lane(), registry.reserveSequences(1));
        registry.lane(hosted.lane()).tell(LaneProtocol.Submit.of(handle, work, replies));
        return handle;
    }

    private void refuse(Step step, Throwable why) {
        step.replyTo().tell(new StageReply.StepFailed(step.stepId(), step.stage(), node, new Outcome.Failed(why)));
    }

    /**
     * The rows of the activations of {@code step} on a stage of {@code config}'s model: its positions, each segment as
     * {@link LlamaConfig#restarted} runs it (from position 0 where the model recomputes the sequence), so every stage
     * expands a step alike; malformed segments count as given (they are refused by {@link #malformed}).
     */
    private static long runRows(Step step, LlamaConfig config) {
        long rows = 0;
        int n = Math.min(step.requestIds().length, Math.min(step.starts().length, Math.min(step.lengths().length, step.reserved().length)));
        for (int i = 0; i < n; i++) {
            int start = step.starts()[i];
            int length = step.lengths()[i];
            int reserved = step.reserved()[i];
            rows += start < 0 || length < 1 || reserved < 1 ? length
                    : config.restarted(new Segment(step.requestIds()[i], start, length, reserved)).length();
        }
        return rows;
    }

    /**
     * Why {@code step}, as it came from a peer, cannot be a step of {@code hosted}, naming the field, the expected and the
     * found value; null if it can. The forward checks the rest (the activation's width, the positions each request's KV
     * cache holds) and fails the step as work.
     */
    private static String malformed(Step step, HostedStage hosted) {
        int n = step.requestIds().length;
        if (step.starts().length != n || step.lengths().length != n || step.reserved().length != n) {
            return "segments: expected " + n + " starts, lengths and reserved counts (one per request id), found "
                    + step.starts().length + ", " + step.lengths().length + " and " + step.reserved().length;
        }
        if (n == 0 && (step.tokens().length > 0 || step.activation() != null)) {
            return "segments: expected at least one with tokens or an activation, found none";
        }
        if (step.rewindPositions().length != step.rewindIds().length) {
            return "rewinds: expected " + step.rewindIds().length + " positions (one per request id), found "
                    + step.rewindPositions().length;
        }
        long rows = step.positions();
        if (n == 0) {
            return null;
        }
        if (step.stage() == 0) {
            if (step.tokens().length != rows) {
                return "tokens: expected " + rows + " token ids (the segments' lengths), found " + step.tokens().length;
            }
        } else {
            if (step.activation() == null) {
                return "activation: expected a rank-2 tensor (" + rows + " x " + hosted.config().hiddenSize() + "), found none";
            }
            long[] dims = step.activation().shape().dims();
            if (dims.length != 2) {
                return "activation: expected a rank-2 tensor (rows x " + hosted.config().hiddenSize() + "), found shape "
                        + Arrays.toString(dims);
            }
            long runRows = runRows(step, hosted.config());
            if (dims[0] != runRows) {
                return "activation: expected " + runRows + " rows (the segments' lengths"
                        + (runRows != rows ? ", each restarted from position 0 as the model recomputes the sequence" : "")
                        + "), found " + dims[0];
            }
        }
        for (int i = 0; i < n; i++) {
            int start = step.starts()[i];
            int length = step.lengths()[i];
            if (length < 1) {
                return "length of segment " + i + ": expected >= 1, found " + length;
            }
            if (start < 0) {
                return "start position: expected >= 0, found " + start;
            }
            if (step.reserved()[i] < 1) {
                return "reserved positions of segment " + i + ": expected >= 1, found " + step.reserved()[i];
            }
            long end = (long) start + length;
            if (end > hosted.config().maxPositions()) {
                return "start position: " + start + " + " + length + " rows = " + end + " positions, past the model's maximum of "
                        + hosted.config().maxPositions() + " (max_position_embeddings)";
            }
        }
        return null;
    }

    private Behavior<Command> onLaneAnswer(LaneAnswer answer) {
        answer.reply().forEach(reply -> {
            if (reply instanceof LaneProtocol.Finished finished) {
                chainEnded(finished.handle());
                InFlight f = waiting.remove(finished.handle());
                if (f != null) {
                    stepEnded(f, finished.outcome());
                }
            } else if (reply instanceof LaneProtocol.Rejected rejected) {
                chainEnded(rejected.handle());
                InFlight f = waiting.remove(rejected.handle());
                if (f != null) {
                    stepEnded(f, Outcome.failure(rejected.toException()));
                }
            }
        });
        return this;
    }

    /** Notes the end of a chained work; a given-up chain that has drained has its shard group retired now. */
    private void chainEnded(CompletionHandle handle) {
        for (ShardLanes<CpuWork>.Chain chain : chains.values()) {
            if (chain.ended(handle)) {
                return;
            }
        }
        retiring.ended(handle);
    }

    /** Submits {@code retirement} on its lane (every work of {@code chain} has ended) and lets the lanes forget the chain. */
    private void retire(ShardLanes<?>.Chain chain, Retirement retirement) {
        if (retirement.retire() != null) {
            submitRetirement(retirement);
        }
        chain.close();
    }

    private void submitRetirement(Retirement retirement) {
        CompletionHandle handle = CompletionHandle.local(retirement.lane(), registry.reserveSequences(1));
        registry.lane(retirement.lane()).tell(LaneProtocol.Submit.of(handle, retirement.retire(), replies));
    }

    private void stepEnded(InFlight f, Outcome outcome) {
        Step step = f.step();
        if (outcome instanceof Outcome.Failed failed) {
            Throwable root = failed.cause() instanceof PoisonedPreconditionException p ? p.rootCause() : failed.cause();
            getContext().getLog().warn("stage {} on node {} failed step {}: {}", step.stage(), node, step.stepId(), root.toString());
            groupBroken(step.stage(), f.group(), "step " + step.stepId() + " failed: " + root);
            step.replyTo().tell(new StageReply.StepFailed(step.stepId(), step.stage(), node, new Outcome.Failed(root)));
            return;
        }
        step.replyTo().tell(new StageReply.StepDone(step.stepId(), WireTensor.ofFloats(Shape.of(f.rows(), f.cols()), f.copied().get())));
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
        getContext().getSystem().receptionist().tell(Receptionist.deregister(StageKeys.host(stage), getContext().getSelf()));
    }

    private Behavior<Command> onFormed(Formed formed) {
        int stage = formed.stage();
        HostedStage previous = stages.put(stage, formed.hosted());
        if (previous != null) {
            previous.shards().forEach(getContext()::unwatch);
        }
        watchShards(stage, formed.hosted());
        leads.put(stage, formed.lead());
        HostedStage hosted = formed.hosted();
        ShardLanes<CpuWork>.Chain previousChain = hosted.shard() == null ? chains.remove(stage) : chains.put(stage,
                new ShardLanes<CpuWork>(registry, hosted.lane(), hosted.collectiveLane(), body -> body::run, replies).chain());
        // The previous group retires once every work of it has ended, on either lane.
        Retirement retirement = new Retirement(hosted.lane(), formed.retirePrevious());
        if (previousChain != null) {
            retiring.add(previousChain, retirement);
        } else if (formed.retirePrevious() != null) {
            submitRetirement(retirement);
        }
        lost.remove(stage);
        getContext().getLog().info("tensor-parallel stage {} on {} runs as group {} with shard hosts {}", stage, node,
                formed.hosted().group(), formed.hosted().shards());
        getContext().getSystem().receptionist().tell(Receptionist.register(StageKeys.host(stage), getContext().getSelf()));
        return this;
    }
}
