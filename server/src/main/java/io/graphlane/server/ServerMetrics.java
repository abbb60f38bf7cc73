package io.graphlane.server;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.api.ServingStats;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.ToDoubleFunction;

/**
 * The serving metrics of one {@link TextGenerator}, in Prometheus text format through Micrometer.
 * Request-level meters (outcomes, tokens, time to first token, time per output token, latency) are
 * recorded around each generation the server submits ({@link #request}); engine-level gauges
 * (requests running and waiting, stage busy time and fraction, lane queue depth, KV-cache positions)
 * read {@link TextGenerator#servingStats()} once per {@link #scrape}, which only reads counters the
 * engine publishes: a scrape never waits for the engine. Thread-safe. The names and their meanings
 * are listed in docs/serving.md (Metrics).
 */
public final class ServerMetrics {

    /** How a generation ended, as the {@code outcome} tag of {@code graphlane_requests_total}. */
    public enum Outcome {
        /** Finished at an end-of-sequence token. */
        STOP,
        /** Finished at {@code max_tokens}. */
        LENGTH,
        /** Cancelled before it ended (the client went away, or a sibling choice failed). */
        CANCELLED,
        /** Passed its deadline. */
        DEADLINE_EXCEEDED,
        /** Failed while generating. */
        FAILED,
        /** Refused at admission: too many requests. */
        OVERLOADED,
        /** Refused: the model or a stage is unavailable. */
        UNAVAILABLE,
        /** Refused as invalid: a request the server or the model rejected before generating. */
        INVALID;

        /** The tag value: the lower-case name. */
        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The Prometheus text exposition format, the default. */
    public static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";
    /** The OpenMetrics text format, written when the scraper's {@code Accept} asks for it. */
    public static final String OPENMETRICS_TEXT = "application/openmetrics-text; version=1.0.0; charset=utf-8";

    /** A scrape's body and the content type it was written in. */
    public record Scrape(String contentType, String body) {
    }

    /** Time to first token: from a few milliseconds (a tiny model on a CPU) to a minute (a long prompt on a large model). */
    static final List<Duration> TIME_TO_FIRST_TOKEN_BUCKETS = millis(1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000,
            30_000, 60_000);
    /** Time per output token: from half a millisecond (a tiny model) to seconds (a large model on a CPU). */
    static final List<Duration> TIME_PER_OUTPUT_TOKEN_BUCKETS = millis(0.5, 1, 2.5, 5, 10, 25, 50, 75, 100, 150, 250, 500, 1_000, 2_500,
            5_000);
    /** End-to-end latency of a finished generation: from ten milliseconds to ten minutes. */
    static final List<Duration> REQUEST_LATENCY_BUCKETS = millis(10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000,
            120_000, 300_000, 600_000);

    private final TextGenerator generator;
    private final PrometheusMeterRegistry registry;
    private final Map<Outcome, Counter> outcomes = new EnumMap<>(Outcome.class);
    private final Counter promptTokens;
    private final Counter generatedTokens;
    private final Timer timeToFirstToken;
    private final Timer timePerOutputToken;
    private final Timer requestLatency;
    /** The generator's stats as of the scrape in progress (or the last one); gauges read only this. */
    private volatile ServingStats stats;
    /** Per stage, the busy time and clock of the previous scrape, for the busy fraction since then. */
    private final Map<String, long[]> previousBusy = new java.util.concurrent.ConcurrentHashMap<>();
    private final long startedNanos = System.nanoTime();

    /** Metrics of {@code generator} in a registry of their own. */
    public ServerMetrics(TextGenerator generator) {
        this(generator, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
    }

    /** Metrics of {@code generator} registered in {@code registry} (which may hold other meters too). */
    public ServerMetrics(TextGenerator generator, PrometheusMeterRegistry registry) {
        this.generator = Objects.requireNonNull(generator, "generator");
        this.registry = Objects.requireNonNull(registry, "registry");
        for (Outcome o : Outcome.values()) {
            outcomes.put(o, Counter.builder("graphlane.requests")
                    .description("Generations ended, by outcome (one per prompt; invalid: one per rejected HTTP request)")
                    .tag("outcome", o.tag())
                    .register(registry));
        }
        promptTokens = Counter.builder("graphlane.prompt.tokens")
                .description("Prompt tokens of the generations admitted").register(registry);
        generatedTokens = Counter.builder("graphlane.generation.tokens")
                .description("Tokens generated").register(registry);
        timeToFirstToken = Timer.builder("graphlane.time.to.first.token")
                .description("From submission to the first generated token")
                .serviceLevelObjectives(TIME_TO_FIRST_TOKEN_BUCKETS.toArray(Duration[]::new))
                .register(registry);
        timePerOutputToken = Timer.builder("graphlane.time.per.output.token")
                .description("Between consecutive generated tokens of one generation")
                .serviceLevelObjectives(TIME_PER_OUTPUT_TOKEN_BUCKETS.toArray(Duration[]::new))
                .register(registry);
        requestLatency = Timer.builder("graphlane.request.latency")
                .description("From submission to the end of a finished generation")
                .serviceLevelObjectives(REQUEST_LATENCY_BUCKETS.toArray(Duration[]::new))
                .register(registry);
        this.stats = generator.servingStats().orElse(null);
        if (stats != null) {
            registerEngineGauges(stats);
        }
    }

    /** The registry the meters live in. */
    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /**
     * Takes the generator's stats once and writes every meter in the format {@code accept} asks for
     * (an HTTP {@code Accept} header, or null): OpenMetrics when it names {@code application/openmetrics-text},
     * else the Prometheus text format {@code text/plain; version=0.0.4}.
     */
    public Scrape scrape(String accept) {
        generator.servingStats().ifPresent(s -> stats = s);
        String contentType = accept != null && accept.contains("application/openmetrics-text")
                ? OPENMETRICS_TEXT : PROMETHEUS_TEXT;
        return new Scrape(contentType, registry.scrape(contentType));
    }

    /** Starts observing one generation about to be submitted: its clock starts now. */
    public Request request(GenerationRequest request) {
        return new Request(request.promptIds().size());
    }

    /** Counts one HTTP request rejected before any generation was submitted (a bad field, an unknown model). */
    public void invalid() {
        outcomes.get(Outcome.INVALID).increment();
    }

    /** Counts one HTTP request refused before any generation was submitted because the server was too busy to prepare it. */
    public void overloaded() {
        outcomes.get(Outcome.OVERLOADED).increment();
    }

    /** The outcome a generation that failed with {@code cause} (or was refused with it) is counted under. */
    static Outcome outcomeOf(Throwable cause) {
        return switch (GenerationFailures.of(cause).kind()) {
            case INVALID -> Outcome.INVALID;
            case OVERLOADED -> Outcome.OVERLOADED;
            case UNAVAILABLE -> Outcome.UNAVAILABLE;
            case CANCELLED -> Outcome.CANCELLED;
            case DEADLINE_EXCEEDED -> Outcome.DEADLINE_EXCEEDED;
            case INTERNAL -> Outcome.FAILED;
        };
    }

    /**
     * One generation as the server submits it: wrap its listener with {@link #listener}, hand the started
     * generation to {@link #started} (or the submit's exception to {@link #refused}). Its outcome is counted
     * once: the first of finished, failed, cancelled or refused.
     */
    public final class Request {
        private final int promptLength;
        private final long submittedAt = System.nanoTime();
        private final AtomicBoolean ended = new AtomicBoolean();
        /** The time of the previous token; written and read by the engine's thread that delivers this generation's tokens. */
        private volatile long lastTokenAt;

        private Request(int promptLength) {
            this.promptLength = promptLength;
        }

        /** {@code inner}, with this generation's tokens, timings and outcome recorded on the way. */
        public GenerationListener listener(GenerationListener inner) {
            return new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    onToken(SampledToken.of(tokenId));
                }

                @Override
                public void onToken(SampledToken token) {
                    long now = System.nanoTime();
                    long previous = lastTokenAt;
                    if (previous == 0) {
                        timeToFirstToken.record(now - submittedAt, TimeUnit.NANOSECONDS);
                    } else {
                        timePerOutputToken.record(now - previous, TimeUnit.NANOSECONDS);
                    }
                    lastTokenAt = now;
                    generatedTokens.increment();
                    inner.onToken(token);
                }

                @Override
                public void onFinished(FinishReason reason) {
                    if (end(reason == FinishReason.STOP ? Outcome.STOP : Outcome.LENGTH)) {
                        requestLatency.record(System.nanoTime() - submittedAt, TimeUnit.NANOSECONDS);
                    }
                    inner.onFinished(reason);
                }

                @Override
                public void onFailed(Throwable cause) {
                    end(outcomeOf(cause));
                    inner.onFailed(cause);
                }
            };
        }

        /** The generation the generator started for this request: counts its prompt, and a cancel before its end. */
        public Generation started(Generation generation) {
            promptTokens.increment(promptLength);
            return new Generation() {
                @Override
                public String id() {
                    return generation.id();
                }

                @Override
                public void cancel() {
                    end(Outcome.CANCELLED);
                    generation.cancel();
                }

                @Override
                public CompletionStage<GenerationResult> result() {
                    return generation.result();
                }
            };
        }

        /**
         * A stop string or stop token of the request ended it (the server then cancels it in the engine): counted as
         * finished on a stop, not as cancelled, whatever the engine reports afterwards.
         */
        public void stopMatched() {
            if (end(Outcome.STOP)) {
                requestLatency.record(System.nanoTime() - submittedAt, TimeUnit.NANOSECONDS);
            }
        }

        /** The generator refused to start it with {@code cause}. */
        public void refused(Throwable cause) {
            end(outcomeOf(cause));
        }

        private boolean end(Outcome outcome) {
            if (ended.compareAndSet(false, true)) {
                outcomes.get(outcome).increment();
                return true;
            }
            return false;
        }
    }

    private void registerEngineGauges(ServingStats first) {
        gauge("graphlane.requests.running", "Requests generating now (holding an active slot)", s -> s.runningRequests());
        gauge("graphlane.requests.waiting", "Requests admitted and waiting for an active slot", s -> s.waitingRequests());
        for (ServingStats.Stage stage : first.stages()) {
            String name = stage.name();
            FunctionCounter.builder("graphlane.stage.busy", this, m -> m.stage(name).map(s -> s.busyNanos() / 1e9).orElse(0.0))
                    .description("Time the stage's work has run on its lane")
                    .baseUnit("seconds")
                    .tag("stage", name)
                    .register(registry);
            Gauge.builder("graphlane.stage.busy.ratio", this, m -> m.busyFractionSincePreviousScrape(name))
                    .description("Fraction of the time since the previous scrape (the first: since the server started) the stage was busy")
                    .tag("stage", name)
                    .register(registry);
            Gauge.builder("graphlane.kv.cache.positions", this, m -> m.stage(name).map(s -> (double) s.kvCachePositions()).orElse(0.0))
                    .description("Positions the stage holds in its KV caches, over every request")
                    .tag("stage", name)
                    .register(registry);
        }
        for (ServingStats.Lane lane : first.lanes()) {
            String name = lane.name();
            Gauge.builder("graphlane.lane.queue.depth", this, m -> m.lane(name).map(l -> (double) l.depth()).orElse(0.0))
                    .description("Submissions the lane holds: waiting for a producer or a slot, or running")
                    .tag("lane", name)
                    .register(registry);
        }
    }

    private void gauge(String name, String description, ToDoubleFunction<ServingStats> value) {
        Gauge.builder(name, this, m -> value.applyAsDouble(m.stats)).description(description).register(registry);
    }

    private Optional<ServingStats.Stage> stage(String name) {
        return stats.stages().stream().filter(s -> s.name().equals(name)).findFirst();
    }

    private Optional<ServingStats.Lane> lane(String name) {
        return stats.lanes().stream().filter(l -> l.name().equals(name)).findFirst();
    }

    private double busyFractionSincePreviousScrape(String name) {
        long busy = stage(name).map(ServingStats.Stage::busyNanos).orElse(0L);
        long now = System.nanoTime();
        long[] previous = previousBusy.put(name, new long[] {busy, now});
        long fromBusy = previous == null ? 0 : previous[0];
        long fromTime = previous == null ? startedNanos : previous[1];
        long window = now - fromTime;
        return window <= 0 ? 0 : Math.min(1.0, Math.max(0.0, (double) (busy - fromBusy) / window));
    }

    private static List<Duration> millis(double... values) {
        return java.util.Arrays.stream(values).mapToObj(v -> Duration.ofNanos(Math.round(v * 1_000_000))).toList();
    }
}
