package io.graphlane.server;

import static io.graphlane.server.CompletionRequest.bool;
import static io.graphlane.server.CompletionRequest.intField;
import static io.graphlane.server.CompletionRequest.kind;
import static io.graphlane.server.CompletionRequest.optionalText;
import static io.graphlane.server.CompletionRequest.refuseUnless;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.chat.ChatMessage;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A parsed and validated {@code POST /v1/chat/completions} body: the conversation, the sampling fields it shares with
 * {@code /v1/completions}, and whether to stream. Every refusal names the field, the expected and the found value.
 *
 * @param maxTokens    {@code max_completion_tokens} or {@code max_tokens}; empty: as many as the context leaves
 * @param includeUsage {@code stream_options.include_usage}: a streamed response ends with a chunk carrying the usage
 */
record ChatCompletionRequest(
        Optional<String> model,
        List<ChatMessage> messages,
        OptionalInt maxTokens,
        SamplingParams sampling,
        boolean stream,
        boolean includeUsage) {

    static ChatCompletionRequest parse(ObjectMapper json, String body) {
        JsonNode root = CompletionRequest.jsonObject(json, body);
        Optional<String> model = optionalText(root, "model");
        List<ChatMessage> messages = messages(root.get("messages"));
        OptionalInt maxTokens = maxTokens(root);
        SamplingParams sampling = CompletionRequest.samplingParams(root);
        boolean stream = bool(root, "stream", false);
        boolean includeUsage = false;
        JsonNode options = root.get("stream_options");
        if (options != null && !options.isNull()) {
            if (!options.isObject()) {
                throw ApiError.invalid("stream_options", "stream_options must be an object, found " + kind(options));
            }
            includeUsage = bool(options, "include_usage", false);
        }
        refuseUnless(root, "n", 1);
        if (root.hasNonNull("stop")) {
            throw ApiError.invalid("stop", "stop sequences are not supported; generation ends at the token limit or an end-of-sequence token");
        }
        if (root.hasNonNull("logprobs") && root.get("logprobs").asBoolean(true)) {
            throw ApiError.invalid("logprobs", "logprobs are not supported");
        }
        for (String field : List.of("tools", "functions")) {
            JsonNode v = root.get(field);
            if (v != null && !v.isNull() && !(v.isArray() && v.isEmpty())) {
                throw ApiError.invalid(field, field + " are not supported: the chat template is rendered from messages only");
            }
        }
        return new ChatCompletionRequest(model, messages, maxTokens, sampling, stream, includeUsage);
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
