package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The two OpenAI shapes of log-probabilities, and the chat style of asking for them. */
class LogprobsBuilderTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** One character per token id. */
    private static final TokenCodec CHARS = new TokenCodec() {
        @Override
        public int[] encode(String text) {
            return text.chars().toArray();
        }

        @Override
        public String decode(List<Integer> ids) {
            StringBuilder out = new StringBuilder();
            ids.forEach(id -> out.append((char) (int) id));
            return out.toString();
        }

        @Override
        public int eosTokenId() {
            return -1;
        }
    };

    private static List<LogprobsBuilder.Entry> twoTokens() {
        LogprobsBuilder b = new LogprobsBuilder(CHARS);
        b.add(new SampledToken('h', -0.25f, new int[] {'h', 'a'}, new float[] {-0.25f, -2f}), 0);
        b.add(new SampledToken('i', -1.5f, new int[] {'o', 'i'}, new float[] {-0.5f, -1.5f}), 1);
        return b.entries();
    }

    @Test
    void completionsShapeHasParallelArrays() {
        JsonNode out = LogprobsBuilder.completionsShape(JSON, twoTokens());
        assertEquals("[\"h\",\"i\"]", out.get("tokens").toString());
        assertEquals(-0.25, out.get("token_logprobs").get(0).asDouble(), 1e-9);
        assertEquals(-1.5, out.get("token_logprobs").get(1).asDouble(), 1e-9);
        assertEquals("{\"o\":-0.5,\"i\":-1.5}", out.get("top_logprobs").get(1).toString(), "most likely first");
        assertEquals("[0,1]", out.get("text_offset").toString());
    }

    @Test
    void chatShapeListsEachTokenWithBytesAndAlternatives() {
        JsonNode out = LogprobsBuilder.chatShape(JSON, twoTokens());
        JsonNode first = out.get("content").get(0);
        assertEquals("h", first.get("token").asText());
        assertEquals(-0.25, first.get("logprob").asDouble(), 1e-9);
        assertEquals("[104]", first.get("bytes").toString());
        assertEquals("a", first.get("top_logprobs").get(1).get("token").asText());
        assertEquals(-2.0, first.get("top_logprobs").get(1).get("logprob").asDouble(), 1e-9);
    }

    @Test
    void chatStyleAsksWithABooleanAndTopLogprobs() throws Exception {
        assertEquals(3, chat("{\"logprobs\":true,\"top_logprobs\":3}").logprobs());
        assertEquals(0, chat("{\"logprobs\":true}").logprobs());
        assertEquals(-1, chat("{}").logprobs());
        ApiError tooMany = assertThrows(ApiError.class, () -> chat("{\"logprobs\":true,\"top_logprobs\":6}"));
        assertEquals("top_logprobs", tooMany.param());
        assertTrue(tooMany.getMessage().contains("from 0 to 5"), tooMany.getMessage());
        assertEquals("top_logprobs", assertThrows(ApiError.class, () -> chat("{\"top_logprobs\":2}")).param());
        assertEquals("logprobs", assertThrows(ApiError.class, () -> chat("{\"logprobs\":2}")).param());
    }

    private static GenerationOptions chat(String body) throws Exception {
        return GenerationOptions.parse(JSON.readTree(body), GenerationOptions.LogprobsStyle.CHAT, false);
    }
}
