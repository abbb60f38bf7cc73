package io.graphlane.inference.sampling;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.GraphlaneException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/**
 * A model's sampling defaults from its {@code generation_config.json}: {@code temperature}, {@code top_p},
 * {@code top_k}, {@code min_p} and {@code repetition_penalty}, each present only where the file sets it. As vLLM
 * does by default ({@code --generation-config auto}), a server uses each one for a request that leaves the field out;
 * a field the request gives wins, and a field neither sets takes the API's default. {@code do_sample} is not read
 * (vLLM does not either: a temperature of 0 is what asks for greedy decoding).
 *
 * @param temperature       the default temperature, {@code >= 0}
 * @param topP              the default top-p, in (0, 1]
 * @param topK              the default top-k, -1 or 0 (off) or at least 1
 * @param minP              the default min-p, in [0, 1]
 * @param repetitionPenalty the default repetition penalty, {@code > 0}
 */
public record GenerationDefaults(OptionalDouble temperature, OptionalDouble topP, OptionalInt topK, OptionalDouble minP,
                                 OptionalDouble repetitionPenalty) {
    /** The file the defaults are read from. */
    public static final String FILE_NAME = "generation_config.json";

    /** No defaults: every field takes the API's default. */
    public static final GenerationDefaults NONE = new GenerationDefaults(OptionalDouble.empty(), OptionalDouble.empty(),
            OptionalInt.empty(), OptionalDouble.empty(), OptionalDouble.empty());

    /**
     * The defaults of model directory {@code dir}: {@link #NONE} when it has no generation_config.json.
     *
     * @throws GraphlaneException naming the file, the field, the expected and the found value when one is out of range
     *                            or not a number, or the file is not a JSON object
     */
    public static GenerationDefaults read(Path dir) {
        Path file = dir.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            return NONE;
        }
        JsonNode root = StrictJson.readObject(file, ModelConfig.MAX_CONFIG_BYTES);
        OptionalDouble temperature = number(file, root, "temperature");
        check(file, "temperature", temperature, t -> t >= 0 && !Double.isInfinite(t), "a finite number >= 0");
        OptionalDouble topP = number(file, root, "top_p");
        check(file, "top_p", topP, p -> p > 0 && p <= 1, "a number in (0, 1]");
        OptionalInt topK = integer(file, root, "top_k");
        if (topK.isPresent() && topK.getAsInt() < -1) {
            throw new GraphlaneException(file + ": field 'top_k' must be -1 or 0 (off) or at least 1, found " + topK.getAsInt());
        }
        OptionalDouble minP = number(file, root, "min_p");
        check(file, "min_p", minP, p -> p >= 0 && p <= 1, "a number in [0, 1]");
        OptionalDouble repetition = number(file, root, "repetition_penalty");
        check(file, "repetition_penalty", repetition, r -> r > 0 && !Double.isInfinite(r), "a finite number > 0");
        return new GenerationDefaults(temperature, topP, topK, minP, repetition);
    }

    /** True when the file sets none of the fields. */
    public boolean isEmpty() {
        return temperature.isEmpty() && topP.isEmpty() && topK.isEmpty() && minP.isEmpty() && repetitionPenalty.isEmpty();
    }

    /** The defaults as {@code name value} pairs in the file's field names, comma-separated, or "none". */
    public String describe() {
        List<String> parts = new ArrayList<>();
        temperature.ifPresent(v -> parts.add("temperature " + v));
        topP.ifPresent(v -> parts.add("top_p " + v));
        topK.ifPresent(v -> parts.add("top_k " + v));
        minP.ifPresent(v -> parts.add("min_p " + v));
        repetitionPenalty.ifPresent(v -> parts.add("repetition_penalty " + v));
        return parts.isEmpty() ? "none" : String.join(", ", parts);
    }

    private interface Range {
        boolean contains(double v);
    }

    private static void check(Path file, String field, OptionalDouble value, Range range, String expected) {
        if (value.isPresent() && !range.contains(value.getAsDouble())) {
            throw new GraphlaneException(file + ": field '" + field + "' must be " + expected + ", found " + value.getAsDouble());
        }
    }

    private static OptionalDouble number(Path file, JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return OptionalDouble.empty();
        }
        if (!v.isNumber()) {
            throw new GraphlaneException(file + ": field '" + field + "' must be a number, found " + v);
        }
        return OptionalDouble.of(v.asDouble());
    }

    private static OptionalInt integer(Path file, JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return OptionalInt.empty();
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new GraphlaneException(file + ": field '" + field + "' must be an integer, found " + v);
        }
        return OptionalInt.of(v.asInt());
    }
}
