package io.graphlane.server;

import static io.graphlane.server.JsonFields.bool;
import static io.graphlane.server.JsonFields.intField;
import static io.graphlane.server.JsonFields.kind;
import static io.graphlane.server.JsonFields.optionalText;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.chat.ChatMessage;
import io.graphlane.inference.sampling.GenerationDefaults;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A parsed and validated {@code POST /v1/chat/completions} body: the conversation, the options it shares with
 * {@code /v1/completions} ({@link GenerationOptions}: sampling, {@code n}, {@code stop}, {@code stop_token_ids},
 * {@code logprobs} with {@code top_logprobs}, {@code stream_options}), and whether to stream. Every refusal names the
 * field, the expected and the found value.
 *
 * @param maxTokens {@code max_completion_tokens} or {@code max_tokens}; empty: as many as the context leaves
 */
record ChatCompletionRequest(
        Optional<String> model,
        List<ChatMessage> messages,
        OptionalInt maxTokens,
        GenerationOptions options,
        boolean stream) {

    /**
     * The request in {@code body}, each message's content checked against {@code bounds}; the sampling fields it leaves
     * out take {@code defaults}.
     */
    static ChatCompletionRequest parse(ObjectMapper json, String body, PromptBounds bounds, GenerationDefaults defaults) {
        JsonNode root = CompletionRequest.jsonObject(json, body);
        Optional<String> model = optionalText(root, "model");
        List<ChatMessage> messages = messages(root.get("messages"));
        for (int i = 0; i < messages.size(); i++) {
            bounds.check(messages.get(i).content(), "messages", "messages[" + i + "].content");
        }
        OptionalInt maxTokens = maxTokens(root);
        boolean stream = bool(root, "stream", false);
        GenerationOptions options = GenerationOptions.parse(root, GenerationOptions.LogprobsStyle.CHAT, stream, defaults);
        for (String field : List.of("tools", "functions")) {
            JsonNode v = root.get(field);
            if (v != null && !v.isNull() && !(v.isArray() && v.isEmpty())) {
                throw ApiError.invalid(field, field + " are not supported: the chat template is rendered from messages only");
            }
        }
        return new ChatCompletionRequest(model, messages, maxTokens, options, stream);
    }

    /** OpenAI's newer {@code max_completion_tokens} or the older {@code max_tokens}; both only if they agree. */
    private static OptionalInt maxTokens(JsonNode root) {
        boolean completion = root.hasNonNull("max_completion_tokens");
        boolean plain = root.hasNonNull("max_tokens");
        if (!completion && !plain) {
            return OptionalInt.empty();
        }
        int max = completion ? intField(root, "max_completion_tokens", 0, 1) : intField(root, "max_tokens", 0, 1);
        if (completion && plain && intField(root, "max_tokens", 0, 1) != max) {
            throw ApiError.invalid("max_tokens", "max_tokens (" + root.get("max_tokens") + ") and max_completion_tokens ("
                    + max + ") differ; send one of them");
        }
        return OptionalInt.of(max);
    }

    private static List<ChatMessage> messages(JsonNode messages) {
        if (messages == null || messages.isNull()) {
            throw ApiError.invalid("messages", "messages is required: an array of {\"role\", \"content\"} objects");
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw ApiError.invalid("messages", "messages must be a non-empty array of {\"role\", \"content\"} objects, found "
                    + kind(messages));
        }
        List<ChatMessage> out = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            String where = "messages[" + i + "]";
            if (!m.isObject()) {
                throw ApiError.invalid("messages", where + " must be an object with a role and a content, found " + kind(m));
            }
            JsonNode role = m.get("role");
            if (role == null || !role.isTextual() || role.asText().isEmpty()) {
                throw ApiError.invalid("messages", where + ".role must be a non-empty string, found "
                        + (role == null ? "nothing" : kind(role)));
            }
            out.add(new ChatMessage(role.asText(), content(m.get("content"), where)));
        }
        return out;
    }

    /** A string, or an array of text parts ({@code {"type":"text","text":...}}, joined by newlines); null is empty. */
    private static String content(JsonNode content, String where) {
        if (content == null || content.isNull()) {
            return "";
        }
        if (content.isTextual()) {
            return content.asText();
        }
        if (!content.isArray()) {
            throw ApiError.invalid("messages", where + ".content must be a string or an array of text parts, found " + kind(content));
        }
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < content.size(); i++) {
            JsonNode part = content.get(i);
            if (!part.isObject() || !"text".equals(part.path("type").asText()) || !part.path("text").isTextual()) {
                throw ApiError.invalid("messages", where + ".content[" + i + "] must be {\"type\":\"text\",\"text\":...} "
                        + "(only text is supported), found " + part);
            }
            texts.add(part.get("text").asText());
        }
        return String.join("\n", texts);
    }
}
