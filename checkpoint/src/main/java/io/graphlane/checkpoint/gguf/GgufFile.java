package io.graphlane.checkpoint.gguf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The fully validated header of one GGUF file (versions 2 and 3): metadata, tensor table, alignment
 * and data section. {@link #read(Path)} checks every count, string length, array length, value type,
 * dimension count, dimension, tensor type, byte size, offset and the alignment against the format and
 * the file's length before using it, so nothing is allocated by a size the file claims before that
 * size has been checked, and the tensor bytes it describes lie inside the file.
 *
 * <p>Layout (little-endian): magic {@code "GGUF"}, u32 version, u64 tensor count, u64 metadata count;
 * the metadata (string key, u32 value type, value; a string is a u64 length and UTF-8 bytes, an array a
 * u32 element type, a u64 count and the elements); the tensor table (string name, u32 dimension count,
 * u64 dimensions innermost first, u32 ggml type, u64 offset); padding to {@code general.alignment}
 * (default 32); then the data section, each tensor at its offset, in table order, each padded to the
 * alignment (ggml's rule).
 */
public final class GgufFile {
    /** The file magic, "GGUF" read as a little-endian u32. */
    public static final int MAGIC = 0x46554747;

    /** The most bytes of metadata and tensor table read (the header; the data section is not bounded). */
    public static final long MAX_HEADER_BYTES = 64L << 20;

    /** The alignment of the data section and of each tensor when {@code general.alignment} is absent. */
    public static final int DEFAULT_ALIGNMENT = 32;

    /** The metadata key of the alignment. */
    public static final String ALIGNMENT_KEY = "general.alignment";

    /** ggml's most dimensions of a tensor. */
    public static final int MAX_DIMS = 4;

    /** ggml's longest tensor name, in bytes ({@code GGML_MAX_NAME} − 1). */
    public static final int MAX_NAME_BYTES = 63;

    private final Path file;
    private final int version;
    private final long fileLength;
    private final int alignment;
    private final long dataStart;
    private final Map<String, GgufValue> metadata;
    private final Map<String, GgufTensorInfo> tensors;

    private GgufFile(Path file, int version, long fileLength, int alignment, long dataStart,
                     Map<String, GgufValue> metadata, Map<String, GgufTensorInfo> tensors) {
        this.file = file;
        this.version = version;
        this.fileLength = fileLength;
        this.alignment = alignment;
        this.dataStart = dataStart;
        this.metadata = Collections.unmodifiableMap(metadata);
        this.tensors = Collections.unmodifiableMap(tensors);
    }

    /**
     * Reads and validates the header of {@code file}.
     *
     * @throws GgufFormatException naming the file and the field of the first rule broken
     */
    public static GgufFile read(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long length = channel.size();
            long window = Math.min(length, MAX_HEADER_BYTES);
            ByteBuffer bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, window).order(ByteOrder.LITTLE_ENDIAN);
            return parse(file, length, bytes);
        } catch (IOException e) {
            throw new GgufFormatException(file, "cannot read the file: " + e, e);
        }
    }

    /**
     * Validates a GGUF header held in {@code bytes} (the file's first bytes, up to {@link #MAX_HEADER_BYTES})
     * of a file {@code fileLength} bytes long.
     */
    static GgufFile parse(Path file, long fileLength, ByteBuffer bytes) {
        Cursor in = new Cursor(file, fileLength, bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN));
        if (fileLength < 24) {
            throw new GgufFormatException(file, "file is " + fileLength
                    + " bytes long, shorter than the 24-byte GGUF header (magic, version, tensor count, metadata count)");
        }
        int magic = in.i32("magic");
        if (magic != MAGIC) {
            throw new GgufFormatException(file, "magic is 0x" + String.format("%08x", magic)
                    + ", expected 0x46554747 (\"GGUF\"): not a GGUF file");
        }
        long version = in.u32("version");
        if (version != 2 && version != 3) {
            throw new GgufFormatException(file, "field 'version' is " + version + ", expected 2 or 3"
                    + (version == 1 ? " (GGUF v1 files are not read; convert them again)" : ""));
        }
        long tensorCount = in.i64("tensor_count");
        long kvCount = in.i64("metadata_kv_count");
        // a key-value pair takes at least 8 + 1 + 4 + 1 bytes; a tensor entry at least 8 + 1 + 4 + 8 + 4 + 8
        in.checkCount("metadata_kv_count", kvCount, 14);
        in.checkCount("tensor_count", tensorCount, 33);

        Map<String, GgufValue> metadata = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            String key = in.string("metadata key " + i, Integer.MAX_VALUE);
            if (key.isEmpty()) {
                throw new GgufFormatException(file, "metadata key " + i + " is empty");
            }
            String where = "metadata '" + key + "'";
            GgufValue value = readValue(in, where);
            if (metadata.putIfAbsent(key, value) != null) {
                throw new GgufFormatException(file, where + " appears twice (metadata keys " + indexOf(metadata, key)
                        + " and " + i + ")");
            }
        }
        int alignment = DEFAULT_ALIGNMENT;
        GgufValue a = metadata.get(ALIGNMENT_KEY);
        if (a != null) {
            if (a.type() != GgufValueType.UINT32) {
                throw new GgufFormatException(file, "metadata '" + ALIGNMENT_KEY + "' is a " + a.typeName()
                        + ", expected a UINT32");
            }
            long value = (Long) a.value();
            if (value == 0 || (value & (value - 1)) != 0 || value > (1 << 30)) {
                throw new GgufFormatException(file, "metadata '" + ALIGNMENT_KEY + "' is " + value
                        + ", expected a power of 2 from 1 to 2^30");
            }
            alignment = (int) value;
        }

        Map<String, GgufTensorInfo> tensors = new LinkedHashMap<>();
        java.util.List<GgufTensorInfo> order = new java.util.ArrayList<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = in.string("tensor " + i + " name", MAX_NAME_BYTES);
            if (name.isEmpty()) {
                throw new GgufFormatException(file, "tensor " + i + " has an empty name");
            }
            String where = "tensor '" + name + "'";
            if (tensors.containsKey(name)) {
                throw new GgufFormatException(file, where + " appears twice in the tensor table");
            }
            long nDims = in.u32(where + " n_dims");
            if (nDims < 1 || nDims > MAX_DIMS) {
                throw new GgufFormatException(file, where + ": field 'n_dims' is " + nDims + ", expected 1 to " + MAX_DIMS);
            }
            long[] ne = new long[(int) nDims];
            for (int d = 0; d < nDims; d++) {
                ne[d] = in.i64(where + " ne[" + d + "]");
                if (ne[d] < 0) {
                    throw new GgufFormatException(file, where + ": dimension ne[" + d + "] is "
                            + Long.toUnsignedString(ne[d]) + ", more than fits in a signed 64-bit count");
                }
            }
            long typeId = in.u32(where + " type");
            GgmlType type = GgmlType.fromId(typeId).orElseThrow(() -> new GgufFormatException(file, where
                    + ": type " + GgmlType.describe(typeId) + " is not supported, expected one of "
                    + GgmlType.supportedNames()));
            if (ne[0] % type.blockValues() != 0) {
                throw new GgufFormatException(file, where + ": row length ne[0] = " + ne[0] + " is not a multiple of "
                        + type.blockValues() + ", the " + type + " block size");
            }
            long size = GgufTensorInfo.byteSizeOf(type, ne);
            if (size < 0) {
                throw new GgufFormatException(file, where + ": " + type + " dimensions " + java.util.Arrays.toString(ne)
                        + " hold more bytes than fit in 64 bits");
            }
            long offset = in.i64(where + " offset");
            GgufTensorInfo info = new GgufTensorInfo(name, type, ne, offset, size);
            tensors.put(name, info);
            order.add(info);
        }
        long headerEnd = in.position();
        long dataStart = align(headerEnd, alignment);
        if (!tensors.isEmpty() && dataStart > fileLength) {
            throw new GgufFormatException(file, "data section starts at byte " + dataStart + " (header end " + headerEnd
                    + " aligned to " + alignment + "), past the end of the file (" + fileLength + " bytes): the file is truncated");
        }
        long expected = 0;
        for (GgufTensorInfo t : order) {
            String where = "tensor '" + t.name() + "'";
            if (t.offset() != expected) {
                throw new GgufFormatException(file, where + ": field 'offset' is " + Long.toUnsignedString(t.offset())
                        + ", expected " + expected + " (tensors lie in table order, each padded to the alignment "
                        + alignment + ")");
            }
            if (t.byteSize() > fileLength - dataStart || expected > fileLength - dataStart - t.byteSize()) {
                throw new GgufFormatException(file, where + ": its " + t.byteSize() + " bytes from byte "
                        + (dataStart + expected) + " run past the end of the file (" + fileLength
                        + " bytes): the file is truncated");
            }
            expected = align(expected + t.byteSize(), alignment);
        }
        if (!tensors.isEmpty() && fileLength > dataStart + expected) {
            throw new GgufFormatException(file, "trailing bytes: the data section ends at byte " + (dataStart + expected)
                    + " but the file is " + fileLength + " bytes long");
        }
        return new GgufFile(file, (int) version, fileLength, alignment, tensors.isEmpty() ? headerEnd : dataStart,
                metadata, tensors);
    }

    private static int indexOf(Map<String, ?> map, String key) {
        int i = 0;
        for (String k : map.keySet()) {
            if (k.equals(key)) {
                return i;
            }
            i++;
        }
        return -1;
    }

    private static long align(long offset, long alignment) {
        long rest = offset % alignment;
        return rest == 0 ? offset : offset + (alignment - rest);
    }

    private static GgufValue readValue(Cursor in, String where) {
        long typeId = in.u32(where + " value type");
        GgufValueType type = GgufValueType.fromId(typeId).orElseThrow(() -> new GgufFormatException(in.file,
                where + ": value type " + typeId + " is not a GGUF type, expected 0 to 12"));
        if (type != GgufValueType.ARRAY) {
            return GgufValue.scalar(type, readScalar(in, type, where));
        }
        long elementId = in.u32(where + " array element type");
        GgufValueType element = GgufValueType.fromId(elementId).orElseThrow(() -> new GgufFormatException(in.file,
                where + ": array element type " + elementId + " is not a GGUF type, expected 0 to 12"));
        if (element == GgufValueType.ARRAY) {
            throw new GgufFormatException(in.file, where + ": an array of arrays is not read, expected an array of scalars or strings");
        }
        long n = in.i64(where + " array length");
        in.checkCount(where + " array length", n, element.minBytes());
        int count = (int) n;
        return GgufValue.array(element, switch (element) {
            case UINT8, INT8, BOOL -> {
                byte[] v = new byte[count];
                in.bytes(where, v);
                if (element == GgufValueType.BOOL) {
                    for (int i = 0; i < count; i++) {
                        checkBool(in, where + "[" + i + "]", v[i]);
                    }
                }
                yield v;
            }
            case UINT16, INT16 -> {
                short[] v = new short[count];
                for (int i = 0; i < count; i++) {
                    v[i] = in.i16(where);
                }
                yield v;
            }
            case UINT32, INT32 -> {
                int[] v = new int[count];
                for (int i = 0; i < count; i++) {
                    v[i] = in.i32(where);
                }
                yield v;
            }
            case FLOAT32 -> {
                float[] v = new float[count];
                for (int i = 0; i < count; i++) {
                    v[i] = Float.intBitsToFloat(in.i32(where));
                }
                yield v;
            }
            case UINT64, INT64 -> {
                long[] v = new long[count];
                for (int i = 0; i < count; i++) {
                    v[i] = in.i64(where);
                }
                yield v;
            }
            case FLOAT64 -> {
                double[] v = new double[count];
                for (int i = 0; i < count; i++) {
                    v[i] = Double.longBitsToDouble(in.i64(where));
                }
                yield v;
            }
            case STRING -> {
                String[] v = new String[count];
                for (int i = 0; i < count; i++) {
                    v[i] = in.string(where + "[" + i + "]", Integer.MAX_VALUE);
                }
                yield v;
            }
            case ARRAY -> throw new IllegalStateException("refused above");
        });
    }

    private static void checkBool(Cursor in, String where, byte b) {
        if (b != 0 && b != 1) {
            throw new GgufFormatException(in.file, where + ": a BOOL is " + (b & 0xFF) + ", expected 0 or 1");
        }
    }

    private static Object readScalar(Cursor in, GgufValueType type, String where) {
        return switch (type) {
            case UINT8 -> (long) (in.i8(where) & 0xFF);
            case INT8 -> (long) in.i8(where);
            case UINT16 -> (long) (in.i16(where) & 0xFFFF);
            case INT16 -> (long) in.i16(where);
            case UINT32 -> in.u32(where);
            case INT32 -> (long) in.i32(where);
            case UINT64, INT64 -> in.i64(where);
            case FLOAT32 -> (double) Float.intBitsToFloat(in.i32(where));
            case FLOAT64 -> Double.longBitsToDouble(in.i64(where));
            case BOOL -> {
                byte b = in.i8(where);
                checkBool(in, where, b);
                yield b != 0;
            }
            case STRING -> in.string(where, Integer.MAX_VALUE);
            case ARRAY -> throw new IllegalStateException("arrays are read by readValue");
        };
    }

    /** Reads the header's bytes in order, refusing any read past the file's end or the header limit. */
    private static final class Cursor {
        private final Path file;
        private final long fileLength;
        private final ByteBuffer bytes;

        Cursor(Path file, long fileLength, ByteBuffer bytes) {
            this.file = file;
            this.fileLength = fileLength;
            this.bytes = bytes;
        }

        long position() {
            return bytes.position();
        }

        private void need(long n, String field) {
            if (n > bytes.remaining()) {
                long at = bytes.position();
                if (bytes.limit() < fileLength) {
                    throw new GgufFormatException(file, field + ": needs " + n + " bytes at byte " + at
                            + ", past the " + MAX_HEADER_BYTES + "-byte limit on the metadata and tensor table");
                }
                throw new GgufFormatException(file, field + ": needs " + n + " bytes at byte " + at + " but the file is "
                        + fileLength + " bytes long: the file is truncated");
            }
        }

        /** Checks that {@code count} items of at least {@code minBytes} each can fit in what is left to read. */
        void checkCount(String field, long count, int minBytes) {
            long left = bytes.remaining();
            if (count < 0 || count > left / minBytes || count > Integer.MAX_VALUE - 8) {
                throw new GgufFormatException(file, "field '" + field + "' is " + Long.toUnsignedString(count)
                        + ", more than the " + left + " bytes left" + (bytes.limit() < fileLength ? " within the "
                        + MAX_HEADER_BYTES + "-byte header limit" : " in the file") + " can hold (at least "
                        + minBytes + " bytes each)");
            }
        }

        byte i8(String field) {
            need(1, field);
            return bytes.get();
        }

        short i16(String field) {
            need(2, field);
            return bytes.getShort();
        }

        int i32(String field) {
            need(4, field);
            return bytes.getInt();
        }

        long u32(String field) {
            return i32(field) & 0xFFFF_FFFFL;
        }

        long i64(String field) {
            need(8, field);
            return bytes.getLong();
        }

        void bytes(String field, byte[] out) {
            need(out.length, field);
            bytes.get(out);
        }

        String string(String field, int maxBytes) {
            long n = i64(field + " length");
            if (n < 0 || n > bytes.remaining()) {
                need(n < 0 ? Long.MAX_VALUE : n, field + " (a string of " + Long.toUnsignedString(n) + " bytes)");
            }
            if (n > maxBytes) {
                throw new GgufFormatException(file, field + " is " + n + " bytes long, expected at most " + maxBytes);
            }
            ByteBuffer slice = bytes.slice(bytes.position(), (int) n);
            CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT);
            try {
                CharBuffer chars = decoder.decode(slice);
                bytes.position(bytes.position() + (int) n);
                return chars.toString();
            } catch (CharacterCodingException e) {
                throw new GgufFormatException(file, field + " at byte " + bytes.position() + " is not valid UTF-8", e);
            }
        }
    }

    /** The file this header was read from. */
    public Path file() {
        return file;
    }

    /** The GGUF version, 2 or 3. */
    public int version() {
        return version;
    }

    /** The file's length in bytes. */
    public long fileLength() {
        return fileLength;
    }

    /** The alignment of the data section and of each tensor. */
    public int alignment() {
        return alignment;
    }

    /** The absolute file offset of the data section. */
    public long dataStart() {
        return dataStart;
    }

    /** The metadata in file order. */
    public Map<String, GgufValue> metadata() {
        return metadata;
    }

    /** The tensors in table order, by name. */
    public Map<String, GgufTensorInfo> tensors() {
        return tensors;
    }

    /** The tensor named {@code name}, or null. */
    public GgufTensorInfo tensor(String name) {
        return tensors.get(Objects.requireNonNull(name, "name"));
    }

    /** The metadata value {@code key}, or empty. */
    public Optional<GgufValue> value(String key) {
        return Optional.ofNullable(metadata.get(key));
    }

    /** Typed access to the metadata with errors naming this file. */
    public GgufMetadata meta() {
        return new GgufMetadata(file, metadata);
    }
}
