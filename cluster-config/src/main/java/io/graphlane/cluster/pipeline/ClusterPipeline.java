package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.ServingStats;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.PromptCheck;
import io.graphlane.inference.pipeline.TrackedGeneration;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineEngine;
import io.graphlane.scheduler.pipeline.PipelineLoad;
import io.graphlane.scheduler.pipeline.PipelineOverloadedException;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.scheduler.pipeline.PipelineStoppedException;
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
 * reachable host and with OVERLOADED beyond the engine's bounds.
 */
public final class ClusterPipeline implements TextGenerator {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterPipeline.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final String name;
    private final LlamaConfig config;
    private final Set<Integer> eosTokenIds;
    private final int[] eosIds;
    private final Optional<ChatTemplate> chatTemplate;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final AtomicReference<String> unavailable = new AtomicReference<>("the stage directory has not started");
    private final ActorRef<StageDirectory.Command> directory;
    private final LaneGroup<StageLinks.Link, SettableCompletion, RemoteStageProgram.Work> lanes;
    private final Pipeline<RemoteStageProgram.Work, RemoteStageProgram.Slot> pipeline;
    private volatile boolean closed;

    private ClusterPipeline(ActorSystem<?> system, ModelDirectory model, int stages, PipelineSettings settings) {
        this.name = model.name();
        this.config = model.config();
        this.eosTokenIds = model.eosTokenIds();
        this.eosIds = eosTokenIds.stream().mapToInt(Integer::intValue).toArray();
        this.chatTemplate = ChatTemplate.load(model.dir());
        this.tokenizer = model.tokenizer();
        this.codec = TokenCodec.of(tokenizer, eosIds.length == 0 ? -1 : eosIds[0]);
        int instance = INSTANCES.incrementAndGet();
        RemoteStageProgram program = new RemoteStageProgram(stages);
        this.directory = system.systemActorOf(StageDirectory.create(program, unavailable), "cluster-stages-" + instance,
                Props.empty());
        List<String> laneNames = new ArrayList<>();
        for (int i = 0; i < stages; i++) {
            laneNames.add("stage-" + i);
        }
        this.lanes = LaneGroup.builder(system, new StageLinks("cluster-stages-" + instance, directory))
                .lanes(laneNames.toArray(String[]::new)).spawn();
        this.pipeline = Pipeline.start(system, lanes.registry(), lanes.laneIds(), program, settings, "cluster-pipeline-" + instance);
    }

    /**
     * Serves the model of {@code model} over {@code stages} stages hosted across the cluster of {@code system}, with
     * at most {@code maxActiveRequests} requests generating at once (and as many waiting).
     */
    public static ClusterPipeline start(ActorSystem<?> system, ModelDirectory model, int stages, int maxActiveRequests) {
        if (maxActiveRequests < 1) {
            throw new IllegalArgumentException("graphlane.cluster.pipeline.max-active-requests must be >= 1, got " + maxActiveRequests);
        }
        return start(system, model, stages, PipelineSettings.defaults(stages).withRequestLimits(maxActiveRequests, maxActiveRequests));
    }

    /** Serves the model of {@code model} over {@code stages} stages hosted across the cluster, within {@code settings}. */
    public static ClusterPipeline start(ActorSystem<?> system, ModelDirectory model, int stages, PipelineSettings settings) {
        Objects.requireNonNull(settings, "settings");
        return new ClusterPipeline(system, model, stages, settings);
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

    /** Why new requests are refused now, or empty while every stage has a reachable host and the engine runs. */
    @Override
    public Optional<String> unavailableReason() {
        if (closed) {
            return Optional.of("model " + name + " is shut down");
        }
        if (pipeline.isStopped()) {
            return Optional.of("the pipeline engine of model " + name + " has stopped after an internal failure;"
                    + " restart the serving node");
        }
        return Optional.ofNullable(unavailable.get());
    }

    @Override
    public int maxHeldRequests() {
        return pipeline.maxHeldRequests();
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
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        TrackedGeneration tracked = new TrackedGeneration(request.promptIds(), listener);
        long id;
        try {
            id = pipeline.submit(new PipelineRequest(prompt, request.maxNewTokens(), eosIds, deadline, new Sampler(request.sampling())),
                    new RootCauses(tracked));
        } catch (PipelineOverloadedException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED, e.getMessage());
        } catch (PipelineStoppedException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, e.getMessage());
        }
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
