package io.graphlane.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.inference.sampling.GenerationDefaults;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The sampling and output options an OpenAI request shares between completions and chat completions, parsed and
 * range-checked: {@code temperature}, {@code top_p}, {@code seed}, {@code presence_penalty}, {@code frequency_penalty},
 * vLLM's {@code top_k}, {@code min_p} and {@code repetition_penalty}, {@code logit_bias}, {@code stop}, {@code stop_token_ids}, {@code n}, {@code best_of}, the log-probability request
 * (completions' integer {@code logprobs}; chat's {@code logprobs} + {@code top_logprobs}) and
 * {@code stream_options.include_usage}. Every refusal is a 400 naming the field. {@code temperature}, {@code top_p},
 * {@code top_k}, {@code min_p} and {@code repetition_penalty} a request leaves out (or sends as null) take the model's
 * {@link GenerationDefaults} (its generation_config.json), as vLLM does, else the API's defaults (1, 1, off, off, 1).
 *
 * @param sampling     how each choice's tokens are chosen (the seed is the first choice's; see {@link #samplingFor})
 * @param n            choices per prompt, 1..{@value #MAX_N}
 * @param stop         stop strings, at most {@value #MAX_STOP}: a choice's text ends before the first occurrence
 * @param stopTokenIds token ids that end a choice when generated (the token is kept, as an end-of-sequence token)
 * @param includeUsage whether a streamed response ends with a chunk carrying {@code usage}
 */
record GenerationOptions(SamplingParams sampling, int n, List<String> stop, Set<Integer> stopTokenIds, boolean includeUsage) {

    /** The most choices per prompt. */
    static final int MAX_N = 8;
    /** The most stop strings, as OpenAI. */
    static final int MAX_STOP = 4;
    /** The most alternatives per token (OpenAI's completions allow 5; chat's 20 are capped here too). */
    static final int MAX_LOGPROBS = 5;
    /** Derives choice j's seed from the request's: distinct streams per choice, choice 0 keeps the seed itself. */
    private static final long SEED_STRIDE = 0x9E3779B97F4A7C15L;

    /** How a request asks for log-probabilities. */
    enum LogprobsStyle {
        /** {@code "logprobs": k} (an integer 0..5, or null). */
        COMPLETIONS,
        /** {@code "logprobs": true} with {@code "top_logprobs": k} (0..20 in OpenAI's API; more than 5 refused here). */
        CHAT
    }

    GenerationOptions {
        stop = List.copyOf(stop);
        stopTokenIds = Set.copyOf(stopTokenIds);
    }

    /** As {@link #parse(JsonNode, LogprobsStyle, boolean, GenerationDefaults)} without model defaults. */
    static GenerationOptions parse(JsonNode root, LogprobsStyle style, boolean stream) {
        return parse(root, style, stream, GenerationDefaults.NONE);
    }

    /**
     * The options of {@code root}; {@code stream} is whether the response is streamed (stream_options needs it);
     * {@code defaults} fill the sampling fields the request leaves out.
     */
    static GenerationOptions parse(JsonNode root, LogprobsStyle style, boolean stream, GenerationDefaults defaults) {
        double temperature = JsonFields.number(root, "temperature", defaults.temperature().orElse(1.0));
        if (JsonFields.present(root, "temperature") && (temperature < 0 || temperature > 2)) {
            throw ApiError.invalid("temperature", "temperature must be between 0 and 2, found " + temperature);
        }
        double topP = JsonFields.number(root, "top_p", defaults.topP().orElse(1.0));
        if (!(topP > 0 && topP <= 1)) {
            throw ApiError.invalid("top_p", "top_p must be in (0, 1], found " + topP);
        }
        int topK = topK(root, defaults.topK().orElse(-1));
        double minP = JsonFields.number(root, "min_p", defaults.minP().orElse(0.0));
        if (!(minP >= 0 && minP <= 1)) {
            throw ApiError.invalid("min_p", "min_p must be in [0, 1], found " + minP);
        }
        double repetition = JsonFields.number(root, "repetition_penalty", defaults.repetitionPenalty().orElse(1.0));
        if (!(repetition > 0) || Double.isInfinite(repetition)) {
            throw ApiError.invalid("repetition_penalty", "repetition_penalty must be a finite number > 0 (1 is off), found " + repetition);
        }
        long seed = root.hasNonNull("seed") ? JsonFields.longField(root, "seed") : System.nanoTime();
        double presence = JsonFields.boundedNumber(root, "presence_penalty", 0, SamplingParams.MAX_PENALTY);
        double frequency = JsonFields.boundedNumber(root, "frequency_penalty", 0, SamplingParams.MAX_PENALTY);
        int n = JsonFields.intField(root, "n", 1, 1);
        if (n > MAX_N) {
            throw ApiError.invalid("n", "n must be at most " + MAX_N + " choices per prompt, found " + n);
        }
        if (JsonFields.present(root, "best_of")) {
            int bestOf = JsonFields.intField(root, "best_of", n, 1);
            if (bestOf != n) {
                throw ApiError.invalid("best_of", "best_of other than n is not supported (every generated choice is returned); found best_of "
                        + bestOf + " with n " + n);
            }
        }
        int logprobs = style == LogprobsStyle.COMPLETIONS ? completionsLogprobs(root) : chatLogprobs(root);
        SamplingParams sampling = new SamplingParams(temperature, topP, seed)
                .withPenalties(presence, frequency)
                .withLogitBias(logitBias(root))
                .withLogprobs(logprobs)
                .withTopKMinP(topK, minP)
                .withRepetitionPenalty(repetition);
        return new GenerationOptions(sampling, n, stop(root), stopTokenIds(root), includeUsage(root, stream));
    }

    /** The sampling of choice {@code j} of a prompt: the request's, with its seed derived for j (j = 0 keeps it). */
    SamplingParams samplingFor(int j) {
        return j == 0 ? sampling : sampling.withSeed(sampling.seed() + j * SEED_STRIDE);
    }

    /** Whether tokens carry log-probabilities. */
    boolean wantsLogprobs() {
        return sampling.wantsLogprobs();
    }

    /** -1 for no log-probabilities, else how many alternatives each token carries (0..{@value #MAX_LOGPROBS}). */
    int logprobs() {
        return sampling.topLogprobs();
    }

    /** vLLM's {@code top_k}: -1 or 0 off, otherwise at least 1 (past the vocabulary it keeps every token). */
    private static int topK(JsonNode root, int dflt) {
        JsonNode v = root.get("top_k");
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < -1) {
            throw ApiError.invalid("top_k", "top_k must be an integer, -1 or 0 (off) or at least 1, found " + v);
        }
        return v.asInt();
    }

    private static int completionsLogprobs(JsonNode root) {
        JsonNode v = root.get("logprobs");
        if (v == null || v.isNull()) {
            return -1;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 0 || v.asInt() > MAX_LOGPROBS) {
            throw ApiError.invalid("logprobs", "logprobs must be an integer from 0 to " + MAX_LOGPROBS + " (alternatives per token), found " + v);
        }
        return v.asInt();
    }

    private static int chatLogprobs(JsonNode root) {
        boolean wanted = JsonFields.bool(root, "logprobs", false);
        if (!JsonFields.present(root, "top_logprobs")) {
            return wanted ? 0 : -1;
        }
        JsonNode v = root.get("top_logprobs");
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 0 || v.asInt() > MAX_LOGPROBS) {
            throw ApiError.invalid("top_logprobs", "top_logprobs must be an integer from 0 to " + MAX_LOGPROBS
                    + " (this server's cap), found " + v);
        }
        if (!wanted) {
            throw ApiError.invalid("top_logprobs", "top_logprobs needs logprobs set to true");
        }
        return v.asInt();
    }

    private static Map<Integer, Float> logitBias(JsonNode root) {
        JsonNode v = root.get("logit_bias");
        if (v == null || v.isNull()) {
            return Map.of();
        }
        if (!v.isObject()) {
            throw ApiError.invalid("logit_bias", "logit_bias must be an object of token id to bias, found " + JsonFields.kind(v));
        }
        Map<Integer, Float> bias = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            int id;
            try {
                id = Integer.parseInt(e.getKey());
            } catch (NumberFormatException notAnId) {
                id = -1;
            }
            if (id < 0) {
                throw ApiError.invalid("logit_bias", "logit_bias keys must be token ids (non-negative integers as strings), found \""
                        + e.getKey() + "\"");
            }
            JsonNode b = e.getValue();
            if (!b.isNumber() || !(Math.abs(b.asDouble()) <= SamplingParams.MAX_BIAS)) {
                throw ApiError.invalid("logit_bias", "logit_bias[\"" + e.getKey() + "\"] must be a number between -100 and 100, found " + b);
            }
            bias.put(id, (float) b.asDouble());
        }
        return bias;
    }

    private static List<String> stop(JsonNode root) {
        JsonNode v = root.get("stop");
        if (v == null || v.isNull()) {
            return List.of();
        }
        List<String> stops = new ArrayList<>();
        if (v.isTextual()) {
            stops.add(v.asText());
        } else if (v.isArray()) {
            if (v.size() > MAX_STOP) {
                throw ApiError.invalid("stop", "stop takes at most " + MAX_STOP + " strings, found " + v.size());
            }
            for (int i = 0; i < v.size(); i++) {
                if (!v.get(i).isTextual()) {
                    throw ApiError.invalid("stop", "stop[" + i + "] must be a string, found " + JsonFields.kind(v.get(i)));
                }
                stops.add(v.get(i).asText());
            }
        } else {
            throw ApiError.invalid("stop", "stop must be a string or an array of up to " + MAX_STOP + " strings, found " + JsonFields.kind(v));
        }
        for (String s : stops) {
            if (s.isEmpty()) {
                throw ApiError.invalid("stop", "a stop string must not be empty");
            }
        }
        return stops;
    }

    private static Set<Integer> stopTokenIds(JsonNode root) {
        JsonNode v = root.get("stop_token_ids");
        if (v == null || v.isNull()) {
            return Set.of();
        }
        if (!v.isArray()) {
            throw ApiError.invalid("stop_token_ids", "stop_token_ids must be an array of token ids, found " + JsonFields.kind(v));
        }
        Set<Integer> ids = new LinkedHashSet<>();
        for (int i = 0; i < v.size(); i++) {
            JsonNode id = v.get(i);
            if (!id.isIntegralNumber() || !id.canConvertToInt() || id.asInt() < 0) {
                throw ApiError.invalid("stop_token_ids", "stop_token_ids[" + i + "] must be a non-negative integer token id, found " + id);
            }
            ids.add(id.asInt());
        }
        return ids;
    }

    private static boolean includeUsage(JsonNode root, boolean stream) {
        JsonNode v = root.get("stream_options");
        if (v == null || v.isNull()) {
            return false;
        }
        if (!stream) {
            throw ApiError.invalid("stream_options", "stream_options is only allowed when stream is true");
        }
        if (!v.isObject()) {
            throw ApiError.invalid("stream_options", "stream_options must be an object, found " + JsonFields.kind(v));
        }
        for (Iterator<String> names = v.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!name.equals("include_usage")) {
                throw ApiError.invalid("stream_options", "stream_options." + name + " is not supported (only include_usage)");
            }
        }
        JsonNode include = v.get("include_usage");
        if (include == null || include.isNull()) {
            return false;
        }
        if (!include.isBoolean()) {
            throw ApiError.invalid("stream_options", "stream_options.include_usage must be true or false, found " + include);
        }
        return include.asBoolean();
    }

    /** Refuses {@code logit_bias} and {@code stop_token_ids} ids at or beyond {@code vocabularySize}. */
    void checkVocabulary(int vocabularySize) {
        checkLogitBias(sampling, vocabularySize);
        for (int id : stopTokenIds) {
            if (id >= vocabularySize) {
                throw ApiError.invalid("stop_token_ids", "stop_token_ids names token id " + id + ", outside the vocabulary [0, " + vocabularySize + ")");
            }
        }
    }

    /** Refuses {@code logit_bias} ids of {@code sampling} at or beyond {@code vocabularySize}. */
    static void checkLogitBias(SamplingParams sampling, int vocabularySize) {
        int largest = sampling.largestBiasedId();
        if (largest >= vocabularySize) {
            throw ApiError.invalid("logit_bias", "logit_bias names token id " + largest + ", outside the vocabulary [0, " + vocabularySize + ")");
        }
    }
}
