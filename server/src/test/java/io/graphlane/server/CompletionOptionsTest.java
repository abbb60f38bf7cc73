package io.graphlane.server;

import static io.graphlane.server.TestServer.events;
import static io.graphlane.server.TestServer.ints;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The completions options over HTTP on the scripted generator (byte tokens, a known continuation): stop strings
 * and stop token ids end a choice and cancel its generation, echo, n, stream_options, and the 400s naming the field.
 */
class CompletionOptionsTest {
    private static ScriptedGenerator generator;
    private static TestServer server;

    @BeforeAll
    static void start() throws Exception {
        generator = new ScriptedGenerator(16);
        server = new TestServer(system -> generator);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    private static JsonNode ok(String body) throws Exception {
        return server.ok(body);
    }

    @Test
    void aStopStringCutsTheTextEndsWithStopAndCancelsTheGeneration() throws Exception {
        List<Integer> full = ScriptedGenerator.expected(List.of(70), 6); // 125 '}', 110 'n', ...
        assertEquals(List.of(125, 110), full.subList(0, 2));
        int cancelledBefore = generator.cancelled.get();
        JsonNode choice = ok("{\"prompt\":[70],\"max_tokens\":6,\"stop\":[\"zz\",\"n\"]}").get("choices").get(0);
        assertEquals("}", choice.get("text").asText());
        assertEquals(List.of(125, 110), ints(choice.get("token_ids")), "up to the token that completed the stop string");
        assertEquals("stop", choice.get("finish_reason").asText());
        assertEquals(1, generator.cancelled.get() - cancelledBefore, "the generation was cancelled at the stop");
    }

    @Test
    void aStopTokenIdEndsTheChoiceKeepingTheToken() throws Exception {
        JsonNode body = ok("{\"prompt\":[70],\"max_tokens\":6,\"stop_token_ids\":[110]}");
        JsonNode choice = body.get("choices").get(0);
        assertEquals(List.of(125, 110), ints(choice.get("token_ids")));
        assertEquals("}n", choice.get("text").asText());
        assertEquals("stop", choice.get("finish_reason").asText());
        assertEquals(2, body.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void streamingWithAStopStringNeverSendsItsBeginning() throws Exception {
        // '}' then 'n': with stop "}n" the '}' is held back, then the match drops it: no text at all.
        TestServer.Streamed choice = TestServer.streamedChoice(
                server.complete("{\"prompt\":[70],\"max_tokens\":6,\"stream\":true,\"stop\":\"}n\"}"));
        assertEquals("", choice.text(), choice.toString());
        assertEquals(List.of(125, 110), choice.tokenIds());
        assertEquals("stop", choice.finishReason());
    }

    @Test
    void echoPrependsThePromptToTextAndTokenIds() throws Exception {
        JsonNode choice = ok("{\"prompt\":\"AB\",\"max_tokens\":2,\"echo\":true}").get("choices").get(0);
        List<Integer> generated = ScriptedGenerator.expected(List.of(65, 66), 2);
        List<Integer> all = new ArrayList<>(List.of(65, 66));
        all.addAll(generated);
        assertEquals(all, ints(choice.get("token_ids")));
        assertEquals("AB" + generator.tokenizer().decode(generated), choice.get("text").asText());
    }

    @Test
    void nGivesPromptMajorChoices() throws Exception {
        JsonNode body = ok("{\"prompt\":[[5],[6]],\"max_tokens\":2,\"n\":3}");
        JsonNode choices = body.get("choices");
        assertEquals(6, choices.size());
        for (int i = 0; i < 6; i++) {
            assertEquals(i, choices.get(i).get("index").asInt());
            assertEquals(ScriptedGenerator.expected(List.of(i < 3 ? 5 : 6), 2), ints(choices.get(i).get("token_ids")), "choice " + i);
        }
        assertEquals(2, body.get("usage").get("prompt_tokens").asInt(), "each prompt counted once");
        assertEquals(12, body.get("usage").get("completion_tokens").asInt());
    }

    @Test
    void includeUsageSendsAUsageChunkBeforeDone() throws Exception {
        HttpResponse<String> r = server.complete("{\"prompt\":[[5],[6,7]],\"max_tokens\":3,\"n\":2,\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true}}");
        assertEquals(200, r.statusCode(), r.body());
        List<JsonNode> events = events(r);
        JsonNode last = events.get(events.size() - 1);
        assertEquals(0, last.get("choices").size());
        assertEquals(3, last.get("usage").get("prompt_tokens").asInt());
        assertEquals(12, last.get("usage").get("completion_tokens").asInt());
        assertEquals(15, last.get("usage").get("total_tokens").asInt());
        for (JsonNode e : events.subList(0, events.size() - 1)) {
            assertFalse(e.has("usage"), "only the last chunk carries usage");
        }
        HttpResponse<String> without = server.complete("{\"prompt\":[5],\"max_tokens\":2,\"stream\":true}");
        for (JsonNode e : events(without)) {
            assertFalse(e.has("usage"));
        }
    }

    @Test
    void unsupportedOrOutOfRangeOptionsAre400sNamingTheField() throws Exception {
        assertError("\"presence_penalty\":2.5", "presence_penalty", "found 2.5");
        assertError("\"frequency_penalty\":-3", "frequency_penalty", "between -2.0 and 2.0");
        assertError("\"frequency_penalty\":\"x\"", "frequency_penalty", "must be a number");
        assertError("\"logit_bias\":{\"300\":1}", "logit_bias", "outside the vocabulary [0, 256)");
        assertError("\"logit_bias\":{\"a\":1}", "logit_bias", "\"a\"");
        assertError("\"logit_bias\":{\"5\":101}", "logit_bias", "between -100 and 100");
        assertError("\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop", "at most 4");
        assertError("\"stop\":[\"\"]", "stop", "empty");
        assertError("\"stop\":7", "stop", "a string or an array");
        assertError("\"stop_token_ids\":[999]", "stop_token_ids", "outside the vocabulary");
        assertError("\"n\":9", "n", "at most 8");
        assertError("\"n\":0", "n", ">= 1");
        assertError("\"best_of\":3", "best_of", "best_of 3 with n 1");
        assertError("\"logprobs\":6", "logprobs", "from 0 to 5");
        assertError("\"logprobs\":true", "logprobs", "from 0 to 5");
        assertError("\"echo\":true,\"logprobs\":1", "echo", "logprobs");
        assertError("\"stream_options\":{\"include_usage\":true}", "stream_options", "only allowed when stream is true");
        assertError("\"stream\":true,\"stream_options\":{\"include_usage\":1}", "stream_options", "true or false");
        assertError("\"suffix\":\"x\"", "suffix", "not supported");
        assertError("\"top_k\":-2", "top_k", "-1 or 0 (off) or at least 1, found -2");
        assertError("\"top_k\":1.5", "top_k", "found 1.5");
        assertError("\"top_k\":\"5\"", "top_k", "found \"5\"");
        assertError("\"min_p\":1.5", "min_p", "in [0, 1], found 1.5");
        assertError("\"min_p\":-0.1", "min_p", "in [0, 1], found -0.1");
        assertError("\"min_p\":\"a\"", "min_p", "must be a number");
        assertError("\"repetition_penalty\":0", "repetition_penalty", "> 0 (1 is off), found 0.0");
        assertError("\"repetition_penalty\":-1", "repetition_penalty", "found -1.0");
        // Fields this server does not know are ignored, as OpenAI does.
        assertEquals(200, server.complete("{\"prompt\":[5],\"max_tokens\":1,\"user\":\"u\",\"best_of\":1}").statusCode());
    }

    @Test
    void chatRangeChecksTheSharedOptions() throws Exception {
        String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],";
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"presence_penalty\":-2.5}"), "presence_penalty", "found -2.5");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"logit_bias\":{\"1\":-101}}"), "logit_bias", "between -100 and 100");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}"), "stop", "at most 4");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"top_logprobs\":9,\"logprobs\":true}"), "top_logprobs", "0 to 5");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"top_k\":-5}"), "top_k", "found -5");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"min_p\":2}"), "min_p", "found 2.0");
        assertError(server.post("/v1/chat/completions", "{" + messages + "\"repetition_penalty\":0}"), "repetition_penalty", "found 0.0");
    }

    private static void assertError(String fields, String param, String messagePart) throws Exception {
        assertError(server.complete("{\"prompt\":[5],\"max_tokens\":2," + fields + "}"), param, messagePart);
    }

    private static void assertError(HttpResponse<String> r, String param, String messagePart) throws Exception {
        assertEquals(400, r.statusCode(), r.body());
        JsonNode error = TestServer.JSON.readTree(r.body()).get("error");
        assertEquals(param, error.get("param").asText(), r.body());
        assertTrue(error.get("message").asText().contains(messagePart), r.body());
    }
}
