package io.graphlane.checkpoint.gguf;

import java.util.Objects;

/**
 * One validated GGUF metadata value. A scalar is held as a {@code Long} (every integer type; a
 * UINT64 above {@code Long.MAX_VALUE} keeps its bits), {@code Double} (FLOAT32 and FLOAT64),
 * {@code Boolean} or {@code String}; an array of {@code elementType} as a compact Java array:
 * {@code byte[]} (UINT8, INT8, BOOL), {@code short[]} (UINT16, INT16), {@code int[]} (UINT32,
 * INT32), {@code float[]}, {@code long[]} (UINT64, INT64), {@code double[]} or {@code String[]}.
 *
 * @param type the value's type
 * @param elementType an array's element type, or null for a scalar
 * @param value the value, as above
 */
public record GgufValue(GgufValueType type, GgufValueType elementType, Object value) {
    /** Requires a type and a value; an element type exactly for arrays. */
    public GgufValue {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(value, "value");
        if ((type == GgufValueType.ARRAY) != (elementType != null)) {
            throw new IllegalArgumentException("an element type is given exactly for arrays, found " + type + "/" + elementType);
        }
    }

    /** A scalar value. */
    public static GgufValue scalar(GgufValueType type, Object value) {
        return new GgufValue(type, null, value);
    }

    /** An array value. */
    public static GgufValue array(GgufValueType elementType, Object values) {
        return new GgufValue(GgufValueType.ARRAY, elementType, values);
    }

    /** The type as a reader would name it: {@code UINT32}, or {@code ARRAY of STRING}. */
    public String typeName() {
        return type == GgufValueType.ARRAY ? "ARRAY of " + elementType : type.name();
    }

    /** The number of elements of an array value (1 for a scalar). */
    public int length() {
        if (type != GgufValueType.ARRAY) {
            return 1;
        }
        return java.lang.reflect.Array.getLength(value);
    }

    /** Element {@code i} of an integer array as a long (unsigned types widened without sign). */
    public long longAt(int i) {
        return switch (elementType) {
            case UINT8 -> ((byte[]) value)[i] & 0xFFL;
            case INT8 -> ((byte[]) value)[i];
            case BOOL -> ((byte[]) value)[i] != 0 ? 1 : 0;
            case UINT16 -> ((short[]) value)[i] & 0xFFFFL;
            case INT16 -> ((short[]) value)[i];
            case UINT32 -> ((int[]) value)[i] & 0xFFFF_FFFFL;
            case INT32 -> ((int[]) value)[i];
            case UINT64, INT64 -> ((long[]) value)[i];
            default -> throw new IllegalStateException("not an integer array: " + typeName());
        };
    }

    /** Element {@code i} of a numeric array as a double. */
    public double doubleAt(int i) {
        return switch (elementType) {
            case FLOAT32 -> ((float[]) value)[i];
            case FLOAT64 -> ((double[]) value)[i];
            default -> longAt(i);
        };
    }

    @Override
    public String toString() {
        if (type != GgufValueType.ARRAY) {
            return type == GgufValueType.STRING ? "\"" + value + "\"" : String.valueOf(value);
        }
        return "[" + length() + " × " + elementType + "]";
    }
}
