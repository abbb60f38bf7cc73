package io.graphlane.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Collects the log-probabilities of one choice's tokens and renders them in OpenAI's two shapes: the completions'
 * legacy {@code {tokens, token_logprobs, top_logprobs, text_offset}} and chat's {@code {content: [{token, logprob,
 * bytes, top_logprobs}]}}. A token's text is its id decoded alone (a token that holds part of a UTF-8 character
 * shows U+FFFD). Values are natural logs of the adjusted distribution the token was chosen from (see
 * {@code Sampler}). Not thread-safe: one choice's tokens arrive in order from one generation.
 */
final class LogprobsBuilder {

    /** One token: its text, log-probability, the alternatives (most likely first), and where its text begins in the choice's text. */
    record Entry(String token, float logprob, List<String> topTokens, float[] topLogprobs, int textOffset) {
    }

    private final TokenCodec codec;
    private final List<Entry> entries = new ArrayList<>();

    LogprobsBuilder(TokenCodec codec) {
        this.codec = codec;
    }

    /** Adds {@code token}, whose text begins at {@code textOffset} of the choice's text; returns its entry. */
    Entry add(SampledToken token, int textOffset) {
        List<String> top = new ArrayList<>(token.topIds().length);
        for (int id : token.topIds()) {
            top.add(text(id));
        }
        Entry e = new Entry(text(token.id()), token.logprob(), top, token.topLogprobs(), textOffset);
        entries.add(e);
        return e;
    }

    List<Entry> entries() {
        return List.copyOf(entries);
    }

    private String text(int id) {
        return codec.decode(List.of(id));
    }

    /**
     * The completions shape of {@code entries}: parallel arrays; {@code top_logprobs} holds one object per token,
     * text to log-probability (alternatives whose texts coincide keep the most likely).
     */
    static ObjectNode completionsShape(ObjectMapper json, List<Entry> entries) {
        ObjectNode out = json.createObjectNode();
        ArrayNode tokens = out.putArray("tokens");
        ArrayNode logprobs = out.putArray("token_logprobs");
        ArrayNode top = out.putArray("top_logprobs");
        ArrayNode offsets = out.putArray("text_offset");
        for (Entry e : entries) {
            tokens.add(e.token());
            logprobs.add(e.logprob());
            ObjectNode alternatives = top.addObject();
            for (int i = 0; i < e.topTokens().size(); i++) {
                if (!alternatives.has(e.topTokens().get(i))) {
                    alternatives.put(e.topTokens().get(i), e.topLogprobs()[i]);
                }
            }
            offsets.add(e.textOffset());
        }
        return out;
    }

    /** The chat shape of {@code entries}: {@code {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}}. */
    static ObjectNode chatShape(ObjectMapper json, List<Entry> entries) {
        ObjectNode out = json.createObjectNode();
        ArrayNode content = out.putArray("content");
        for (Entry e : entries) {
            ObjectNode item = content.addObject();
            putToken(item, e.token(), e.logprob());
            ArrayNode top = item.putArray("top_logprobs");
            for (int i = 0; i < e.topTokens().size(); i++) {
                putToken(top.addObject(), e.topTokens().get(i), e.topLogprobs()[i]);
            }
        }
        return out;
    }

    private static void putToken(ObjectNode node, String token, float logprob) {
        node.put("token", token);
        node.put("logprob", logprob);
        ArrayNode bytes = node.putArray("bytes");
        for (byte b : token.getBytes(StandardCharsets.UTF_8)) {
            bytes.add(b & 0xff);
        }
    }
}
