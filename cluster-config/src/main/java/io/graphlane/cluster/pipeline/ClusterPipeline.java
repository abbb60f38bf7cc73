package io.graphlane.cluster.pipeline;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.TokenListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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
    private final int eos;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final ActorSystem<?> system;
    private final ActorRef<ClusterEngine.Command> engine;
    private final int maxActiveRequests;
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicReference<String> unavailable = new AtomicReference<>("the engine has not started");
    private final AtomicLong ids = new AtomicLong();
    private volatile boolean closed;

    private ClusterPipeline(ActorSystem<?> system, ModelDirectory model, int stages, int maxActiveRequests) {
        this.system = system;
        this.name = model.name();
        this.config = model.config();
        this.eos = model.eosTokenIds().isEmpty() ? -1 : model.eosTokenIds().iterator().next();
        this.tokenizer = model.tokenizer();
        this.codec = new Codec(tokenizer, eos);
        this.maxActiveRequests = maxActiveRequests;
        this.engine = system.systemActorOf(ClusterEngine.create(stages, held, unavailable),
                "cluster-pipeline-" + INSTANCES.incrementAndGet(), Props.empty());
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

    /** Why new requests are refused now, or empty while every stage has a reachable host. */
    public java.util.Optional<String> unavailableReason() {
        return java.util.Optional.ofNullable(closed ? "model " + name + " is shut down" : unavailable.get());
    }

    @Override
    public Generation submit(GenerationRequest request, GenerationListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        String why = unavailableReason().orElse(null);
        if (why != null) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, why);
        }
        int[] prompt = new int[request.promptIds().size()];
        for (int i = 0; i < prompt.length; i++) {
            int id = request.promptIds().get(i);
            if (id < 0 || id >= config.vocabSize()) {
                throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID,
                        "prompt token " + i + " is id " + id + ", outside the vocabulary [0, " + config.vocabSize() + ")");
            }
            prompt[i] = id;
        }
        int total = prompt.length + request.maxNewTokens();
        if (total > config.maxPositions()) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID, "prompt (" + prompt.length
                    + " tokens) plus max new tokens (" + request.maxNewTokens() + ") is " + total
                    + ", more than the model's maximum of " + config.maxPositions() + " positions");
        }
        if (held.incrementAndGet() > maxActiveRequests) {
            held.decrementAndGet();
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED, maxActiveRequests
                    + " requests are generating (graphlane.cluster.pipeline.max-active-requests); try again later");
        }
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        long id = ids.incrementAndGet();
        Tracked tracked = new Tracked(id, request.promptIds(), listener, engine);
        engine.tell(new ClusterEngine.Admit(id, new PipelineRequest(prompt, request.maxNewTokens(), eos, deadline,
                new Sampler(request.sampling())), tracked));
        return tracked;
    }

    /** Generates for every request and waits for all: a convenience for batch callers and tests. */
    public List<GenerationResult> generateAll(List<GenerationRequest> requests, Duration timeout) throws Exception {
        List<CompletableFuture<GenerationResult>> results = new ArrayList<>();
        for (GenerationRequest r : requests) {
            results.add(submit(r, new GenerationListener() { }).result().toCompletableFuture());
        }
        CompletableFuture.allOf(results.toArray(CompletableFuture[]::new)).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        return results.stream().map(CompletableFuture::join).toList();
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

    /** One request seen from the caller: forwards tokens and collects the result. */
    private static final class Tracked implements TokenListener, Generation {
        private final long id;
        private final List<Integer> prompt;
        private final GenerationListener listener;
        private final ActorRef<ClusterEngine.Command> engine;
        private final List<Integer> generated = new ArrayList<>();
        private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();

        Tracked(long id, List<Integer> prompt, GenerationListener listener, ActorRef<ClusterEngine.Command> engine) {
            this.id = id;
            this.prompt = prompt;
            this.listener = listener;
            this.engine = engine;
        }

        @Override
        public void onToken(int tokenId) {
            generated.add(tokenId);
            listener.onToken(tokenId);
        }

        @Override
        public void onFinished(StopReason reason) {
            FinishReason r = reason == StopReason.END_OF_SEQUENCE ? FinishReason.STOP : FinishReason.LENGTH;
            listener.onFinished(r);
            result.complete(new GenerationResult(prompt, List.copyOf(generated), r));
        }

        @Override
        public void onFailed(Throwable cause) {
            listener.onFailed(cause);
            result.completeExceptionally(cause);
        }

        @Override
        public String id() {
            return Long.toString(id);
        }

        @Override
        public void cancel() {
            engine.tell(new ClusterEngine.Cancel(id));
        }

        @Override
        public CompletionStage<GenerationResult> result() {
            return result;
        }
    }

    /** The tokenizer as the generation API sees it. */
    private record Codec(TextTokenizer tokenizer, int eos) implements TokenCodec {
        @Override
        public int[] encode(String text) {
            return tokenizer.encode(text);
        }

        @Override
        public String decode(List<Integer> ids) {
            return tokenizer.decode(ids.stream().mapToInt(Integer::intValue).toArray());
        }

        @Override
        public int eosTokenId() {
            return eos;
        }
    }
}
