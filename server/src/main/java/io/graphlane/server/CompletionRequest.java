package io.graphlane.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.api.TokenCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * A parsed and validated {@code POST /v1/completions} body. Every refusal names the field,
 * the expected and the found value.
 */
record CompletionRequest(
        Optional<String> model,
        List<List<Integer>> prompts,
        int maxTokens,
        SamplingParams sampling,
        boolean stream) {

    static final int DEFAULT_MAX_TOKENS = 16;

    static CompletionRequest parse(ObjectMapper json, String body, TokenCodec tokenizer) {
        JsonNode root = jsonObject(json, body);
        Optional<String> model = optionalText(root, "model");
        List<List<Integer>> prompts = prompts(root.get("prompt"), tokenizer);
        int maxTokens = intField(root, "max_tokens", DEFAULT_MAX_TOKENS, 1);
        SamplingParams sampling = samplingParams(root);
        boolean stream = bool(root, "stream", false);
        int n = intField(root, "n", 1, 1);
        if (n != 1) {
            throw ApiError.invalid("n", "only n = 1 is supported (one choice per prompt), found " + n);
        }
        refuseUnless(root, "best_of", 1);
        if (root.hasNonNull("stop")) {
            throw ApiError.invalid("stop", "stop sequences are not supported; generation ends at max_tokens or the model's end-of-sequence token");
        }
        if (root.hasNonNull("logprobs")) {
            throw ApiError.invalid("logprobs", "logprobs are not supported");
        }
        if (bool(root, "echo", false)) {
            throw ApiError.invalid("echo", "echo is not supported");
        }
        return new CompletionRequest(model, prompts, maxTokens, sampling, stream);
    }

    /** The sampling fields {@code temperature}, {@code top_p} and {@code seed}, shared with chat completions. */
    static SamplingParams samplingParams(JsonNode root) {
        double temperature = number(root, "temperature", 1.0);
        if (temperature < 0 || temperature > 2) {
            throw ApiError.invalid("temperature", "temperature must be between 0 and 2, found " + temperature);
        }
        double topP = number(root, "top_p", 1.0);
        if (!(topP > 0 && topP <= 1)) {
            throw ApiError.invalid("top_p", "top_p must be in (0, 1], found " + topP);
        }
        long seed = root.hasNonNull("seed") ? longField(root, "seed") : System.nanoTime();
        return new SamplingParams(temperature, topP, seed);
    }

    /** The request body as a JSON object. */
    static JsonNode jsonObject(ObjectMapper json, String body) {
        JsonNode root;
        try {
            root = json.readTree(body);
        } catch (Exception e) {
            throw ApiError.invalid(null, "the request body is not valid JSON" + jsonProblem(e));
        }
        if (root == null || !root.isObject()) {
            throw ApiError.invalid(null, "the request body must be a JSON object, found " + (root == null ? "nothing" : kind(root)));
        }
        return root;
    }

    private static List<List<Integer>> prompts(JsonNode prompt, TokenCodec tokenizer) {
        if (prompt == null || prompt.isNull()) {
            throw ApiError.invalid("prompt", "prompt is required: a string, an array of token ids, or an array of those");
        }
        if (prompt.isTextual()) {
            return List.of(encode(prompt.asText(), tokenizer, "prompt"));
        }
        if (!prompt.isArray() || prompt.isEmpty()) {
            throw ApiError.invalid("prompt", "prompt must be a string, an array of token ids, or an array of those; found " + kind(prompt));
        }
        if (prompt.get(0).isNumber()) {
            return List.of(tokenIds(prompt, "prompt"));
        }
        List<List<Integer>> prompts = new ArrayList<>();
        for (int i = 0; i < prompt.size(); i++) {
            JsonNode p = prompt.get(i);
            String where = "prompt[" + i + "]";
            if (p.isTextual()) {
                prompts.add(encode(p.asText(), tokenizer, where));
            } else if (p.isArray()) {
                prompts.add(tokenIds(p, where));
            } else {
                throw ApiError.invalid("prompt", where + " must be a string or an array of token ids, found " + kind(p));
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

    static Optional<String> optionalText(JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return Optional.empty();
        }
        if (!v.isTextual()) {
            throw ApiError.invalid(field, field + " must be a string, found " + kind(v));
        }
        return Optional.of(v.asText());
    }

    static int intField(JsonNode root, String field, int dflt, int min) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < min) {
            throw ApiError.invalid(field, field + " must be an integer >= " + min + ", found " + v);
        }
        return v.asInt();
    }

    static long longField(JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw ApiError.invalid(field, field + " must be an integer, found " + v);
        }
        return v.asLong();
    }

    static double number(JsonNode root, String field, double dflt) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isNumber()) {
            throw ApiError.invalid(field, field + " must be a number, found " + kind(v));
        }
        return v.asDouble();
    }

    static boolean bool(JsonNode root, String field, boolean dflt) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isBoolean()) {
            throw ApiError.invalid(field, field + " must be true or false, found " + v);
        }
        return v.asBoolean();
    }

    static void refuseUnless(JsonNode root, String field, int allowed) {
        JsonNode v = root.get(field);
        if (v != null && !v.isNull() && !(v.canConvertToInt() && v.asInt() == allowed)) {
            throw ApiError.invalid(field, field + " is not supported (only " + allowed + "), found " + v);
        }
    }

    static String kind(JsonNode v) {
        JsonNodeType t = v.getNodeType();
        return switch (t) {
            case ARRAY -> v.isEmpty() ? "an empty array" : "an array";
            case OBJECT -> "an object";
            case STRING -> "a string";
            case NUMBER -> "a number (" + v + ")";
            case BOOLEAN -> "a boolean";
            case NULL -> "null";
            default -> t.name().toLowerCase();
        };
    }

    /**
     * What the parser found wrong and where, without the parser's own settings (its feature and constraint names
     * mean nothing to a client).
     */
    static String jsonProblem(Exception e) {
        String message = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
        message = firstLine(message)
                .replaceAll("[:;,]?\\s*(?:enable|disable) `[^`]*`(?: to allow)?", "")
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
