package io.graphlane.checkpoint.gguf;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * Typed reads of GGUF metadata: each refuses a value of the wrong type with a one-line error naming
 * the file, the key, the expected and the found type. A pure view over a map, so a mapping function
 * can take metadata built in a test as well as a file's.
 */
public final class GgufMetadata {
    private final Path file;
    private final Map<String, GgufValue> values;

    /** A view of {@code values}, read from {@code file} (named in errors). */
    public GgufMetadata(Path file, Map<String, GgufValue> values) {
        this.file = Objects.requireNonNull(file, "file");
        this.values = Objects.requireNonNull(values, "values");
    }

    /** The file named in errors. */
    public Path file() {
        return file;
    }

    /** The raw values. */
    public Map<String, GgufValue> values() {
        return values;
    }

    /** True if {@code key} is present. */
    public boolean has(String key) {
        return values.containsKey(key);
    }

    private GgufFormatException wrongType(String key, GgufValue v, String expected) {
        return new GgufFormatException(file, "metadata '" + key + "' is a " + v.typeName() + " (" + v + "), expected "
                + expected);
    }

    /** The string {@code key}, or empty. */
    public Optional<String> string(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v.type() != GgufValueType.STRING) {
            throw wrongType(key, v, "a STRING");
        }
        return Optional.of((String) v.value());
    }

    /** The integer {@code key} (any integer type), or empty. */
    public OptionalLong integer(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return OptionalLong.empty();
        }
        if (!v.type().isInteger()) {
            throw wrongType(key, v, "an integer");
        }
        return OptionalLong.of((Long) v.value());
    }

    /** The integer {@code key}, refused unless it is in [min, max]; or empty. */
    public OptionalLong integer(String key, long min, long max) {
        OptionalLong v = integer(key);
        if (v.isPresent() && (v.getAsLong() < min || v.getAsLong() > max)) {
            throw new GgufFormatException(file, "metadata '" + key + "' is " + v.getAsLong() + ", expected " + min
                    + " to " + max);
        }
        return v;
    }

    /** The number {@code key} (a float or an integer type), or empty. */
    public OptionalDouble number(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return OptionalDouble.empty();
        }
        if (v.type() == GgufValueType.FLOAT32 || v.type() == GgufValueType.FLOAT64) {
            return OptionalDouble.of((Double) v.value());
        }
        if (v.type().isInteger()) {
            return OptionalDouble.of((Long) v.value());
        }
        throw wrongType(key, v, "a number");
    }

    /** The boolean {@code key}, or empty. */
    public Optional<Boolean> bool(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v.type() != GgufValueType.BOOL) {
            throw wrongType(key, v, "a BOOL");
        }
        return Optional.of((Boolean) v.value());
    }

    /** The string array {@code key}, or empty. */
    public Optional<String[]> strings(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v.type() != GgufValueType.ARRAY || v.elementType() != GgufValueType.STRING) {
            throw wrongType(key, v, "an ARRAY of STRING");
        }
        return Optional.of((String[]) v.value());
    }

    /** The numeric array {@code key} (any integer or float element type), or empty. */
    public Optional<GgufValue> numbers(String key) {
        GgufValue v = values.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v.type() != GgufValueType.ARRAY || v.elementType() == GgufValueType.STRING
                || v.elementType() == GgufValueType.BOOL) {
            throw wrongType(key, v, "an ARRAY of numbers");
        }
        return Optional.of(v);
    }

    /** The required string {@code key}. */
    public String requireString(String key, String purpose) {
        return string(key).orElseThrow(() -> missing(key, purpose));
    }

    /** The required integer {@code key}, in [min, max]. */
    public long requireInteger(String key, long min, long max, String purpose) {
        return integer(key, min, max).orElseThrow(() -> missing(key, purpose));
    }

    /** An error naming a missing key. */
    public GgufFormatException missing(String key, String purpose) {
        return new GgufFormatException(file, "metadata '" + key + "' is missing (" + purpose + ")");
    }
}
