package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics} over real HTTP: exact counts after known requests, histograms, gauges of requests held in flight. */
class ServerMetricsTest {
    private static ActorTestKit testKit;
    private static HttpClient http;
    private ScriptedGenerator generator;
    private ServerBinding binding;
    private String base;

    @BeforeAll
    static void startKit() {
        testKit = ActorTestKit.create();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stopKit() {
        testKit.shutdownTestKit();
    }

    @BeforeEach
    void start() throws Exception {
        generator = new ScriptedGenerator(2);
        binding = new OpenAiServer(testKit.system(), generator).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        base = "http://127.0.0.1:" + binding.localAddress().getPort();
    }

    @AfterEach
    void stop() throws Exception {
        // Closes the client's kept-alive connections too, so the next test's server starts from none.
        binding.terminate(Duration.ofSeconds(5)).toCompletableFuture().get(10, TimeUnit.SECONDS);
        generator.close();
    }

    private HttpRequest postRequest(String body) {
        return HttpRequest.newBuilder(URI.create(base + "/v1/completions")).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private HttpResponse<String> post(String body) throws Exception {
        return http.send(postRequest(body), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> scrape(String accept) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/metrics")).timeout(Duration.ofSeconds(20)).GET();
        if (accept != null) {
            b.header("Accept", accept);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Every sample of a Prometheus text scrape, by its series (name and labels as written). */
    static Map<String, Double> samples(String body) {
        Map<String, Double> out = new TreeMap<>();
        for (String line : body.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int space = line.lastIndexOf(' ');
            out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return out;
    }

    private static double value(Map<String, Double> samples, String series) {
        Double v = samples.get(series);
        assertTrue(v != null, "no sample " + series + " in " + samples.keySet());
        return v;
    }

    @Test
    void afterKnownRequestsTheCountersHoldExactlyTheirRequestsAndTokens() throws Exception {
        // Three whole requests (one of two prompts), one streamed; prompt [1] ends at once with end-of-sequence.
        List<List<Integer>> prompts = List.of(List.of(65, 66, 67), List.of(1), List.of(10, 20), List.of(70));
        assertEquals(200, post("{\"prompt\":[65,66,67],\"max_tokens\":5}").statusCode());
        assertEquals(200, post("{\"prompt\":[1],\"max_tokens\":5}").statusCode());
        assertEquals(200, post("{\"prompt\":[[10,20],[70]],\"max_tokens\":4}").statusCode());
        HttpResponse<String> streamed = post("{\"prompt\":[70],\"max_tokens\":6,\"stream\":true}");
        assertEquals(200, streamed.statusCode());
        assertTrue(streamed.body().contains("[DONE]"));

        int generated = ScriptedGenerator.expected(prompts.get(0), 5).size() + ScriptedGenerator.expected(prompts.get(1), 5).size()
                + ScriptedGenerator.expected(prompts.get(2), 4).size() + ScriptedGenerator.expected(prompts.get(3), 4).size()
                + ScriptedGenerator.expected(List.of(70), 6).size();
        int promptTokens = 3 + 1 + 2 + 1 + 1;
        int generations = 5;

        Map<String, Double> s = samples(scrape(null).body());
        assertEquals(4, value(s, "graphlane_requests_total{outcome=\"length\"}"));
        assertEquals(1, value(s, "graphlane_requests_total{outcome=\"stop\"}"));
        for (String other : List.of("cancelled", "failed", "overloaded", "unavailable", "invalid", "deadline_exceeded")) {
            assertEquals(0, value(s, "graphlane_requests_total{outcome=\"" + other + "\"}"), other);
        }
        assertEquals(promptTokens, value(s, "graphlane_prompt_tokens_total"));
        assertEquals(generated, value(s, "graphlane_generation_tokens_total"));
        // One first token per generation, one gap per further token, one latency per finished generation.
        assertEquals(generations, value(s, "graphlane_time_to_first_token_seconds_count"));
        assertEquals(generations, value(s, "graphlane_time_to_first_token_seconds_bucket{le=\"+Inf\"}"));
        assertEquals(generated - generations, value(s, "graphlane_time_per_output_token_seconds_count"));
        assertEquals(generated - generations, value(s, "graphlane_time_per_output_token_seconds_bucket{le=\"+Inf\"}"));
        assertEquals(generations, value(s, "graphlane_request_latency_seconds_count"));
        assertTrue(value(s, "graphlane_request_latency_seconds_sum") > 0);
        // Buckets are cumulative: never fewer at a larger bound.
        double previous = 0;
        for (Duration bound : ServerMetrics.TIME_TO_FIRST_TOKEN_BUCKETS) {
            double seconds = bound.toNanos() / 1e9;
            double count = s.entrySet().stream()
                    .filter(e -> e.getKey().startsWith("graphlane_time_to_first_token_seconds_bucket{le=\"")
                            && !e.getKey().contains("+Inf")
                            && Double.parseDouble(e.getKey().replaceAll(".*le=\"([^\"]+)\".*", "$1")) == seconds)
                    .mapToDouble(Map.Entry::getValue).findFirst().orElseThrow(() -> new AssertionError("no bucket le=" + seconds));
            assertTrue(count >= previous, "bucket le=" + seconds);
            previous = count;
        }
        // The scripted engine's one stage ran a millisecond per token and its caches hold one position per token.
        assertEquals(generated / 1000.0, value(s, "graphlane_stage_busy_seconds_total{stage=\"stage-0\"}"), 1e-9);
        assertEquals(generated, value(s, "graphlane_kv_cache_positions{stage=\"stage-0\"}"));
    }

    @Test
    void aChoiceEndedByAStopStringOrStopTokenCountsAsAStopFinishNotACancel() throws Exception {
        // The scripted continuation of [70] begins 125 '}', 110 'n': both end at the second token.
        assertEquals(List.of(125, 110), ScriptedGenerator.expected(List.of(70), 6).subList(0, 2));
        assertEquals(200, post("{\"prompt\":[70],\"max_tokens\":6,\"stop\":\"n\"}").statusCode());
        assertEquals(200, post("{\"prompt\":[70],\"max_tokens\":6,\"stop_token_ids\":[110],\"stream\":true}").statusCode());
        Map<String, Double> s = samples(scrape(null).body());
        assertEquals(2, value(s, "graphlane_requests_total{outcome=\"stop\"}"), s.toString());
        assertEquals(0, value(s, "graphlane_requests_total{outcome=\"cancelled\"}"));
        assertEquals(2, value(s, "graphlane_request_latency_seconds_count"), "a stop is a finished request");
    }

    @Test
    void rejectedAndOverloadedRequestsAreCountedByOutcome() throws Exception {
        assertEquals(400, post("{\"prompt\":\"x\",\"max_tokens\":0}").statusCode());
        assertEquals(400, post("{\"prompt\":[300]}").statusCode()); // refused by the generator: outside its vocabulary
        assertEquals(404, post("{\"prompt\":\"x\",\"model\":\"other\"}").statusCode());
        // Capacity 2, held by a gate: the third prompt is refused and the two started are cancelled.
        CountDownLatch gate = new CountDownLatch(1);
        generator.gate = gate;
        HttpResponse<String> overloaded;
        try {
            overloaded = post("{\"prompt\":[[5],[6],[7]],\"max_tokens\":2}");
        } finally {
            generator.gate = null;
            gate.countDown();
        }
        assertEquals(429, overloaded.statusCode());
        Map<String, Double> s = samples(scrape(null).body());
        assertEquals(3, value(s, "graphlane_requests_total{outcome=\"invalid\"}"));
        assertEquals(1, value(s, "graphlane_requests_total{outcome=\"overloaded\"}"));
        assertEquals(2, value(s, "graphlane_requests_total{outcome=\"cancelled\"}"));
        assertEquals(0, value(s, "graphlane_requests_total{outcome=\"length\"}"));
        assertEquals(2, value(s, "graphlane_prompt_tokens_total"), "the two admitted prompts");
    }

    @Test
    void aFailingGenerationIsCountedAsFailed() throws Exception {
        generator.failWith = new IllegalStateException("stage 1 broke");
        try {
            assertEquals(500, post("{\"prompt\":[5],\"max_tokens\":2}").statusCode());
        } finally {
            generator.failWith = null;
        }
        Map<String, Double> s = samples(scrape(null).body());
        assertEquals(1, value(s, "graphlane_requests_total{outcome=\"failed\"}"));
        assertEquals(0, value(s, "graphlane_requests_total{outcome=\"cancelled\"}"), "the failure is counted once");
        assertEquals(0, value(s, "graphlane_request_latency_seconds_count"), "latency is of finished generations only");
    }

    @Test
    void runningAndWaitingGaugesShowRequestsHeldInFlight() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        generator.gate = gate;
        List<CompletableFuture<HttpResponse<String>>> pending;
        try {
            pending = List.of(http.sendAsync(postRequest("{\"prompt\":[5],\"max_tokens\":3}"), HttpResponse.BodyHandlers.ofString()),
                    http.sendAsync(postRequest("{\"prompt\":[6],\"max_tokens\":3}"), HttpResponse.BodyHandlers.ofString()));
            // Both are admitted; the worker holds one at the gate, the other waits behind it.
            awaitUntil(() -> generator.held() == 2 && generator.onWorker.get() == 1);
            Map<String, Double> held = samples(scrape(null).body());
            assertEquals(1, value(held, "graphlane_requests_running"));
            assertEquals(1, value(held, "graphlane_requests_waiting"));
            assertEquals(2, value(held, "graphlane_lane_queue_depth{lane=\"stage-0\"}"));
            assertEquals(0, value(held, "graphlane_time_to_first_token_seconds_count"));
        } finally {
            generator.gate = null;
            gate.countDown();
        }
        for (CompletableFuture<HttpResponse<String>> r : pending) {
            assertEquals(200, r.get(20, TimeUnit.SECONDS).statusCode());
        }
        awaitUntil(() -> generator.held() == 0 && generator.onWorker.get() == 0);
        Map<String, Double> after = samples(scrape(null).body());
        assertEquals(0, value(after, "graphlane_requests_running"));
        assertEquals(0, value(after, "graphlane_requests_waiting"));
        assertEquals(0, value(after, "graphlane_lane_queue_depth{lane=\"stage-0\"}"));
        assertEquals(2, value(after, "graphlane_requests_total{outcome=\"length\"}"));
        double busy = value(after, "graphlane_stage_busy_ratio{stage=\"stage-0\"}");
        assertTrue(busy >= 0 && busy <= 1, "a fraction: " + busy);
    }

    @Test
    void theScrapeIsPrometheusTextOrOpenMetricsWhenAskedFor() throws Exception {
        HttpResponse<String> text = scrape(null);
        assertEquals(200, text.statusCode());
        String type = text.headers().firstValue("content-type").orElse("");
        assertTrue(type.startsWith("text/plain") && type.contains("version=0.0.4"), type);
        assertTrue(text.body().contains("# TYPE graphlane_requests_total counter"), text.body());

        HttpResponse<String> open = scrape("application/openmetrics-text; version=1.0.0; charset=utf-8");
        assertEquals(200, open.statusCode());
        String openType = open.headers().firstValue("content-type").orElse("");
        assertTrue(openType.startsWith("application/openmetrics-text"), openType);
        assertTrue(open.body().contains("# TYPE graphlane_requests counter"), open.body());
        assertTrue(open.body().trim().endsWith("# EOF"), "OpenMetrics ends with # EOF");
    }

    @Test
    void metricNamesFollowPrometheusConventionsAndAreDocumented() throws Exception {
        ServerMetrics metrics = new ServerMetrics(generator);
        String body = metrics.scrape(null).body();
        Map<String, String> types = new TreeMap<>();
        for (String line : body.split("\n")) {
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.split(" ");
                types.put(parts[2], parts[3]);
            }
        }
        assertEquals(Map.ofEntries(
                Map.entry("graphlane_requests_total", "counter"),
                Map.entry("graphlane_prompt_tokens_total", "counter"),
                Map.entry("graphlane_generation_tokens_total", "counter"),
                Map.entry("graphlane_stage_busy_seconds_total", "counter"),
                Map.entry("graphlane_time_to_first_token_seconds", "histogram"),
                Map.entry("graphlane_time_to_first_token_seconds_max", "gauge"),
                Map.entry("graphlane_time_per_output_token_seconds", "histogram"),
                Map.entry("graphlane_time_per_output_token_seconds_max", "gauge"),
                Map.entry("graphlane_request_latency_seconds", "histogram"),
                Map.entry("graphlane_request_latency_seconds_max", "gauge"),
                Map.entry("graphlane_requests_running", "gauge"),
                Map.entry("graphlane_requests_waiting", "gauge"),
                Map.entry("graphlane_stage_busy_ratio", "gauge"),
                Map.entry("graphlane_lane_queue_depth", "gauge"),
                Map.entry("graphlane_kv_cache_positions", "gauge")), types);
        String readme = Files.readString(Path.of("..", "docs", "serving.md"), StandardCharsets.UTF_8);
        for (Map.Entry<String, String> e : types.entrySet()) {
            String name = e.getKey();
            assertTrue(name.matches("graphlane_[a-z0-9_]+"), name + ": snake case with the graphlane_ prefix");
            assertEquals(e.getValue().equals("counter"), name.endsWith("_total"), name + ": _total marks exactly the counters");
            if (e.getValue().equals("histogram")) {
                assertTrue(name.endsWith("_seconds"), name + ": a duration histogram names its unit, seconds");
            }
            assertFalse(name.matches(".*_(milliseconds|ms|nanoseconds|ns|minutes)(_.*)?"), name + ": durations are in seconds");
            if (!name.endsWith("_max")) {
                assertTrue(readme.contains("`" + name + "`"), name + " is documented in docs/serving.md");
            }
        }
    }

    /** Polls the scripted generator's state (its worker thread changes it) until {@code done}, for at most 20 s. */
    private static void awaitUntil(BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(done.getAsBoolean(), "the scripted generator reached the expected state");
    }
}
