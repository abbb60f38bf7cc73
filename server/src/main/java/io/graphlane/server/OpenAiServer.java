package io.graphlane.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An OpenAI-compatible HTTP server for one {@link TextGenerator}: {@code POST /v1/completions}
 * (text or token-id prompts, SSE streaming with {@code "stream": true}, each choice carrying its
 * {@code token_ids}; the sampling and output options of {@link GenerationOptions}, assembled per choice by
 * {@link CompletionChoice}), {@code POST /v1/chat/completions} (the model's chat template, see {@link ChatCompletions}),
 * {@code GET /v1/models}, {@code GET /health} and {@code GET /metrics} (Prometheus text, see {@link ServerMetrics}).
 * Bad requests get a 4xx with an OpenAI-style error body, overload a 429, an unavailable stage a 503.
 */
public final class OpenAiServer extends AllDirectives {
    private static final Logger LOG = LoggerFactory.getLogger(OpenAiServer.class);

    private final ActorSystem<?> system;
    private final TextGenerator generator;
    private final ObjectMapper json = new ObjectMapper();
    private final AtomicLong ids = new AtomicLong();
    private final ServerMetrics metrics;
    private final ChatCompletions chat;

    /** A server for {@code generator}, with metrics of its own; its streams run in {@code system}. */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator) {
        this(system, generator, new ServerMetrics(Objects.requireNonNull(generator, "generator")));
    }

    /** A server for {@code generator} that records into and serves {@code metrics} (built for the same generator). */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator, ServerMetrics metrics) {
        this.system = Objects.requireNonNull(system, "system");
        this.generator = Objects.requireNonNull(generator, "generator");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.chat = new ChatCompletions(this, system, generator, json);
    }

    /** Binds the routes on {@code host:port} (port 0 picks a free port). */
    public CompletionStage<ServerBinding> bind(String host, int port) {
        return Http.get(system).newServerAt(host, port).bind(routes());
    }

    /** The server's routes, for embedding in a larger Pekko HTTP application. */
    public Route routes() {
        Route api = concat(
                path("health", () -> get(() -> completeJson(StatusCodes.OK, json.createObjectNode().put("status", "ok")))),
                path("metrics", () -> get(() -> optionalHeaderValueByName("Accept", this::metrics))),
                pathPrefix("v1", () -> concat(
                        path("models", () -> get(this::models)),
                        path("completions", () -> post(() -> entity(
                                org.apache.pekko.http.javadsl.unmarshalling.Unmarshaller.entityToString(), this::completions))),
                        pathPrefix("chat", () -> path("completions", () -> post(() -> entity(
                                org.apache.pekko.http.javadsl.unmarshalling.Unmarshaller.entityToString(), chat::answer)))))));
        return handleExceptions(exceptionHandler(), () -> handleRejections(rejectionHandler(), () -> api));
    }

    private Route models() {
        ObjectNode body = json.createObjectNode().put("object", "list");
        body.putArray("data").addObject()
                .put("id", generator.modelName())
                .put("object", "model")
                .put("created", 0)
                .put("owned_by", "graphlane");
        return completeJson(StatusCodes.OK, body);
    }

    private Route metrics(Optional<String> accept) {
        ServerMetrics.Scrape scrape = metrics.scrape(accept.orElse(null));
        return complete(HttpResponse.create().withStatus(StatusCodes.OK).withEntity(HttpEntities.create(
                ContentTypes.parse(scrape.contentType()), ByteString.fromString(scrape.body()))));
    }

    private Route completions(String body) {
        CompletionRequest request = CompletionRequest.parse(json, body, generator.tokenizer());
        request.checkModel(generator.modelName());
        generator.vocabularySize().ifPresent(request.options()::checkVocabulary);
        for (List<Integer> prompt : request.prompts()) {
            int total = prompt.size() + request.maxTokens();
            if (total > generator.maxSequenceLength()) {
                throw ApiError.invalid("max_tokens", "prompt (" + prompt.size() + " tokens) plus max_tokens (" + request.maxTokens()
                        + ") is " + total + ", more than the model's maximum sequence length " + generator.maxSequenceLength());
            }
        }
        String id = "cmpl-" + Long.toHexString(System.currentTimeMillis()) + "-" + ids.incrementAndGet();
        long created = Instant.now().getEpochSecond();
        return request.stream() ? streamed(request, id, created) : whole(request, id, created);
    }

    private Route whole(CompletionRequest request, String id, long created) {
        List<CompletionChoice> choices = choicesOf(request);
        List<CompletableFuture<Void>> ended = new ArrayList<>();
        List<Generation> started = submitAll(request, choices, index -> {
            CompletionChoice choice = choices.get(index);
            CompletableFuture<Void> done = new CompletableFuture<>();
            ended.add(done);
            choice.start();
            return new GenerationListener() {
                @Override
                public void onToken(SampledToken token) {
                    CompletionChoice.Piece piece = choice.token(token);
                    if (piece != null && piece.finishReason() != null) {
                        done.complete(null);
                    }
                }

                @Override
                public void onFinished(FinishReason reason) {
                    choice.finish(reason);
                    done.complete(null);
                }

                @Override
                public void onFailed(Throwable cause) {
                    if (choice.fail()) {
                        done.completeExceptionally(cause);
                    }
                }
            };
        });
        CompletableFuture<HttpResponse> response = CompletableFuture.allOf(ended.toArray(CompletableFuture[]::new))
                .handle((ignored, failure) -> {
                    if (failure != null) {
                        started.forEach(Generation::cancel);
                        return errorResponse(generationError(unwrap(failure)));
                    }
                    ObjectNode out = header(id, created);
                    ArrayNode array = out.putArray("choices");
                    int completionTokens = 0;
                    for (int i = 0; i < choices.size(); i++) {
                        CompletionChoice c = choices.get(i);
                        ObjectNode choice = array.addObject();
                        choice.put("index", i);
                        choice.put("text", c.text());
                        ArrayNode tokenIds = choice.putArray("token_ids");
                        c.tokenIds().forEach(tokenIds::add);
                        putLogprobs(choice, c.logprobs());
                        choice.put("finish_reason", c.finishReason());
                        completionTokens += c.generatedTokens();
                    }
                    putUsage(out, promptTokens(request), completionTokens);
                    return jsonResponse(StatusCodes.OK, out);
                });
        return completeWithFuture(response);
    }

    private Route streamed(CompletionRequest request, String id, long created) {
        List<CompletionChoice> choices = choicesOf(request);
        // Each choice sends its echo, at most max_tokens chunks and its final chunk; then the usage chunk and [DONE].
        SseStream events = new SseStream(system, choices.size() * (request.maxTokens() + 3) + 3);
        AtomicInteger open = new AtomicInteger(choices.size());
        List<Generation> started = submitAll(request, choices, index -> new GenerationListener() {
            private final CompletionChoice choice = choices.get(index);

            {
                send(choice.start());
            }

            @Override
            public void onToken(SampledToken token) {
                send(choice.token(token));
            }

            @Override
            public void onFinished(FinishReason reason) {
                send(choice.finish(reason));
            }

            @Override
            public void onFailed(Throwable cause) {
                if (choice.fail()) {
                    events.send(errorBody(generationError(cause)));
                    finishOne();
                }
            }

            private void send(CompletionChoice.Piece piece) {
                if (piece == null) {
                    return;
                }
                events.send(chunk(id, created, index, piece));
                if (piece.finishReason() != null) {
                    finishOne();
                }
            }

            private void finishOne() {
                if (open.decrementAndGet() == 0) {
                    if (request.options().includeUsage()) {
                        ObjectNode usage = header(id, created);
                        usage.putArray("choices");
                        putUsage(usage, promptTokens(request), choices.stream().mapToInt(CompletionChoice::generatedTokens).sum());
                        events.send(usage);
                    }
                    events.done();
                }
            }
        });
        // A client that goes away cancels its generations; finished ones ignore it.
        return complete(events.response(() -> started.forEach(Generation::cancel)));
    }

    /** One choice per prompt and per n, prompt-major: choice {@code p·n + j} is prompt p's j-th, as OpenAI numbers them. */
    private List<CompletionChoice> choicesOf(CompletionRequest request) {
        List<CompletionChoice> choices = new ArrayList<>();
        for (List<Integer> prompt : request.prompts()) {
            for (int j = 0; j < request.options().n(); j++) {
                choices.add(new CompletionChoice(generator.tokenizer(), request.options(), prompt, request.echo()));
            }
        }
        return choices;
    }

    /** The prompt tokens of a request: each prompt once, however many choices it has (as OpenAI counts them). */
    private static int promptTokens(CompletionRequest request) {
        return request.prompts().stream().mapToInt(List::size).sum();
    }

    /** OpenAI's {@code usage} object. */
    static void putUsage(ObjectNode out, int promptTokens, int completionTokens) {
        out.putObject("usage")
                .put("prompt_tokens", promptTokens)
                .put("completion_tokens", completionTokens)
                .put("total_tokens", promptTokens + completionTokens);
    }

    private void putLogprobs(ObjectNode choice, List<LogprobsBuilder.Entry> entries) {
        if (entries == null) {
            choice.putNull("logprobs");
        } else {
            choice.set("logprobs", LogprobsBuilder.completionsShape(json, entries));
        }
    }

    private interface ListenerFactory {
        GenerationListener listenerFor(int choiceIndex);
    }

    /** Submits one generation to the generator, its tokens, timings and outcome recorded in the metrics. */
    Generation submit(GenerationRequest request, GenerationListener listener) {
        ServerMetrics.Request observed = metrics.request(request);
        try {
            return observed.started(generator.submit(request, observed.listener(listener)));
        } catch (RuntimeException refused) {
            observed.refused(refused);
            throw refused;
        }
    }

    /**
     * Submits one generation per choice (choice p·n + j: prompt p with choice j's seed); if one is refused, those
     * already started are cancelled.
     */
    private List<Generation> submitAll(CompletionRequest request, List<CompletionChoice> choices, ListenerFactory listeners) {
        List<Generation> started = new ArrayList<>();
        int n = request.options().n();
        try {
            for (int i = 0; i < choices.size(); i++) {
                GenerationRequest g = new GenerationRequest(request.prompts().get(i / n), request.maxTokens(),
                        request.options().samplingFor(i % n), Optional.empty());
                Generation generation = submit(g, listeners.listenerFor(i));
                choices.get(i).attach(generation);
                started.add(generation);
            }
        } catch (RuntimeException e) {
            started.forEach(Generation::cancel);
            throw e;
        }
        return started;
    }

    private ObjectNode header(String id, long created) {
        ObjectNode out = json.createObjectNode();
        out.put("id", id);
        out.put("object", "text_completion");
        out.put("created", created);
        out.put("model", generator.modelName());
        return out;
    }

    private ObjectNode chunk(String id, long created, int index, CompletionChoice.Piece piece) {
        ObjectNode out = header(id, created);
        ObjectNode choice = out.putArray("choices").addObject();
        choice.put("index", index);
        choice.put("text", piece.text());
        ArrayNode ids = choice.putArray("token_ids");
        piece.tokenIds().forEach(ids::add);
        putLogprobs(choice, piece.logprobs().isEmpty() ? null : piece.logprobs());
        if (piece.finishReason() == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", piece.finishReason());
        }
        return out;
    }

    static ApiError generationError(Throwable cause) {
        if (cause instanceof ApiError api) {
            return api;
        }
        if (cause instanceof GenerationRefusedException refused) {
            return switch (refused.reason()) {
                case INVALID -> ApiError.invalid("prompt", refused.getMessage());
                case OVERLOADED -> new ApiError(StatusCodes.TOO_MANY_REQUESTS, "rate_limit_error", null, "overloaded", refused.getMessage());
                case UNAVAILABLE -> new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "unavailable", refused.getMessage());
            };
        }
        if (cause instanceof java.util.concurrent.TimeoutException) {
            return new ApiError(StatusCodes.GATEWAY_TIMEOUT, "server_error", null, "deadline_exceeded", String.valueOf(cause.getMessage()));
        }
        LOG.warn("generation failed", cause);
        return new ApiError(StatusCodes.INTERNAL_SERVER_ERROR, "server_error", null, null,
                "generation failed: " + cause.getMessage());
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof java.util.concurrent.ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    ObjectNode errorBody(ApiError e) {
        ObjectNode out = json.createObjectNode();
        ObjectNode error = out.putObject("error");
        error.put("message", e.getMessage());
        error.put("type", e.type());
        if (e.param() == null) {
            error.putNull("param");
        } else {
            error.put("param", e.param());
        }
        if (e.code() == null) {
            error.putNull("code");
        } else {
            error.put("code", e.code());
        }
        return out;
    }

    HttpResponse errorResponse(ApiError e) {
        return jsonResponse(e.status(), errorBody(e));
    }

    HttpResponse jsonResponse(StatusCode status, ObjectNode body) {
        return HttpResponse.create().withStatus(status).withEntity(ContentTypes.APPLICATION_JSON, body.toString());
    }

    private Route completeJson(StatusCode status, ObjectNode body) {
        return complete(jsonResponse(status, body));
    }

    private ExceptionHandler exceptionHandler() {
        return ExceptionHandler.newBuilder()
                .match(ApiError.class, e -> {
                    metrics.invalid();
                    return complete(errorResponse(e));
                })
                .match(GenerationRefusedException.class, e -> complete(errorResponse(generationError(e))))
                .match(IllegalArgumentException.class, e -> {
                    metrics.invalid();
                    return complete(errorResponse(ApiError.invalid(null, e.getMessage())));
                })
                .build();
    }

    private RejectionHandler rejectionHandler() {
        return RejectionHandler.defaultHandler().mapRejectionResponse(response -> {
            if (response.entity().getContentType().equals(ContentTypes.APPLICATION_JSON)) {
                return response;
            }
            String message = response.entity() instanceof org.apache.pekko.http.javadsl.model.HttpEntity.Strict strict
                    ? strict.getData().utf8String() : response.status().reason();
            String type = response.status().intValue() == 404 ? "not_found_error" : "invalid_request_error";
            return errorResponse(new ApiError(response.status(), type, null, null, message));
        });
    }
}
