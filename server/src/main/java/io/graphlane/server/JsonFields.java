package io.graphlane.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import java.util.Optional;

/** Reads typed fields of a request body; every refusal is a 400 naming the field, the expected and the found value. */
final class JsonFields {
    private JsonFields() {
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

    /** A number in {@code [-bound, bound]}, {@code dflt} when absent. */
    static double boundedNumber(JsonNode root, String field, double dflt, double bound) {
        double v = number(root, field, dflt);
        if (!(Math.abs(v) <= bound)) {
            throw ApiError.invalid(field, field + " must be between " + (-bound) + " and " + bound + ", found " + v);
        }
        return v;
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

    static boolean present(JsonNode root, String field) {
        JsonNode v = root.get(field);
        return v != null && !v.isNull();
    }

    /** What a JSON value is, in words for an error message. */
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
}
