package io.graphlane.server;

import static io.graphlane.server.TestServer.events;
import static io.graphlane.server.TestServer.ints;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.inference.chat.ChatTemplate;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The options chat completions share with text completions, on the scripted generator behind a template that writes
 * the messages' contents one after another (content "F" is the prompt [70]): {@code stop}, {@code stop_token_ids},
 * {@code n}, {@code logprobs}/{@code top_logprobs}, whole and streamed, and the content leaving special tokens out.
 */
class ChatOptionsTest {
    private static ScriptedGenerator generator;
    private static TestServer server;

    @BeforeAll
    static void start() throws Exception {
        generator = new ScriptedGenerator(16);
        generator.chatTemplate = new ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}", "", "");
        server = new TestServer(system -> generator);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    private static String chat(String content, String fields) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}]," + fields + "}";
    }

    private static JsonNode ok(String body) throws Exception {
        HttpResponse<String> r = server.post("/v1/chat/completions", body);
        assertEquals(200, r.statusCode(), r.body());
        return TestServer.JSON.readTree(r.body());
    }

    @Test
    void aStopStringCutsTheContentEndsWithStopAndCancelsTheGeneration() throws Exception {
        assertEquals(List.of(125, 110), ScriptedGenerator.expected(List.of(70), 6).subList(0, 2)); // '}', 'n'
        int cancelledBefore = generator.cancelled.get();
        JsonNode body = ok(chat("F", "\"max_tokens\":6,\"stop\":[\"zz\",\"n\"]"));
        JsonNode choice = body.get("choices").get(0);
        assertEquals("}", choice.get("message").get("content").asText());
        assertEquals(List.of(125, 110), ints(choice.get("token_ids")), "up to the token that completed the stop string");
        assertEquals("stop", choice.get("finish_reason").asText());
        assertEquals(2, body.get("usage").get("completion_tokens").asInt());
        assertEquals(1, generator.cancelled.get() - cancelledBefore, "the generation was cancelled at the stop");
    }

    @Test
    void aStopTokenIdEndsTheChoiceKeepingTheToken() throws Exception {
        JsonNode choice = ok(chat("F", "\"max_tokens\":6,\"stop_token_ids\":[110]")).get("choices").get(0);
        assertEquals(List.of(125, 110), ints(choice.get("token_ids")));
        assertEquals("}n", choice.get("message").get("content").asText());
        assertEquals("stop", choice.get("finish_reason").asText());
    }

    @Test
    void theContentLeavesTheEndOfSequenceTokenOut() throws Exception {
        // The prompt ends in 1, whose scripted successor is the end-of-sequence id 0: listed, counted, not shown.
        JsonNode body = ok(chat("A\\u0001", "\"max_tokens\":4"));
        JsonNode choice = body.get("choices").get(0);
        assertEquals(List.of(ScriptedGenerator.EOS), ints(choice.get("token_ids")));
        assertEquals("", choice.get("message").get("content").asText());
        assertEquals("stop", choice.get("finish_reason").asText());
        assertEquals(1, body.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void streamingWithAStopStringNeverSendsItsBeginning() throws Exception {
        // '}' then 'n': with stop "}n" the '}' is held back, then the match drops it: no content at all.
        HttpResponse<String> r = server.post("/v1/chat/completions", chat("F", "\"max_tokens\":6,\"stream\":true,\"stop\":\"}n\""));
        Map<Integer, StreamedChoice> choices = streamed(r);
        assertEquals(1, choices.size());
        assertEquals("", choices.get(0).content.toString(), r.body());
        assertEquals("stop", choices.get(0).finish);
    }

    @Test
    void nGivesThatManyChoicesWholeAndStreamed() throws Exception {
        List<Integer> expected = ScriptedGenerator.expected(List.of(70), 3);
        String text = generator.tokenizer().decode(expected);
        JsonNode body = ok(chat("F", "\"max_tokens\":3,\"n\":3"));
        JsonNode choices = body.get("choices");
        assertEquals(3, choices.size());
        for (int i = 0; i < 3; i++) {
            assertEquals(i, choices.get(i).get("index").asInt());
            assertEquals(expected, ints(choices.get(i).get("token_ids")), "choice " + i);
            assertEquals(text, choices.get(i).get("message").get("content").asText(), "choice " + i);
            assertEquals("length", choices.get(i).get("finish_reason").asText());
        }
        assertEquals(1, body.get("usage").get("prompt_tokens").asInt(), "the prompt counted once");
        assertEquals(9, body.get("usage").get("completion_tokens").asInt());

        HttpResponse<String> r = server.post("/v1/chat/completions",
                chat("F", "\"max_tokens\":3,\"n\":2,\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
        Map<Integer, StreamedChoice> streamed = streamed(r);
        assertEquals(2, streamed.size(), r.body());
        for (StreamedChoice c : streamed.values()) {
            assertEquals(text, c.content.toString(), r.body());
            assertEquals("length", c.finish);
        }
        List<JsonNode> events = events(r);
        JsonNode usage = events.get(events.size() - 1);
        assertEquals(0, usage.get("choices").size());
        assertEquals(6, usage.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void logprobsComeInChatShapeWholeAndStreamed() throws Exception {
        List<Integer> expected = ScriptedGenerator.expected(List.of(70), 3);
        JsonNode choice = ok(chat("F", "\"max_tokens\":3,\"logprobs\":true,\"top_logprobs\":2")).get("choices").get(0);
        JsonNode content = choice.get("logprobs").get("content");
        assertEquals(expected.size(), content.size(), choice.toString());
        for (int i = 0; i < expected.size(); i++) {
            String token = generator.tokenizer().decode(List.of(expected.get(i)));
            assertEquals(token, content.get(i).get("token").asText(), choice.toString());
            assertEquals((int) token.getBytes(java.nio.charset.StandardCharsets.UTF_8)[0] & 0xff, content.get(i).get("bytes").get(0).asInt());
            assertTrue(content.get(i).has("logprob") && content.get(i).get("top_logprobs").isArray(), choice.toString());
        }
        JsonNode without = ok(chat("F", "\"max_tokens\":3")).get("choices").get(0);
        assertTrue(without.get("logprobs").isNull(), without.toString());

        HttpResponse<String> r = server.post("/v1/chat/completions", chat("F", "\"max_tokens\":3,\"stream\":true,\"logprobs\":true"));
        StreamedChoice streamed = streamed(r).get(0);
        assertEquals(expected.size(), streamed.logprobTokens.size(), r.body());
        assertEquals(generator.tokenizer().decode(expected), String.join("", streamed.logprobTokens));
    }

    @Test
    void outOfRangeOptionsAre400sNamingTheField() throws Exception {
        assertError(chat("F", "\"n\":9"), "n", "at most 8");
        assertError(chat("F", "\"logprobs\":true,\"top_logprobs\":9"), "top_logprobs", "0 to 5");
        assertError(chat("F", "\"stop_token_ids\":[300]"), "stop_token_ids", "outside the vocabulary");
        generator.maxHeld = 2;
        try {
            assertError(chat("F", "\"n\":3"), "n", "at most 2 generations");
        } finally {
            generator.maxHeld = Integer.MAX_VALUE;
        }
    }

    private static void assertError(String body, String param, String messagePart) throws Exception {
        HttpResponse<String> r = server.post("/v1/chat/completions", body);
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = TestServer.JSON.readTree(r.body()).get("error");
        assertEquals(param, error.get("param").asText(), r.body());
        assertTrue(error.get("message").asText().contains(messagePart), r.body());
    }

    /** One streamed chat choice put together. */
    private static final class StreamedChoice {
        final StringBuilder content = new StringBuilder();
        final List<String> logprobTokens = new ArrayList<>();
        boolean role;
        String finish;
    }

    /**
     * The choices of a streamed chat response by index, asserting the shape: each begins with the assistant's role,
     * then content deltas, then one empty delta with the finish reason.
     */
    private static Map<Integer, StreamedChoice> streamed(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        Map<Integer, StreamedChoice> out = new HashMap<>();
        for (JsonNode e : events(r)) {
            assertEquals("chat.completion.chunk", e.get("object").asText(), r.body());
            for (JsonNode c : e.get("choices")) {
                StreamedChoice choice = out.computeIfAbsent(c.get("index").asInt(), i -> new StreamedChoice());
                assertNull(choice.finish, "nothing after the final chunk: " + r.body());
                JsonNode delta = c.get("delta");
                if (!choice.role) {
                    assertEquals("assistant", delta.get("role").asText(), r.body());
                    choice.role = true;
                    continue;
                }
                assertFalse(delta.has("role"), r.body());
                if (!c.get("finish_reason").isNull()) {
                    assertEquals(0, delta.size(), "the final delta is empty: " + r.body());
                    choice.finish = c.get("finish_reason").asText();
                    continue;
                }
                choice.content.append(delta.get("content").asText());
                if (!c.get("logprobs").isNull()) {
                    c.get("logprobs").get("content").forEach(t -> choice.logprobTokens.add(t.get("token").asText()));
                }
            }
        }
        out.values().forEach(c -> assertTrue(c.finish != null, "every choice ends with a finish reason: " + r.body()));
        return out;
    }
}
