package io.graphlane.checkpoint.json;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.graphlane.checkpoint.CheckpointException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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

    /**
     * Reads {@code file} (at most {@code maxBytes}, strict UTF-8) as one JSON object, the way a model directory's small
     * JSON files (generation_config.json, tokenizer_config.json) are read.
     *
     * @throws CheckpointException naming the file: too large, not UTF-8, not valid JSON (with line and column), or
     *                             not an object
     */
    public static JsonNode readObject(Path file, long maxBytes) {
        String text;
        try {
            long size = Files.size(file);
            if (size > maxBytes) {
                throw new CheckpointException(file + ": " + size + " bytes, over the limit of " + maxBytes);
            }
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(Files.readAllBytes(file))).toString();
        } catch (CharacterCodingException e) {
            throw new CheckpointException(file + ": not valid UTF-8");
        } catch (IOException e) {
            throw new CheckpointException(file + ": cannot read: " + e);
        }
        Result parsed = parse(text);
        JsonNode root = parsed.node().orElseThrow(() -> new CheckpointException(file + ": not valid JSON: " + parsed.error()));
        if (!root.isObject()) {
            throw new CheckpointException(file + ": expected a JSON object, found " + root.getNodeType().name().toLowerCase(java.util.Locale.ROOT));
        }
        return root;
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
