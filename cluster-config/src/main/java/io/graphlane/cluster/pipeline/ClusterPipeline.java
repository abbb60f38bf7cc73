package io.graphlane.cluster.pipeline;

import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.pipeline.PromptCheck;
import io.graphlane.inference.pipeline.TrackedGeneration;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model served by pipeline stages hosted on the nodes of a cluster, seen from the serving node: the
 * {@link TextGenerator} the OpenAI server serves. It reads only the model's configuration and tokenizer (the weights
 * live on the stage hosts) and drives a {@link ClusterEngine}. Submission refuses at once with UNAVAILABLE while a
 * stage has no reachable host and with OVERLOADED beyond {@code maxActiveRequests}.
 */
public final class ClusterPipeline implements TextGenerator {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterPipeline.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final String name;
    private final LlamaConfig config;
    private final java.util.Set<Integer> eosTokenIds;
    private final int[] eosIds;
    private final java.util.Optional<io.graphlane.inference.chat.ChatTemplate> chatTemplate;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final ActorSystem<?> system;
    private final ActorRef<ClusterEngine.Command> engine;
    private final int maxActiveRequests;
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicReference<String> unavailable = new AtomicReference<>("the engine has not started");
    private final AtomicLong ids = new AtomicLong();
    private final java.util.concurrent.CompletionStage<Void> engineStopped;
    private volatile boolean closed;

    private ClusterPipeline(ActorSystem<?> system, ModelDirectory model, int stages, int maxActiveRequests) {
        this.system = system;
        this.name = model.name();
        this.config = model.config();
        this.eosTokenIds = model.eosTokenIds();
        this.eosIds = eosTokenIds.stream().mapToInt(Integer::intValue).toArray();
        this.chatTemplate = io.graphlane.inference.chat.ChatTemplate.load(model.dir());
        this.tokenizer = model.tokenizer();
        this.codec = TokenCodec.of(tokenizer, eosIds.length == 0 ? -1 : eosIds[0]);
        this.maxActiveRequests = maxActiveRequests;
        this.engine = system.systemActorOf(ClusterEngine.create(stages, held, unavailable),
                "cluster-pipeline-" + INSTANCES.incrementAndGet(), Props.empty());
        this.engineStopped = io.graphlane.scheduler.pipeline.ActorTermination.of(system, engine, engine.path().name() + "-watch");
    }

    /**
     * Serves the model of {@code model} over {@code stages} stages hosted across the cluster of {@code system}, with
     * at most {@code maxActiveRequests} requests generating at once.
     */
    public static ClusterPipeline start(ActorSystem<?> system, ModelDirectory model, int stages, int maxActiveRequests) {
        if (maxActiveRequests < 1) {
            throw new IllegalArgumentException("graphlane.cluster.pipeline.max-active-requests must be >= 1, got " + maxActiveRequests);
        }
        return new ClusterPipeline(system, model, stages, maxActiveRequests);
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
    public java.util.OptionalInt vocabularySize() {
        return java.util.OptionalInt.of(config.vocabSize());
    }

    @Override
    public java.util.Set<Integer> eosTokenIds() {
        return eosTokenIds;
    }

    @Override
    public java.util.Optional<io.graphlane.inference.chat.ChatTemplate> chatTemplate() {
        return chatTemplate;
    }

    /** Why new requests are refused now, or empty while every stage has a reachable host and the engine runs. */
    @Override
    public java.util.Optional<String> unavailableReason() {
        if (closed) {
            return java.util.Optional.of("model " + name + " is shut down");
        }
        if (engineStopped.toCompletableFuture().isDone()) {
            return java.util.Optional.of("the cluster engine of model " + name + " has stopped after an internal failure;"
                    + " restart the serving node");
        }
        return java.util.Optional.ofNullable(unavailable.get());
    }

    @Override
    public int maxHeldRequests() {
        return maxActiveRequests;
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
        if (held.incrementAndGet() > maxActiveRequests) {
            held.decrementAndGet();
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED, maxActiveRequests
                    + " requests are generating (graphlane.cluster.pipeline.max-active-requests); try again later");
        }
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        long id = ids.incrementAndGet();
        TrackedGeneration tracked = new TrackedGeneration(
                request.promptIds(), listener).bind(id, requestId -> engine.tell(new ClusterEngine.Cancel(requestId)));
        engine.tell(new ClusterEngine.Admit(id, new PipelineRequest(prompt, request.maxNewTokens(), eosIds, deadline,
                new Sampler(request.sampling())), tracked));
        return tracked;
    }

    /** Requests generating now; every admitted request generates at once (none wait), and the stages run on other nodes. */
    @Override
    public java.util.Optional<io.graphlane.inference.api.ServingStats> servingStats() {
        return java.util.Optional.of(io.graphlane.inference.api.ServingStats.requests(held.get(), 0));
    }

    /** Stops admitting, fails requests in flight and stops the engine; the stage hosts belong to their nodes. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            AskPattern.<ClusterEngine.Command, ClusterEngine.Stopped>ask(engine,
                    replyTo -> new ClusterEngine.Stop(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                            "model " + name + " is shutting down"), replyTo), Duration.ofSeconds(10), system.scheduler())
                    .toCompletableFuture().get(15, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("stopping the cluster pipeline of {} did not finish cleanly: {}", name, e.toString());
        }
        tokenizer.close();
    }
}
