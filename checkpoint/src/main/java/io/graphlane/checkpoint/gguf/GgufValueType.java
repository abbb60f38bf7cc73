package io.graphlane.checkpoint.gguf;

import java.util.Optional;

/** The GGUF metadata value types ({@code enum gguf_type}), with their ids and the bytes of one scalar. */
public enum GgufValueType {
    UINT8(0, 1), INT8(1, 1), UINT16(2, 2), INT16(3, 2), UINT32(4, 4), INT32(5, 4), FLOAT32(6, 4), BOOL(7, 1),
    STRING(8, 8), ARRAY(9, 12), UINT64(10, 8), INT64(11, 8), FLOAT64(12, 8);

    private final int id;
    private final int minBytes;

    GgufValueType(int id, int minBytes) {
        this.id = id;
        this.minBytes = minBytes;
    }

    /** The type's id in the file. */
    public int id() {
        return id;
    }

    /** The fewest bytes one value of this type takes in the file (a string's or array's length prefix included). */
    public int minBytes() {
        return minBytes;
    }

    /** True for the integer types. */
    public boolean isInteger() {
        return this == UINT8 || this == INT8 || this == UINT16 || this == INT16 || this == UINT32 || this == INT32
                || this == UINT64 || this == INT64;
    }

    /** The type with id {@code id}, or empty. */
    public static Optional<GgufValueType> fromId(long id) {
        for (GgufValueType t : values()) {
            if (t.id == id) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }
}
