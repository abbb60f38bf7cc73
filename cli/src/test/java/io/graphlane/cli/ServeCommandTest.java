package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code graphlane serve --stages 2 --tensor-parallel 2} on the fixture model, answered by the JDK's HTTP client: the
 * reference's greedy tokens come back from stages whose shards all-reduce, and {@code GET /metrics} counts them.
 */
class ServeCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");
    private static ServeCommand.Running server;
    private static JsonNode reference;

    @BeforeAll
    static void start() throws Exception {
        ServeCommand command = new ServeCommand();
        command.model = FIXTURE;
        command.stages = 2;
        command.tensorParallel = 2;
        command.host = "127.0.0.1";
        command.port = 0;
        server = command.start();
        reference = JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    private static HttpResponse<String> post(String body) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/v1/completions"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static List<Integer> ints(JsonNode a) {
        List<Integer> out = new ArrayList<>();
        a.forEach(n -> out.add(n.asInt()));
        return out;
    }

    @Test
    void completionsOfEveryReferencePromptAreTheReferenceGreedyTokens() throws Exception {
        StringBuilder prompts = new StringBuilder("[");
        for (int i = 0; i < reference.size(); i++) {
            prompts.append(i == 0 ? "" : ",").append(reference.get(i).get("ids"));
        }
        prompts.append("]");
        HttpResponse<String> r = post("{\"prompt\":" + prompts + ",\"max_tokens\":16,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode choices = JSON.readTree(r.body()).get("choices");
        for (int i = 0; i < reference.size(); i++) {
            assertEquals(ints(reference.get(i).get("greedy_16")), ints(choices.get(i).get("token_ids")), "prompt " + i);
        }
    }

    @Test
    void streamingDeliversTheSameTokensOneEventEach() throws Exception {
        JsonNode p = reference.get(reference.size() - 1);
        HttpResponse<String> r = post("{\"prompt\":" + p.get("ids") + ",\"max_tokens\":16,\"temperature\":0,\"stream\":true}");
        assertEquals(200, r.statusCode(), r.body());
        List<Integer> streamed = new ArrayList<>();
        int events = 0;
        for (String line : r.body().split("\n")) {
            if (line.startsWith("data: {")) {
                events++;
                streamed.addAll(ints(JSON.readTree(line.substring(6)).get("choices").get(0).get("token_ids")));
            }
        }
        assertEquals(ints(p.get("greedy_16")), streamed);
        assertEquals(17, events, "16 token events and the final one");
        assertTrue(r.body().trim().endsWith("data: [DONE]"));
    }

    private static java.util.Map<String, Double> metrics() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/plain"), r.headers().toString());
        java.util.Map<String, Double> out = new java.util.TreeMap<>();
        for (String line : r.body().split("\n")) {
            if (!line.isBlank() && !line.startsWith("#")) {
                int space = line.lastIndexOf(' ');
                out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
            }
        }
        return out;
    }

    @Test
    void metricsCountTheRequestsTokensAndTheStagesWork() throws Exception {
        JsonNode p = reference.get(0);
        java.util.Map<String, Double> before = metrics();
        HttpResponse<String> r = post("{\"prompt\":" + p.get("ids") + ",\"max_tokens\":5,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode usage = JSON.readTree(r.body()).get("usage");
        java.util.Map<String, Double> after = metrics();
        String finish = JSON.readTree(r.body()).get("choices").get(0).get("finish_reason").asText();
        String ended = "graphlane_requests_total{outcome=\"" + finish + "\"}";
        assertEquals(1, after.get(ended) - before.getOrDefault(ended, 0.0), ended);
        assertEquals(usage.get("prompt_tokens").asInt(),
                after.get("graphlane_prompt_tokens_total") - before.getOrDefault("graphlane_prompt_tokens_total", 0.0));
        assertEquals(usage.get("completion_tokens").asInt(),
                after.get("graphlane_generation_tokens_total") - before.getOrDefault("graphlane_generation_tokens_total", 0.0));
        assertEquals(1, after.get("graphlane_time_to_first_token_seconds_count")
                - before.getOrDefault("graphlane_time_to_first_token_seconds_count", 0.0));
        for (String stage : List.of("stage-0", "stage-1")) {
            assertTrue(after.get("graphlane_stage_busy_seconds_total{stage=\"" + stage + "\"}") > 0, stage + " busy");
            // A tensor-parallel stage runs on its shard lanes, one lane actor each.
            for (String lane : List.of(stage + "-shard-0", stage + "-shard-1")) {
                assertTrue(after.containsKey("graphlane_lane_queue_depth{lane=\"" + lane + "\"}"), lane + " lane");
            }
            // Each tensor-parallel stage held at most this request's positions: the prompt and every generated token but
            // the last (the earlier requests' were freed as they ended).
            assertTrue(after.get("graphlane_kv_cache_positions{stage=\"" + stage + "\"}")
                    <= usage.get("prompt_tokens").asInt() + usage.get("completion_tokens").asInt() - 1, stage + " KV-cache positions");
        }
        // The ended request's caches are freed at once, on every stage, without waiting for another request's step.
        java.util.function.ToDoubleFunction<java.util.Map<String, Double>> held = m -> m.get("graphlane_kv_cache_positions{stage=\"stage-0\"}")
                + m.get("graphlane_kv_cache_positions{stage=\"stage-1\"}");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (held.applyAsDouble(metrics()) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20); // paces the scrapes only: the server frees the caches on its own
        }
        assertEquals(0.0, held.applyAsDouble(metrics()), "the caches of both stages are freed once the request ended");
    }

    @Test
    void theModelListsItselfAndHealthAnswers() throws Exception {
        HttpResponse<String> models = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/v1/models")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals("tiny-llama", JSON.readTree(models.body()).get("data").get(0).get("id").asText());
    }
}
