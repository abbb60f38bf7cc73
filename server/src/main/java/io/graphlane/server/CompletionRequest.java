package io.graphlane.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.sampling.GenerationDefaults;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * A parsed and validated {@code POST /v1/completions} body. Every refusal names the field,
 * the expected and the found value.
 *
 * @param options the sampling and output options shared with chat completions
 * @param echo    whether each choice's text begins with its prompt's text (and its token ids with the prompt's ids)
 */
record CompletionRequest(
        Optional<String> model,
        List<List<Integer>> prompts,
        int maxTokens,
        GenerationOptions options,
        boolean stream,
        boolean echo) {

    static final int DEFAULT_MAX_TOKENS = 16;

    /**
     * The request in {@code body}, its text prompts tokenized with {@code tokenizer} once each of them was checked
     * against {@code bounds}: no text is tokenized when one of them could never fit the model. The sampling fields it
     * leaves out take {@code defaults}.
     */
    static CompletionRequest parse(ObjectMapper json, String body, TokenCodec tokenizer, PromptBounds bounds, GenerationDefaults defaults) {
        JsonNode root = jsonObject(json, body);
        Optional<String> model = JsonFields.optionalText(root, "model");
        List<PromptInput> inputs = prompts(root.get("prompt"));
        for (PromptInput input : inputs) {
            if (input.text() != null) {
                bounds.check(input.text(), "prompt", input.where());
            }
        }
        int maxTokens = JsonFields.intField(root, "max_tokens", DEFAULT_MAX_TOKENS, 1);
        boolean stream = JsonFields.bool(root, "stream", false);
        GenerationOptions options = GenerationOptions.parse(root, GenerationOptions.LogprobsStyle.COMPLETIONS, stream, defaults);
        boolean echo = JsonFields.bool(root, "echo", false);
        if (echo && options.wantsLogprobs()) {
            throw ApiError.invalid("echo", "echo together with logprobs is not supported: the log-probabilities of prompt tokens are "
                    + "not computed; send echo or logprobs, not both");
        }
        if (JsonFields.present(root, "suffix")) {
            throw ApiError.invalid("suffix", "suffix is not supported (no insertion mode)");
        }
        List<List<Integer>> prompts = new ArrayList<>(inputs.size());
        for (PromptInput input : inputs) {
            prompts.add(input.text() == null ? input.ids() : encode(input.text(), tokenizer, input.where()));
        }
        return new CompletionRequest(model, prompts, maxTokens, options, stream, echo);
    }

    /** One prompt as sent: a text to tokenize, or token ids; {@code where} names it in errors. */
    private record PromptInput(String text, List<Integer> ids, String where) {
    }

    /** The request body as a JSON object (shared with chat completions). */
    static JsonNode jsonObject(ObjectMapper json, String body) {
        JsonNode root;
        try {
            root = json.readTree(body);
        } catch (Exception e) {
            throw ApiError.invalid(null, "the request body is not valid JSON" + jsonProblem(e));
        }
        if (root == null || !root.isObject()) {
            throw ApiError.invalid(null, "the request body must be a JSON object, found " + (root == null ? "nothing" : JsonFields.kind(root)));
        }
        return root;
    }

    private static List<PromptInput> prompts(JsonNode prompt) {
        if (prompt == null || prompt.isNull()) {
            throw ApiError.invalid("prompt", "prompt is required: a string, an array of token ids, or an array of those");
        }
        if (prompt.isTextual()) {
            return List.of(new PromptInput(prompt.asText(), null, "prompt"));
        }
        if (!prompt.isArray() || prompt.isEmpty()) {
            throw ApiError.invalid("prompt", "prompt must be a string, an array of token ids, or an array of those; found " + JsonFields.kind(prompt));
        }
        if (prompt.get(0).isNumber()) {
            return List.of(new PromptInput(null, tokenIds(prompt, "prompt"), "prompt"));
        }
        List<PromptInput> prompts = new ArrayList<>();
        for (int i = 0; i < prompt.size(); i++) {
            JsonNode p = prompt.get(i);
            String where = "prompt[" + i + "]";
            if (p.isTextual()) {
                prompts.add(new PromptInput(p.asText(), null, where));
            } else if (p.isArray()) {
                prompts.add(new PromptInput(null, tokenIds(p, where), where));
            } else {
                throw ApiError.invalid("prompt", where + " must be a string or an array of token ids, found " + JsonFields.kind(p));
            }
        }
        return prompts;
    }

    private static List<Integer> encode(String text, TokenCodec tokenizer, String where) {
        int[] ids = tokenizer.encode(text);
        if (ids.length == 0) {
            throw ApiError.invalid("prompt", where + " encodes to no tokens; send at least one character or token id");
        }
        List<Integer> list = new ArrayList<>(ids.length);
        for (int id : ids) {
            list.add(id);
        }
        return list;
    }

    private static List<Integer> tokenIds(JsonNode array, String where) {
        if (array.isEmpty()) {
            throw ApiError.invalid("prompt", where + " is an empty array of token ids");
        }
        List<Integer> ids = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            JsonNode id = array.get(i);
            if (!id.canConvertToInt() || !id.isIntegralNumber() || id.asInt() < 0) {
                throw ApiError.invalid("prompt", where + "[" + i + "] must be a non-negative integer token id, found " + id);
            }
            ids.add(id.asInt());
        }
        return ids;
    }

    /**
     * What the parser found wrong and where, without the parser's own settings (its feature and constraint names
     * mean nothing to a client).
     */
    static String jsonProblem(Exception e) {
        String message = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
        message = firstLine(message)
                .replaceAll("[:;,]?\\s*(?:enable|disable) `[^`]*`(?: to allow)?", "")
                .replaceAll("[:;,]?\\s*not allowed as per `[^`]*`", "")
                .replaceAll("\\s*\\([^()`]*`[^`]*`[^()]*\\)", "")
                .trim();
        String where = "";
        if (e instanceof com.fasterxml.jackson.core.JsonProcessingException j && j.getLocation() != null
                && j.getLocation().getLineNr() > 0) {
            where = " at line " + j.getLocation().getLineNr() + ", column " + j.getLocation().getColumnNr();
        }
        return where + (message.isEmpty() ? "" : ": " + message);
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    /** Refuses a model name other than the one served. */
    void checkModel(String served) {
        checkModel(model, served);
    }

    /** Refuses a requested {@code model} other than the one served. */
    static void checkModel(Optional<String> model, String served) {
        model.ifPresent(m -> {
            if (!m.equals(served)) {
                throw new ApiError(StatusCodes.NOT_FOUND, "invalid_request_error", "model", "model_not_found",
                        "the model '" + m + "' is not served here; this server serves '" + served + "'");
            }
        });
    }
}
