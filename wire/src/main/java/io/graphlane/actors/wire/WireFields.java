package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Registration;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The fields of a wire frame whose size the frame itself declares (strings, byte and element counts, nested objects),
 * read so that nothing is allocated before the declared size is checked against the bytes left in the frame and a
 * fixed cap. A frame is always a whole message in memory (a byte array, or a buffer from its position to its limit),
 * so the bytes left are known; an allocation a frame can cause is bounded by its own size, times at most four (an
 * int array read from one-byte varints).
 *
 * <p>A violation is a {@link WireFormatException} naming the field, the declared size and what the frame holds; the
 * serializer entry points log it and Pekko drops that one frame.
 */
public final class WireFields {
    /** The longest string (in UTF-8 bytes) a frame may carry; longer free text is cut on write. */
    public static final int MAX_STRING_BYTES = 64 * 1024;
    /** The highest tensor rank a frame may declare. */
    public static final int MAX_RANK = 16;

    private static final String CUT = " ... (cut)";

    private WireFields() {
    }

    /** Bytes left in {@code in}'s frame. Refuses a stream-backed input, whose frame size is unknown. */
    public static int remaining(Input in) {
        if (in.getInputStream() != null) {
            throw new IllegalStateException("bounded reads need a whole frame in memory, not a stream");
        }
        return in.limit() - in.position();
    }

    /**
     * Writes {@code value} (which may be null) as a varint of its UTF-8 byte count plus one (0 for null), then its
     * bytes.
     *
     * @throws WireFormatException naming {@code field} if it is longer than {@link #MAX_STRING_BYTES}
     */
    public static void writeString(Output out, String value, String field) {
        if (value == null) {
            out.writeVarInt(0, true);
            return;
        }
        byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
        if (utf8.length > MAX_STRING_BYTES) {
            throw new WireFormatException(field + ": a string of " + utf8.length + " UTF-8 bytes cannot cross nodes; at most "
                    + MAX_STRING_BYTES);
        }
        out.writeVarInt(utf8.length + 1, true);
        out.writeBytes(utf8);
    }

    /** Writes free text (a failure's message, a reason) like {@link #writeString}, cut to fit {@link #MAX_STRING_BYTES}. */
    public static void writeText(Output out, String text, String field) {
        writeString(out, fit(text), field);
    }

    /** {@code text} if its UTF-8 form fits {@link #MAX_STRING_BYTES}, else its longest prefix that fits with a mark. */
    static String fit(String text) {
        if (text == null || text.length() <= MAX_STRING_BYTES / 3) {
            return text;
        }
        CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        CharBuffer chars = CharBuffer.wrap(text);
        utf8.encode(chars, ByteBuffer.allocate(MAX_STRING_BYTES), true);
        if (!chars.hasRemaining()) {
            return text;
        }
        // The encoder stops on a character boundary; leave room for the mark.
        return text.substring(0, Math.max(0, chars.position() - CUT.length())) + CUT;
    }

    /**
     * Reads a string written by {@link #writeString} (null included).
     *
     * @throws WireFormatException naming {@code field} if it declares more than {@link #MAX_STRING_BYTES} bytes or
     *     more than the frame has left
     */
    public static String string(Input in, String field) {
        int declared = in.readVarInt(true);
        if (declared == 0) {
            return null;
        }
        int bytes = declared - 1;
        if (declared < 0 || bytes > MAX_STRING_BYTES) {
            throw new WireFormatException(field + ": declares a string of " + Integer.toUnsignedString(bytes)
                    + " bytes; expected at most " + MAX_STRING_BYTES);
        }
        int left = remaining(in);
        if (bytes > left) {
            throw new WireFormatException(field + ": declares a string of " + bytes + " bytes but the frame has " + left + " left");
        }
        return new String(in.readBytes(bytes), StandardCharsets.UTF_8);
    }

    /** Reads a string like {@link #string}, refusing null. */
    public static String requiredString(Input in, String field) {
        String s = string(in, field);
        if (s == null) {
            throw new WireFormatException(field + ": missing; expected a string");
        }
        return s;
    }

    /**
     * Reads a varint count of elements of {@code elementBytes} bytes each that follow in the frame.
     *
     * @throws WireFormatException naming {@code field} if the count is negative or its elements need more bytes than
     *     the frame has left
     */
    public static int length(Input in, String field, int elementBytes) {
        int n = in.readVarInt(true);
        long bytes = (long) n * elementBytes;
        int left = remaining(in);
        if (n < 0 || bytes > left) {
            String declared = elementBytes == 1 ? Integer.toUnsignedString(n) + " bytes"
                    : Integer.toUnsignedString(n) + " elements of " + elementBytes + " bytes";
            throw new WireFormatException(field + ": declares " + declared + " but the frame has " + left + " left");
        }
        return n;
    }

    /**
     * Reads a varint count of entries that each take at least one byte of the frame.
     *
     * @throws WireFormatException naming {@code field} if the count is negative, above {@code max}, or above the
     *     bytes the frame has left
     */
    public static int count(Input in, String field, int max) {
        return checkedCount(in.readVarInt(true), in, field, max);
    }

    private static int checkedCount(int n, Input in, String field, int max) {
        if (n < 0 || n > max) {
            throw new WireFormatException(field + ": declares " + Integer.toUnsignedString(n) + " entries; expected at most " + max);
        }
        int left = remaining(in);
        if (n > left) {
            throw new WireFormatException(field + ": declares " + n + " entries but the frame has " + left
                    + " bytes left (each takes at least one)");
        }
        return n;
    }

    /** Reads a {@link #count} of at most {@code max} varint ints, then the ints. */
    public static int[] ints(Input in, String field, int max) {
        return in.readInts(count(in, field, max), true);
    }

    /** Reads the count plus one (0 for null) of at most {@code max} varint ints, then the ints; null for 0. */
    public static int[] nullableInts(Input in, String field, int max) {
        int declared = in.readVarInt(true);
        return declared == 0 ? null : in.readInts(checkedCount(declared - 1, in, field, max), true);
    }

    /**
     * Reads a class id and an object of that class, refusing (before reading the object) a null or a class that is
     * not a {@code type}: a frame cannot nest a message inside itself.
     */
    public static <T> T object(Kryo kryo, Input in, Class<T> type, String field) {
        Registration registration = kryo.readClass(in);
        if (registration == null) {
            throw new WireFormatException(field + ": missing; expected a value of type " + type.getSimpleName());
        }
        if (!type.isAssignableFrom(registration.getType())) {
            throw new WireFormatException(field + ": expected a value of type " + type.getSimpleName() + ", found "
                    + registration.getType().getSimpleName() + " (class id " + registration.getId() + ")");
        }
        return type.cast(kryo.readObject(in, registration.getType()));
    }
}
