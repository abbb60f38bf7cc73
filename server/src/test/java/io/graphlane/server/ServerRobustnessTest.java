package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Clients that go away or break, against a real engine (the tiny-llama fixture over two pipeline stages, served over
 * HTTP): aborted streams, abandoned non-streamed requests and a throwing listener leave the engine serving everyone
 * else with the right tokens and holding nothing afterwards.
 */
class ServerRobustnessTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ActorTestKit testKit;
    private static HttpClient http;
    private static JsonNode reference;

    @BeforeAll
    static void start() throws Exception {
        testKit = ActorTestKit.create();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        reference = JSON.readTree(fixture().resolve("reference.json").toFile()).get("prompts");
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    private static Path fixture() throws URISyntaxException {
        return Path.of(ServerRobustnessTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
    }

    /** The fixture model over two stages, with {@code settings}. */
    private static InferencePipeline model(PipelineSettings settings) throws Exception {
        return InferencePipeline.builder().model(fixture()).stages(2).settings(settings).actorSystem(testKit.system()).build();
    }

    private static ServerBinding serve(InferencePipeline model) throws Exception {
        return new OpenAiServer(testKit.system(), model).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    private static boolean eventually(BooleanSupplier condition, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(5); // paces the polling of the engine's counters
        }
        return true;
    }

    private static String body(JsonNode prompt, int maxTokens, boolean stream) {
        return "{\"prompt\":" + prompt.get("ids") + ",\"max_tokens\":" + maxTokens + ",\"temperature\":0,\"stream\":" + stream + "}";
    }

    private static CompletableFuture<HttpResponse<String>> post(int port, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The token ids of a completion's answer, streamed or not. */
    private static List<Integer> tokensOf(HttpResponse<String> r, boolean stream) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        if (!stream) {
            return ints(JSON.readTree(r.body()).get("choices").get(0).get("token_ids"));
        }
        List<Integer> out = new ArrayList<>();
        List<String> data = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
        assertEquals("[DONE]", data.get(data.size() - 1), r.body());
        for (String event : data.subList(0, data.size() - 1)) {
            out.addAll(ints(JSON.readTree(event).get("choices").get(0).get("token_ids")));
        }
        return out;
    }

    /** Sends {@code body} to /v1/completions on a raw connection; the caller closes it when its client goes away. */
    private static Socket send(int port, String body) throws Exception {
        return TestServer.rawPost(port, "/v1/completions", body);
    }

    @Test
    void streamsAbortedAtRandomPointsLeaveEveryOtherRequestIntact() throws Exception {
        try (InferencePipeline model = model(PipelineSettings.defaults(2))) {
            ServerBinding binding = serve(model);
            int port = binding.localAddress().getPort();
            ExecutorService clients = Executors.newFixedThreadPool(16);
            try {
                Random random = new Random(20261203L);
                List<CompletableFuture<Void>> aborts = new ArrayList<>();
                List<CompletableFuture<HttpResponse<String>>> others = new ArrayList<>();
                for (int i = 0; i < 50; i++) {
                    JsonNode prompt = reference.get(i % reference.size());
                    int readEvents = random.nextInt(40);
                    boolean reset = random.nextBoolean();
                    aborts.add(CompletableFuture.runAsync(() -> abortAfter(port, body(prompt, 200, true), readEvents, reset), clients));
                    if (i % 5 == 0 || i % 5 == 2) {
                        int k = others.size();
                        others.add(post(port, body(reference.get(k % reference.size()), 16, k % 2 == 0)));
                    }
                }
                for (int k = 0; k < others.size(); k++) {
                    JsonNode prompt = reference.get(k % reference.size());
                    assertEquals(ints(prompt.get("greedy_16")), tokensOf(others.get(k).get(60, TimeUnit.SECONDS), k % 2 == 0),
                            "request " + k + " beside the aborted streams");
                }
                assertEquals(20, others.size());
                CompletableFuture.allOf(aborts.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
                assertTrue(eventually(() -> model.heldRequests() == 0, Duration.ofSeconds(10)),
                        "the aborted streams were cancelled; still held: " + model.heldRequests());
                long tokens = model.engineStats().toCompletableFuture().get(10, TimeUnit.SECONDS).tokens();
                assertTrue(tokens < 50L * 200 + 20 * 16, "the aborted streams stopped generating, " + tokens + " tokens in all");
                for (int i = 0; i < 64; i++) {
                    JsonNode prompt = reference.get(i % reference.size());
                    assertEquals(ints(prompt.get("greedy_16")).subList(0, 4),
                            tokensOf(post(port, body(prompt, 4, i % 2 == 1)).get(30, TimeUnit.SECONDS), i % 2 == 1), "request " + i);
                }
                assertTrue(eventually(() -> model.heldRequests() == 0, Duration.ofSeconds(10)));
                var stats = model.engineStats().toCompletableFuture().get(10, TimeUnit.SECONDS);
                assertEquals(0, stats.activeRequests() + stats.queuedRequests(), stats.toString());
                assertTrue(model.unavailableReason().isEmpty());
            } finally {
                clients.shutdownNow();
                binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /** A client that reads the response until {@code events} token events arrived, then goes away (RST or FIN). */
    private static void abortAfter(int port, String body, int events, boolean reset) {
        try (Socket socket = send(port, body)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            int seen = 0;
            String line;
            while (seen < events && (line = in.readLine()) != null) {
                if (line.startsWith("data: {")) {
                    seen++;
                }
            }
            if (reset) {
                socket.setSoLinger(true, 0);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void nonStreamedRequestsWhoseClientsWentAwayAreCancelled() throws Exception {
        // Two generate at once and the rest queue, so 100 requests of 250 tokens each take far longer than half a second.
        try (InferencePipeline model = model(PipelineSettings.defaults(2).withRequestLimits(2, 256))) {
            ServerBinding binding = serve(model);
            int port = binding.localAddress().getPort();
            List<Socket> clients = new ArrayList<>();
            try {
                for (int i = 0; i < 100; i++) {
                    clients.add(send(port, "{\"prompt\":[" + (i + 1) + "],\"max_tokens\":250,\"temperature\":0}"));
                }
                // Every request reached the engine: it is held there, or it was already answered.
                assertTrue(eventually(() -> model.heldRequests() + answered(clients) >= 100, Duration.ofSeconds(30)),
                        "held: " + model.heldRequests() + ", answered: " + answered(clients));
                Thread.sleep(500); // the clients give up after half a second
                int heldAtClose = model.heldRequests();
                assertTrue(heldAtClose > 2, "requests are still queued when their clients go away: " + heldAtClose);
                long closedAt = System.nanoTime();
                for (Socket s : clients) {
                    s.close();
                }
                // A deadline for the polling, not a speed target: unloaded, they are gone within a second; what proves the
                // cancel is that far fewer tokens were generated than the requests asked for.
                assertTrue(eventually(() -> model.heldRequests() == 0, Duration.ofSeconds(10)),
                        "every abandoned request is cancelled; still held: " + model.heldRequests());
                System.out.println("100 abandoned requests cancelled, their slots free, "
                        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closedAt) + " ms after their clients closed");
                var stats = model.engineStats().toCompletableFuture().get(10, TimeUnit.SECONDS);
                assertEquals(0, stats.activeRequests() + stats.queuedRequests(), stats.toString());
                assertTrue(stats.tokens() < 100L * 250, "they were cancelled, not run to the end: " + stats);
                // And the engine serves on.
                JsonNode prompt = reference.get(1);
                assertEquals(ints(prompt.get("greedy_16")), tokensOf(post(port, body(prompt, 16, false)).get(30, TimeUnit.SECONDS), false));
            } finally {
                for (Socket s : clients) {
                    s.close();
                }
                binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            }
        }
    }

    /** The connections on which an answer has arrived. */
    private static int answered(List<Socket> clients) {
        int n = 0;
        for (Socket s : clients) {
            try {
                n += s.getInputStream().available() > 0 ? 1 : 0;
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return n;
    }

    @Test
    void aListenerThatThrowsFailsOnlyItsOwnRequest() throws Exception {
        try (InferencePipeline model = model(PipelineSettings.defaults(2))) {
            IllegalStateException broken = new IllegalStateException("the client's queue is closed");
            List<Generation> generations = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                int index = i;
                JsonNode prompt = reference.get(i);
                generations.add(model.submit(new GenerationRequest(ints(prompt.get("ids")), 16, new SamplingParams(0, 1, 1), Optional.empty()),
                        new GenerationListener() {
                            private int tokens;

                            @Override
                            public void onToken(int tokenId) {
                                if (index == 1 && ++tokens == 3) {
                                    throw broken;
                                }
                            }
                        }));
            }
            for (int i : new int[] {0, 2}) {
                GenerationResult r = generations.get(i).result().toCompletableFuture().get(30, TimeUnit.SECONDS);
                assertEquals(ints(reference.get(i).get("greedy_16")), r.generatedIds(), "request " + i);
            }
            ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> generations.get(1).result().toCompletableFuture().get(30, TimeUnit.SECONDS));
            assertInstanceOf(IllegalStateException.class, failed.getCause());
            assertEquals(broken.getMessage(), failed.getCause().getMessage());
            assertTrue(eventually(() -> model.heldRequests() == 0, Duration.ofSeconds(10)), "held: " + model.heldRequests());
            assertTrue(model.unavailableReason().isEmpty(), "the engine lives on");
            GenerationResult after = model.submit(new GenerationRequest(ints(reference.get(3).get("ids")), 16,
                    new SamplingParams(0, 1, 1), Optional.empty()), new GenerationListener() { }).result().toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            assertEquals(ints(reference.get(3).get("greedy_16")), after.generatedIds());
        }
    }
}
