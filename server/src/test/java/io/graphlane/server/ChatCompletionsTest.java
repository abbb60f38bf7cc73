package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.inference.chat.ChatMessage;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /v1/chat/completions} over HTTP on the tiny-chat fixture, through the real pipeline (2 stages): every
 * conversation of its reference.json gives the reference's greedy continuation, finish reason and text, whole and
 * streamed; a stop string and log-probabilities work on it; a conversation the template refuses is a 400 naming why.
 */
class ChatCompletionsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ActorTestKit testKit;
    private static InferencePipeline model;
    private static ServerBinding binding;
    private static HttpClient http;
    private static String base;
    private static JsonNode reference;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Path.of(ChatCompletionsTest.class.getResource("/tiny-chat/config.json").toURI()).getParent();
        reference = JSON.readTree(dir.resolve("reference.json").toFile());
        testKit = ActorTestKit.create();
        model = InferencePipeline.builder().model(dir).stages(2).actorSystem(testKit.system()).build();
        binding = new OpenAiServer(testKit.system(), model).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        base = "http://127.0.0.1:" + binding.localAddress().getPort();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() throws Exception {
        binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
        model.close();
        testKit.shutdownTestKit();
    }

    private static HttpResponse<String> post(String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static List<JsonNode> cases(boolean withIds) {
        List<JsonNode> out = new ArrayList<>();
        reference.get("chat").forEach(c -> {
            if (c.has("ids") == withIds) {
                out.add(c);
            }
        });
        return out;
    }

    private static String request(JsonNode c, boolean stream) {
        ObjectNode body = JSON.createObjectNode();
        body.set("messages", c.get("messages"));
        body.put("max_tokens", reference.get("max_tokens").asInt());
        body.put("temperature", 0);
        if (stream) {
            body.put("stream", true);
            body.putObject("stream_options").put("include_usage", true);
        }
        return body.toString();
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    @Test
    void theModelServesItsTemplateAndEndOfSequenceIds() {
        assertEquals(Set.copyOf(ints(reference.get("eos_token_ids"))), model.eosTokenIds());
        for (JsonNode c : cases(true)) {
            List<ChatMessage> messages = new ArrayList<>();
            c.get("messages").forEach(m -> messages.add(new ChatMessage(m.get("role").asText(), m.get("content").asText())));
            String rendered = model.chatTemplate().orElseThrow().render(messages, true);
            assertEquals(c.get("rendered").asText(), rendered, c.get("name").asText());
            List<Integer> ids = new ArrayList<>();
            for (int id : model.tokenizer().encodeAsWritten(rendered)) {
                ids.add(id);
            }
            assertEquals(ints(c.get("ids")), ids, c.get("name").asText());
        }
    }

    @Test
    void everyConversationGivesTheReferenceGreedyReply() throws Exception {
        for (JsonNode c : cases(true)) {
            String name = c.get("name").asText();
            HttpResponse<String> r = post(request(c, false));
            assertEquals(200, r.statusCode(), name + ": " + r.body());
            JsonNode body = JSON.readTree(r.body());
            assertEquals("chat.completion", body.get("object").asText(), name);
            assertEquals(model.modelName(), body.get("model").asText(), name);
            JsonNode choice = body.get("choices").get(0);
            assertEquals(ints(c.get("greedy")), ints(choice.get("token_ids")), name);
            assertEquals("assistant", choice.get("message").get("role").asText(), name);
            assertEquals(c.get("greedy_text").asText(), choice.get("message").get("content").asText(), name);
            assertEquals(c.get("finish_reason").asText(), choice.get("finish_reason").asText(), name);
            assertEquals(c.get("ids").size(), body.get("usage").get("prompt_tokens").asInt(), name);
            assertEquals(c.get("greedy").size(), body.get("usage").get("completion_tokens").asInt(), name);
            assertEquals(c.get("ids").size() + c.get("greedy").size(), body.get("usage").get("total_tokens").asInt(), name);
        }
    }

    private static java.util.Map<String, Double> metrics() throws Exception {
        return ServerMetricsTest.samples(http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString()).body());
    }

    @Test
    void aChatCompletionIsCountedInTheMetrics() throws Exception {
        JsonNode c = cases(true).get(0);
        java.util.Map<String, Double> before = metrics();
        HttpResponse<String> r = post(request(c, false));
        assertEquals(200, r.statusCode(), r.body());
        java.util.Map<String, Double> after = metrics();
        String ended = "graphlane_requests_total{outcome=\"" + c.get("finish_reason").asText() + "\"}";
        assertEquals(1, after.get(ended) - before.get(ended), ended);
        assertEquals(c.get("ids").size(), after.get("graphlane_prompt_tokens_total") - before.get("graphlane_prompt_tokens_total"));
        assertEquals(c.get("greedy").size(), after.get("graphlane_generation_tokens_total") - before.get("graphlane_generation_tokens_total"));
        assertEquals(1, after.get("graphlane_request_latency_seconds_count") - before.get("graphlane_request_latency_seconds_count"));
    }

    @Test
    void aReplyEndingOnTheEndOfSequenceStopsThereAndLeavesItsTextOut() throws Exception {
        JsonNode c = cases(true).stream().filter(x -> x.get("finish_reason").asText().equals("stop")).findFirst().orElseThrow();
        List<Integer> greedy = ints(c.get("greedy"));
        assertTrue(greedy.size() < reference.get("max_tokens").asInt() && greedy.get(greedy.size() - 1) == 257, "the fixture's case ends on </s>");
        JsonNode choice = JSON.readTree(post(request(c, false)).body()).get("choices").get(0);
        assertEquals("stop", choice.get("finish_reason").asText());
        assertEquals(greedy, ints(choice.get("token_ids")));
        assertTrue(!choice.get("message").get("content").asText().contains("</s>"), choice.toString());
    }

    @Test
    void streamedDeltasStartWithTheRoleAndAddUpToTheReply() throws Exception {
        for (JsonNode c : cases(true)) {
            String name = c.get("name").asText();
            HttpResponse<String> r = post(request(c, true));
            assertEquals(200, r.statusCode(), name + ": " + r.body());
            assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/event-stream"), name);
            List<String> data = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).toList();
            assertEquals("[DONE]", data.get(data.size() - 1), name);
            List<JsonNode> events = new ArrayList<>();
            for (String event : data.subList(0, data.size() - 1)) {
                events.add(JSON.readTree(event));
            }
            events.forEach(e -> assertEquals("chat.completion.chunk", e.get("object").asText(), name));
            JsonNode first = events.get(0).get("choices").get(0);
            assertEquals("assistant", first.get("delta").get("role").asText(), name);
            JsonNode usage = events.get(events.size() - 1);
            assertEquals(0, usage.get("choices").size(), name);
            assertEquals(c.get("ids").size(), usage.get("usage").get("prompt_tokens").asInt(), name);
            assertEquals(c.get("greedy").size(), usage.get("usage").get("completion_tokens").asInt(), name);
            JsonNode last = events.get(events.size() - 2).get("choices").get(0);
            assertEquals(c.get("finish_reason").asText(), last.get("finish_reason").asText(), name);
            StringBuilder text = new StringBuilder();
            for (JsonNode e : events.subList(0, events.size() - 2)) {
                JsonNode choice = e.get("choices").get(0);
                assertTrue(choice.get("finish_reason").isNull(), name + ": only the last chunk finishes");
                text.append(choice.get("delta").path("content").asText(""));
            }
            assertEquals(c.get("greedy_text").asText(), text.toString(), name);
        }
    }

    @Test
    void aStopStringEndsTheReplyBeforeItWholeAndStreamed() throws Exception {
        JsonNode c = cases(true).get(0);
        String reply = c.get("greedy_text").asText();
        List<Integer> greedy = ints(c.get("greedy"));
        int slash = greedy.indexOf((int) '/');
        assertTrue(slash > 0 && reply.indexOf('/') > 0, "the fixture's first reply has a '/' after its start: " + reply);
        ObjectNode body = (ObjectNode) JSON.readTree(request(c, false));
        body.putArray("stop").add("/");
        JsonNode choice = JSON.readTree(post(body.toString()).body()).get("choices").get(0);
        assertEquals(reply.substring(0, reply.indexOf('/')), choice.get("message").get("content").asText());
        assertEquals(greedy.subList(0, slash + 1), ints(choice.get("token_ids")), "up to the token that completed the stop string");
        assertEquals("stop", choice.get("finish_reason").asText());

        body.put("stream", true);
        HttpResponse<String> r = post(body.toString());
        StringBuilder streamed = new StringBuilder();
        String finish = null;
        for (String event : r.body().lines().filter(l -> l.startsWith("data: {")).map(l -> l.substring(6)).toList()) {
            JsonNode ch = JSON.readTree(event).get("choices").get(0);
            streamed.append(ch.get("delta").path("content").asText(""));
            if (!ch.get("finish_reason").isNull()) {
                finish = ch.get("finish_reason").asText();
            }
        }
        assertEquals(reply.substring(0, reply.indexOf('/')), streamed.toString(), r.body());
        assertEquals("stop", finish, r.body());
    }

    @Test
    void logprobsListEveryGeneratedTokenWithItsMostLikelyAlternatives() throws Exception {
        JsonNode c = cases(true).get(0);
        List<Integer> greedy = ints(c.get("greedy"));
        ObjectNode body = (ObjectNode) JSON.readTree(request(c, false));
        body.put("logprobs", true);
        body.put("top_logprobs", 3);
        JsonNode choice = JSON.readTree(post(body.toString()).body()).get("choices").get(0);
        assertEquals(greedy, ints(choice.get("token_ids")), "log-probabilities do not change the greedy reply");
        JsonNode content = choice.get("logprobs").get("content");
        assertEquals(greedy.size(), content.size(), choice.toString());
        for (int i = 0; i < greedy.size(); i++) {
            JsonNode entry = content.get(i);
            assertEquals(model.tokenizer().decode(List.of(greedy.get(i))), entry.get("token").asText(), "token " + i);
            double logprob = entry.get("logprob").asDouble();
            assertTrue(logprob <= 0, "token " + i + ": " + entry);
            JsonNode top = entry.get("top_logprobs");
            assertEquals(3, top.size(), "token " + i + ": " + entry);
            // Greedy: the chosen token is the most likely one.
            assertEquals(entry.get("token").asText(), top.get(0).get("token").asText(), "token " + i + ": " + entry);
            assertEquals(logprob, top.get(0).get("logprob").asDouble(), 1e-6, "token " + i + ": " + entry);
            assertTrue(top.get(0).get("logprob").asDouble() >= top.get(1).get("logprob").asDouble()
                    && top.get(1).get("logprob").asDouble() >= top.get(2).get("logprob").asDouble(), "most likely first: " + entry);
        }
    }

    @Test
    void aConversationTheTemplateRefusesIsA400NamingWhy() throws Exception {
        JsonNode c = cases(false).get(0);
        for (boolean stream : new boolean[] {false, true}) {
            HttpResponse<String> r = post(request(c, stream));
            assertEquals(400, r.statusCode(), r.body());
            JsonNode error = JSON.readTree(r.body()).get("error");
            assertEquals(c.get("error").asText(), error.get("message").asText(), r.body());
            assertEquals("invalid_request_error", error.get("type").asText(), r.body());
            assertEquals("messages", error.get("param").asText(), r.body());
        }
    }

    @Test
    void badChatRequestsNameTheField() throws Exception {
        assertError(post("{\"max_tokens\":3}"), "messages", "messages is required");
        assertError(post("{\"messages\":[{\"content\":\"hi\"}]}"), "messages", "messages[0].role");
        assertError(post("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}"), "messages", "only text");
        assertError(post("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":0}"),
                "max_completion_tokens", "found 0");
        assertError(post("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":600}"),
                "max_tokens", "maximum sequence length 512");
    }

    @Test
    void textPartsAndMaxCompletionTokensAreAccepted() throws Exception {
        JsonNode c = cases(true).get(0);
        String text = c.get("messages").get(0).get("content").asText();
        HttpResponse<String> r = post("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":" + JSON.writeValueAsString(text)
                + "}]}],\"max_completion_tokens\":4,\"temperature\":0}");
        assertEquals(200, r.statusCode(), r.body());
        JsonNode choice = JSON.readTree(r.body()).get("choices").get(0);
        assertEquals(ints(c.get("greedy")).subList(0, 4), ints(choice.get("token_ids")));
        assertEquals("length", choice.get("finish_reason").asText());
    }

    private static void assertError(HttpResponse<String> r, String param, String messagePart) throws Exception {
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertTrue(error.get("message").asText().contains(messagePart), r.body());
        assertEquals(param, error.get("param").asText(), r.body());
    }
}
