package io.graphlane.server;

import static io.graphlane.server.TestServer.events;
import static io.graphlane.server.TestServer.ints;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The completions options end to end over HTTP on the tiny-llama fixture (byte tokens: id = byte) against its
 * PyTorch reference: stop strings, log-probabilities equal to the reference logits' log-softmax, logit bias and
 * penalties changing greedy tokens, n choices with their seeds.
 */
class TinyLlamaOptionsTest {
    private static final ObjectMapper JSON = TestServer.JSON;
    /** reference.json's prompt 4: "The quick brown fox", greedy 213 128 17 112 128 17 112 230 45 … ("Հ", U+0011, "p", …). */
    private static final String FOX = "[84,104,101,32,113,117,105,99,107,32,98,114,111,119,110,32,102,111,120]";
    private static TestServer server;
    private static JsonNode reference;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Path.of(TinyLlamaOptionsTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        reference = JSON.readTree(dir.resolve("reference.json").toFile());
        server = new TestServer(system -> InferencePipeline.builder().model(dir).stages(2).actorSystem(system).build());
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    private static JsonNode ok(String body) throws Exception {
        return server.ok(body);
    }

    private static List<Integer> greedy(int prompt) {
        return ints(reference.get("prompts").get(prompt).get("greedy_16"));
    }

    @Test
    void theReferenceGreedyTokensComeBackUnchanged() throws Exception {
        JsonNode choice = ok("{\"prompt\":" + FOX + ",\"max_tokens\":16,\"temperature\":0}").get("choices").get(0);
        assertEquals(greedy(4), ints(choice.get("token_ids")));
        assertEquals("length", choice.get("finish_reason").asText());
    }

    @Test
    void aStopStringCutsTheTextBeforeIt() throws Exception {
        JsonNode choice = ok("{\"prompt\":" + FOX + ",\"max_tokens\":16,\"temperature\":0,\"stop\":\"p\"}").get("choices").get(0);
        assertEquals("\u0540\u0011", choice.get("text").asText(), "a two-byte character, then U+0011, then the stop");
        assertEquals(greedy(4).subList(0, 4), ints(choice.get("token_ids")));
        assertEquals("stop", choice.get("finish_reason").asText());
    }

    @Test
    void streamingNeverSendsTheBeginningOfAStopStringThatThenMatched() throws Exception {
        TestServer.Streamed choice = TestServer.streamedChoice(server.complete(
                "{\"prompt\":" + FOX + ",\"max_tokens\":16,\"temperature\":0,\"stream\":true,\"stop\":[\"\\u0011p\"]}"));
        for (String piece : choice.pieces()) {
            assertFalse(piece.contains("\u0011"), "the stop string's first character was sent: " + choice);
        }
        assertEquals("\u0540", choice.text());
        assertEquals(greedy(4).subList(0, 4), choice.tokenIds());
        assertEquals("stop", choice.finishReason());
    }

    @Test
    void logprobsMatchTheReferenceLogitsAndTheGreedyTokenIsTheMostLikely() throws Exception {
        JsonNode choice = ok("{\"prompt\":[250],\"max_tokens\":4,\"temperature\":0,\"logprobs\":2}").get("choices").get(0);
        JsonNode lp = choice.get("logprobs");
        assertEquals(4, lp.get("tokens").size());
        // The first token's log-probability is the log-softmax of PyTorch's last-position logits.
        JsonNode logits = reference.get("prompts").get(0).get("last_logits_f32");
        double max = Double.NEGATIVE_INFINITY;
        for (JsonNode v : logits) {
            max = Math.max(max, v.asDouble());
        }
        double sum = 0;
        for (JsonNode v : logits) {
            sum += Math.exp(v.asDouble() - max);
        }
        int first = greedy(0).get(0);
        double expected = logits.get(first).asDouble() - max - Math.log(sum);
        assertEquals(expected, lp.get("token_logprobs").get(0).asDouble(), 1e-4);
        for (int i = 0; i < 4; i++) {
            double chosen = lp.get("token_logprobs").get(i).asDouble();
            assertTrue(chosen < 0, "a log-probability is negative: " + chosen);
            JsonNode top = lp.get("top_logprobs").get(i);
            List<Double> values = new ArrayList<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = top.fields(); it.hasNext(); ) {
                values.add(it.next().getValue().asDouble());
            }
            assertEquals(2, values.size(), top.toString());
            assertTrue(values.get(0) >= values.get(1), "most likely first: " + top);
            assertEquals(values.get(0), chosen, 1e-6, "the greedy token's log-probability is the largest");
            assertEquals(String.valueOf((char) (int) greedy(0).get(i)), lp.get("tokens").get(i).asText());
        }
        assertEquals(0, lp.get("text_offset").get(0).asInt());
        assertEquals(1, lp.get("text_offset").get(1).asInt());
    }

    @Test
    void streamedLogprobsComeWithEachTokenAndEqualTheWholeResponses() throws Exception {
        String request = "\"prompt\":[250],\"max_tokens\":5,\"temperature\":0,\"logprobs\":1";
        JsonNode whole = ok("{" + request + "}").get("choices").get(0).get("logprobs").get("token_logprobs");
        HttpResponse<String> r = server.complete("{" + request + ",\"stream\":true}");
        List<Double> streamed = new ArrayList<>();
        for (JsonNode e : events(r)) {
            JsonNode c = e.get("choices").get(0);
            if (c.get("token_ids").size() == 1) {
                assertEquals(1, c.get("logprobs").get("tokens").size(), e.toString());
                streamed.add(c.get("logprobs").get("token_logprobs").get(0).asDouble());
            } else {
                assertTrue(c.get("logprobs").isNull(), e.toString());
            }
        }
        assertEquals(5, streamed.size());
        for (int i = 0; i < 5; i++) {
            assertEquals(whole.get(i).asDouble(), streamed.get(i), 1e-6);
        }
    }

    @Test
    void logitBiasChangesTheGreedyToken() throws Exception {
        assertEquals(24, greedy(0).get(0));
        JsonNode choice = ok("{\"prompt\":[250],\"max_tokens\":2,\"temperature\":0,\"logit_bias\":{\"7\":100}}").get("choices").get(0);
        assertEquals(List.of(7, 7), ints(choice.get("token_ids")));
        JsonNode down = ok("{\"prompt\":[250],\"max_tokens\":1,\"temperature\":0,\"logit_bias\":{\"24\":-100}}").get("choices").get(0);
        assertNotEquals(24, ints(down.get("token_ids")).get(0));
    }

    @Test
    void aFrequencyPenaltyBreaksTheGreedyRepetition() throws Exception {
        assertEquals(List.of(24, 24, 24), greedy(0).subList(0, 3));
        JsonNode choice = ok("{\"prompt\":[250],\"max_tokens\":3,\"temperature\":0,\"frequency_penalty\":2}").get("choices").get(0);
        List<Integer> ids = ints(choice.get("token_ids"));
        assertEquals(24, ids.get(0));
        assertNotEquals(24, ids.get(1), "24 was generated once: its logit is 2 lower, more than its margin");
    }

    @Test
    void nChoicesAreIndependentAndTheFirstKeepsTheSeed() throws Exception {
        String sampled = ",\"max_tokens\":8,\"temperature\":1,\"seed\":11";
        JsonNode two = ok("{\"prompt\":[[250],[26,66]],\"n\":2" + sampled + "}").get("choices");
        assertEquals(4, two.size());
        JsonNode single = ok("{\"prompt\":[250]" + sampled + "}").get("choices").get(0);
        assertEquals(ints(single.get("token_ids")), ints(two.get(0).get("token_ids")), "choice 0 of a prompt uses the seed itself");
        JsonNode other = ok("{\"prompt\":[26,66]" + sampled + "}").get("choices").get(0);
        assertEquals(ints(other.get("token_ids")), ints(two.get(2).get("token_ids")), "choice 2 is prompt 1's first");
        assertNotEquals(ints(two.get(0).get("token_ids")), ints(two.get(1).get("token_ids")), "choice 1 has a seed of its own");
    }
}
