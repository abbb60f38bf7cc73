package io.graphlane.server;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import java.time.Duration;
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
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.MalformedRequestContentRejection;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An OpenAI-compatible HTTP server for one {@link TextGenerator}: {@code POST /v1/completions}
 * (text or token-id prompts, SSE streaming with {@code "stream": true}, each choice carrying its
 * {@code token_ids}; the sampling and output options of {@link GenerationOptions}, assembled per choice by
 * {@link CompletionChoice}), {@code POST /v1/chat/completions} (the model's chat template, see {@link ChatCompletions}),
 * {@code GET /v1/models}, {@code GET /health} and {@code GET /metrics} (Prometheus text, see {@link ServerMetrics}).
 * Every error is an OpenAI-style JSON body: bad requests a 4xx naming the field, a body over the limit 413, overload
 * 429 and an unavailable or draining server 503 (both with {@code Retry-After}), a timeout 503/504, anything else 500.
 *
 * <p>Clients cannot hurt the engine: a client that goes away (a stream cancelled, or, when bound with
 * {@link #bind}, the connection of a non-streamed completion closed) cancels its generations at once; what the
 * generations' listeners do for a response never throws into the engine. {@code /health} answers 200 only while the
 * generator serves ({@link TextGenerator#unavailableReason()} is empty) and the server is not draining;
 * {@link #drain} stops admitting and waits for the completions (text and chat) in flight.
 *
 * <p>Clients cannot stall the server either: a request is read, checked, rendered (chat) and tokenized on the
 * preparation threads of its {@link InputLimits}, never on Pekko's dispatcher, within bounds that follow from the model
 * ({@link PromptBounds}: a text that cannot fit is refused before it is tokenized) and the chat template limits; when
 * the preparation threads and their queue are full a request gets 429. The threads stop with {@link #close} or with
 * the actor system.
 */
public final class OpenAiServer extends AllDirectives implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OpenAiServer.class);

    /** Seconds a client is told to wait after a 429. */
    static final long RETRY_AFTER_OVERLOADED_SECONDS = 1L;
    /** Seconds a client is told to wait after a 503 (unavailable, draining, timed out). */
    static final long RETRY_AFTER_UNAVAILABLE_SECONDS = 5L;
    /** What the HTTP layer's own request timeout leaves after a generation's deadline, for its answer to come back. */
    private static final Duration TIMEOUT_SLACK = Duration.ofSeconds(5);
    /** Requests read ahead on one connection (answered in order). */
    private static final int PIPELINING_LIMIT = 16;

    private final ActorSystem<?> system;
    private final TextGenerator generator;
    private final ServerOptions options;
    /** Strict about what follows the body's value: {@code {"prompt":[1]},,} is invalid JSON, not a request. */
    private final ObjectMapper json = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private final AtomicLong ids = new AtomicLong();
    private final ServerMetrics metrics;
    private final ChatCompletions chat;
    private final Drain drain = new Drain();
    private final PromptBounds promptBounds;
    private final RequestPreparation preparation;
    /** Requests that failed unexpectedly: such a failure may be a client's doing, so its warnings are rate-limited. */
    private final RateLimitedWarnings failures = new RateLimitedWarnings(LOG, RateLimitedWarnings.DEFAULT_INTERVAL, System::nanoTime);

    /** A server for {@code generator}, with metrics of its own and {@link ServerOptions#defaults()}; its streams run in {@code system}. */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator) {
        this(system, generator, ServerOptions.defaults());
    }

    /** A server for {@code generator} with metrics of its own, within {@code options}. */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator, ServerOptions options) {
        this(system, generator, new ServerMetrics(Objects.requireNonNull(generator, "generator")), options);
    }

    /** A server for {@code generator} that records into and serves {@code metrics} (built for the same generator). */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator, ServerMetrics metrics) {
        this(system, generator, metrics, ServerOptions.defaults());
    }

    /** A server for {@code generator} that records into and serves {@code metrics}, within {@code options}. */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator, ServerMetrics metrics, ServerOptions options) {
        this(system, generator, metrics, options, InputLimits.defaults());
    }

    /**
     * A server for {@code generator} that records into and serves {@code metrics}, within {@code options}, preparing
     * requests within {@code inputLimits}. Its preparation threads stop with {@link #close} or with {@code system}.
     */
    public OpenAiServer(ActorSystem<?> system, TextGenerator generator, ServerMetrics metrics, ServerOptions options,
                        InputLimits inputLimits) {
        this.system = Objects.requireNonNull(system, "system");
        this.generator = Objects.requireNonNull(generator, "generator");
        this.metrics = Objects.requireNonNull(metrics, "metrics");
        this.options = Objects.requireNonNull(options, "options");
        Objects.requireNonNull(inputLimits, "inputLimits");
        this.promptBounds = PromptBounds.of(generator, options.maxBodyBytes());
        this.chat = new ChatCompletions(this, generator, json, promptBounds, inputLimits.chatTemplate());
        this.preparation = new RequestPreparation(inputLimits.preparationThreads(), inputLimits.preparationQueue());
        system.getWhenTerminated().thenRun(preparation::close);
    }

    /**
     * Stops the preparation threads: a request still waiting for one is answered 503, new ones too. Completions already
     * generating are not affected; {@link #drain} them first.
     */
    @Override
    public void close() {
        preparation.close();
    }

    /**
     * Binds the routes on {@code host:port} (port 0 picks a free port) under the options' {@link ConnectionLimits}
     * (see {@link LimitedBinding}). Each connection is watched: when it ends while a non-streamed completion is still
     * generating (the client went away), that completion is cancelled. The HTTP layer's own request timeout is the
     * request timeout plus 5 s, so a generation's deadline (504) comes first.
     */
    public CompletionStage<ServerBinding> bind(String host, int port) {
        Flow<HttpRequest, HttpResponse, NotUsed> routeFlow = routes().flow(system);
        Flow<HttpRequest, HttpResponse, NotUsed> perConnection = Flow.<HttpRequest, HttpResponse, NotUsed>fromMaterializer((mat, attrs) -> {
            ConnectionScope connection = new ConnectionScope();
            return Flow.<HttpRequest>create()
                    // The requests end when the client closed its side of the connection (or it broke): an HTTP
                    // client that stops sending while it waits for an answer has gone away.
                    .watchTermination((notUsed, done) -> {
                        done.whenComplete((ok, err) -> connection.close());
                        return notUsed;
                    })
                    .map(request -> request.addAttribute(ConnectionScope.KEY, connection))
                    .via(routeFlow)
                    .watchTermination((notUsed, done) -> {
                        done.whenComplete((ok, err) -> connection.close());
                        return notUsed;
                    });
        }).mapMaterializedValue(ignored -> NotUsed.getInstance());
        // Reading ahead for a pipelined request is what lets the server see the connection close while it is still
        // generating an answer; without it nothing is read from the socket until the answer is written.
        return LimitedBinding.bind(system, "the OpenAI API", host, port, options.connections(), Optional.of(answerTimeout()),
                settings -> settings.withPipeliningLimit(Math.max(PIPELINING_LIMIT, settings.getPipeliningLimit())), perConnection);
    }

    /**
     * Stops admitting completions (they get a 503 with {@code Retry-After}, and {@code /health} turns 503 at once) and
     * completes with true once every completion in flight has ended, or with false when {@code grace} ran out first.
     * The caller then unbinds and closes the generator.
     */
    public CompletionStage<Boolean> drain(Duration grace) {
        LOG.info("draining: {} completions in flight, waiting up to {} s", drain.inFlight(), grace.toSeconds());
        return drain.drain(grace);
    }

    /** Whether {@link #drain} was called: the server admits no new completions. */
    public boolean draining() {
        return drain.draining();
    }

    /** Completions in flight now (streams until their last event is sent). */
    public int inFlight() {
        return drain.inFlight();
    }

    /**
     * The server's routes, for embedding in a larger Pekko HTTP application. Served this way (without {@link #bind}),
     * a non-streamed completion whose client went away is not cancelled: it runs to its end or its deadline.
     */
    public Route routes() {
        Route api = concat(
                path("health", () -> get(this::health)),
                path("metrics", () -> get(() -> optionalHeaderValueByName("Accept", this::metrics))),
                pathPrefix("v1", () -> concat(
                        path("models", () -> get(this::models)),
                        path("completions", () -> post(() -> withSizeLimit(options.maxBodyBytes(), () -> entity(
                                org.apache.pekko.http.javadsl.unmarshalling.Unmarshaller.entityToString(), this::completions)))),
                        pathPrefix("chat", () -> path("completions", () -> post(() -> withSizeLimit(options.maxBodyBytes(), () -> entity(
                                org.apache.pekko.http.javadsl.unmarshalling.Unmarshaller.entityToString(), this::chatCompletions))))))));
        return withRequestTimeoutResponse(this::timedOut,
                () -> handleExceptions(exceptionHandler(), () -> handleRejections(rejectionHandler(), () -> api)));
    }

    /** 200 while the generator serves and the server admits; 503 (with the reason) otherwise. */
    private Route health() {
        String why = drain.draining() ? "the server is draining: it finishes the requests in flight and stops"
                : generator.unavailableReason().orElse(null);
        if (why == null) {
            return completeJson(StatusCodes.OK, json.createObjectNode().put("status", "ok"));
        }
        ObjectNode body = json.createObjectNode().put("status", drain.draining() ? "draining" : "unavailable").put("reason", why);
        return complete(jsonResponse(StatusCodes.SERVICE_UNAVAILABLE, body)
                .addHeader(RetryAfter.create(RETRY_AFTER_UNAVAILABLE_SECONDS)));
    }

    /**
     * The 503 for a request the HTTP layer gave up on, naming the limit that applied: a completion's own timeout
     * ({@link #answerWhole}), which is also the HTTP layer's request timeout for every route when bound by {@link #bind}.
     */
    private HttpResponse timedOut(HttpRequest request) {
        return errorResponse(new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "request_timeout",
                "the server did not answer within the request timeout of " + ConnectionLimits.text(answerTimeout())
                        + " (a non-streamed completion may generate for at most " + ConnectionLimits.text(options.requestTimeout())
                        + "; use \"stream\": true for longer ones)"));
    }

    /** How long the HTTP layer waits for a route's answer: the request timeout plus the slack. */
    private Duration answerTimeout() {
        return options.requestTimeout().plus(TIMEOUT_SLACK);
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
        return prepared(() -> prepareCompletion(body), this::startCompletion);
    }

    private Route chatCompletions(String body) {
        return prepared(() -> chat.prepare(body), chat::start);
    }

    /**
     * Runs {@code preparation} on a preparation thread and, once it is done, answers with {@code then} of its value,
     * on the dispatcher: the route completes asynchronously, and no dispatcher thread waits for the preparation. What
     * the preparation throws is answered as if the route had thrown it.
     */
    private <T> Route prepared(Supplier<T> preparation, Function<T, Route> then) {
        return onComplete(this.preparation.submit(preparation), result -> {
            if (result.isFailure()) {
                Throwable cause = unwrap(result.failed().get());
                if (cause instanceof RuntimeException runtime) {
                    throw runtime;
                }
                throw new IllegalStateException("preparing the request failed: " + cause, cause);
            }
            return then.apply(result.get());
        });
    }

    /** Reads, checks and tokenizes a text completion: the work of a preparation thread. */
    private CompletionRequest prepareCompletion(String body) {
        CompletionRequest request = CompletionRequest.parse(json, body, generator.tokenizer(), promptBounds, generator.generationDefaults());
        request.checkModel(generator.modelName());
        generator.vocabularySize().ifPresent(request.options()::checkVocabulary);
        checkFits(request);
        return request;
    }

    private Route startCompletion(CompletionRequest request) {
        Drain.Ticket ticket = admit();
        try {
            String id = "cmpl-" + Long.toHexString(System.currentTimeMillis()) + "-" + ids.incrementAndGet();
            long created = Instant.now().getEpochSecond();
            return request.stream() ? streamed(request, id, created, ticket) : whole(request, id, created, ticket);
        } catch (RuntimeException e) {
            ticket.close();
            throw e;
        }
    }

    /** Counts one completion (chat or text) in flight until its ticket is closed; refused with a 503 while draining. */
    Drain.Ticket admit() {
        Drain.Ticket ticket = drain.tryEnter();
        if (ticket == null) {
            throw new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "draining",
                    "the server is shutting down and admits no new requests; retry on another instance");
        }
        return ticket;
    }

    /** The deadline each generation of a non-streamed completion is given. */
    Duration requestTimeout() {
        return options.requestTimeout();
    }

    /** Refuses, naming the field and the numbers, a request that could never run: lengths in long, so nothing overflows. */
    private void checkFits(CompletionRequest request) {
        long generations = (long) request.prompts().size() * request.options().n();
        checkHeld(generations, "prompt", request.prompts().size() + " prompt(s) x n " + request.options().n(), "fewer prompts or a smaller n");
        long max = generator.maxSequenceLength();
        for (int i = 0; i < request.prompts().size(); i++) {
            long promptLength = request.prompts().get(i).size();
            String which = request.prompts().size() == 1 ? "the prompt" : "prompt[" + i + "]";
            if (promptLength >= max) {
                throw ApiError.invalid("prompt", which + " has " + promptLength + " tokens; the model's maximum sequence length is "
                        + max + ", which leaves no room for a generated token");
            }
            long total = promptLength + request.maxTokens();
            if (total > max) {
                throw ApiError.invalid("max_tokens", which + " (" + promptLength + " tokens) plus max_tokens (" + request.maxTokens()
                        + ") is " + total + ", more than the model's maximum sequence length " + max + "; max_tokens may be at most "
                        + (max - promptLength) + " here");
            }
        }
    }

    /**
     * Refuses a request of more {@code generations} than the generator holds at once (generating plus queued), naming
     * {@code param}, what was {@code asked} and what to {@code send} instead.
     */
    void checkHeld(long generations, String param, String asked, String send) {
        int held = generator.maxHeldRequests();
        if (generations > held) {
            throw ApiError.invalid(param, "the request asks for " + generations + " generations (" + asked + "), but this server holds at most "
                    + held + " generations at once (generating plus queued); send " + send);
        }
    }

    private Route whole(CompletionRequest request, String id, long created, Drain.Ticket ticket) {
        List<CompletionChoice> choices = choicesOf(request);
        List<CompletableFuture<Void>> ended = new ArrayList<>();
        List<Generation> started = submitAll(request.prompts(), request.maxTokens(), request.options(), choices, index -> {
            CompletionChoice choice = choices.get(index);
            CompletableFuture<Void> done = new CompletableFuture<>();
            ended.add(done);
            choice.start();
            return choice.listener(done);
        }, Optional.of(options.requestTimeout()));
        return answerWhole(wholeResponse(choices, ended, started, header(id, created), promptTokens(request),
                        (choice, text) -> choice.put("text", text), this::putLogprobs),
                () -> started.forEach(Generation::cancel), ticket);
    }

    /**
     * Completes a non-streamed completion with {@code response}. A client that goes away before the answer (its
     * watched connection closed) runs {@code cancelAll} at once, so the generations' slots free as soon as the steps
     * in flight return; without a watched connection they run to their end or deadline. Past the request timeout plus
     * the slack the client gets a 503 and {@code cancelAll} runs too. The ticket is closed once the response is done,
     * or once it was given up (cancelled, timed out): nothing is sent for it after that.
     */
    Route answerWhole(CompletableFuture<HttpResponse> response, Runnable cancelAll, Drain.Ticket ticket) {
        Runnable giveUp = () -> {
            cancelAll.run();
            ticket.close();
        };
        return optionalAttribute(ConnectionScope.KEY, connection -> {
            ConnectionScope.Registration registration = connection.map(c -> c.onClose(giveUp)).orElse(() -> { });
            response.whenComplete((r, e) -> {
                registration.close();
                ticket.close();
            });
            return withRequestTimeout(answerTimeout(), timedOutRequest -> {
                giveUp.run();
                return timedOut(timedOutRequest);
            }, () -> completeWithFuture(response));
        });
    }

    /**
     * The whole response once every choice {@code ended}: {@code head} with the choices (each its {@code index},
     * {@code text} written by {@code text}, {@code token_ids}, {@code logprobs} written by {@code logprobs},
     * {@code finish_reason}) and the usage; or, once one failed, its error, the other generations cancelled.
     */
    CompletableFuture<HttpResponse> wholeResponse(List<CompletionChoice> choices, List<CompletableFuture<Void>> ended, List<Generation> started,
                                                  ObjectNode head, int promptTokens, BiConsumer<ObjectNode, String> text,
                                                  BiConsumer<ObjectNode, List<LogprobsBuilder.Entry>> logprobs) {
        return CompletableFuture.allOf(ended.toArray(CompletableFuture[]::new))
                .handle((ignored, failure) -> {
                    if (failure != null) {
                        started.forEach(Generation::cancel);
                        return errorResponse(generationError(unwrap(failure)));
                    }
                    ArrayNode array = head.putArray("choices");
                    int completionTokens = 0;
                    for (int i = 0; i < choices.size(); i++) {
                        CompletionChoice c = choices.get(i);
                        ObjectNode choice = array.addObject();
                        choice.put("index", i);
                        text.accept(choice, c.text());
                        ArrayNode tokenIds = choice.putArray("token_ids");
                        c.tokenIds().forEach(tokenIds::add);
                        logprobs.accept(choice, c.logprobs());
                        choice.put("finish_reason", c.finishReason());
                        completionTokens += c.generatedTokens();
                    }
                    putUsage(head, promptTokens, completionTokens);
                    return jsonResponse(StatusCodes.OK, head);
                });
    }

    private Route streamed(CompletionRequest request, String id, long created, Drain.Ticket ticket) {
        // Each choice sends its echo, at most max_tokens chunks and its final chunk.
        return streamChoices(request.prompts(), request.maxTokens(), request.options(), choicesOf(request), request.maxTokens() + 3L,
                promptTokens(request), new StreamShape() {
                    @Override
                    public List<ObjectNode> opening(int index, CompletionChoice choice) {
                        CompletionChoice.Piece echo = choice.start();
                        return echo == null ? List.of() : List.of(chunk(id, created, index, echo));
                    }

                    @Override
                    public List<ObjectNode> events(int index, CompletionChoice.Piece piece) {
                        return List.of(chunk(id, created, index, piece));
                    }

                    @Override
                    public ObjectNode usageHeader() {
                        return header(id, created);
                    }
                }, ticket);
    }

    /** How a streamed route writes its choices' events (text completions and chat differ). */
    interface StreamShape {
        /** What choice {@code index} sends before its tokens (its echo, its role). */
        List<ObjectNode> opening(int index, CompletionChoice choice);

        /** The events of one piece of choice {@code index}. */
        List<ObjectNode> events(int index, CompletionChoice.Piece piece);

        /** The head of the usage chunk ({@code stream_options.include_usage}), without choices. */
        ObjectNode usageHeader();
    }

    /**
     * Streams {@code choices} (at most {@code eventsPerChoice} events each, written by {@code shape}), then the usage
     * chunk when asked and [DONE]: the stream's one "choice" ends when the last of them did. When the stream ends (sent,
     * or cancelled by a client that went away) the generations still running are cancelled and the ticket is closed.
     */
    Route streamChoices(List<List<Integer>> prompts, int maxTokens, GenerationOptions generationOptions, List<CompletionChoice> choices,
                        long eventsPerChoice, int promptTokens, StreamShape shape, Drain.Ticket ticket) {
        EventStream events = new EventStream(system, 1, choices.size() * eventsPerChoice + 1);
        AtomicInteger open = new AtomicInteger(choices.size());
        List<Generation> started = new ArrayList<>();
        List<Generation> submitted = submitAll(prompts, maxTokens, generationOptions, choices, index -> {
            CompletionChoice choice = choices.get(index);
            shape.opening(index, choice).forEach(events::send);
            return choice.listener(piece -> shape.events(index, piece).forEach(events::send), failure -> {
                if (failure != null) {
                    events.send(errorBody(generationError(failure)));
                }
                if (open.decrementAndGet() == 0) {
                    if (generationOptions.includeUsage()) {
                        ObjectNode usage = shape.usageHeader();
                        usage.putArray("choices");
                        putUsage(usage, promptTokens, choices.stream().mapToInt(CompletionChoice::generatedTokens).sum());
                        events.send(usage);
                    }
                    events.choiceEnded();
                }
            });
        }, Optional.empty());
        synchronized (started) {
            started.addAll(submitted);
        }
        return complete(events.response(() -> {
            synchronized (started) {
                started.forEach(Generation::cancel);
            }
            ticket.close();
        }));
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

    /** The listener of choice {@code choiceIndex}, made as its generation is submitted. */
    interface ListenerFactory {
        GenerationListener listenerFor(int choiceIndex);
    }

    /** Submits one generation to the generator, its tokens, timings and outcome recorded on {@code observed}. */
    private Generation submit(ServerMetrics.Request observed, GenerationRequest request, GenerationListener listener) {
        try {
            return observed.started(generator.submit(request, observed.listener(listener)));
        } catch (RuntimeException refused) {
            observed.refused(refused);
            throw refused;
        }
    }

    /**
     * Submits one generation per choice (choice p·n + j: prompt p with choice j's seed, at most {@code maxTokens}),
     * each with {@code timeout}; if one is refused, those already started are cancelled.
     */
    List<Generation> submitAll(List<List<Integer>> prompts, int maxTokens, GenerationOptions generationOptions,
                               List<CompletionChoice> choices, ListenerFactory listeners, Optional<Duration> timeout) {
        List<Generation> started = new ArrayList<>();
        int n = generationOptions.n();
        try {
            for (int i = 0; i < choices.size(); i++) {
                GenerationRequest g = new GenerationRequest(prompts.get(i / n), maxTokens, generationOptions.samplingFor(i % n), timeout);
                ServerMetrics.Request observed = metrics.request(g);
                choices.get(i).observe(observed);
                Generation generation = submit(observed, g, listeners.listenerFor(i));
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

    /**
     * The error a client gets for a generation that failed or was refused with {@code cause}, however it is wrapped
     * ({@link GenerationFailures}): a refusal's own status and message; a lost stage member or a stopped engine 503; a
     * deadline 504; anything else 500, logged, its message kept from the client.
     */
    static ApiError generationError(Throwable cause) {
        if (cause instanceof ApiError api) {
            return api;
        }
        GenerationFailures.Meaning meaning = GenerationFailures.of(cause);
        return switch (meaning.kind()) {
            case INVALID -> ApiError.invalid(meaning.field(), meaning.message());
            case OVERLOADED -> new ApiError(StatusCodes.TOO_MANY_REQUESTS, "rate_limit_error", null, "overloaded", meaning.message());
            case UNAVAILABLE -> {
                if (!(unwrap(cause) instanceof GenerationRefusedException)) {
                    LOG.warn("a generation failed because the model became unavailable", cause);
                }
                yield new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "unavailable", meaning.message());
            }
            case DEADLINE_EXCEEDED -> new ApiError(StatusCodes.GATEWAY_TIMEOUT, "server_error", null, "deadline_exceeded",
                    meaning.message());
            case CANCELLED -> new ApiError(StatusCodes.SERVICE_UNAVAILABLE, "server_error", null, "cancelled", meaning.message());
            case INTERNAL -> {
                LOG.warn("generation failed", cause);
                yield internalError();
            }
        };
    }

    private static ApiError internalError() {
        return new ApiError(StatusCodes.INTERNAL_SERVER_ERROR, "server_error", null, "internal_error",
                "the server failed to answer this request; the failure is in its log");
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
        HttpResponse response = jsonResponse(e.status(), errorBody(e));
        int status = e.status().intValue();
        if (status == 429) {
            return response.addHeader(RetryAfter.create(RETRY_AFTER_OVERLOADED_SECONDS));
        }
        if (status == 503) {
            return response.addHeader(RetryAfter.create(RETRY_AFTER_UNAVAILABLE_SECONDS));
        }
        return response;
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
                    if (e.status().intValue() == 429) {
                        metrics.overloaded();
                    } else if (e.status().intValue() < 500) {
                        metrics.invalid();
                    }
                    return complete(errorResponse(e));
                })
                .match(GenerationRefusedException.class, e -> complete(errorResponse(generationError(e))))
                .match(EntityStreamSizeException.class, e -> complete(errorResponse(bodyTooLarge())))
                .match(IllegalArgumentException.class, e -> {
                    metrics.invalid();
                    return complete(errorResponse(ApiError.invalid(null, e.getMessage())));
                })
                .match(RuntimeException.class, e -> {
                    failures.warn("a request failed", e);
                    return complete(errorResponse(internalError()));
                })
                .build();
    }

    private RejectionHandler rejectionHandler() {
        return RejectionHandler.newBuilder()
                .handle(MalformedRequestContentRejection.class, this::unreadBody)
                .build()
                .withFallback(RejectionHandler.defaultHandler())
                .mapRejectionResponse(response -> {
                    if (response.entity().getContentType().equals(ContentTypes.APPLICATION_JSON)) {
                        return response;
                    }
                    int status = response.status().intValue();
                    String message = switch (status) {
                        case 404 -> "no such route; this server answers POST /v1/completions, GET /v1/models and GET /health";
                        case 405 -> response.entity() instanceof org.apache.pekko.http.javadsl.model.HttpEntity.Strict strict
                                ? strict.getData().utf8String() : "method not allowed";
                        case 413 -> bodyTooLarge().getMessage();
                        default -> response.status().reason();
                    };
                    String type = status == 404 ? "not_found_error" : "invalid_request_error";
                    return errorResponse(new ApiError(response.status(), type, null, null, message));
                });
    }

    /**
     * A request body that could not be read: 408 when the client stopped sending it (see {@link BodyWatch}), 413 when it
     * was over the limit, else 400.
     */
    private Route unreadBody(MalformedRequestContentRejection rejection) {
        if (rejection.getCause() instanceof BodyWatch.ClientStalledException stalled) {
            return complete(errorResponse(new ApiError(StatusCodes.REQUEST_TIMEOUT, "invalid_request_error", null, "request_timeout",
                    stalled.getMessage())));
        }
        if (rejection.getCause() instanceof EntityStreamSizeException) {
            return complete(errorResponse(bodyTooLarge()));
        }
        return complete(errorResponse(ApiError.invalid(null, "the request body could not be read")));
    }

    /** The 413 for a body over {@code maxBodyBytes}. */
    private ApiError bodyTooLarge() {
        return new ApiError(StatusCodes.CONTENT_TOO_LARGE, "invalid_request_error", null, "request_too_large",
                "the request body is larger than this server's limit of " + options.maxBodyBytes() + " bytes; send a smaller body (fewer or shorter prompts)");
    }
}
