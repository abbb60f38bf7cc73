package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class OpenAiServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ActorTestKit testKit;
    private static ScriptedGenerator generator;
    private static ServerBinding binding;
    private static HttpClient http;
    private static String base;

    @BeforeAll
    static void start() throws Exception {
        testKit = ActorTestKit.create();
        generator = new ScriptedGenerator(2);
        binding = new OpenAiServer(testKit.system(), generator).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        base = "http://127.0.0.1:" + binding.localAddress().getPort();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() throws Exception {
        binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
        generator.close();
        testKit.shutdownTestKit();
    }

    private static HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(20)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    @Test
    void healthAndModelsAnswer() throws Exception {
        HttpResponse<String> health = get("/health");
        assertEquals(200, health.statusCode());
        assertEquals("ok", JSON.readTree(health.body()).get("status").asText());
        JsonNode models = JSON.readTree(get("/v1/models").body());
        assertEquals("scripted", models.get("data").get(0).get("id").asText());
    }

    @Test
    void completionWithTokenIdsReturnsTheGeneratorsTokens() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":[65,66,67],\"max_tokens\":5,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        JsonNode choice = body.get("choices").get(0);
        List<Integer> expected = ScriptedGenerator.expected(List.of(65, 66, 67), 5);
        assertEquals(expected, ints(choice.get("token_ids")));
        assertEquals(generator.tokenizer().decode(expected), choice.get("text").asText());
        assertEquals("length", choice.get("finish_reason").asText());
        assertEquals(3, body.get("usage").get("prompt_tokens").asInt());
        assertEquals(5, body.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void severalPromptsGiveOneChoiceEach() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":[\"hi\",[10,20]],\"max_tokens\":3,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode choices = JSON.readTree(r.body()).get("choices");
        assertEquals(2, choices.size());
        assertEquals(ScriptedGenerator.expected(List.of((int) 'h', (int) 'i'), 3), ints(choices.get(0).get("token_ids")));
        assertEquals(ScriptedGenerator.expected(List.of(10, 20), 3), ints(choices.get(1).get("token_ids")));
    }

    @Test
    void endOfSequenceFinishesWithStop() throws Exception {
        JsonNode choice = JSON.readTree(post("/v1/completions", "{\"prompt\":[1],\"max_tokens\":5}").body()).get("choices").get(0);
        assertEquals(List.of(ScriptedGenerator.EOS), ints(choice.get("token_ids")));
        assertEquals("stop", choice.get("finish_reason").asText());
    }

    @Test
    void streamingSendsOneEventPerTokenThenDone() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":[70],\"max_tokens\":6,\"stream\":true}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"));
        List<String> data = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).collect(Collectors.toList());
        assertEquals("[DONE]", data.get(data.size() - 1));
        List<Integer> streamed = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        String finish = null;
        for (String event : data.subList(0, data.size() - 1)) {
            JsonNode choice = JSON.readTree(event).get("choices").get(0);
            streamed.addAll(ints(choice.get("token_ids")));
            text.append(choice.get("text").asText());
            if (!choice.get("finish_reason").isNull()) {
                finish = choice.get("finish_reason").asText();
            }
        }
        List<Integer> expected = ScriptedGenerator.expected(List.of(70), 6);
        assertEquals(expected, streamed);
        assertEquals(generator.tokenizer().decode(expected), text.toString());
        assertEquals("length", finish);
    }

    @Test
    void badRequestsGetOpenAiStyleErrorsNamingTheField() throws Exception {
        assertError(post("/v1/completions", "{not json"), 400, null, "not valid JSON");
        assertError(post("/v1/completions", "{\"max_tokens\":3}"), 400, "prompt", "prompt is required");
        assertError(post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":0}"), 400, "max_tokens", "found 0");
        assertError(post("/v1/completions", "{\"prompt\":\"x\",\"temperature\":\"hot\"}"), 400, "temperature", "must be a number");
        assertError(post("/v1/completions", "{\"prompt\":\"x\",\"top_p\":1.5}"), 400, "top_p", "found 1.5");
        assertError(post("/v1/completions", "{\"prompt\":[1,-2]}"), 400, "prompt", "prompt[1]");
        assertError(post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":100}"), 400, "max_tokens", "maximum sequence length 64");
        assertError(post("/v1/completions", "{\"prompt\":[300]}"), 400, "prompt", "outside the vocabulary");
        assertError(post("/v1/completions", "{\"prompt\":\"x\",\"model\":\"gpt-4\"}"), 404, "model", "serves 'scripted'");
        assertEquals(404, get("/v1/nothing").statusCode());
        assertEquals(405, get("/v1/completions").statusCode());
    }

    @Test
    void chatWithAModelWithoutAChatTemplateIsA400SayingSo() throws Exception {
        HttpResponse<String> r = post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertError(r, 400, "messages", "has no chat template");
        assertTrue(r.body().contains("'scripted'"), r.body());
        assertEquals(405, get("/v1/chat/completions").statusCode());
    }

    @Test
    void overloadAnswers429() throws Exception {
        // Capacity is 2 generations, held running by a gate: a request for three prompts is refused whole,
        // and the two it had started are cancelled, freeing their slots.
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        generator.gate = gate;
        int cancelledBefore = generator.cancelled.get();
        HttpResponse<String> r;
        try {
            r = post("/v1/completions", "{\"prompt\":[[5],[6],[7]],\"max_tokens\":2}");
        } finally {
            generator.gate = null;
            gate.countDown();
        }
        assertError(r, 429, null, "too many requests");
        assertEquals(2, generator.cancelled.get() - cancelledBefore, "the two generations already started were cancelled");
        HttpResponse<String> after = post("/v1/completions", "{\"prompt\":[[5],[6]],\"max_tokens\":2}");
        assertEquals(200, after.statusCode(), after.body());
    }

    private static void assertError(HttpResponse<String> r, int status, String param, String messagePart) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertTrue(error.get("message").asText().contains(messagePart), r.body());
        if (param != null) {
            assertEquals(param, error.get("param").asText(), r.body());
        }
        assertTrue(error.hasNonNull("type"), r.body());
    }
}
