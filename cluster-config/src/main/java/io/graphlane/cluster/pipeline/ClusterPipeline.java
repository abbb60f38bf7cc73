package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.ServingStats;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.backend.CacheMemory;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.PromptCheck;
import io.graphlane.inference.pipeline.TrackedGeneration;
import io.graphlane.inference.sampling.GenerationDefaults;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineEngine;
import io.graphlane.scheduler.pipeline.PipelineLoad;
import io.graphlane.scheduler.pipeline.KvBudget;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model served by pipeline stages hosted on the nodes of a cluster, seen from the serving node: the
 * {@link TextGenerator} the OpenAI server serves. It reads only the model's configuration and tokenizer (the weights
 * live on the stage hosts) and runs the same {@link PipelineEngine} as a pipeline inside one JVM: each remote stage is
 * a local proxy lane (a lane actor over {@link StageLinks}) whose work is one batched step sent to the stage's host by
 * the {@link StageDirectory}, so micro-batches, their ordering by completion handles, deadlines, cancels, failure
 * isolation and admission are the engine's own. Submission refuses at once with UNAVAILABLE while a stage has no
 * reachable host (or its host said it cannot run now), with OVERLOADED when a request can neither start nor wait, and
 * with INVALID when its KV-cache reservation could never fit.
 *
 * <p>Admission by KV-cache memory: every request holds caches on every node that hosts a stage of it, so each request
 * reserves its prompt plus its maximum of new tokens, in positions, times what one position takes on the node that holds
 * the most of it (its stages' layers, times a key and a value row of its share of the kv heads, in F32), against the
 * budget of one node: the settings' ({@code --kv-budget}), or by default half of what this serving node's native memory
 * still allows when the pipeline starts ({@link CacheMemory#hostFree()}), taken as every node's. Where the nodes differ
 * in memory, give the serving node the smallest node's budget.
 */
public final class ClusterPipeline implements TextGenerator {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterPipeline.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final String name;
    private final LlamaConfig config;
    private final Set<Integer> eosTokenIds;
    private final int[] eosIds;
    private final Optional<ChatTemplate> chatTemplate;
    private final GenerationDefaults generationDefaults;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final AtomicReference<String> unavailable = new AtomicReference<>(
            "the serving node has not yet learned which nodes host the stages");
    private final ActorRef<StageDirectory.Command> directory;
    private final LaneGroup<StageLinks.Link, SettableCompletion, RemoteStageProgram.Work> lanes;
    private final Pipeline<RemoteStageProgram.Work, RemoteStageProgram.Slot> pipeline;
    private volatile boolean closed;

    private ClusterPipeline(ActorSystem<?> system, ModelDirectory model, ParallelLayout layout, PipelineSettings settings) {
        int stages = layout.stages();
        this.name = model.name();
        this.config = model.config();
        this.eosTokenIds = model.eosTokenIds();
        this.eosIds = eosTokenIds.stream().mapToInt(Integer::intValue).toArray();
        this.chatTemplate = ChatTemplate.load(model.settingsDir());
        this.generationDefaults = GenerationDefaults.read(model.settingsDir());
        this.tokenizer = model.tokenizer();
        this.codec = TokenCodec.of(tokenizer, eosIds.length == 0 ? -1 : eosIds[0]);
        int instance = INSTANCES.incrementAndGet();
        RemoteStageProgram program = new RemoteStageProgram(stages, kvBytesPerPosition(layout, config));
        this.directory = system.systemActorOf(StageDirectory.create(program, unavailable), "cluster-stages-" + instance,
                Props.empty());
        List<String> laneNames = new ArrayList<>();
        for (int i = 0; i < stages; i++) {
            laneNames.add("stage-" + i);
        }
        this.lanes = LaneGroup.builder(system, new StageLinks("cluster-stages-" + instance, directory))
                .lanes(laneNames.toArray(String[]::new)).spawn();
        this.pipeline = Pipeline.start(system, lanes.registry(), lanes.laneIds(), program, withKvBudget(settings, program, name),
                "cluster-pipeline-" + instance);
    }

    /**
     * Serves the model of {@code model} over {@code stages} stages hosted across the cluster of {@code system}, one node
     * per stage, with at most {@code maxActiveRequests} requests generating at once (and as many waiting) and the
     * default KV-cache budget.
     */
    public static ClusterPipeline start(ActorSystem<?> system, ModelDirectory model, int stages, int maxActiveRequests) {
        if (maxActiveRequests < 1) {
            throw new IllegalArgumentException("the most active requests must be >= 1, got " + maxActiveRequests);
        }
        return start(system, model, ParallelLayout.pipeline(stages, stages),
                PipelineSettings.defaults(stages).withRequestLimits(maxActiveRequests, maxActiveRequests));
    }

    /**
     * Serves the model of {@code model} over the stages (and shards) of {@code layout} hosted across the cluster, within
     * {@code settings}; without a KV-cache budget in them, with the default one (see the class comment).
     */
    public static ClusterPipeline start(ActorSystem<?> system, ModelDirectory model, ParallelLayout layout, PipelineSettings settings) {
        Objects.requireNonNull(settings, "settings");
        Objects.requireNonNull(layout, "layout");
        return new ClusterPipeline(system, model, layout, settings);
    }

    /**
     * The bytes one position of one request takes on the node of {@code layout} that holds the most of it: over the
     * stages a rank hosts (or the stage it holds a shard of), their layers times a key and a value row of the rank's share
     * of the kv heads, in F32, as each node's stage caches allocate them.
     */
    static long kvBytesPerPosition(ParallelLayout layout, LlamaConfig config) {
        StagePlan plan = StagePlan.balanced(config.layerCount(), layout.stages());
        long kvWidthPerShard = (long) config.kvHeadCount() / layout.tensorParallel() * config.headDim();
        long most = 0;
        for (int rank = 0; rank < layout.nodes(); rank++) {
            long layers = 0;
            for (int stage : layout.stagesOf(rank)) {
                layers += plan.stage(stage).layers().size();
            }
            most = Math.max(most, layers * 2 * kvWidthPerShard * Float.BYTES);
        }
        return most;
    }

    /** {@code settings} with their KV-cache budget, or with the default one (logged). */
    private static PipelineSettings withKvBudget(PipelineSettings settings, RemoteStageProgram program, String model) {
        if (settings.hasKvBudget()) {
            return settings;
        }
        long free = CacheMemory.hostFree();
        long budget = CacheMemory.defaultBudget(free);
        LOG.info("KV-cache budget of {} per node {} (half of the {} this serving node's caches may take): {} positions at {} bytes"
                + " per position on the node holding the most", model, CacheMemory.format(budget), CacheMemory.format(free),
                budget / Math.max(1, program.kvBytesPerPosition()), program.kvBytesPerPosition());
        return settings.withKvBudget(budget);
    }

    @Override
    public String modelName() {
        return name;
    }

    @Override
    public TokenCodec tokenizer() {
        return codec;
    }

    @Override
    public int maxSequenceLength() {
        return config.maxPositions();
    }

    @Override
    public OptionalInt vocabularySize() {
        return OptionalInt.of(config.vocabSize());
    }

    @Override
    public Set<Integer> eosTokenIds() {
        return eosTokenIds;
    }

    @Override
    public Optional<ChatTemplate> chatTemplate() {
        return chatTemplate;
    }

    @Override
    public GenerationDefaults generationDefaults() {
        return generationDefaults;
    }

    /** Why new requests are refused now, or empty while every stage has a reachable host and the engine runs. */
    @Override
    public Optional<String> unavailableReason() {
        if (closed) {
            return Optional.of("model " + name + " is shut down");
        }
        if (pipeline.isStopped()) {
            return Optional.of("the engine serving model " + name + " has stopped after an internal failure;"
                    + " restart the serving node");
        }
        return Optional.ofNullable(unavailable.get());
    }

    @Override
    public int maxHeldRequests() {
        return pipeline.maxHeldRequests();
    }

    /** The KV-cache memory admission reserves against (one node's), and what one position of one request takes of it. */
    public KvBudget kvBudget() {
        return pipeline.kvBudget();
    }

    /** The engine's counters (steps, tokens, active and queued requests). */
    public CompletionStage<PipelineEngine.Stats> engineStats() {
        return pipeline.stats();
    }

    @Override
    public Generation submit(GenerationRequest request, GenerationListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        String why = unavailableReason().orElse(null);
        if (why != null) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, why);
        }
        int[] prompt = PromptCheck.validPrompt(request, config);
        PromptCheck.fitsKvBudget(prompt.length, request.maxNewTokens(), pipeline.kvBudget());
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        TrackedGeneration tracked = new TrackedGeneration(request.promptIds(), listener);
        long id = PromptCheck.admitted(() -> pipeline.submit(new PipelineRequest(prompt, request.maxNewTokens(), eosIds, deadline,
                new Sampler(request.sampling(), prompt)), new RootCauses(tracked)));
        return tracked.bind(id, pipeline::cancel);
    }

    /** Requests running and waiting as the engine last published them: a volatile read, no message. */
    @Override
    public Optional<ServingStats> servingStats() {
        PipelineLoad load = pipeline.load();
        return Optional.of(ServingStats.requests(load.running(), load.waiting()));
    }

    /** Stops admitting, fails requests in flight, then stops the proxy lanes and the directory; the stage hosts belong to their nodes. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        GenerationRefusedException shutting = new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                "model " + name + " is shutting down");
        try {
            pipeline.stop(shutting).toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("stopping the pipeline engine of {} did not finish cleanly: {}", name, e.toString());
        }
        // Steps still out at a host would hold the proxy lanes open until it answers: they end now.
        directory.tell(new StageDirectory.FailAll(shutting));
        try {
            lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("stopping the proxy lanes of {} did not finish cleanly: {}", name, e.toString());
        }
        directory.tell(new StageDirectory.Stop());
        tokenizer.close();
    }

    /**
     * Hands a request's end to its tracker, the root cause first: a step whose stage was never sent because an earlier
     * stage's host failed or was lost reaches the engine as a poisoned precondition, and the caller is told what failed
     * (UNAVAILABLE naming the lost node and stage, or the stage's failure).
     */
    private record RootCauses(TrackedGeneration tracked) implements EngineListener {
        @Override
        public void onToken(int tokenId) {
            tracked.onToken(tokenId);
        }

        @Override
        public void onToken(SampledToken token) {
            tracked.onToken(token);
        }

        @Override
        public void onFinished(EngineFinishReason reason) {
            tracked.onFinished(reason);
        }

        @Override
        public void onFailed(Throwable cause) {
            tracked.onFailed(cause instanceof PoisonedPreconditionException p ? p.rootCause() : cause);
        }
    }
}
