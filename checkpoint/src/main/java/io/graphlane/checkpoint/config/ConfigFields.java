package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Typed access to the fields of one JSON object of config.json ({@code prefix} names nested objects, such as
 * {@code rope_scaling.}); every refusal names the file and the field, the expected and the found value.
 */
final class ConfigFields {
    final Path file;
    final JsonNode root;
    private final String prefix;

    ConfigFields(Path file, JsonNode root, String prefix) {
        this.file = file;
        this.root = root;
        this.prefix = prefix;
    }

    ModelConfigException refuse(String name, String problem) {
        return new ModelConfigException(file + ": field '" + prefix + name + "' " + problem);
    }

    boolean has(String name) {
        JsonNode v = root.get(name);
        return v != null && !v.isNull();
    }

    int positiveInt(String name) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) {
            throw refuse(name, "is missing, expected a positive integer");
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw refuse(name, "is " + v + ", expected a positive integer");
        }
        int i = v.intValue();
        if (i <= 0) {
            throw refuse(name, "is " + i + ", expected a positive integer");
        }
        return i;
    }

    /** A positive integer of at most {@code max}; {@code why} says what the bound protects. */
    int boundedInt(String name, int max, String why) {
        int i = positiveInt(name);
        if (i > max) {
            throw refuse(name, "is " + i + ", over the limit of " + max + " (" + why + ")");
        }
        return i;
    }

    double positiveDouble(String name) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) {
            throw refuse(name, "is missing, expected a positive number");
        }
        if (!v.isNumber() || !(v.doubleValue() > 0) || Double.isInfinite(v.doubleValue())) {
            throw refuse(name, "is " + v + ", expected a positive number");
        }
        return v.doubleValue();
    }

    double positiveDouble(String name, double absent) {
        return has(name) ? positiveDouble(name) : absent;
    }

    boolean bool(String name, boolean absent) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) {
            return absent;
        }
        if (!v.isBoolean()) {
            throw refuse(name, "is " + v + ", expected true or false");
        }
        return v.booleanValue();
    }

    Optional<String> optionalString(String name) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) {
            return Optional.empty();
        }
        if (!v.isTextual()) {
            throw refuse(name, "is " + v + ", expected a string");
        }
        return Optional.of(v.textValue());
    }

    /** A list of exactly {@code length} positive finite numbers. */
    double[] positiveDoubles(String name, int length) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) {
            throw refuse(name, "is missing, expected a list of " + length + " positive numbers");
        }
        if (!v.isArray() || v.size() != length) {
            throw refuse(name, "is " + (v.isArray() ? "a list of " + v.size() : v.getNodeType().toString().toLowerCase())
                    + ", expected a list of " + length + " positive numbers (one per rotating pair of a head)");
        }
        double[] out = new double[length];
        for (int i = 0; i < length; i++) {
            JsonNode e = v.get(i);
            if (!e.isNumber() || !(e.doubleValue() > 0) || Double.isInfinite(e.doubleValue())) {
                throw refuse(name, "holds " + e + " at index " + i + ", expected a positive number");
            }
            out[i] = e.doubleValue();
        }
        return out;
    }
}
