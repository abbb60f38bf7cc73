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
    private static final long BODY_LIMIT = 4096;
    private static ActorTestKit testKit;
    private static ScriptedGenerator generator;
    private static ServerBinding binding;
    private static HttpClient http;
    private static String base;

    @BeforeAll
    static void start() throws Exception {
        testKit = ActorTestKit.create();
        generator = new ScriptedGenerator(2);
        binding = new OpenAiServer(testKit.system(), generator, ServerOptions.defaults().withMaxBodyBytes(BODY_LIMIT))
                .bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
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
        assertError(get("/v1/nothing"), 404, null, "no such route");
        assertError(get("/v1/completions"), 405, null, "POST");
    }

    @Test
    void lengthsThatCanNeverFitAre400sNamingTheFieldAndTheNumbers() throws Exception {
        for (String stream : List.of("false", "true")) {
            HttpResponse<String> huge = post("/v1/completions", "{\"prompt\":[65],\"max_tokens\":2147483647,\"stream\":" + stream + "}");
            assertError(huge, 400, "max_tokens", "is 2147483648, more than the model's maximum sequence length 64");
            assertNoInternals(huge.body());
        }
        StringBuilder longPrompt = new StringBuilder("[");
        for (int i = 0; i < 64; i++) {
            longPrompt.append(i == 0 ? "" : ",").append(65);
        }
        assertError(post("/v1/completions", "{\"prompt\":" + longPrompt + "],\"max_tokens\":1}"), 400, "prompt",
                "has 64 tokens; the model's maximum sequence length is 64");
        generator.maxHeld = 3;
        try {
            assertError(post("/v1/completions", "{\"prompt\":[[5],[6],[7],[8]],\"max_tokens\":1}"), 400, "prompt",
                    "the request asks for 4 generations (4 prompt(s) x n 1), but this server holds at most 3 generations at once");
            assertError(post("/v1/completions", "{\"prompt\":[[5],[6]],\"n\":2,\"max_tokens\":1}"), 400, "prompt",
                    "the request asks for 4 generations (2 prompt(s) x n 2), but this server holds at most 3 generations at once");
        } finally {
            generator.maxHeld = Integer.MAX_VALUE;
        }
    }

    @Test
    void aBodyOverTheLimitIsAJson413() throws Exception {
        String body = "{\"prompt\":\"" + "x".repeat((int) BODY_LIMIT) + "\"}";
        HttpResponse<String> r = post("/v1/completions", body);
        assertError(r, 413, null, "larger than this server's limit of 4096 bytes");
        assertNoInternals(r.body());
    }

    @Test
    void parserErrorsDoNotQuoteTheParsersSettings() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"x\",\"temperature\":NaN}");
        assertError(r, 400, null, "not valid JSON at line 1");
        assertNoInternals(r.body());
        assertTrue(!r.body().contains("`") && !r.body().contains("Feature"), r.body());

        // A value followed by more is not a request either (a lenient parser would stop at the first value).
        assertError(post("/v1/completions", "{\"prompt\":[1]},,"), 400, null, "not valid JSON at line 1, column 15: Unexpected character (',' ");
        HttpResponse<String> trailing = post("/v1/completions", "{\"prompt\":[1]} {\"prompt\":[2]}");
        assertError(trailing, 400, null, "not valid JSON at line 1, column 16: Trailing token (of type START_OBJECT) found after value");
        assertNoInternals(trailing.body());
        assertTrue(!trailing.body().contains("`") && !trailing.body().contains("Feature"), trailing.body());
    }

    @Test
    void anUnavailableGeneratorTurnsHealthAndCompletionsInto503s() throws Exception {
        generator.unavailable = "no node hosts stage 1";
        try {
            HttpResponse<String> health = get("/health");
            assertEquals(503, health.statusCode(), health.body());
            assertEquals("unavailable", JSON.readTree(health.body()).get("status").asText());
            assertTrue(JSON.readTree(health.body()).get("reason").asText().contains("stage 1"), health.body());
            assertEquals("5", health.headers().firstValue("Retry-After").orElse(""));
            for (String stream : List.of("false", "true")) {
                HttpResponse<String> r = post("/v1/completions", "{\"prompt\":[65],\"max_tokens\":2,\"stream\":" + stream + "}");
                assertError(r, 503, null, "no node hosts stage 1");
                assertEquals("5", r.headers().firstValue("Retry-After").orElse(""));
            }
        } finally {
            generator.unavailable = null;
        }
        assertEquals(200, get("/health").statusCode());
    }

    @Test
    void drainRefusesNewRequestsAndLetsStreamsInFlightEndWithDone() throws Exception {
        ScriptedGenerator held = new ScriptedGenerator(8);
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        held.gate = gate;
        OpenAiServer server = new OpenAiServer(testKit.system(), held);
        ServerBinding b = server.bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        String at = "http://127.0.0.1:" + b.localAddress().getPort();
        try {
            List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> streams = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                streams.add(http.sendAsync(HttpRequest.newBuilder(URI.create(at + "/v1/completions")).timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[" + (70 + i) + "],\"max_tokens\":6,\"stream\":true}"))
                        .build(), HttpResponse.BodyHandlers.ofString()));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (server.inFlight() < 4 && System.nanoTime() - deadline < 0) {
                Thread.sleep(5); // polls the server's count of streams in flight
            }
            assertEquals(4, server.inFlight());
            java.util.concurrent.CompletableFuture<Boolean> drained = server.drain(Duration.ofSeconds(20)).toCompletableFuture();
            assertTrue(!drained.isDone(), "four streams are in flight");
            HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(at + "/health")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(503, health.statusCode());
            assertEquals("draining", JSON.readTree(health.body()).get("status").asText());
            HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create(at + "/v1/completions"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[65]}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertError(refused, 503, null, "shutting down");
            assertEquals("5", refused.headers().firstValue("Retry-After").orElse(""));
            gate.countDown();
            for (int i = 0; i < 4; i++) {
                HttpResponse<String> r = streams.get(i).get(30, TimeUnit.SECONDS);
                assertEquals(200, r.statusCode());
                List<Integer> streamed = new ArrayList<>();
                List<String> data = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).collect(Collectors.toList());
                assertEquals("[DONE]", data.get(data.size() - 1), r.body());
                for (String event : data.subList(0, data.size() - 1)) {
                    streamed.addAll(ints(JSON.readTree(event).get("choices").get(0).get("token_ids")));
                }
                assertEquals(ScriptedGenerator.expected(List.of(70 + i), 6), streamed);
            }
            assertTrue(drained.get(20, TimeUnit.SECONDS), "the drain ends once the streams in flight ended");
        } finally {
            gate.countDown();
            b.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            held.close();
        }
    }

    @Test
    void aClientThatAsksToCloseTheConnectionAfterItsAnswerStillGetsIt() throws Exception {
        // Connection: close (HTTP/1.0 clients, Python's urllib) ends the request side after one request; that is
        // not a client going away, and the answer must still come.
        for (String version : List.of("HTTP/1.1", "HTTP/1.0")) {
            String body = "{\"prompt\":[65,66,67],\"max_tokens\":5,\"temperature\":0}";
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", binding.localAddress().getPort())) {
                socket.setSoTimeout(20_000);
                socket.getOutputStream().write(("POST /v1/completions " + version + "\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                String answer = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                assertTrue(answer.startsWith(version.equals("HTTP/1.0") ? "HTTP/1.0 200" : "HTTP/1.1 200") || answer.startsWith("HTTP/1.1 200"),
                        answer);
                JsonNode choice = JSON.readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).get("choices").get(0);
                assertEquals(ScriptedGenerator.expected(List.of(65, 66, 67), 5), ints(choice.get("token_ids")), version);
            }
        }
    }

    /** A client sees no class, library or setting names of the server's insides. */
    private static void assertNoInternals(String body) {
        for (String word : List.of("pekko", "jackson", "java.", "io.graphlane", "requirement", "Exception", "capacity")) {
            assertTrue(!body.toLowerCase().contains(word.toLowerCase()), "'" + word + "' in " + body);
        }
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
        assertEquals("1", r.headers().firstValue("Retry-After").orElse(""), "a 429 says when to retry");
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
