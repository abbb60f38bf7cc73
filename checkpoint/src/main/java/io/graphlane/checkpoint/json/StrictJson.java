package io.graphlane.checkpoint.json;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.Optional;

/**
 * Strict JSON for checkpoint files: standard JSON only (no comments, NaN or single quotes),
 * duplicate keys refused, trailing tokens refused, nesting and number lengths bounded so that
 * a hostile file can neither recurse deeply nor make the parser work beyond its input size.
 */
public final class StrictJson {
    /** Deepest nesting accepted; checkpoint files need four levels. */
    public static final int MAX_NESTING_DEPTH = 64;

    private static final ObjectMapper MAPPER = JsonMapper.builder(
                    com.fasterxml.jackson.core.JsonFactory.builder()
                            .streamReadConstraints(StreamReadConstraints.builder()
                                    .maxNestingDepth(MAX_NESTING_DEPTH)
                                    .maxNumberLength(64)
                                    .build())
                            .build())
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .disable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .disable(JsonReadFeature.ALLOW_JAVA_COMMENTS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .build();

    private StrictJson() {
    }

    /** The shared strict mapper (thread-safe); also used to write JSON. */
    public static ObjectMapper mapper() {
        return MAPPER;
    }

    /**
     * Parses {@code text} as one JSON value, or returns the parser's one-line reason
     * (with line and column) for refusing it.
     */
    public static Result parse(String text) {
        try {
            JsonNode node = MAPPER.readTree(text);
            if (node == null || node.isMissingNode()) {
                return new Result(null, "empty input, expected a JSON object");
            }
            return new Result(node, null);
        } catch (JsonProcessingException e) {
            return new Result(null, describe(e));
        }
    }

    private static String describe(JsonProcessingException e) {
        String msg = e.getOriginalMessage();
        if (msg != null) {
            int nl = msg.indexOf('\n');
            if (nl >= 0) {
                msg = msg.substring(0, nl);
            }
        }
        if (e.getLocation() != null) {
            return msg + " (line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr() + ")";
        }
        return msg;
    }

    /** A parse outcome: a JSON value, or the reason it was refused. */
    public record Result(JsonNode value, String error) {
        /** The parsed value, if the text was valid JSON. */
        public Optional<JsonNode> node() {
            return Optional.ofNullable(value);
        }
    }
}
